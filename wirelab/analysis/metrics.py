"""The page metrics a comparison can be made on — the one list the report (``wirelab report
--metric``, ``write_report(metric=…)``) and ``wirelab explain --metric`` offer (docs/vitals.md,
"Metrics of the figures").

By default the figures keep the studies' metrics: time on the wire for the gains, CDFs and the
decomposition, PLT for study W's ratios and study U's scenarios. Choosing a metric puts it in the
place of both. LCP and Speed Index are measured only by Chromium loads (``client.impl =
"chromium"``); the engine's loader does not paint, so a sweep of its loads has none and choosing
them is one line, exit 2 (:func:`require`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from wirelab.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["METRICS", "Metric", "by_name", "require"]


@dataclasses.dataclass(frozen=True)
class Metric:
    """A per-load metric of the loads table (its column) and how the report names it."""

    column: str  #: the column of ``Results.loads`` (``lcp_ms``)
    short: str  #: in titles, captions and formulas (``LCP``)
    name: str  #: in sentences (``largest contentful paint``)
    chromium_only: bool = False  #: measured only by Chromium loads (visual metrics)

    @property
    def axis_label(self) -> str:
        """``LCP (ms)``."""
        return f"{self.short} (ms)"


#: The metrics in the order ``--help`` lists them; the first is the default of the gains and CDFs.
METRICS: tuple[Metric, ...] = (
    Metric("tow_ms", "ToW", "time on the wire"),
    Metric("plt_ms", "PLT", "page load time"),
    Metric("lcp_ms", "LCP", "largest contentful paint", chromium_only=True),
    Metric("speed_index_ms", "SI", "Speed Index", chromium_only=True),
    Metric("visually_complete_ms", "VC", "visually complete", chromium_only=True),
)

#: The default metric of the gains, CDFs and the decomposition (study E) …
DEFAULT_GAIN = METRICS[0]
#: … and of study W's ratios and study U's scenarios.
DEFAULT_RATIO = METRICS[1]


def names() -> list[str]:
    return [m.column for m in METRICS]


def by_name(name: str, *, option: str = "--metric") -> Metric:
    """The metric of column ``name``; an unknown one is one line naming the allowed."""
    for m in METRICS:
        if m.column == name:
            return m
    raise UsageError(f"{option}: {name!r} is not a metric; use one of {', '.join(names())}")


def require(metric: Metric, loads: pd.DataFrame, where: str, *, option: str = "--metric") -> None:
    """One line, exit 2, when no successful load of ``loads`` has ``metric`` (a sweep of the engine's
    loader has no LCP or Speed Index), instead of figures of NaN."""
    if metric.column in loads:
        ok = loads[loads["error"].isna()] if "error" in loads else loads
        if ok[metric.column].notna().any():
            return
    why = (
        ' (measured by Chromium loads only: client.impl = "chromium"; the engine\'s loader does not paint)'
        if metric.chromium_only
        else ""
    )
    raise UsageError(f"{option} {metric.column}: {where} has no successful load with {metric.short}{why}")
