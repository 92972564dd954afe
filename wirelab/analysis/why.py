"""Why a protocol wins: a difference in time on the wire split into mechanisms (``docs/why.md``).

Every load's time on the wire (``tow_first_packet_ms``: from its first packet to ToW's last response
packet) is partitioned by the engine into parts — setup, queueing, server, transfer, gateway, window,
recovery, head-of-line blocking, compute, DNS, unattributed (``docs/metrics.md``, "Why") — stored as
the loads' ``why_<part>`` columns. :func:`explain` compares a protocol with a baseline per
configuration: the difference of their mean time on the wire and each part's signed contribution to
it, ``mean(protocol's part) − mean(baseline's part)``, which sum to the difference because every
load's parts sum to its time. :func:`deciding` names the part that decides a comparison (the largest
contribution in the direction of the difference) and :func:`sentences` says where along the sweep's
axis that changes.

The parts' names, labels and order are the engine's (``wirelab-engine facts``:
:func:`wirelab._facts.why_parts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from wirelab import _facts
from wirelab.analysis import metrics
from wirelab.errors import UsageError

if TYPE_CHECKING:
    from wirelab.analysis.sweep import SweepData

__all__ = [
    "METRIC",
    "deciding",
    "explain",
    "format_ms",
    "metric_sentences",
    "part_columns",
    "part_keys",
    "sentences",
]

#: the time the parts partition (their sum), load by load
METRIC = "tow_first_packet_ms"


def part_keys() -> list[str]:
    """The parts' keys (``setup_ms`` …): the contribution columns of :func:`explain`."""
    return [p.key for p in _facts.why_parts()]


def part_columns() -> list[str]:
    """The loads' decomposition columns (``why_setup_ms`` …)."""
    return [p.column for p in _facts.why_parts()]


def _labels() -> dict[str, str]:
    return {p.key: p.label for p in _facts.why_parts()}


