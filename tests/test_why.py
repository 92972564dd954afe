"""The load decomposition in the control plane: explain's contributions, deciding part and sentences
(wirelab/analysis/why.py, docs/why.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import wirelab
from wirelab import _facts
from wirelab.analysis import why
from wirelab.analysis.sweep import Axis, SweepData
from wirelab.cli import main
from wirelab.errors import UsageError

sys.path.insert(0, str(Path(__file__).parent))
from model_engine import ModelEngine  # noqa: E402


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


def test_an_offset_is_said():
    # one connection instead of six: the critical bytes stop waiting behind the others' packets
    # (gateway) and wait for their own connection's (transfer)
    rows = [
        _load("t1", 1.0, "h1s", {"gateway_ms": 1000, "transfer_ms": 1000}),
        _load("t1", 1.0, "h2", {"gateway_ms": 0, "transfer_ms": 1800, "setup_ms": 10}),
    ]
    sweep = _sweep(pd.DataFrame(rows), [], ["h1s", "h2"])
    assert why.sentences(why.explain(sweep), sweep) == [
        "h2's gain comes from gateway (−1 s against h1s), offset by transfer (+800 ms)."
    ]


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


# --------------------------------------------------------------------------------------------------
# Through the runner, the store, the Python API and the CLI (the model engine's loads carry a
# decomposition that sums to their time on the wire, as the engine's do)

SPEC = """
[sweep]
name = "why"
[base]
page = "twitter"
protocols = ["h1s", "h2", "h3"]
repetitions = 3
network = { bw = "10mbit", loss = "1%" }
[grid]
"network.rtt" = ["50ms", "150ms"]
"""


@pytest.fixture(scope="module")
def why_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("why") / "w.db"
    spec = db.parent / "why.toml"
    spec.write_text(SPEC)
    wirelab.run(spec, db=db, engine=ModelEngine(), parallel=2)
    return db


def test_store_and_api_carry_the_decomposition(why_db, tmp_path):
    results = wirelab.open(why_db)
    loads = results.loads("why")
    cols = why.part_columns()
    assert np.allclose(loads[cols].sum(axis=1), loads["tow_first_packet_ms"], atol=0.01)
    assert all(json.loads(p)[0][0] == pytest.approx(0.2) for p in loads["why_path_json"])
    kinds = list(_facts.retx_keys())
    assert (loads[kinds].sum(axis=1) == loads["retransmissions"]).all()
    frame = results.explain("why", baseline="h2")
    assert set(frame["protocol"]) == {"h1s", "h3"} and set(frame["baseline"]) == {"h2"}
    assert np.allclose(frame[why.part_keys()].sum(axis=1), frame["difference_ms"])
    assert len(results.explain("why", config=frame["trial_id"].iloc[0])) == 2
    out = tmp_path / "loads.csv"
    assert main(["results", "export", "why", "-f", "csv", "-o", str(out), "--db", str(why_db)]) == 0
    exported = pd.read_csv(out)
    assert {*cols, "why_path_json", *kinds} <= set(exported.columns)


def test_explain_command(why_db, capsys):
    code = main(["explain", "why", "--db", str(why_db)])
    printed = capsys.readouterr().out
    assert code == 0 and "h2 against h1s" in printed and "h3 against h1s" in printed
    assert "comes from" in printed or "more than h1s" in printed
    code = main(["explain", "why", "--json", "--db", str(why_db)])
    rows = json.loads(capsys.readouterr().out)
    assert code == 0 and {r["protocol"] for r in rows} == {"h2", "h3"}


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--baseline", "spdy3"], "--baseline 'spdy3' is not a protocol of its loads (allowed: h1s, h2, h3)"),
        (["--config", "t-nope"], "--config 't-nope' is not a trial of the sweep"),
    ],
)
def test_explain_bad_input_is_one_line(why_db, capsys, argv, words):
    code = main(["explain", "why", *argv, "--db", str(why_db)])
    err = capsys.readouterr().err
    assert code == 2 and words in err and err.count("\n") == 1


def test_explain_of_one_protocol_or_failed_trials(tmp_path, capsys, fake_engine):
    db = tmp_path / "w.db"
    one = tmp_path / "one.toml"
    one.write_text('[sweep]\nname = "one"\n[base]\npage = "twitter"\nprotocols = ["h2"]\nrepetitions = 2\n')
    wirelab.run(one, db=db, engine=ModelEngine())
    code = main(["explain", "one", "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 2 and "one protocol with decomposed loads (h2)" in err and err.count("\n") == 1
    failed = tmp_path / "h3.toml"  # the fixture engine has no h3 loads: every trial fails
    failed.write_text('[sweep]\nname = "h3"\n[base]\npage = "twitter"\nprotocols = ["h1s", "h3"]\n')
    assert main(["run", str(failed), "--db", str(db), "--engine", str(fake_engine)]) == 1
    capsys.readouterr()
    code = main(["explain", "h3", "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 2 and "nothing to explain" in err and err.count("\n") == 1


def _with_lcp(db: Path, tmp: Path) -> Path:
    """A copy of ``db`` whose loads carry an LCP: the time on the wire plus a render time that h3
    shortens by 100 ms (as a Chromium sweep would record; the model engine does not paint)."""
    import shutil
    import sqlite3

    copy = tmp / "lcp.db"
    shutil.copy(db, copy)
    with sqlite3.connect(copy) as c:
        c.execute(
            "UPDATE loads SET lcp_ms = tow_first_packet_ms + CASE protocol WHEN 'h3' THEN 200 ELSE 300 END "
            "WHERE error IS NULL"
        )
    return copy


def test_explain_with_a_metric_splits_its_difference_at_the_wire(why_db, tmp_path, capsys):
    db = _with_lcp(why_db, tmp_path)
    frame = wirelab.open(db).explain("why", metric="lcp_ms")
    loads = wirelab.open(db).loads("why")
    ok = loads[loads["error"].isna()]
    means = ok.groupby(["trial_id", "protocol"])["lcp_ms"].mean()
    for r in frame.to_dict("records"):
        want = means[(r["trial_id"], r["protocol"])] - means[(r["trial_id"], "h1s")]
        assert r["metric_difference_ms"] == pytest.approx(want)
        # the wire's parts sum to the ToW difference; what the LCP adds beyond it is outside the wire
        assert r["outside_wire_ms"] == pytest.approx(-100.0 if r["protocol"] == "h3" else 0.0, abs=1e-6)
    code = main(["explain", "why", "--metric", "lcp_ms", "--db", str(db)])
    printed = capsys.readouterr().out
    assert code == 0 and "h3's LCP is" in printed and "−100 ms lies outside the wire" in printed
    code = main(["explain", "why", "--metric", "lcp_ms", "--json", "--db", str(db)])
    rows = json.loads(capsys.readouterr().out)
    assert (
        code == 0 and {r["metric"] for r in rows} == {"lcp_ms"} and all("outside_wire_ms" in r for r in rows)
    )


@pytest.mark.parametrize(
    ("metric", "words"),
    [
        ("lcp_ms", "--metric lcp_ms: explain why has no successful load with LCP (measured by Chromium"),
        ("speed_index_ms", "--metric speed_index_ms: explain why has no successful load with SI"),
        ("fcp", "--metric: 'fcp' is not a metric; use one of tow_ms, plt_ms, lcp_ms, speed_index_ms"),
    ],
)
def test_explain_a_metric_the_loads_lack_is_one_line(why_db, capsys, metric, words):
    """The engine's loader does not paint: LCP of its loads is one line, exit 2 — not NaN tables."""
    code = main(["explain", "why", "--metric", metric, "--db", str(why_db)])
    captured = capsys.readouterr()
    assert code == 2 and words in captured.err and captured.err.count("\n") == 1 and not captured.out
