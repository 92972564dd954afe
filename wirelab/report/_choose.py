"""Which figures a sweep's report draws, and why it leaves the others out.

This is the report's figure policy, kept apart from captions, tables and markup (``build.py``): each
function here looks at what a sweep varied and measured and decides one kind of figure — whether it is
drawn, along which axis, with which series — and, for a figure it leaves out, the sentence that says
why (the report lists them under "Chosen and left out"). Every limit is a named constant below.

==========================  =====================================================================
figure                      when
==========================  =====================================================================
gain vs X                   for each numeric axis X, when the other axes make ≤ MAX_GAIN_LINES
                            lines and X does not move together with an axis already drawn
gain per X                  for each categorical axis X but page, network and protocols (sharding,
                            a push or priority policy), when the other axes make ≤ MAX_GAIN_LINES
                            series
main effects                a gain figure was left out for too many lines: gain vs each factor
                            (numeric, or categorical as above), the others averaged
heatmap streams × RTT       the axes are max_concurrent_streams and RTT (and maybe page)
m vs r                      with the heatmap, when ≥ 2 page/RTT points have an m
decision tree               ≥ 2 numeric factors and ≥ MIN_TREE_CONFIGS configurations (one per
                            compared protocol with that many classified configurations, unless
                            every configuration has the same class)
ratio CDF (W's s)           ≥ MIN_RATIO_CONFIGS configurations
ToW CDFs                    always: every configuration up to MAX_CDF_PANELS, else the ends of the
                            first numeric axis in the first MAX_GROUPS categorical groups
phase bars                  when the loads carry HAR phases: the first MAX_GROUPS groups, at most
                            MAX_PHASE_BARS values of the first numeric axis
gateway panels              a numeric axis and (retransmissions/drops occurred, or loss, queue or
                            bandwidth was swept), when the other axes make ≤ MAX_GATEWAY_SERIES series
gateway per discipline      the sweep varies the queue discipline (a categorical network.queue axis)
                            and the loads carry the gateway's measurements: per discipline and
                            protocol the time waited at the gateway, drops by cause, retransmissions,
                            one column per configuration of the other axes up to
                            MAX_DISCIPLINE_COLUMNS (beyond, the other axes pooled, with a note)
scenario bars               a categorical axis other than page (e.g. network profiles), or no
                            numeric axis; at most MAX_SCENARIOS configurations
server cost                 the loads carry the server's cost (server_cpu_ms): per server when the
                            sweep varies server.impl (the other axes pooled), else per configuration;
                            at most MAX_SCENARIOS of them
waterfalls                  the median-PLT load of each of the first MAX_WATERFALLS protocols in the
                            configuration where the first compared protocol's gain is largest in
                            magnitude
==========================  =====================================================================
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from wirelab._registry import protocol_style
from wirelab.analysis.sweep import Axis, SweepData

__all__ = [
    "MAX_CDF_PANELS",
    "MAX_DISCIPLINE_COLUMNS",
    "MAX_GAIN_LINES",
    "MAX_GATEWAY_SERIES",
    "MAX_GROUPS",
    "MAX_LIVE_PANELS",
    "MAX_PHASE_BARS",
    "MAX_SCENARIOS",
    "MAX_WATERFALLS",
    "MIN_RATIO_CONFIGS",
    "MIN_TREE_CONFIGS",
    "GainFigure",
    "GainPlan",
    "Shape",
    "cdf_configs",
    "discipline_axis",
    "gain_plan",
    "gateway_axis",
    "heatmap",
    "phase_groups",
    "phase_values",
    "ratio_cdf",
    "scenarios",
    "server_cost",
    "server_cost_axis",
    "tree_factors",
    "tree_protocol",
    "waterfall_config",
    "waterfall_protocols",
]

#: Lines (series × compared protocols) one gain figure may hold.
MAX_GAIN_LINES = 8
#: Series one figure of gateway panels may hold.
MAX_GATEWAY_SERIES = 4
#: Columns (configurations of the other axes) the gateway-per-discipline figure shows side by side.
MAX_DISCIPLINE_COLUMNS = 4
#: Configurations the ToW CDFs show at most (all of them up to this many).
MAX_CDF_PANELS = 6
#: Categorical groups (e.g. pages) that get CDF panels and phase bars.
MAX_GROUPS = 3
#: Values of the first numeric axis one phase figure shows (spread evenly over the axis).
MAX_PHASE_BARS = 6
#: Configurations a decision tree needs (in all, and classified per protocol).
MIN_TREE_CONFIGS = 8
#: Configurations the ratio CDF needs.
MIN_RATIO_CONFIGS = 3
#: Bars (configurations, or servers) the scenario and server-cost figures show at most.
MAX_SCENARIOS = 12
#: Protocols whose median-PLT load gets a waterfall figure.
MAX_WATERFALLS = 3
#: Panels of the live sites' ToW figure (one per site); more sites are in the tables only.
MAX_LIVE_PANELS = 12

STREAMS, RTT = "server.max_concurrent_streams", "network.rtt"
#: Parameters whose sweep makes the gateway panels worth drawing (prefixes of ``Axis.param``).
_GATEWAY_PARAMS = ("network.loss", "network.queue", "network.bw")


class Shape:
    """A sweep's axes and configurations as the policy sees them. ``configs`` is the sweep's
    configuration table with a ``<column>#mpl`` column for each categorical axis (the value as a
    figure writes it)."""

    def __init__(self, sd: SweepData, configs: pd.DataFrame):
        self.sd = sd
        self.configs = configs

    @property
    def axes(self) -> list[Axis]:
        return self.sd.axes

    def determined_by(self, axis: Axis, x: Axis) -> bool:
        """Whether ``axis`` has one value per value of ``x`` (zipped or confounded axes, such as the
        object count and size of a list of synthetic pages): it then adds no series of its own."""
        counts = self.configs.groupby(x.column)[axis.column].nunique()
        return bool(len(counts)) and int(counts.max()) <= 1

    def series_for(self, x: Axis) -> list[Axis]:
        """The axes that make separate lines in a figure along ``x``."""
        return [a for a in self.axes if a != x and not self.determined_by(a, x)]

    @staticmethod
    def series_columns(axes: Sequence[Axis]) -> list[str]:
        return [a.column + "#mpl" if not a.numeric else a.column for a in axes]

    def heatmap_sweep(self) -> bool:
        """Only streams and RTT (and maybe the page) vary: the heatmap shows the sweep."""
        params = {a.param for a in self.axes}
        return {STREAMS, RTT} <= params and params <= {STREAMS, RTT, "page"}

    def gain_categories(self) -> list[Axis]:
        """Categorical axes with a gain-per-value figure: all but page (one line per page instead),
        network profiles (U's scenarios: PLT and throughput bars per scenario) and protocol lists (the
        figures already have one series per protocol)."""
        return [a for a in self.sd.categorical_axes if a.param not in ("page", "network", "protocols")]


@dataclasses.dataclass(frozen=True)
class GainFigure:
    """One gain figure: along ``axis`` (``vs`` a numeric one, ``per`` value of a categorical one), one
    series per combination of ``others`` (their figure columns: ``columns``)."""

    axis: Axis
    kind: Literal["vs", "per"]
    others: list[Axis]
    columns: list[str]


@dataclasses.dataclass
class GainPlan:
    figures: list[GainFigure]
    main_effects: list[Axis]  #: factors of the main-effects figure; empty: none
    notes: list[str]


def gain_plan(shape: Shape, comp: pd.DataFrame, compared: Sequence[str]) -> GainPlan:
    """The gain figures of a sweep whose comparison table is ``comp`` (one row per configuration and
    compared protocol)."""
    plan = GainPlan([], [], [])
    if comp.empty:
        return plan
    if shape.heatmap_sweep():
        plan.notes.append(
            "Gain vs streams and gain vs RTT are not drawn separately: the heatmap shows both axes at once."
        )
        return plan
    drawn: list[Axis] = []
    crowded: list[Axis] = []

    def series(axis: Axis, word: str, unit: str, covered_by: str) -> GainFigure | None:
        others = shape.series_for(axis)
        cols = shape.series_columns(others)
        lines = (len(comp.drop_duplicates(cols)) if cols else 1) * len(compared)
        if lines <= MAX_GAIN_LINES:
            return GainFigure(axis, "vs" if word == "vs" else "per", others, cols)
        crowded.append(axis)
        plan.notes.append(
            f"Gain {word} {axis.name} is not drawn: the other axes "
            f"({', '.join(a.name for a in others)}) would make {lines} {unit}; the main-effects "
            f"figure averages them out, and {covered_by} cover every configuration."
        )
        return None

    for axis in shape.sd.numeric_axes:
        twin = next((d for d in drawn if shape.determined_by(axis, d) and shape.determined_by(d, axis)), None)
        if twin is not None:
            plan.notes.append(
                f"Gain vs {axis.name} is not drawn: {axis.name} and {twin.name} move together in this "
                f"sweep, so it would repeat the figure along {twin.name}."
            )
            continue
        drawn.append(axis)
        figure = series(axis, "vs", "lines", "the tree and the tables")
        if figure is not None:
            plan.figures.append(figure)
    for axis in shape.gain_categories():
        drawn.append(axis)
        figure = series(axis, "per", "series", "the tables")
        if figure is not None:
            plan.figures.append(figure)
    factors = [a for a in [*shape.sd.numeric_axes, *shape.gain_categories()] if a in drawn or a in crowded]
    if crowded and len(factors) >= 2:
        plan.main_effects = factors
    return plan


def heatmap(shape: Shape, comp: pd.DataFrame) -> tuple[bool, list[str]]:
    """Whether the streams × RTT heatmaps are drawn, and the note when they are left out."""
    if shape.sd.axis(STREAMS) is None or shape.sd.axis(RTT) is None or comp.empty:
        return False, []
    extra = [a for a in shape.axes if a.param not in (STREAMS, RTT, "page")]
    if extra:
        return False, [
            "The streams × RTT heatmap is not drawn: the sweep also varies "
            f"{', '.join(a.name for a in extra)}."
        ]
    return True, []


def tree_factors(shape: Shape, comp: pd.DataFrame) -> tuple[list[Axis], list[str]]:
    """The numeric factors of the decision trees (empty: no tree), and the note when there are enough
    factors but too few configurations."""
    factors = shape.sd.numeric_axes
    n = len(shape.sd.configs)
    if len(factors) < 2 or n < MIN_TREE_CONFIGS or comp.empty:
        notes = (
            [f"No decision tree: {n} configurations (it needs ≥ {MIN_TREE_CONFIGS})."]
            if len(factors) >= 2
            else []
        )
        return [], notes
    return factors, []


def tree_protocol(classified: int) -> bool:
    """Whether a compared protocol with ``classified`` configurations (a ratio class each) gets a tree."""
    return classified >= MIN_TREE_CONFIGS


def uniform_tree_note(protocol: str) -> str:
    """A fitted tree that is one leaf is not drawn."""
    return f"No tree drawn for {protocol_style(protocol).label}: every configuration has the same class."


def ratio_cdf(shape: Shape, comp: pd.DataFrame) -> bool:
    return not comp.empty and len(shape.sd.configs) >= MIN_RATIO_CONFIGS


def cdf_configs(shape: Shape) -> list[str]:
    """The configurations (trial ids) with ToW CDF panels: all up to MAX_CDF_PANELS, else the ends of
    the first numeric axis (or the first two configurations) in each of the first MAX_GROUPS
    categorical groups."""
    configs = shape.configs
    if len(configs) <= MAX_CDF_PANELS:
        return list(configs["trial_id"])
    numeric = shape.sd.numeric_axes
    cats = [a.column for a in shape.sd.categorical_axes]
    chosen: list[str] = []
    groups: Any = configs.groupby(cats, sort=False) if cats else [((), configs)]
    for _key, group in list(groups)[:MAX_GROUPS]:
        if numeric:
            col = numeric[0].column
            ordered = group.sort_values([a.column for a in numeric])
            chosen.append(ordered.loc[ordered[col].idxmin(), "trial_id"])
            chosen.append(ordered.loc[ordered[col].idxmax(), "trial_id"])
        else:
            chosen.extend(group["trial_id"].head(2))
    return list(dict.fromkeys(chosen))[:MAX_CDF_PANELS]


def phase_groups(groups: list[Any]) -> tuple[list[Any], list[str]]:
    """The categorical groups with phase bars, and the note when some are left to the table."""
    notes = []
    if len(groups) > MAX_GROUPS:
        notes.append(
            f"Phase bars drawn for the first {MAX_GROUPS} of {len(groups)} series; the table has all."
        )
    return groups[:MAX_GROUPS], notes


def phase_values(values: list[Any]) -> list[Any]:
    """At most MAX_PHASE_BARS of an axis's sorted values, spread evenly from the first to the last."""
    if len(values) <= MAX_PHASE_BARS:
        return values
    idx = np.unique(np.linspace(0, len(values) - 1, MAX_PHASE_BARS).round().astype(int))
    return [values[i] for i in idx]


