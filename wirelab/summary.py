"""Per-protocol summary of one configuration's loads (what ``wirelab load`` prints).

The full statistics (confidence intervals, tests, figures) belong to ``wirelab.analysis``; this is the
small table a single configuration needs: loads, errors, median and mean ToW and PLT per protocol, and
the gain of each protocol over the first one as study E defines it — the reduction in ToW,
``(ToW_first − ToW_p) / ToW_first``, averaged over the repetitions (repetition i of one protocol is
paired with repetition i of the other; loads with an error are left out of the pair).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

__all__ = ["gain_pct", "protocol_table"]


def gain_pct(loads: pd.DataFrame, baseline: str, protocol: str, metric: str = "tow_ms") -> float | None:
    """Mean over paired repetitions of ``(base − p) / base × 100``; None when no pair exists."""
    ok = loads[loads["error"].isna()]
    base = ok[ok["protocol"] == baseline].set_index("repetition")[metric]
    other = ok[ok["protocol"] == protocol].set_index("repetition")[metric]
    paired = pd.concat([base.rename("base"), other.rename("other")], axis=1, join="inner")
    paired = paired[paired["base"] > 0]
    if paired.empty:
        return None
    return float(((paired["base"] - paired["other"]) / paired["base"]).mean() * 100)


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
            }
        )
    return pd.DataFrame(rows)
