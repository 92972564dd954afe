"""Sentences that state what the numbers say, computed from analysis tables (never written by hand).

Each function returns plain-text sentences (the report escapes them). Conventions: "beats" means a
lower mean ToW (gain > 0); "significant" means the two-sided Mann–Whitney p < 0.05.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from wirelab._registry import BUSY_GAUGES, PHASE_STYLES, protocol_style
from wirelab.analysis.compare import SIGNIFICANCE, min_p_value
from wirelab.analysis.multiplex import MultiplexFit
from wirelab.analysis.sweep import Axis
from wirelab.analysis.tree import TreeResult

__all__ = [
    "capacity_quality_sentences",
    "capacity_sentences",
    "gain_sentences",
    "gateway_sentences",
    "main_effect_sentences",
    "multiplex_sentences",
    "phase_sentences",
    "power_sentences",
    "ratio_sentences",
    "tree_sentences",
]


def _p(name: str) -> str:
    return protocol_style(name).label


def _pct(v: float) -> str:
    return f"{v:+.1f} %"


MAX_TREND_LINES = 6


def _ci(row: Mapping[str, float]) -> str:
    return f"95 % CI {row['ci_low']:.1f} to {row['ci_high']:.1f} %"


def _where(row: Mapping[str, object], axes: Sequence[Axis]) -> str:
    parts = []
    for a in axes:
        value = row.get(a.column)
        parts.append(f"{a.name} {a.format(value)}" if a.numeric else f"{value}")
    return ", ".join(parts)


def _crossover(wins: np.ndarray, xs: np.ndarray, axis: Axis, x: str, b: str) -> str:
    """Where along the axis the winner changes (``wins[i]``: x wins at ``xs[i]``, sorted by x)."""
    if wins.all():
        return f"{x} wins at every {axis.name}"
    if not wins.any():
        return f"{b} wins at every {axis.name}"
    changes = np.flatnonzero(wins[1:] != wins[:-1])
    if len(changes) == 1:
        i = changes[0] + 1
        if wins[i]:
            return f"{x} wins from {axis.format(xs[i])} up"
        return f"{x} wins up to {axis.format(xs[i - 1])}, {b} beyond"
    return f"the winner changes {len(changes)} times along {axis.name}"


def gain_sentences(
    comp: pd.DataFrame, axes: Sequence[Axis], baseline: str, protocol: str, *, metric: str = "ToW"
) -> list[str]:
    """Who wins how often, the largest gain and loss, and (per series) where the winner changes and
    how the gain trends along the first numeric axis. ``comp`` is ``compare`` output with the axes'
    columns (one row per configuration); ``metric`` names what the gain was computed on."""
    data = comp[(comp["protocol"] == protocol) & comp["gain_pct"].notna()]
    if data.empty:
        return []
    x, b = _p(protocol), _p(baseline)
    wins = data[data["gain_pct"] > 0]
    sig_wins = wins[wins["significant"].fillna(False).astype(bool)]
    sig_losses = data[(data["gain_pct"] < 0) & data["significant"].fillna(False).astype(bool)]
    n = len(data)
    out = []
    what = "configuration" if n == 1 else "configurations"
    numeric = [a for a in axes if a.numeric]
    if n == 1:
        row = data.iloc[0]
        verdict = "faster" if row["gain_pct"] > 0 else "slower"
        sig = "significant" if row["significant"] else "not significant"
        out.append(
            f"{x} is {verdict} than {b}: {metric} reduction {_pct(row['gain_pct'])} ({_ci(row)}), "
            f"Mann–Whitney p = {row['p_value']:.3g} ({sig})."
        )
        return out
    settings = ""
    if len(numeric) == 1 and len(axes) == 1:
        settings = f" {numeric[0].name} settings"
    out.append(
        f"{x} beats {b} (lower mean {metric}) in {len(wins)} of {n}{settings or ' ' + what}; significantly "
        f"(Mann–Whitney p < 0.05) in {len(sig_wins)}. {b} is significantly faster in {len(sig_losses)}."
    )
    best = data.loc[data["gain_pct"].idxmax()]
    out.append(f"Largest gain: {_pct(best['gain_pct'])} ({_ci(best)}) at {_where(best, axes)}.")
    worst = data.loc[data["gain_pct"].idxmin()]
    if worst["gain_pct"] < 0:
        out.append(f"Largest loss: {_pct(worst['gain_pct'])} ({_ci(worst)}) at {_where(worst, axes)}.")
    if numeric:
        xa = numeric[0]
        others = [a for a in axes if a is not xa]
        groups = (
            data.groupby([a.column for a in others], sort=False, dropna=False) if others else [((), data)]
        )
        trend_lines: list[str] = []
        trends: list[str] = []
        for key, group in groups:
            key = key if isinstance(key, tuple) else (key,)
            name = ", ".join(
                f"{a.name} {a.format(k)}" if a.numeric else str(k) for a, k in zip(others, key, strict=True)
            )
            group = group.sort_values(xa.column)
            if group[xa.column].nunique() < 3:
                continue
            gains = group["gain_pct"].to_numpy(float)
            xs = group[xa.column].to_numpy(float)
            cross = _crossover(gains > 0, xs, xa, x, b)
            if np.unique(gains).size < 2:
                rho, direction = float("nan"), "is the same at every value of"
            else:
                rho = float(sps.spearmanr(xs, gains).statistic)
                direction = (
                    "rises with" if rho > 0.5 else "falls with" if rho < -0.5 else "shows no clear trend with"
                )
            rho_text = f" (Spearman ρ = {rho:.2f})" if np.isfinite(rho) else ""
            prefix = f"{name}: " if name else ""
            trend_lines.append(f"{prefix}{cross}; the gain {direction} {xa.name}{rho_text}.")
            trends.append(direction.split()[0] if np.isfinite(rho) else "same")
        if len(trend_lines) <= MAX_TREND_LINES:
            out.extend(trend_lines)
        else:
            counts = {k: trends.count(k) for k in ("rises", "falls")}
            out.append(
                f"Along {xa.name}, the gain rises (Spearman ρ > 0.5) in {counts['rises']} and "
                "falls (ρ < −0.5) in "
                f"{counts['falls']} of the {len(trend_lines)} series the other axes make; the "
                "table below has "
                "every configuration."
            )
    return out


def power_sentences(comp: pd.DataFrame) -> list[str]:
    """A warning when the repetitions are too few for the Mann–Whitney test to reach significance."""
    data = comp.dropna(subset=["gain_pct"])
    if data.empty:
        return []
    reachable = data.apply(lambda r: min_p_value(int(r["n_base"]), int(r["n"])) < SIGNIFICANCE, axis=1)
    if reachable.all():
        return []
    stuck = data[~reachable]
    smallest = int(min(stuck["n_base"].min(), stuck["n"].min()))
    return [
        f"With {smallest} loads per protocol, the Mann–Whitney test cannot reach p < {SIGNIFICANCE} in "
        f"{_n(stuck['trial_id'].nunique(), 'configuration')} (its smallest possible p is "
        f"{min_p_value(smallest, smallest):.2f}): no difference there can be called significant; run more "
        "repetitions (the full variants do)."
    ]


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def main_effect_sentences(effects: pd.DataFrame, axes: Mapping[str, Axis], baseline: str) -> list[str]:
    """Which factor moves the averaged gain most, per protocol."""
    out = []
    for protocol, mine in effects.groupby("protocol", sort=False):
        spans = []
        for factor, group in mine.groupby("factor", sort=False):
            low, high = group.loc[group["mean"].idxmin()], group.loc[group["mean"].idxmax()]
            spans.append((high["mean"] - low["mean"], factor, low, high))
        spans.sort(key=lambda t: -t[0])
        span, factor, low, high = spans[0]
        axis = axes[factor]
        rest = ", ".join(f"{axes[f].name} {s:.0f}" for s, f, _, _ in spans[1:])
        out.append(
            f"Averaged over the other factors, {_p(str(protocol))}'s gain over {_p(baseline)} "
            "moves most with "
            f"{axis.name}: from {low['mean']:+.1f} % at {axis.format(low['level'])} to "
            f"{high['mean']:+.1f} % at "
            f"{axis.format(high['level'])} (a spread of {span:.0f} points"
            + (f"; {rest} for the others)." if rest else ").")
        )
    return out


def ratio_sentences(comp: pd.DataFrame, baseline: str, protocol: str, *, metric: str = "PLT") -> list[str]:
    """W's classes of s = PLT_x / PLT_base (``metric`` in place of PLT) over the configurations."""
    data = comp[(comp["protocol"] == protocol) & comp["cls"].notna()]
    if data.empty:
        return []
    counts = data["cls"].value_counts()
    x, b = _p(protocol), _p(baseline)
    return [
        f"W's ratio s = {metric}({x}) / {metric}({b}) from medians: {x} better (s < 0.9) in "
        f"{counts.get('better', 0)}, "
        f"equal in {counts.get('equal', 0)}, {b} better (s > 1.1) in {counts.get('worse', 0)} of {len(data)} "
        f"configurations; median s = {data['s'].median():.2f}."
    ]