def gateway_axis(shape: Shape, table: pd.DataFrame) -> tuple[GainFigure | None, list[str]]:
    """The axis of the gateway panels and their series (as a GainFigure's fields), or None, with the
    note when too many series leave them out."""
    numeric = shape.sd.numeric_axes
    swept = [a for a in numeric if a.param.split("_")[0] in _GATEWAY_PARAMS]
    eventful = (table["retransmissions"] > 0).any() or (table["drops_queue"] > 0).any()
    if not numeric or not (swept or eventful):
        return None, []
    axis = (swept or numeric)[0]
    others = shape.series_for(axis)
    cols = shape.series_columns(others)
    n_series = len(table.drop_duplicates(cols)) if cols else 1
    if n_series > MAX_GATEWAY_SERIES:
        return None, [
            f"The gateway panels along {axis.name} are not drawn: the other axes make {n_series} "
            "series; the gateway table has every configuration."
        ]
    return GainFigure(axis, "vs", others, cols), []


def discipline_axis(shape: Shape, loads: pd.DataFrame) -> tuple[Axis | None, list[Axis], list[str]]:
    """The queue-discipline axis of the gateway-per-discipline figure (a categorical ``network.queue``
    axis: disciplines by name) and the axes whose configurations make its columns — none, pooled, with
    a note, when they are more than MAX_DISCIPLINE_COLUMNS — or None when the sweep does not vary the
    discipline or its loads lack the gateway's measurements."""
    axis = next((a for a in shape.sd.categorical_axes if a.param.startswith("network.queue")), None)
    if axis is None or "sojourn_down_p95_ms" not in loads or not loads["sojourn_down_p95_ms"].notna().any():
        return None, [], []
    others = [a for a in shape.series_for(axis) if a.param != "protocols"]
    n = len(shape.configs.drop_duplicates([a.column for a in others])) if others else 1
    if n > MAX_DISCIPLINE_COLUMNS:
        return (
            axis,
            [],
            [
                f"The gateway per discipline pools the other axes' {n} configurations (more than "
                f"{MAX_DISCIPLINE_COLUMNS}); the gateway table has every configuration."
            ],
        )
    return axis, others, []