def explain(
    sweep: SweepData, *, baseline: str | None = None, config: str | None = None, metric: str | None = None
) -> pd.DataFrame:
    """Per configuration (a trial) and compared protocol: the difference of the mean time on the wire
    against ``baseline`` (default: the sweep's first protocol) and each part's signed contribution.

    Columns: ``trial_id``, ``label`` and the sweep's axis columns; ``protocol``, ``baseline``;
    ``loads`` and ``baseline_loads`` (successful loads averaged); ``tow_first_packet_ms`` and
    ``baseline_tow_first_packet_ms`` (means); ``difference_ms`` (protocol − baseline: negative when the
    protocol is faster); one column per part key (``setup_ms`` …: its contribution, ms, summing to
    ``difference_ms``); ``deciding`` (the part key that decides). ``config`` keeps one trial.

    ``metric`` (a column of :data:`wirelab.analysis.metrics.METRICS`, e.g. ``lcp_ms``) adds the
    comparison in that metric beside the wire's decomposition, over the same loads (those that have
    it): ``metric`` (its name), ``metric_ms`` and ``baseline_metric_ms`` (means),
    ``metric_difference_ms`` and ``outside_wire_ms`` (the metric's difference minus the time on the
    wire's: what the parts do not explain — rendering, the main thread, what precedes the first
    packet). A sweep whose loads lack the metric (LCP of the engine's loader) is one line.

    Raises :class:`~wirelab.errors.UsageError` — one line — when nothing can be explained: no load
    of the sweep has a decomposition (its trials failed, or an engine from before the decomposition
    ran them), fewer than two protocols have one, ``baseline`` is not among them, or ``config`` is
    not a trial of the sweep.
    """
    loads = sweep.loads
    cols = part_columns()
    missing = [c for c in cols if c not in loads]
    ok = loads.iloc[0:0] if missing or loads.empty else loads[loads["error"].isna() & loads[cols[0]].notna()]
    if ok.empty:
        why_not = (
            "its loads have no decomposition (recorded before wirelab had one: run the sweep again)"
            if len(loads) and loads["error"].isna().any()
            else "it has no successful load (every trial or load failed)"
        )
        raise UsageError(f"explain {sweep.name}: nothing to explain: {why_not}")
    if config is not None:
        known = list(sweep.configs["trial_id"]) if len(sweep.configs) else []
        if config not in known:
            shown = ", ".join(known[:5]) + (" …" if len(known) > 5 else "")
            raise UsageError(
                f"explain {sweep.name}: --config {config!r} is not a trial of the sweep (its trials: {shown})"
            )
        ok = ok[ok["trial_id"] == config]
    chosen = None
    if metric is not None:
        chosen = metrics.by_name(metric)
        metrics.require(chosen, ok, f"explain {sweep.name}")
        ok = ok[ok[chosen.column].notna()]
    protocols = [p for p in sweep.protocols if p in set(ok["protocol"])]
    if len(protocols) < 2:
        only = protocols[0] if protocols else "none"
        raise UsageError(
            f"explain {sweep.name}: one protocol with decomposed loads ({only}): explain compares protocols"
        )
    base = baseline or protocols[0]
    if base not in protocols:
        allowed = ", ".join(protocols)
        raise UsageError(
            f"explain {sweep.name}: --baseline {base!r} is not a protocol of its loads (allowed: {allowed})"
        )
    extra = [chosen.column] if chosen is not None and chosen.column != METRIC else []
    means = ok.groupby(["trial_id", "protocol"], sort=False)[[METRIC, *cols, *extra]].mean()
    counts = ok.groupby(["trial_id", "protocol"], sort=False).size()
    keys = part_keys()
    rows = []
    for trial_id in dict.fromkeys(ok["trial_id"]):
        if (trial_id, base) not in means.index:
            continue
        b = means.loc[(trial_id, base)]
        for proto in protocols:
            if proto == base or (trial_id, proto) not in means.index:
                continue
            m = means.loc[(trial_id, proto)]
            row: dict[str, object] = {
                "trial_id": trial_id,
                "protocol": proto,
                "baseline": base,
                "loads": int(counts.loc[(trial_id, proto)]),
                "baseline_loads": int(counts.loc[(trial_id, base)]),
                METRIC: float(m[METRIC]),
                "baseline_" + METRIC: float(b[METRIC]),
                "difference_ms": float(m[METRIC] - b[METRIC]),
            }
            for key, col in zip(keys, cols, strict=True):
                row[key] = float(m[col] - b[col])
            if chosen is not None:
                diff = float(m[chosen.column] - b[chosen.column])
                row.update(
                    metric=chosen.column,
                    metric_ms=float(m[chosen.column]),
                    baseline_metric_ms=float(b[chosen.column]),
                    metric_difference_ms=diff,
                    outside_wire_ms=diff - float(row["difference_ms"]),  # type: ignore[arg-type]
                )
            rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        raise UsageError(
            f"explain {sweep.name}: no configuration has decomposed loads of {base} and another protocol"
        )
    frame["deciding"] = [deciding(r) for _, r in frame.iterrows()]
    axis_cols = [a.column for a in sweep.axes]
    cfg = sweep.configs[[c for c in ["trial_id", "label", *axis_cols] if c in sweep.configs]]
    frame = frame.merge(cfg, on="trial_id", how="left")
    lead = ["trial_id", "label", *[c for c in axis_cols if c in frame]]
    return frame[lead + [c for c in frame.columns if c not in lead]]


def metric_sentences(frame: pd.DataFrame) -> list[str]:
    """With a chosen metric (``explain(metric=…)``), one sentence per compared protocol: its mean
    difference in that metric and how much of it the time on the wire (the decomposed part) carries —
    ``h3's LCP is 120 ms lower than h2's (mean of 4 configurations); the time on the wire accounts for
    −95 ms of it, −25 ms lies outside the wire.``"""
    if "metric" not in frame or frame.empty:
        return []
    m = metrics.by_name(str(frame["metric"].iloc[0]))
    out = []
    for proto, rows in frame.groupby("protocol", sort=False):
        base = str(rows["baseline"].iloc[0])
        diff = float(rows["metric_difference_ms"].mean())
        wire = float(rows["difference_ms"].mean())
        n = len(rows)
        where = f"mean of {n} configurations" if n > 1 else "one configuration"
        how = "lower" if diff < 0 else "higher" if diff > 0 else "no different"
        size = format_ms(abs(diff)) + " " if diff else ""
        out.append(
            f"{proto}'s {m.short} is {size}{how} than {base}'s ({where}); the time on the wire accounts "
            f"for {format_ms(wire, True)} of it, {format_ms(diff - wire, True)} lies outside the wire."
        )
    return out