def tree_sentences(tree: TreeResult, names: Mapping[str, str], class_names: Mapping[str, str]) -> list[str]:
    """Which factors the tree splits on first, their importances, how many leaves are labelled."""
    if tree.root.is_leaf:
        return [
            f"The decision tree does not split: every configuration is "
            f"{class_names.get(tree.root.majority, tree.root.majority)} "
            f"({tree.root.likelihood * 100:.0f} %)."
        ]
    top = tree.top_factors()
    ranked = sorted(tree.importances.items(), key=lambda kv: -kv[1])
    importance = ", ".join(f"{names.get(f, f)} {v:.2f}" for f, v in ranked if v > 0)
    leaves = tree.leaves()
    labelled = [leaf for leaf in leaves if leaf.label is not None]
    first = names.get(top[0], top[0])
    then = [names.get(f, f) for f in top[1:]]
    return [
        f"The decision tree splits first on {first}"
        + (f", then on {' and '.join(then)}" if then else "")
        + f"; importances: {importance}.",
        f"{len(labelled)} of {len(leaves)} leaves are labelled (likelihood > {tree.threshold:.2f}); the tree "
        f"classifies {tree.accuracy * 100:.0f} % of the {tree.samples} configurations correctly.",
    ]


def multiplex_sentences(
    points: pd.DataFrame, fit: MultiplexFit | None, baseline: str, protocol: str
) -> list[str]:
    """The streams needed to win and the m ≈ r/k fit."""
    x, b = _p(protocol), _p(baseline)
    never = points[points["m"].isna()]
    out = []
    if fit is not None:
        r2 = "undefined: every m is equal" if not np.isfinite(fit.r2) else f"{fit.r2:.2f}"
        if np.isfinite(fit.r2) and fit.r2 < 0:
            r2 += ", below 0: the line explains m worse than m's mean does"
        out.append(
            f"{x} needs m ≈ r / {fit.k:.2f} concurrent streams to beat {b} (r = resources on the page; "
            f"least squares through the origin over {fit.n} page/RTT points, R² = {r2})."
        )
    found = points.dropna(subset=["m"])
    if len(found):
        out.append(f"Streams needed range from {found['m'].min():g} to {found['m'].max():g}.")
    if len(never):
        out.append(f"At {len(never)} page/RTT points no tested stream limit makes {x} beat {b}.")
    return out


