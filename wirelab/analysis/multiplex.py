"""Study E's multiplexing analysis: how many concurrent streams HTTP/2 needs to beat HTTPS.

For each page and RTT, **m** is the smallest ``server.max_concurrent_streams`` at which the protocol's
mean ToW is lower than the baseline's (gain > 0); a page/RTT where no tested value wins has no m.
E relates m to the page's resource count r as m ≈ r / k; :func:`fit_m_vs_r` fits that line through
the origin by least squares (slope b = Σ r·m / Σ r², k = 1 / b) and reports R² = 1 − SS_res / SS_tot
(SS_tot about the mean of m).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["MultiplexFit", "fit_m_vs_r", "streams_needed"]


def streams_needed(
    gains: pd.DataFrame,
    *,
    streams: str = "server.max_concurrent_streams",
    group: Sequence[str] = ("page", "network.rtt_ms"),
    resources: str | None = "resources",
    gain_col: str = "gain_pct",
) -> pd.DataFrame:
    """Per group: ``m`` (NaN when never beaten), ``tested`` (number of stream values), the smallest and
    largest tested value and, when the ``resources`` column exists, ``r`` (its first value)."""
    rows = []
    group = list(group)
    for key, g in gains.groupby(group, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        g = g.sort_values(streams)
        wins = g[g[gain_col] > 0]
        row = {
            **dict(zip(group, key, strict=True)),
            "m": float(wins[streams].iloc[0]) if len(wins) else float("nan"),
            "tested": int(g[streams].nunique()),
            "streams_min": float(g[streams].min()),
            "streams_max": float(g[streams].max()),
        }
        if resources and resources in g:
            row["r"] = float(g[resources].iloc[0])
        rows.append(row)
    return pd.DataFrame(rows)


@dataclasses.dataclass(frozen=True)
class MultiplexFit:
    """m ≈ slope × r (= r / k)."""

    slope: float
    k: float
    r2: float
    n: int  #: points fitted (page/RTT pairs with an m)
    pages: int  #: distinct resource counts among them

    def describe(self) -> str:
        r2 = "undefined" if not np.isfinite(self.r2) else f"{self.r2:.2f}"
        return f"m ≈ r / {self.k:.2f} (slope {self.slope:.3f}, R² = {r2}, {self.n} points)"


def fit_m_vs_r(points: pd.DataFrame, *, r: str = "r", m: str = "m") -> MultiplexFit | None:
    """Least-squares fit of m = b·r through the origin over the rows with both values; None without
    any point (or when every r is 0). R² is NaN when every m is equal (SS_tot = 0)."""
    data = points.dropna(subset=[r, m])
    rv, mv = data[r].to_numpy(float), data[m].to_numpy(float)
    if rv.size == 0 or not (rv**2).sum():
        return None
    slope = float((rv * mv).sum() / (rv**2).sum())
    residual = float(((mv - slope * rv) ** 2).sum())
    total = float(((mv - mv.mean()) ** 2).sum())
    r2 = 1 - residual / total if total > 0 else float("nan")
    return MultiplexFit(
        slope=slope,
        k=1 / slope if slope else float("inf"),
        r2=r2,
        n=int(rv.size),
        pages=int(np.unique(rv).size),
    )