def deciding(row: pd.Series | dict[str, float]) -> str:
    """The part that decides a comparison: the largest contribution in the direction of the
    difference (a negative difference: the most negative contribution); with no difference, the
    largest in size."""
    keys = part_keys()
    values = np.array([float(row[k]) for k in keys])
    diff = float(row["difference_ms"])
    score = values * np.sign(diff) if diff != 0 else np.abs(values)
    return keys[int(np.argmax(score))]


def format_ms(value: float, signed: bool = False) -> str:
    """``1.1 s``, ``340 ms``, ``−1.1 s`` (with ``signed``, ``+0.9 s``); a minus sign, not a hyphen."""
    v = float(value)
    mag = abs(v)
    text = f"{mag / 1000:.2g} s" if mag >= 1000 else f"{mag:.3g} ms"
    if mag >= 1000 and mag / 1000 >= 10:
        text = f"{mag / 1000:.0f} s"
    sign = "−" if v < 0 else ("+" if signed and v > 0 else "")
    return sign + text


def _where(values: Sequence[str], along_axis: bool) -> str:
    """Where a run of configurations lies: ``at 8 Mbit/s``, ``from 1 to 8 Mbit/s`` along one axis;
    otherwise their labels, or how many they are."""
    if len(values) == 1:
        return f"at {values[0]}"
    if len(values) == 2:
        return f"at {values[0]} and {values[1]}"
    if along_axis:
        return f"from {values[0]} to {values[-1]}"
    return f"in {len(values)} configurations ({values[0]} … {values[-1]})"


def sentences(frame: pd.DataFrame, sweep: SweepData) -> list[str]:
    """One sentence per compared protocol: which part decides the comparison and where along the
    sweep that changes — ``h2's gain at 8 Mbit/s comes from queueing (−1.1 s against h1s); at 1 %
    loss, recovery costs h2 +0.9 s more than h1s.`` Configurations are taken in the order of the
    sweep's first numeric axis (else the sweep's order); consecutive ones with the same deciding part
    and the same sign of difference are told together, with their mean contribution."""
    labels = _labels()
    axis = sweep.numeric_axes[0] if len(sweep.axes) == 1 and sweep.numeric_axes else None
    out = []
    for proto, rows in frame.groupby("protocol", sort=False):
        if axis is not None and axis.column in rows:
            rows = rows.sort_values(axis.column, kind="stable")
        base = str(rows["baseline"].iloc[0])
        runs: list[tuple[int, str, list[pd.Series]]] = []
        for _, r in rows.iterrows():
            sign = int(np.sign(r["difference_ms"]))
            if runs and runs[-1][0] == sign and runs[-1][1] == r["deciding"]:
                runs[-1][2].append(r)
            else:
                runs.append((sign, str(r["deciding"]), [r]))
        parts = []
        for sign, part, members in runs:
            if sign == 0:
                continue
            where = _where(
                [
                    axis.format(m[axis.column]) if axis is not None else str(m.get("label") or m["trial_id"])
                    for m in members
                ],
                along_axis=axis is not None,
            )
            if len(frame["trial_id"].unique()) == 1:
                where = ""
            contribution = float(np.mean([m[part] for m in members]))
            if sign < 0:
                by = format_ms(contribution, True)
                text = f"{proto}'s gain {where} comes from {labels[part]} ({by} against {base})"
            else:
                lead = f"{where}, " if where else ""
                text = f"{lead}{labels[part]} costs {proto} {format_ms(contribution, True)} more than {base}"
            # the largest part pulling the other way, when it takes back half of the deciding one or more
            others = {k: float(np.mean([m[k] for m in members])) for k in part_keys() if k != part}
            against = min(others, key=lambda k: others[k] * sign)
            if others[against] * sign < 0 and abs(others[against]) >= 0.5 * abs(contribution):
                text += f", offset by {labels[against]} ({format_ms(others[against], True)})"
            parts.append(" ".join(text.split()))
        if parts:
            out.append("; ".join(parts) + ".")
        else:
            out.append(f"{proto} and {base} take the same time on the wire.")
    return out