def phase_sentences(shares: pd.DataFrame, protocols: Sequence[str]) -> list[str]:
    """The dominant phase per protocol and the handshake share (connect + ssl), over all loads."""
    out = []
    phases = [c for c in PHASE_STYLES if c in shares.columns]
    for proto in protocols:
        mine = shares[shares["protocol"] == proto]
        if mine.empty:
            continue
        mean = mine[phases].mean()
        top = mean.idxmax()
        handshake = float(mean.get("connect", 0) + mean.get("ssl", 0))
        out.append(
            f"{_p(proto)}: {PHASE_STYLES[top].label} is the largest phase "
            f"({mean[top] * 100:.0f} % of request time on average); "
            f"handshakes (connect + ssl) take {handshake * 100:.0f} %."
        )
    return out


def gateway_sentences(table: pd.DataFrame, axes: Sequence[Axis]) -> list[str]:
    """Retransmissions, queue drops and the gateway's delay where they occurred: measured (the
    decomposition's ``gateway_ms``) or, for loads without one, the RTT inflation estimate."""
    out = []
    for col, what in (("retransmissions", "retransmissions"), ("drops_queue", "gateway queue drops")):
        if col not in table:
            continue
        hit = table[table[col] > 0]
        if hit.empty:
            out.append(f"No {what} in any load.")
            continue
        worst = hit.loc[hit[col].idxmax()]
        per_proto = hit.groupby("protocol", sort=False)[col].mean()
        listing = ", ".join(f"{_p(str(p))} {v:.1f}" for p, v in per_proto.items())
        out.append(
            f"{what.capitalize()} occur in {_n(hit['trial_id'].nunique(), 'configuration')} "
            f"(mean per load where they occur: {listing}); most: {worst[col]:.1f} per load "
            f"for {_p(str(worst['protocol']))} at "
            f"{_where(worst, axes) or 'the configuration'}."
        )
    if "gateway_ms" in table and table["gateway_ms"].notna().any():
        worst = table.loc[table["gateway_ms"].idxmax()]
        if worst["gateway_ms"] < 0.5:
            out.append(
                "The critical bytes never waited in the gateway's queue behind other traffic "
                "(gateway_ms, measured: docs/why.md)."
            )
        else:
            per_proto = table.groupby("protocol", sort=False)["gateway_ms"].mean()
            listing = ", ".join(f"{_p(str(p))} {v:,.0f} ms" for p, v in per_proto.items())
            out.append(
                f"The critical bytes waited in the gateway's queue behind other traffic {listing} per load "
                f"on average (measured: gateway_ms, docs/why.md); most: {worst['gateway_ms']:,.0f} ms for "
                f"{_p(str(worst['protocol']))} at {_where(worst, axes) or 'the configuration'}."
            )
    elif "rtt_inflation_ms" in table and table["rtt_inflation_ms"].notna().any():
        worst = table.loc[table["rtt_inflation_ms"].idxmax()]
        out.append(
            f"Estimated RTT inflation under load (median time to first byte − handshake RTT) reaches "
            f"{round(worst['rtt_inflation_ms'])} ms for {_p(str(worst['protocol']))} at "
            f"{_where(worst, axes) or 'the configuration'}."
        )
    return out


