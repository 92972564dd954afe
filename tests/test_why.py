"""The load decomposition in the control plane: explain's contributions, deciding part and sentences
(wirelab/analysis/why.py, docs/why.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from wirelab import _facts
from wirelab.analysis import why
from wirelab.analysis.sweep import Axis, SweepData
from wirelab.errors import UsageError


def _sweep(loads: pd.DataFrame, axes: list[Axis], protocols: list[str]) -> SweepData:
    configs = loads.drop_duplicates("trial_id")[["trial_id", *[a.column for a in axes]]].copy()
    configs["label"] = [
        ", ".join(f"{a.name} {a.format(r[a.column])}" for a in axes) for _, r in configs.iterrows()
    ]
    return SweepData(
        name="s",
        description="",
        spec_hash="",
        spec={},
        source="",
        trials=pd.DataFrame(),
        loads=loads,
        configs=configs.reset_index(drop=True),
        axes=axes,
        protocols=protocols,
        emulator={},
    )


def _load(trial: str, bw: float, proto: str, parts: dict[str, float], error: str | None = None) -> dict:
    row = {"trial_id": trial, "network.bw_mbit": bw, "protocol": proto, "error": error}
    for p in _facts.why_parts():
        row[p.column] = parts.get(p.key, 0.0)
    row[why.METRIC] = sum(parts.values())
    return row


BW = Axis("network.bw", "network.bw_mbit", "bandwidth", "Mbit/s", True, (1.0, 8.0))


def test_contributions_sum_to_the_difference_and_decide():
    rng = np.random.default_rng(27)
    rows = []
    for trial, bw in (("t1", 1.0), ("t2", 8.0)):
        for rep in range(5):
            # h1s queues behind six connections at 8 Mbit/s; at 1 Mbit/s both are transfer-bound
            # and h2 pays recovery
            rows.append(
                _load(
                    trial,
                    bw,
                    "h1s",
                    {"setup_ms": 300, "transfer_ms": 1000 + rep, "queueing_ms": 1100 if bw == 8 else 50},
                )
            )
            rows.append(
                _load(
                    trial,
                    bw,
                    "h2",
                    {
                        "setup_ms": 200,
                        "transfer_ms": 1000 + rng.random(),
                        "recovery_ms": 900 if bw == 1 else 0,
                    },
                )
            )
    rows.append(_load("t1", 1.0, "h2", {"setup_ms": 5}, error="timeout"))  # failed loads do not count
    frame = why.explain(_sweep(pd.DataFrame(rows), [BW], ["h1s", "h2"]))
    assert list(frame["trial_id"]) == ["t1", "t2"] and set(frame["protocol"]) == {"h2"}
    keys = why.part_keys()
    assert np.allclose(frame[keys].sum(axis=1), frame["difference_ms"])
    assert list(frame["deciding"]) == ["recovery_ms", "queueing_ms"]
    assert frame.loc[1, "queueing_ms"] == pytest.approx(-1100)
    assert frame.loc[0, "loads"] == 5 and frame.loc[0, "baseline_loads"] == 5
    text = why.sentences(frame, _sweep(pd.DataFrame(rows), [BW], ["h1s", "h2"]))
    assert text == [
        "at 1 Mbit/s, recovery costs h2 +900 ms more than h1s; "
        "h2's gain at 8 Mbit/s comes from queueing (−1.1 s against h1s)."
    ]


def test_baseline_and_config():
    rows = [_load("t1", 1.0, p, {"setup_ms": s}) for p, s in (("h1s", 300), ("h2", 200), ("h3", 100))]
    sweep = _sweep(pd.DataFrame(rows), [], ["h1s", "h2", "h3"])
    frame = why.explain(sweep, baseline="h3", config="t1")
    assert list(frame["protocol"]) == ["h1s", "h2"] and set(frame["baseline"]) == {"h3"}
    assert list(frame["setup_ms"]) == [200, 100]
    assert why.sentences(frame, sweep)[0] == "setup costs h1s +200 ms more than h3."


@pytest.mark.parametrize(
    ("rows", "kwargs", "words"),
    [
        (
            [_load("t1", 1.0, "h2", {"setup_ms": 1}, error="x"), _load("t1", 1.0, "h1s", {}, error="y")],
            {},
            "no successful load",
        ),
        ([_load("t1", 1.0, "h2", {"setup_ms": 1})], {}, "one protocol with decomposed loads (h2)"),
        (
            [_load("t1", 1.0, "h2", {"setup_ms": 1}), _load("t1", 1.0, "h1s", {"setup_ms": 2})],
            {"baseline": "h3"},
            "--baseline 'h3'",
        ),
        (
            [_load("t1", 1.0, "h2", {"setup_ms": 1}), _load("t1", 1.0, "h1s", {"setup_ms": 2})],
            {"config": "t9"},
            "--config 't9'",
        ),
    ],
)
def test_nothing_to_explain_is_one_line(rows, kwargs, words):
    with pytest.raises(UsageError) as e:
        why.explain(_sweep(pd.DataFrame(rows), [], ["h1s", "h2"]), **kwargs)
    assert words in str(e.value) and "\n" not in str(e.value) and e.value.exit_code == 2


def test_loads_without_a_decomposition():
    rows = [_load("t1", 1.0, p, {"setup_ms": 1}) for p in ("h1s", "h2")]
    frame = pd.DataFrame(rows).drop(columns=[p.column for p in _facts.why_parts()])
    with pytest.raises(UsageError, match="no decomposition"):
        why.explain(_sweep(frame, [], ["h1s", "h2"]))


def test_format_ms():
    assert why.format_ms(-1100) == "−1.1 s" and why.format_ms(900, True) == "+900 ms"
    assert why.format_ms(12345) == "12 s" and why.format_ms(0.25) == "0.25 ms"
