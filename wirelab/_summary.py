"""Per-protocol summary of one configuration's loads (what ``wirelab load`` prints).

The full statistics (confidence intervals, tests, figures) belong to ``wirelab.analysis``; this is the
small table a single configuration needs: loads, errors, median and mean ToW and PLT per protocol, and
the gain of each protocol over the first one as study E defines it — the reduction in ToW from the
two protocols' mean ToW over the loads without error, ``(mean ToW_first − mean ToW_p) / mean
ToW_first`` (the report's definition: :func:`wirelab.analysis.gain_pct`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

__all__ = ["gain_pct", "median_plt_load", "protocol_table"]


def median_plt_load(loads: pd.DataFrame, metric: str = "plt_ms") -> pd.Series | None:
    """The representative load of ``loads`` (one protocol's, of one configuration): the one with the
    median PLT (or ``metric``: the report's ``--metric``) among those without error that have it (the
    lower middle of an even count) — the load whose waterfall ``wirelab load``, the report and
    ``wirelab results waterfall`` draw. None when no such load exists."""
    ok = loads[loads["error"].isna()]
    if metric != "plt_ms":
        ok = ok[ok[metric].notna()] if metric in ok else ok.iloc[0:0]
    if ok.empty:
        return None
    ranked = ok.sort_values(metric).reset_index(drop=True)
    return ranked.iloc[(len(ranked) - 1) // 2]


def gain_pct(loads: pd.DataFrame, baseline: str, protocol: str, metric: str = "tow_ms") -> float | None:
    """Study E's gain of ``protocol`` over ``baseline``: ``(mean(base) − mean(p)) / mean(base) × 100``
    over the loads without error (the same definition as the report, :func:`wirelab.analysis.gain_pct`);
    None when either side has no load."""
    from wirelab.analysis.compare import gain_pct as _gain

    ok = loads[loads["error"].isna()]
    g = _gain(ok.loc[ok["protocol"] == baseline, metric], ok.loc[ok["protocol"] == protocol, metric])
    return None if math.isnan(g) else g


def _median(frame: pd.DataFrame, column: str) -> float | None:
    if column not in frame or frame[column].isna().all():
        return None
    return float(frame[column].median())


def protocol_table(loads: pd.DataFrame, protocols: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per protocol (in ``protocols`` order, the first being the baseline)."""
    protocols = list(protocols or dict.fromkeys(loads["protocol"]))
    rows = []
    for p in protocols:
        mine = loads[loads["protocol"] == p]
        ok = mine[mine["error"].isna()]
        rows.append(
            {
                "protocol": p,
                "loads": len(mine),
                "errors": int(mine["error"].notna().sum()),
                "tow_median_ms": ok["tow_ms"].median() if len(ok) else None,
                "tow_mean_ms": ok["tow_ms"].mean() if len(ok) else None,
                "plt_median_ms": ok["plt_ms"].median() if len(ok) else None,
                "plt_mean_ms": ok["plt_ms"].mean() if len(ok) else None,
                "tow_gain_pct": None if p == protocols[0] else gain_pct(loads, protocols[0], p),
                # the server under test's CPU per load (its control group), when it was measured
                "server_cpu_median_ms": _median(ok, "server_cpu_ms"),
            }
        )
    return pd.DataFrame(rows)