# --------------------------------------------------------------------------------------------------
# Load tests (study N): a capacity_table (wirelab.analysis.capacity) → sentences per configuration


def _rate(v: Any) -> str:
    return "—" if v is None or v != v else f"{v:,.1f}"


def _mb(v: Any) -> str:
    return f"{v / 1e6:,.0f} MB"


def _vus_list(rows: pd.DataFrame, column: str) -> tuple[list[str], list[str]]:
    """(``HTTPS at 640 VUs`` for runs where the outcome happened, ``HTTP/2 (up to 1000 VUs)`` for those
    where it did not)."""
    happened, never = [], []
    for r in rows.to_dict("records"):
        v = r[column]
        if v is None or v != v:
            never.append(f"{_p(r['protocol'])} (up to {int(r['peak_vus'])} VUs)")
        else:
            happened.append((int(v), f"{_p(r['protocol'])} at {int(v)} VUs"))
    return [text for _v, text in sorted(happened)], never


def _or_and(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def capacity_sentences(table: pd.DataFrame, protocols: Sequence[str]) -> list[str]:
    """What a load test's runs of one configuration say (``table``: ``capacity_table`` rows of that
    configuration): throughput, the first error and SLA violation per protocol, page time and the
    server's CPU and memory at the chosen VU counts, busy workers against their limit."""
    rows = (
        table.set_index("protocol")
        .reindex([p for p in protocols if p in set(table["protocol"])])
        .reset_index()
    )
    if rows.empty:
        return []
    out = []
    peak = int(rows["peak_vus"].max())
    ranked = rows.sort_values("max_pages_per_s", ascending=False)
    best = ranked.iloc[0]
    others = ", ".join(
        f"{_p(r['protocol'])} {_rate(r['max_pages_per_s'])}" for r in ranked.iloc[1:].to_dict("records")
    )
    out.append(
        f"{_p(best['protocol'])} served the most: {_rate(best['max_pages_per_s'])} pages/s "
        f"({best['max_hits_per_s']:,.0f} hits/s) in its best interval of the scenario"
        + (f"; {others} pages/s." if others else ".")
    )
    happened, never = _vus_list(rows, "vus_at_first_error")
    if happened:
        kinds: dict[str, int] = {}
        for r in rows.to_dict("records"):
            for k, n in (r["error_kinds"] or {}).items():
                kinds[k] = kinds.get(k, 0) + n
        kind_text = ", ".join(
            f"{n} {k.replace('_', ' ')}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1])
        )
        out.append(
            f"First failed page: {_or_and(happened)}"
            + (f"; none over {_or_and(never)}" if never else "")
            + (f". Failed pages by kind: {kind_text}." if kind_text else ".")
        )
    else:
        out.append(f"No page failed over any protocol, up to {peak} VUs.")
    page_ms, statistic = rows.iloc[0]["sla_page_ms"], rows.iloc[0]["sla_statistic"]
    happened, never = _vus_list(rows, "vus_at_first_sla_violation")
    sla = f"the SLA ({statistic} page time ≤ {page_ms:g} ms)"
    if happened:
        out.append(
            f"First interval violating {sla}: {_or_and(happened)}"
            + (f"; {_or_and(never)} kept it." if never else ".")
        )
    else:
        out.append(f"Every protocol kept {sla} in every interval, up to {peak} VUs.")
    counts = list(dict.fromkeys(k for at in rows["at"] for k in at))
    for count in counts:
        parts, cost = [], []
        for r in rows.to_dict("records"):
            at = r["at"].get(count)
            if not at or at.get("vus") is None:
                continue
            if at.get("page_ms") is not None:
                parts.append(f"{at['page_ms']:,.0f} ms over {_p(r['protocol'])}")
            if at.get("cpu_util") is not None:
                cost.append(f"{at['cpu_util']:.2f} cores and {_mb(at['memory_bytes'])} ({_p(r['protocol'])})")
        if not parts and not cost:
            continue
        where = (
            f"At {count} VUs" if count != "peak" else f"At the peak ({rows.iloc[0]['at']['peak']['vus']} VUs)"
        )
        text = where + (f", {statistic} page time {_or_and(parts)}" if parts else "")
        text += (f"; the server used {_or_and(cost)}" if cost else "") + "."
        out.append(text)
    busy = rows.dropna(subset=["busy_max"])
    if len(busy) and busy.iloc[0]["server"] in BUSY_GAUGES:
        name = BUSY_GAUGES[busy.iloc[0]["server"]][1].split(" (")[0]
        peaks = _or_and([f"{r['busy_max']:,.0f} over {_p(r['protocol'])}" for r in busy.to_dict("records")])
        limit = busy.iloc[0]["busy_limit"]
        limit = None if limit is None or limit != limit else int(limit)
        text = f"The server's {name} peaked at {peaks}"
        full = [r for r in busy.to_dict("records") if limit and r["busy_max"] >= limit]
        if limit and full:
            starved = _or_and([_p(r["protocol"]) for r in full])
            text += f"; {starved} used every worker it allows ({limit}): thread starvation"
        elif limit:
            text += f" (it allows {limit})"
        out.append(text + ".")
    cpu = rows.dropna(subset=["cpu_max"])
    if len(cpu):
        out.append(
            "The server's CPU peaked at "
            + _or_and([f"{r['cpu_max']:.2f} cores over {_p(r['protocol'])}" for r in cpu.to_dict("records")])
            + "."
        )
    closed = [
        r
        for r in rows.to_dict("records")
        if _known(r.get("connections_closed_by_server")) and _known(r.get("connections_opened"))
    ]
    if any(r["connections_closed_by_server"] > 0 for r in closed):
        parts = []
        for r in closed:
            pages = r.get("pages")
            per_page = ""
            if _known(pages) and pages > 0:
                per_page = f" ({r['connections_opened'] / pages:.1f} opened per page)"
            parts.append(
                f"{r['connections_closed_by_server']:,.0f} of {r['connections_opened']:,.0f} over "
                f"{_p(r['protocol'])}{per_page}"
            )
        out.append(
            "The server closed connections before the VUs did — kept connections it dropped, which the "
            f"next page opened again: {_or_and(parts)} (docs/loadtest.md, connections)."
        )
    return out


def _known(v: Any) -> bool:
    """A count that was measured: not None, not NaN (a DataFrame's missing value)."""
    return v is not None and v == v and v >= 0


def capacity_quality_sentences(table: pd.DataFrame, runs: pd.DataFrame) -> list[str]:
    """Runs not complete, thresholds failed, intervals where the generator itself was short of CPU."""
    out = []
    for r in runs.to_dict("records"):
        if r["status"] != "complete":
            what = f"{r['intervals']} intervals measured" if r["intervals"] else "nothing measured"
            out.append(
                f"Run {r['loadtest_id']} ({_p(r['protocol'])}{', ' + r['config'] if r['config'] else ''}) is "
                f"{r['status']} ({what}{': ' + r['error'] if r.get('error') else ''}); "
                + (
                    "its intervals are drawn but its outcomes may be missing."
                    if r["intervals"]
                    else "it is not drawn."
                )
            )
        elif r["thresholds_passed"] is False or r["thresholds_passed"] == 0:
            failed = [t["expr"] for t in (r["thresholds"] or []) if not t.get("pass")]
            out.append(
                f"Run {r['loadtest_id']} ({_p(r['protocol'])}) failed its thresholds: {'; '.join(failed)}."
            )
    for r in table.to_dict("records") if len(table) else []:
        n = r["generator_saturated_intervals"]
        if n:
            out.append(
                f"The load generator was short of CPU in {_n(n, 'interval')} of the {_p(r['protocol'])} run "
                f"{r['loadtest_id']}: page times there include its own delay, not only the server's "
                "(docs/loadtest.md, generator cost)."
            )
    return out