def scenarios(shape: Shape, n_scenarios: int) -> tuple[bool, list[str]]:
    """Whether the per-configuration PLT bars are drawn, and the note when there are too many."""
    cats = [a for a in shape.sd.categorical_axes if a.param != "page"]
    if not cats and shape.sd.numeric_axes:
        return False, []
    if n_scenarios > MAX_SCENARIOS:
        return False, [f"Scenario bars not drawn: more than {MAX_SCENARIOS} configurations."]
    return True, []


def server_cost_axis(shape: Shape) -> Axis | None:
    """The axis the server-cost figure groups by: the server under test when the sweep varies it
    (the other axes pooled); None: one group per configuration."""
    return shape.sd.axis("server.impl")


def server_cost(n_groups: int) -> tuple[bool, list[str]]:
    """Whether the server-cost figure is drawn for ``n_groups`` servers or configurations."""
    if n_groups > MAX_SCENARIOS:
        return False, [f"Server cost not drawn: more than {MAX_SCENARIOS} configurations."]
    return True, []


def waterfall_config(shape: Shape, comp: pd.DataFrame, compared: Sequence[str]) -> str | None:
    """The configuration whose median loads get waterfall figures: where the first compared
    protocol's gain is largest in magnitude (the first configuration without a comparison)."""
    if comp.empty:
        return str(shape.configs["trial_id"].iloc[0])
    first = comp[comp["protocol"] == compared[0]].dropna(subset=["gain_pct"])
    return str(first.loc[first["gain_pct"].abs().idxmax(), "trial_id"]) if len(first) else None


def waterfall_protocols(protocols: Sequence[str]) -> list[str]:
    return list(protocols[:MAX_WATERFALLS])
