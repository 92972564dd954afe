"""Builds the report's model from stored sweeps: figures with their captions, tables, sentences.

Which figures a sweep gets, and why the others are left out, is decided in :mod:`wirelab.report._choose`
(the figure policy and its limits); this module computes what those figures and the tables show and
writes their titles, captions and cells. Each choice the policy makes, and each figure it leaves out,
ends up in :attr:`SweepSection.notes`.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from wirelab import _facts
from wirelab._figures import plots
from wirelab._figures.rendering import Rendered, render, slug
from wirelab._registry import CLASS_STYLES, PHASE_ORDER, PHASE_STYLES, discipline_label, protocol_style
from wirelab._summary import median_plt_load
from wirelab.analysis import conclusions as say
from wirelab.analysis import metrics as page_metrics
from wirelab.analysis import why
from wirelab.analysis.compare import compare, main_effects
from wirelab.analysis.gateway import gateway_effects, queue_delay_bound_ms
from wirelab.analysis.live import is_live, site_gains, site_of
from wirelab.analysis.multiplex import fit_m_vs_r, streams_needed
from wirelab.analysis.phases import phase_shares
from wirelab.analysis.stats import BOOTSTRAP_METHOD, N_BOOT, describe, ok_loads
from wirelab.analysis.sweep import Axis, SweepData
from wirelab.analysis.tree import fit_tree
from wirelab.errors import UsageError
from wirelab.report import _choose as choose
from wirelab.report._choose import RTT, STREAMS, GainFigure

__all__ = [
    "Cell",
    "FigureBlock",
    "Finding",
    "LoadView",
    "SweepSection",
    "TableBlock",
    "TrialView",
    "WATERFALL_OBJECT_BUDGET",
    "build_sweep",
]

#: Embed waterfall data for every load while the sweep has at most this many objects in total;
#: above, only for each trial's median-PLT load per protocol (the report says so).
WATERFALL_OBJECT_BUDGET = 40_000
CI_TEXT = f"95 % {BOOTSTRAP_METHOD} bootstrap CI ({N_BOOT} resamples of the repetitions, seeded)"


@dataclasses.dataclass
class FigureBlock:
    id: str
    title: str
    caption: str
    config: dict[str, str]
    rendered: Rendered
    kind: str

    @property
    def data_uri(self) -> str:
        return "data:image/svg+xml;base64," + base64.b64encode(self.rendered.svg.encode()).decode()

    @property
    def links(self) -> list[tuple[str, str]]:
        return [
            (p.suffix[1:].upper(), f"{p.parent.parent.name}/{p.parent.name}/{p.name}")
            for p in self.rendered.files
        ]


@dataclasses.dataclass
class Cell:
    text: str
    cls: str = ""  #: CSS classes: num, pos, neg, sig, muted, proto-<name>
    title: str = ""


@dataclasses.dataclass
class TableBlock:
    id: str
    title: str
    caption: str
    columns: list[str]
    rows: list[list[Cell]]
    open: bool = False


@dataclasses.dataclass
class Finding:
    topic: str
    sentences: list[str]


@dataclasses.dataclass
class LoadView:
    index: int
    protocol: str
    repetition: int
    tow_ms: float
    plt_ms: float
    connections: int
    retransmissions: int
    drops: int
    objects: int
    error: str | None
    waterfall: str | None  #: key into the report's waterfall data, None when not embedded
    representative: bool
    #: the chosen ``--metric``'s value when it is neither ToW nor PLT (None: not measured)
    metric_ms: float | None = None


@dataclasses.dataclass
class TrialView:
    trial_id: str
    label: str
    status: str
    flags: list[str]
    error: str | None
    lateness_p99_us: float | None
    loads: list[LoadView]


@dataclasses.dataclass
class SweepSection:
    name: str
    anchor: str
    description: str
    varied: list[tuple[str, str]]
    fixed: dict[str, str]
    counts: dict[str, str]
    findings: list[Finding]
    figures: list[FigureBlock]
    tables: list[TableBlock]
    trials: list[TrialView]
    notes: list[str]
    spec_toml: str
    provenance: dict[str, str]
    waterfalls: dict[str, Any]
    #: the metric whose median load the drill-down's ★ marks (``PLT``, or the chosen ``--metric``)
    representative_metric: str = "PLT"
    #: the drill-down's column of the chosen ``--metric`` when it is neither ToW nor PLT (``LCP``)
    metric_column: str | None = None


class SectionBuilder:
    """What the builder of a sweep's section collects (a trial sweep's: ``_Builder`` here; a load
    test's: ``report._capacity``): its figures — rendered into ``figures_dir``, anchored under the
    sweep's name —, tables, findings and notes."""

    def __init__(self, sweep: str, figures_dir: Path):
        self.sweep_name = sweep
        self.figures_dir = figures_dir
        self.figures: list[FigureBlock] = []
        self.tables: list[TableBlock] = []
        self.findings: list[Finding] = []
        self.notes: list[str] = []

    def add_figure(
        self, kind: str, title: str, caption: str, make: Callable[..., Any], config: dict[str, str]
    ) -> None:
        """Render ``make()`` into ``figures_dir`` under a name of its own (``kind-title``, numbered when
        taken) and add it to the section's figures."""
        name = slug(f"{kind}-{title}")
        taken = {f.rendered.name for f in self.figures}
        base, i = name, 2
        while name in taken:
            name, i = f"{base}-{i}", i + 1
        rendered = render(make(), name)
        rendered.write(self.figures_dir)
        anchor = f"fig-{self.sweep_name}-{name}"
        self.figures.append(FigureBlock(anchor, title, caption, config, rendered, kind))


def sweep_section(
    data: Any,
    *,
    quality: list[str],
    findings: list[Finding],
    fixed: dict[str, str],
    counts: dict[str, str],
    figures: list[FigureBlock],
    tables: list[TableBlock],
    notes: list[str],
    provenance: dict[str, str],
    trials: list[TrialView] | None = None,
    waterfalls: dict[str, Any] | None = None,
    metric: page_metrics.Metric | None = None,
) -> SweepSection:
    """A sweep's section (a trial sweep's ``SweepData`` or a load test's ``CapacityData``: its name,
    description, axes and spec) with what its builder made; ``quality``, when it says anything, is the
    last finding ("Data quality")."""
    if quality:
        findings.append(Finding("Data quality", quality))
    return SweepSection(
        name=data.name,
        anchor=f"sweep-{slug(data.name)}",
        description=data.description,
        varied=[(a.label, ", ".join(a.format(v) for v in a.values)) for a in data.axes],
        fixed=fixed,
        counts=counts,
        findings=findings,
        figures=figures,
        tables=tables,
        trials=trials or [],
        notes=notes,
        spec_toml=data.source or json.dumps(data.spec, indent=1),
        provenance=provenance,
        waterfalls=waterfalls or {},
        representative_metric=(metric or page_metrics.DEFAULT_RATIO).short,
        metric_column=metric.short if metric and metric.column not in ("tow_ms", "plt_ms") else None,
    )


def _number(v: Any) -> float | None:
    """A stored number, None for a missing one (NaN, None)."""
    return None if v is None or v != v else float(v)


def _mpl(text: Any) -> str:
    """A string safe for matplotlib text (no mathtext from a page's '$')."""
    return str(text).replace("$", r"\$")


def _fmt(v: Any, digits: int = 1) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    if isinstance(v, float | np.floating):
        return f"{v:,.{digits}f}"
    return str(v)


def _p_text(p: float) -> str:
    if p is None or not math.isfinite(p):
        return "—"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


class _Builder(SectionBuilder):
    def __init__(
        self, sd: SweepData, figures_dir: Path, seed: int, metric: page_metrics.Metric | None = None
    ):
        super().__init__(sd.name, figures_dir)
        self.sd = sd
        #: the metrics of the gains/CDFs (g) and of the ratios/scenarios (r): the chosen one in place of
        #: both, else the studies' ToW and PLT (docs/vitals.md, "Metrics of the figures")
        self.metric = metric
        self.g = metric or page_metrics.DEFAULT_GAIN
        self.r = metric or page_metrics.DEFAULT_RATIO
        self.seed = seed
        self.fixed = sd.fixed()
        self.ok = ok_loads(sd.loads)
        configs = sd.configs.copy()
        configs["label_mpl"] = configs["label"].map(_mpl)
        self.configs = configs
        for axis in sd.categorical_axes:
            self.configs[axis.column + "#mpl"] = self.configs[axis.column].map(_mpl)
        #: Every configuration loads a live page (docs/live.md): E's live figures replace the CDFs.
        self.live_sweep = bool(len(configs)) and all(is_live(p) for p in configs["page"])
        self.shape = choose.Shape(sd, self.configs)

    # helpers ---------------------------------------------------------------------------------
    def with_config(self, frame: pd.DataFrame) -> pd.DataFrame:
        extra = [c for c in self.configs.columns if c not in frame.columns or c == "trial_id"]
        return frame.merge(self.configs[extra], on="trial_id", how="left")

    def config_text(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {**self.fixed, **(extra or {})}

    def series_names(self, frame: pd.DataFrame, axes: Sequence[Axis]) -> dict[str, str]:
        cols = choose.Shape.series_columns(axes)
        names = {}
        for row in frame.to_dict("records"):
            key = " · ".join(str(row[c]) for c in cols)
            names[key] = " · ".join(
                _mpl(a.format(row[a.column])) if a.numeric else str(row[c])
                for a, c in zip(axes, cols, strict=True)
            )
        return names

    def class_names(self, protocol: str) -> dict[str, str]:
        x, b = protocol_style(protocol).label, protocol_style(self.sd.baseline).label
        return {k: v[0].format(x=x, base=b) for k, v in CLASS_STYLES.items()}

    # sections --------------------------------------------------------------------------------
    def build(self) -> None:
        sd = self.sd
        loads = sd.loads
        self.desc = {
            m: self.with_config(describe(loads, ["trial_id", "protocol"], m, seed=self.seed))
            for m in dict.fromkeys(("tow_ms", "plt_ms", self.g.column, self.r.column))
        }
        self.comp = (
            self.with_config(
                compare(
                    self.metric_loads(loads),
                    ["trial_id"],
                    sd.baseline,
                    sd.compared,
                    seed=self.seed,
                    gain_metric=self.g.column,
                    ratio_metric=self.r.column,
                )
            )
            if sd.compared
            else pd.DataFrame()
        )
        self.gateway = self.with_config(
            gateway_effects(
                loads,
                ["trial_id", "protocol"],
                objects=sd.objects,
                queue_bounds={t: queue_delay_bound_ms(e, self._spec(t)) for t, e in sd.emulator.items()},
            )
        )
        self.shares = self.with_config(phase_shares(loads, ["trial_id", "protocol"]))
        self.comparison_findings()
        self.gain_figures()
        self.why_section()
        self.heatmap()
        self.tree()
        self.ratio_cdf()
        self.cdfs()
        self.live_sites()
        self.phases()
        self.gateway_section()
        self.discipline_section()
        self.scenarios()
        self.server_cost()
        self.waterfalls()
        self.filmstrip()
        self.number_tables()
        self.visual_table()

    def metric_loads(self, loads: pd.DataFrame) -> pd.DataFrame:
        """With a chosen metric, the loads that have it (and the failed ones, which the statistics
        leave out anyway): a successful Chromium load without an LCP does not enter the figures as 0."""
        if self.metric is None:
            return loads
        return loads[loads["error"].notna() | loads[self.metric.column].notna()]

    def without_metric(self, loads: pd.DataFrame, names: dict[str, str]) -> str:
        """With a chosen metric, a sentence naming the groups (``names``: trial id → what the figure
        calls it) none of whose successful loads has it — they are missing from the figure, not drawn
        with ToW or PLT instead; empty when every group has it (or no metric was chosen)."""
        if self.metric is None:
            return ""
        col = self.metric.column
        has = set(loads.loc[loads[col].notna(), "trial_id"]) if col in loads else set()
        missing = list(dict.fromkeys(n for t, n in names.items() if t not in has))
        if not missing:
            return ""
        why = (
            " (measured by Chromium loads only; the engine's loader does not paint)"
            if (self.metric.chromium_only)
            else ""
        )
        return (
            f" No successful load of {', '.join(missing)} has {self.metric.short}{why}: "
            f"{'it is' if len(missing) == 1 else 'they are'} left out here."
        )

    def _spec(self, trial_id: str) -> dict[str, Any] | None:
        match = self.sd.trials[self.sd.trials["trial_id"] == trial_id]
        return match["spec"].iloc[0] if len(match) else None

    def comparison_findings(self) -> None:
        sd = self.sd
        for proto in sd.compared:
            sentences = say.gain_sentences(self.comp, sd.axes, sd.baseline, proto, metric=self.g.short)
            sentences += say.ratio_sentences(self.comp, sd.baseline, proto, metric=self.r.short)
            if sentences:
                title = f"{protocol_style(proto).label} vs {protocol_style(sd.baseline).label}"
                self.findings.append(Finding(title, sentences))

    def why_section(self) -> None:
        """Why the protocols differ (docs/why.md): per configuration each part's signed contribution
        to the difference in time on the wire, the deciding part and where along the axis it changes.
        Left out for loads without a decomposition (older engines) or with one protocol."""
        sd = self.sd
        try:
            frame = why.explain(sd)
        except UsageError:
            return
        self.findings.append(Finding("Why the protocols differ", why.sentences(frame, sd)))
        parts = [(p.key, p.label) for p in _facts.why_parts()]
        frame = frame.merge(self.configs[["trial_id", "label_mpl"]], on="trial_id", how="left")
        self.add_figure(
            "why",
            "Why: each mechanism's contribution to the difference",
            "Per configuration, the difference in time on the wire (tow_first_packet_ms: from the load's "
            "first packet to its last response packet, means over its successful loads) against "
            f"{protocol_style(sd.baseline).label} (◆), split into the mechanisms that made it: each "
            "part's mean for the protocol minus its mean for the baseline, left of 0 where the protocol "
            "spent less time in it. Every load's time on the wire is partitioned into these parts "
            "(docs/why.md), so the bars sum to the difference.",
            functools.partial(plots.why_figure, frame, parts=parts, label="label_mpl"),
            self.config_text(),
        )
        shown = [k for k, _ in parts if frame[k].abs().ge(0.5).any()]
        labels = dict(parts)
        rows = [
            [
                Cell(str(r["label"])),
                Cell(
                    f"{protocol_style(r['protocol']).label} vs {protocol_style(r['baseline']).label}",
                    f"proto proto-{r['protocol']}",
                ),
                Cell(_fmt(r["difference_ms"], 0), "num"),
                *(Cell(_fmt(r[k], 0), "num" + (" sig" if k == r["deciding"] else "")) for k in shown),
            ]
            for r in frame.to_dict("records")
        ]
        self.tables.append(
            TableBlock(
                f"tab-{sd.name}-why",
                "Why: contributions to the difference in time on the wire (ms)",
                "Means per load: the protocol's part minus the baseline's; they sum to the difference. "
                "Bold: the deciding part (the largest in the direction of the difference).",
                ["configuration", "comparison", "difference", *(labels[k] for k in shown)],
                rows,
            )
        )

    def gain_figures(self) -> None:
        plan = choose.gain_plan(self.shape, self.comp, self.sd.compared)
        self.notes.extend(plan.notes)
        for figure in plan.figures:
            self.gain_figure(figure)
        if plan.main_effects:
            self.main_effects(plan.main_effects)

    def gain_figure(self, figure: GainFigure) -> None:
        sd, axis, others, cols = self.sd, figure.axis, figure.others, figure.columns
        compared = ", ".join(protocol_style(p).label for p in sd.compared)
        lines = ", ".join(a.name for a in others) or "protocol"
        g = self.g.short
        frame = self.comp
        names = self.series_names(frame, others)
        if figure.kind == "vs":
            caption = (
                f"Study E's gain, ({g}_base − {g}_x) / {g}_base from the mean {g} of each configuration, of "
                f"{compared} over {protocol_style(sd.baseline).label}; bands: {CI_TEXT}; filled markers: "
                f"two-sided Mann–Whitney p < 0.05. One line per {lines}."
            )
            make = functools.partial(
                plots.gain_figure,
                frame,
                axis.column,
                x_label=axis.label,
                series=cols,
                series_names=names,
                log_x=axis.log,
                y_label=f"{g} reduction (%)",
            )
            self.add_figure(
                "gain",
                f"{g} reduction vs {axis.name}",
                caption,
                make,
                self.config_text({"varied": axis.label}),
            )
            return
        caption = (
            f"Study E's gain, ({g}_base − {g}_x) / {g}_base from the mean {g} of each configuration, of "
            f"{compared} over {protocol_style(sd.baseline).label} for each {axis.name}; bars: {CI_TEXT}; "
            f"filled markers: two-sided Mann–Whitney p < 0.05. One series per {lines}."
        )
        make = functools.partial(
            plots.category_gain_figure,
            frame,
            axis.column + "#mpl",
            categories=[_mpl(v) for v in axis.values],
            x_label=axis.label,
            series=cols,
            series_names=names,
            y_label=f"{g} reduction (%)",
        )
        self.add_figure(
            "gain", f"{g} reduction per {axis.name}", caption, make, self.config_text({"varied": axis.label})
        )

    def main_effects(self, axes: Sequence[Axis]) -> None:
        """Gain vs each factor with the other factors averaged out, when lines per value would be too many."""
        effects = main_effects(self.comp, [a.column for a in axes], seed=self.seed)
        if effects.empty:
            return
        names = {a.column: a for a in axes}
        self.findings.append(
            Finding("Main effects", say.main_effect_sentences(effects, names, self.sd.baseline))
        )
        categories = {a.column: [_mpl(v) for v in a.values] for a in axes if not a.numeric}
        drawn = effects.assign(
            level=[
                _mpl(level) if factor in categories else level
                for factor, level in zip(effects["factor"], effects["level"], strict=True)
            ]
        )
        self.add_figure(
            "effects",
            f"{self.g.short} reduction vs each factor, the others averaged",
            "For each factor and value, the mean over the configurations with that value of study E's gain "
            f"(every other factor averaged out), with a 95 % {BOOTSTRAP_METHOD} bootstrap CI over those "
            "configurations; a steep panel marks a factor that matters.",
            lambda: plots.main_effects_figure(
                drawn,
                [(a.column, a.label, a.log) for a in axes],
                baseline=self.sd.baseline,
                categories=categories,
                metric=self.g.short,
            ),
            self.config_text({"factors": ", ".join(a.name for a in axes)}),
        )

    def heatmap(self) -> None:
        sd = self.sd
        draw, notes = choose.heatmap(self.shape, self.comp)
        self.notes.extend(notes)
        streams, rtt = sd.axis(STREAMS), sd.axis(RTT)
        if not draw or streams is None or rtt is None:
            return
        pages = list(dict.fromkeys(self.comp["page"]))
        all_points = []
        for proto in sd.compared:
            mine = self.comp[self.comp["protocol"] == proto]
            points = streams_needed(
                mine, streams=streams.column, group=["page", rtt.column], resources="resources"
            )
            points["protocol"] = proto
            all_points.append(points)
            for page in pages:
                grid = mine[mine["page"] == page]
                boundary = points[points["page"] == page]
                found = boundary.dropna(subset=["m"])
                trend = None
                if found[rtt.column].nunique() >= 2:
                    slope, intercept = np.polyfit(
                        found[rtt.column].astype(float), found["m"].astype(float), 1
                    )
                    trend = (float(intercept), float(slope))
                title = f"{protocol_style(proto).label} vs {protocol_style(sd.baseline).label} on {page}"
                caption = (
                    f"Mean {self.g.short} reduction (%) per max_concurrent_streams × RTT for page {page} "
                    "(blue: "
                    f"{protocol_style(proto).label} faster). Circles: the fewest streams at which it beats "
                    f"{protocol_style(sd.baseline).label} at each RTT; dashed: least-squares trend "
                    "of that number "
                    "against RTT."
                )
                self.add_figure(
                    "heatmap",
                    title,
                    caption,
                    functools.partial(
                        plots.heatmap_figure,
                        grid,
                        metric=self.g.short,
                        x=streams.column,
                        y=rtt.column,
                        x_label=streams.label,
                        y_label=rtt.label,
                        boundary=boundary,
                        trend=trend,
                    ),
                    self.config_text({"page": str(page)}),
                )
        points = pd.concat(all_points, ignore_index=True)
        rows = []
        for proto in sd.compared:
            mine = points[points["protocol"] == proto]
            fit = fit_m_vs_r(mine)
            self.findings.append(
                Finding(
                    f"Streams needed ({protocol_style(proto).label})",
                    say.multiplex_sentences(mine, fit, sd.baseline, proto),
                )
            )
            if fit is not None and fit.n >= 2:
                self.add_figure(
                    "multiplex",
                    f"Streams needed vs resources ({protocol_style(proto).label})",
                    "Each point: a page and RTT; m = the smallest max_concurrent_streams at which "
                    "the protocol's "
                    f"mean {self.g.short} beats the baseline's; r = objects on the page. Line: m = r / k by "
                    "least squares "
                    "through the origin.",
                    functools.partial(
                        plots.multiplex_figure,
                        mine.assign(page=mine["page"].map(_mpl)),
                        slope=fit.slope,
                        r2=fit.r2,
                    ),
                    self.config_text(),
                )
            for r in mine.to_dict("records"):
                rows.append(
                    [
                        Cell(protocol_style(proto).label, f"proto proto-{proto}"),
                        Cell(str(r["page"])),
                        Cell(rtt.format(r[rtt.column]), "num"),
                        Cell(_fmt(r.get("r"), 0), "num"),
                        Cell(_fmt(r["m"], 0) if math.isfinite(r["m"]) else "never", "num"),
                        Cell(f"{r['streams_min']:g}–{r['streams_max']:g} ({r['tested']})", "num muted"),
                    ]
                )
        self.tables.append(
            TableBlock(
                f"tab-{self.sd.name}-streams",
                "Streams needed to win",
                'm per page and RTT ("never": no tested stream limit wins).',
                ["protocol", "page", "RTT", "resources r", "m", "tested streams"],
                rows,
            )
        )

    def tree(self) -> None:
        sd = self.sd
        factors, notes = choose.tree_factors(self.shape, self.comp)
        self.notes.extend(notes)
        if not factors:
            return
        names = {a.column: a.name for a in factors}
        units = {a.column: "{:g} " + a.unit if a.unit else "{:g}" for a in factors}
        for proto in sd.compared:
            data = self.comp[self.comp["protocol"] == proto]
            if not choose.tree_protocol(int(data["cls"].notna().sum())):
                continue
            tree = fit_tree(data, [a.column for a in factors])
            class_names = self.class_names(proto)
            self.findings.append(
                Finding(
                    f"Decision tree ({protocol_style(proto).label})",
                    say.tree_sentences(tree, names, class_names),
                )
            )
            if tree.root.is_leaf:
                self.notes.append(choose.uniform_tree_note(proto))
                continue
            self.add_figure(
                "tree",
                f"What decides {protocol_style(proto).label} vs {protocol_style(sd.baseline).label}",
                "Study W's decision tree (scikit-learn, Gini, depth ≤ 4) over the sweep's numeric "
                "factors; classes "
                f"from s = median {self.r.short} ratio (< 0.9, > 1.1, else equal). Coloured nodes: majority "
                "class likelihood "
                f"> {tree.threshold:.2f}; white: mixed. Left branch (yes): the condition holds.",
                functools.partial(
                    plots.tree_figure, tree, names=names, class_names=class_names, formats=units
                ),
                self.config_text({"factors": ", ".join(names[f] for f in tree.features)}),
            )
            rows = []
            for condition, leaf in tree.rules(names):
                label = class_names.get(leaf.label, leaf.label) if leaf.label else "mixed"
                rows.append(
                    [
                        Cell(condition),
                        Cell(label, f"cls-{leaf.label or 'mixed'}"),
                        Cell(f"{leaf.likelihood * 100:.0f} %", "num"),
                        Cell(str(leaf.samples), "num"),
                        Cell(
                            ", ".join(f"{class_names.get(k, k)} {v}" for k, v in leaf.counts.items() if v),
                            "muted",
                        ),
                    ]
                )
            rows.append(
                [
                    Cell(
                        "importances: "
                        + ", ".join(f"{names[f]} {v:.2f}" for f, v in tree.importances.items())
                    ),
                    Cell(""),
                    Cell(""),
                    Cell(str(tree.samples), "num"),
                    Cell(f"training accuracy {tree.accuracy * 100:.0f} %", "muted"),
                ]
            )
            self.tables.append(
                TableBlock(
                    f"tab-{sd.name}-tree-{proto}",
                    f"Decision tree leaves ({protocol_style(proto).label})",
                    "Each leaf's path from the root, its label (when likelihood > 0.75) and class counts.",
                    ["condition", "class", "likelihood", "configurations", "counts"],
                    rows,
                )
            )

    def ratio_cdf(self) -> None:
        if not choose.ratio_cdf(self.shape, self.comp):
            return
        self.add_figure(
            "ratio",
            f"{self.r.short} ratio across configurations",
            f"Study W's s = median {self.r.short} of each protocol / median {self.r.short} of the "
            "baseline, one "
            "value per "
            "configuration; "
            "shaded: the classes (s < 0.9 the protocol is better, s > 1.1 the baseline).",
            lambda: plots.ratio_cdf_figure(
                self.comp.dropna(subset=["s"]), baseline=self.sd.baseline, metric=self.r.short
            ),
            self.config_text(),
        )

    def cdfs(self) -> None:
        if self.live_sweep:
            return  # live_sites draws every site's
        chosen = choose.cdf_configs(self.shape)
        panels = []
        for trial_id in chosen:
            mine = self.ok[self.ok["trial_id"] == trial_id]
            label = self.configs.set_index("trial_id").loc[trial_id, "label_mpl"]
            data = {
                p: mine.loc[mine["protocol"] == p, self.g.column].dropna().to_numpy(float)
                for p in self.sd.protocols
            }
            panels.append((label, {p: v for p, v in data.items() if len(v)}))
        if not panels:
            return
        more = (
            ""
            if len(chosen) == len(self.configs)
            else " (the ends of the first axis; every configuration is in the tables)"
        )
        self.add_figure(
            "cdf",
            f"{self.g.short} distributions" if self.metric else "Time on Wire distributions",
            f"Empirical CDF of {self.g.short} over the repetitions, per protocol and configuration{more}.",
            lambda: plots.cdf_figure(panels, x_label=self.g.axis_label),
            self.config_text(),
        )

    def live_sites(self) -> None:
        """Study E's live figures: a ToW (or ``--metric``) CDF per protocol per site and the table of
        average gain per site (wirelab.analysis.live)."""
        if not self.live_sweep:
            return
        sd = self.sd
        configs = self.configs.assign(site=self.configs["page"].map(site_of))
        per_site = configs.groupby("site", sort=False)["trial_id"].count()
        # One configuration per site: the site names it; else the configuration's label does.
        name_col = "site" if int(per_site.max()) == 1 else "label"
        names = configs.set_index("trial_id")[name_col]
        g = self.g
        missing = self.without_metric(self.ok, names.to_dict())
        panels = []
        for trial_id in configs["trial_id"].head(choose.MAX_LIVE_PANELS):
            mine = self.ok[self.ok["trial_id"] == trial_id]
            data = {
                p: mine.loc[mine["protocol"] == p, g.column].dropna().to_numpy(float) for p in sd.protocols
            }
            data = {p: v for p, v in data.items() if len(v)}
            if data:
                panels.append((_mpl(names[trial_id]), data))
        if panels:
            more = (
                ""
                if len(configs) <= choose.MAX_LIVE_PANELS
                else f" (the first {choose.MAX_LIVE_PANELS} of {len(configs)}; every site is in the tables)"
            )
            self.add_figure(
                "live-cdf",
                f"{g.short} per live site" if self.metric else "Time on Wire per live site",
                f"Empirical CDF of {g.short} over the repetitions, per protocol, one panel per site{more}: "
                f"study E's live figure. The loads alternated the protocols.{missing}",
                lambda: plots.cdf_figure(panels, x_label=g.axis_label),
                self.config_text(),
            )
        if not sd.compared:
            return
        loads = self.with_config(self.metric_loads(sd.loads))
        loads["site"] = loads["trial_id"].map(names)
        gains = site_gains(loads, sd.baseline, sd.compared, seed=self.seed, metric=g.column)
        rows = []
        for r in gains.to_dict("records"):
            gp = r["gain_pct"]
            rows.append(
                [
                    Cell(str(r["site"])),
                    Cell(
                        f"{protocol_style(r['protocol']).label} vs {protocol_style(r['baseline']).label}",
                        f"proto proto-{r['protocol']}",
                    ),
                    Cell(f"{r['n_base']} / {r['n']}", "num muted"),
                    Cell(_fmt(r["base_mean"], 0), "num"),
                    Cell(_fmt(r["mean"], 0), "num"),
                    Cell(
                        _fmt(gp) + " %" if math.isfinite(gp) else "—",
                        "num " + ("pos" if gp > 0 else "neg" if gp < 0 else ""),
                    ),
                    Cell(f"{_fmt(r['ci_low'])} to {_fmt(r['ci_high'])}", "num muted"),
                ]
            )
        self.tables.append(
            TableBlock(
                f"tab-{sd.name}-live-gain",
                "Average gain per site",
                f"Study E's live table: per site, the mean {g.short} over the loads without error of the "
                f"baseline and of each protocol, and the gain (% reduction of the mean {g.short}; positive: "
                f"the protocol is faster) with its {CI_TEXT}. n: loads of the baseline / of the protocol"
                + (f" that have {g.short}." if self.metric else ".")
                + missing,
                [
                    "site",
                    "comparison",
                    "n",
                    f"baseline {g.short} mean ms",
                    f"{g.short} mean ms",
                    "gain",
                    "95 % CI",
                ],
                rows,
                open=True,
            )
        )
        for proto in sd.compared:
            mine = gains[(gains["protocol"] == proto) & gains["gain_pct"].notna()]
            if mine.empty:
                continue
            faster = int((mine["gain_pct"] > 0).sum())
            label, base = protocol_style(proto).label, protocol_style(sd.baseline).label
            self.findings.append(
                Finding(
                    f"Live sites: {label} vs {base}",
                    [
                        f"{label} loaded {faster} of {len(mine)} sites faster than {base} on average "
                        f"(gain in mean {g.short} from {mine['gain_pct'].min():+.1f} % to "
                        f"{mine['gain_pct'].max():+.1f} %)."
                    ],
                )
            )

    def phases(self) -> None:
        shares = self.shares
        phases = [p for p in PHASE_ORDER if p in shares.columns]
        if not phases:
            return
        numeric = self.sd.numeric_axes
        cats = self.sd.categorical_axes
        groups = shares.groupby([a.column for a in cats], sort=False) if cats else [((), shares)]
        groups, notes = choose.phase_groups(list(groups))
        for key, group in groups:
            key = key if isinstance(key, tuple) else (key,)
            name = ", ".join(str(k) for k in key)
            if numeric:
                col = numeric[0].column
                values = choose.phase_values(sorted(group[col].dropna().unique()))
                # other numeric axes: their first value
                sel = group[group[col].isin(values)]
                for other in numeric[1:]:
                    sel = sel[sel[other.column] == other.values[0]]
                sel = sel.sort_values(col).assign(group=lambda d, a=numeric[0]: d[a.column].map(a.format))
                varied = numeric[0].name + (
                    f" (at {', '.join(f'{o.name} {o.format(o.values[0])}' for o in numeric[1:])})"
                    if numeric[1:]
                    else ""
                )
            else:
                sel = group.assign(group=group["label_mpl"])
                varied = "configuration"
            if sel.empty:
                continue
            title = f"Where the time goes{' — ' + name if name else ''}"
            self.add_figure(
                "phases",
                title,
                "Share of summed request time per HAR phase (connect = TCP handshake without "
                "TLS), mean over "
                f"the loads without error, one bar per protocol, by {varied}.",
                functools.partial(plots.phase_figure, sel, group="group", protocols=self.sd.protocols),
                self.config_text({"page": name} if name else None),
            )
        self.notes.extend(notes)
        self.findings.append(Finding("Where the time goes", say.phase_sentences(shares, self.sd.protocols)))
        rows = []
        for r in shares.to_dict("records"):
            rows.append(
                [
                    Cell(str(r["label"])),
                    Cell(protocol_style(r["protocol"]).label, f"proto proto-{r['protocol']}"),
                ]
                + [Cell(_fmt(r[p] * 100 if pd.notna(r[p]) else None, 0), "num") for p in phases]
                + [Cell(_fmt(r["total_ms"], 0), "num")]
            )
        self.tables.append(
            TableBlock(
                f"tab-{self.sd.name}-phases",
                "Phase shares",
                "Percent of summed request time per phase (HAR timings; connect without ssl).",
                ["configuration", "protocol", *(PHASE_STYLES[p].label + " %" for p in phases), "Σ ms/load"],
                rows,
            )
        )

    def gateway_section(self) -> None:
        sd = self.sd
        table = self.gateway
        if table.empty:
            return
        self.findings.append(
            Finding("Retransmissions and the gateway", say.gateway_sentences(table, sd.axes))
        )
        figure, notes = choose.gateway_axis(self.shape, table)
        self.notes.extend(notes)
        if figure is not None:
            axis, others, cols = figure.axis, figure.others, figure.columns
            measured = "gateway_ms" in table
            panels = [
                ("retransmissions", "retransmissions per load"),
                ("drops_queue", "queue drops per load"),
                ("gateway_ms", "critical bytes in the gateway queue (ms, measured)")
                if measured
                else ("rtt_inflation_ms", "RTT inflation (ms, estimate)"),
            ]
            if measured:
                panels.append(("retx_timeout", "retransmission timeouts per load"))
            if axis.param.startswith("network.queue"):
                panels.append(("queue_delay_bound_ms", "queueing delay bound (ms)"))
            self.add_figure(
                "gateway",
                f"Retransmissions and the gateway vs {axis.name}",
                (
                    "Means per load. The critical bytes' time in the gateway queue is measured: how long "
                    "the load's critical bytes waited there behind other packets (gateway_ms, docs/why.md; "
                    "not every packet's wait, the sojourn)."
                    if measured
                    else "Means per load. RTT inflation is estimated from the HAR: median time to first "
                    "byte of the sub-resources minus the first TCP handshake's RTT (these loads have no "
                    "decomposition)."
                )
                + " The queueing-delay bound is the emulator's largest downlink queue occupancy × 1500 B "
                "at the link rate.",
                functools.partial(
                    plots.gateway_figure,
                    table,
                    axis.column,
                    x_label=axis.label,
                    series=cols,
                    series_names=self.series_names(table, others),
                    log_x=axis.log,
                    panels=panels,
                ),
                self.config_text({"varied": axis.label}),
            )
        measured = "gateway_ms" in table
        delay = "gateway_ms" if measured else "rtt_inflation_ms"
        kinds = [k for k in _facts.retx_keys() if k in table]
        rows = []
        for r in table.to_dict("records"):
            rows.append(
                [
                    Cell(str(r["label"])),
                    Cell(protocol_style(r["protocol"]).label, f"proto proto-{r['protocol']}"),
                    Cell(_fmt(r["retransmissions"]), "num"),
                    *(Cell(_fmt(r[k]), "num") for k in kinds),
                    Cell(_fmt(r["retransmission_pct"], 2), "num"),
                    Cell(_fmt(r["drops_queue"]), "num"),
                    Cell(_fmt(r["drops_loss"]), "num"),
                    Cell(_fmt(r["connections"]), "num"),
                    Cell(_fmt(r["throughput_mbit"], 2), "num"),
                    Cell(_fmt(r.get(delay), 0), "num"),
                    Cell(_fmt(r.get("queue_delay_bound_ms"), 0), "num"),
                ]
            )
        self.tables.append(
            TableBlock(
                f"tab-{sd.name}-gateway",
                "Retransmissions, drops and the gateway",
                (
                    "Means per load. Retransmissions by kind and the critical bytes' time in the gateway "
                    "queue are measured (docs/why.md); the queueing-delay bound is an estimate (see the "
                    "figure)."
                    if measured
                    else "Means per load. RTT inflation and the queueing-delay bound are estimates "
                    "(see the figure)."
                ),
                [
                    "configuration",
                    "protocol",
                    "retrans.",
                    *(k.removeprefix("retx_") for k in kinds),
                    "retrans. % pkts",
                    "queue drops",
                    "loss drops",
                    "connections",
                    "throughput Mbit/s",
                    "critical bytes in gateway ms" if measured else "RTT inflation ms",
                    "queue delay bound ms",
                ],
                rows,
            )
        )

    def discipline_section(self) -> None:
        """The gateway per queue discipline: gain, the time packets waited at the gateway, its drops by
        cause, marks and the retransmissions, per discipline and protocol (docs/reproducing.md,
        gateway-aqm)."""
        sd = self.sd
        axis, others, notes = choose.discipline_axis(self.shape, self.ok)
        self.notes.extend(notes)
        if axis is None:
            return
        loads = self.ok.copy()
        column = None
        if others:
            column = "_configuration"
            loads[column] = [
                " · ".join(f"{a.name} {a.format(r[a.column])}" for a in others)
                for r in loads.to_dict("records")
            ]
        by = [axis.column, *([column] if column else [])]
        table = gateway_effects(loads, [*by, "protocol"])
        g = self.g
        missing = self.without_metric(loads, self.configs.set_index("trial_id")["label"].to_dict())
        if sd.compared:
            gains = compare(
                self.metric_loads(loads),
                by,
                sd.baseline,
                sd.compared,
                seed=self.seed,
                gain_metric=g.column,
                ratio_metric=self.r.column,
            )[[*by, "protocol", "gain_pct"]]
            table = table.merge(gains, on=[*by, "protocol"], how="left")
        order = {v: i for i, v in enumerate(axis.values)}
        table = table.sort_values(axis.column, key=lambda c: c.map(order), kind="stable")
        panels = []
        if "gain_pct" in table:
            panels.append(("gain_pct", f"{g.short} reduction vs {protocol_style(sd.baseline).label} (%)"))
        panels += [("sojourn_down_p95_ms", "gateway delay, p95 down (ms)"), ("drops", "queue drops per load")]
        if "marks" in table and (table["marks"] > 0).any():
            panels.append(("marks", "ECN marks per load"))
        panels.append(("retransmissions", "retransmissions per load"))
        self.add_figure(
            "gateway-discipline",
            "The gateway per discipline",
            f"Per discipline and protocol, means per load: the {g.short} reduction against the baseline "
            "(study E's gain of the mean), the "
            "95th percentile of the time the load's down packets waited in the gateway's queue (measured "
            "by the emulator), the queue's drops by cause (tail: a full drop-tail queue; AQM: the "
            f"discipline's early drops; overflow: an AQM's hard limit) and the retransmissions.{missing}",
            functools.partial(
                plots.discipline_figure,
                table,
                discipline=axis.column,
                column=column,
                protocols=sd.protocols,
                panels=panels,
            ),
            self.config_text({"varied": axis.label}),
        )
        # Overflow drops and ECN marks only where some load had them (most sweeps have neither).
        columns = [
            ("gain_pct", f"{g.short} reduction %"),
            ("sojourn_down_p50_ms", "delay p50 ms"),
            ("sojourn_down_p95_ms", "delay p95 ms"),
            ("drops_tail", "tail drops"),
            ("drops_aqm", "AQM drops"),
            ("drops_overflow", "overflow drops"),
            ("marks", "ECN marks"),
            ("retransmissions", "retrans."),
            ("flows_congested", "congested flows"),
            ("max_flow_drops", "max drops of a flow"),
        ]
        columns = [
            (c, h)
            for c, h in columns
            if c not in ("drops_overflow", "marks") or (c in table and (table[c] > 0).any())
        ]
        rows = [
            [
                Cell(discipline_label(r[axis.column])),
                Cell(str(r[column]) if column else "all"),
                Cell(protocol_style(r["protocol"]).label, f"proto proto-{r['protocol']}"),
                *(Cell(_fmt(r.get(c), 1), "num") for c, _ in columns),
            ]
            for r in table.to_dict("records")
        ]
        self.tables.append(
            TableBlock(
                f"tab-{sd.name}-gateway-discipline",
                "The gateway per discipline",
                f"Means per load; {g.short} reduction: study E's gain of the mean {g.short} against the "
                "baseline. Gateway delay: the time the load's down packets waited in the gateway's "
                "queue (p50, p95 of each load). Flows: the load's connections the gateway dropped (or "
                f"marked) packets of, and the most drops of one of them.{missing}",
                ["gateway", "configuration", "protocol", *(h for _, h in columns)],
                rows,
            )
        )

    def scenarios(self) -> None:
        sd = self.sd
        stats = self.desc[self.r.column].assign(scenario=lambda d: d["label_mpl"])
        thr = self.gateway.assign(scenario=lambda d: d["label_mpl"])
        draw, notes = choose.scenarios(self.shape, int(stats["scenario"].nunique()))
        self.notes.extend(notes)
        if not draw:
            return
        self.add_figure(
            "scenarios",
            f"{self.r.name[0].upper() + self.r.name[1:]} per configuration",
            f"Mean {self.r.short} per protocol with its {CI_TEXT}; right: throughput "
            "(response bytes × 8 / PLT).",
            lambda: plots.scenario_figure(
                stats,
                scenario="scenario",
                protocols=sd.protocols,
                metric_label=self.r.axis_label,
                throughput=thr,
            ),
            self.config_text(),
        )

    def server_cost(self) -> None:
        """The server under test's CPU and peak memory per load (loads that carry them: engines that
        measure the server's control group): per server when the sweep varies it (the other axes
        pooled), else per configuration."""
        sd = self.sd
        loads = sd.loads
        if "server_cpu_ms" not in loads or loads["server_cpu_ms"].isna().all():
            return
        measured = self.with_config(loads.dropna(subset=["server_cpu_ms"]))
        server_axis = choose.server_cost_axis(self.shape)
        if server_axis is not None:
            group, caption_by = server_axis.column, "per server (the other axes pooled)"
        else:
            measured = measured.assign(scenario=measured["label_mpl"])
            group, caption_by = "scenario", "per configuration"
        draw, notes = choose.server_cost(int(measured[group].nunique()))
        self.notes.extend(notes)
        if not draw:
            return
        cpu = describe(measured, [group, "protocol"], "server_cpu_ms", seed=self.seed)
        memory = describe(measured, [group, "protocol"], "server_rss_peak_bytes", seed=self.seed)
        self.add_figure(
            "server-cost",
            "Server cost per load",
            f"CPU time (user + system) of the server under test's processes per load, and the peak memory "
            f"charged to them, {caption_by}, per protocol with its {CI_TEXT} (docs/metrics.md, "
            '"Server cost").',
            functools.partial(plots.server_cost_figure, cpu, memory, scenario=group, protocols=sd.protocols),
            self.config_text(),
        )

    def representative(self, trial_id: str, protocol: str) -> pd.Series | None:
        """The load of the configuration and protocol with the median of the ratio metric (PLT, or the
        chosen ``--metric``) — the load the waterfalls and the filmstrip show."""
        loads = self.ok[(self.ok["trial_id"] == trial_id) & (self.ok["protocol"] == protocol)]
        return median_plt_load(loads, self.r.column)

    def waterfalls(self) -> None:
        sd = self.sd
        objects = sd.objects
        if objects.empty:
            return
        trial_id = choose.waterfall_config(self.shape, self.comp, sd.compared)
        if trial_id is None:
            return
        label = self.configs.set_index("trial_id").loc[trial_id, "label"]
        for proto in choose.waterfall_protocols(sd.protocols):
            row = self.representative(trial_id, proto)
            if row is None:
                continue
            objs = objects[(objects["trial_id"] == trial_id) & (objects["load_index"] == row["load_index"])]
            if objs.empty:
                continue
            r = self.r
            title = f"{protocol_style(proto).label}, {label}: median-{r.short} load ({row[r.column]:,.0f} ms)"
            self.add_figure(
                "waterfall",
                title,
                f"Requests of repetition {int(row['repetition'])} (the load with the median {r.short}) "
                "by connection; "
                "bars split into HAR phases. Every load's waterfall is in the drill-down below.",
                functools.partial(plots.waterfall_figure, objs.to_dict("records")),
                self.config_text({"configuration": str(label), "protocol": proto}),
            )

    def filmstrip(self) -> None:
        """Chromium's frames of the median-PLT (or --metric) load of each protocol side by side
        (docs/vitals.md), for the configuration the waterfalls show (or the first with frames)."""
        sd, ok = self.sd, self.ok
        if sd.results is None or "frames" not in ok or ok["frames"].isna().all():
            return
        with_frames = ok.loc[ok["frames"].notna(), "trial_id"].unique().tolist()
        chosen = choose.waterfall_config(self.shape, self.comp, sd.compared)
        trial_id = chosen if chosen is not None and chosen in with_frames else str(with_frames[0])
        label = self.configs.set_index("trial_id").loc[trial_id, "label"]
        strips = []
        for proto in sd.protocols:
            row = self.representative(trial_id, proto)
            if row is None or not isinstance(row["frames"], str):
                continue
            frames = sd.results.frames(sd.name, trial_id, int(row["load_index"]))
            strips.append(
                (proto, f"{protocol_style(proto).label}\n{row[self.r.column]:,.0f} ms {self.r.short}", frames)
            )
        if not strips:
            return
        self.add_figure(
            "filmstrip",
            f"Filmstrip, {label}",
            f"What the screen showed during the median-{self.r.short} load of each protocol "
            "(Chromium's screenshots): "
            "one column per moment one of the loads' pictures changed (at most ten, evenly chosen), a "
            "coloured frame where that load changed then; under each picture its visual progress "
            "(WebPageTest's histogram method, docs/vitals.md).",
            functools.partial(plots.filmstrip_figure, strips),
            self.config_text({"configuration": str(label)}),
        )

    def visual_table(self) -> None:
        """Medians of Chromium's visual metrics per configuration and protocol (docs/vitals.md)."""
        sd, ok = self.sd, self.ok
        if "lcp_ms" not in ok or ok["lcp_ms"].isna().all():
            return
        metrics = ("lcp_ms", "speed_index_ms", "visually_complete_ms", "cls")
        rows = []
        grouped = ok.groupby(["trial_id", "protocol"], sort=False)
        labels = self.configs.set_index("trial_id")["label"]
        for trial_id in self.configs["trial_id"]:
            for proto in sd.protocols:
                if (trial_id, proto) not in grouped.groups:
                    continue
                g = grouped.get_group((trial_id, proto))
                views = g["view"].dropna().unique() if "view" in g else []
                rows.append(
                    [
                        Cell(str(labels[trial_id])),
                        Cell(protocol_style(proto).label, f"proto proto-{proto}"),
                        Cell(", ".join(map(str, views)) or "first", "muted"),
                        Cell(str(int(g["lcp_ms"].notna().sum())), "num"),
                        *(
                            Cell(_fmt(float(g[m].median()), 3 if m == "cls" else 0), "num")
                            if g[m].notna().any()
                            else Cell("—", "num muted")
                            for m in metrics
                        ),
                    ]
                )
        self.tables.append(
            TableBlock(
                f"tab-{sd.name}-visual",
                "Visual metrics (Chromium)",
                "Medians per configuration and protocol over the loads without error: Largest Contentful "
                "Paint, Speed Index and visually complete in ms from the load's start, Cumulative Layout "
                "Shift; n: loads with an LCP (docs/vitals.md).",
                ["configuration", "protocol", "view", "n", "LCP", "Speed Index", "visually complete", "CLS"],
                rows,
            )
        )

    def number_tables(self) -> None:
        """The numbers table: per configuration and protocol, the mean (with its CI) and median of the
        gains' metric (ToW, or the chosen ``--metric``), then the medians and means of ToW and PLT
        that it is not."""
        sd = self.sd
        g = self.g
        lead = self.desc[g.column]
        extra = [m for m in ("tow_ms", "plt_ms") if m != g.column]
        for m in extra:
            lead = lead.merge(
                self.desc[m][["trial_id", "protocol", "mean", "median"]].rename(
                    columns={"mean": f"{m}_mean", "median": f"{m}_median"}
                ),
                on=["trial_id", "protocol"],
            )
        shorts = {m: page_metrics.by_name(m).short for m in extra}
        rows = []
        for r in lead.to_dict("records"):
            rows.append(
                [
                    Cell(str(r["label"])),
                    Cell(protocol_style(r["protocol"]).label, f"proto proto-{r['protocol']}"),
                    Cell(str(r["n"]), "num"),
                    Cell(str(r["errors"]), "num" + (" neg" if r["errors"] else " muted")),
                    Cell(_fmt(r["mean"], 0), "num"),
                    Cell(f"{_fmt(r['ci_low'], 0)}–{_fmt(r['ci_high'], 0)}", "num muted"),
                    Cell(_fmt(r["median"], 0), "num"),
                    *(Cell(_fmt(r[f"{m}_{stat}"], 0), "num") for m in extra for stat in ("mean", "median")),
                ]
            )
        if self.metric is None:
            title = "Time on Wire and page load time"
            caption = f"Per configuration and protocol, loads without error; CI: {CI_TEXT} of the mean ToW."
        else:
            title = f"{g.name[0].upper() + g.name[1:]}" + (
                ", time on the wire and page load time"
                if g.chromium_only
                else " and " + page_metrics.by_name(extra[0]).name
            )
            caption = (
                f"Per configuration and protocol, loads without error; n: those that have {g.short}, "
                f"whose mean (CI: {CI_TEXT}) and median lead; then "
                + f"the means and medians of {' and '.join(shorts[m] for m in extra)} over every load "
                "without error."
                + self.without_metric(self.ok, self.configs.set_index("trial_id")["label"].to_dict())
            )
        self.tables.insert(
            0,
            TableBlock(
                f"tab-{sd.name}-stats",
                title,
                caption,
                [
                    "configuration",
                    "protocol",
                    "n",
                    "errors",
                    f"{g.short} mean ms",
                    "95 % CI",
                    f"{g.short} median",
                    *(f"{shorts[m]} {stat}" for m in extra for stat in ("mean", "median")),
                ],
                rows,
            ),
        )
        if self.comp.empty:
            return
        rows = []
        class_cells = {}
        for proto in sd.compared:
            class_cells[proto] = self.class_names(proto)
        for r in self.comp.to_dict("records"):
            g = r["gain_pct"]
            sig = bool(r["significant"]) if r["significant"] == r["significant"] else False
            rows.append(
                [
                    Cell(str(r["label"])),
                    Cell(
                        f"{protocol_style(r['protocol']).label} vs {protocol_style(r['baseline']).label}",
                        f"proto proto-{r['protocol']}",
                    ),
                    Cell(
                        _fmt(g) + " %" if math.isfinite(g) else "—",
                        "num " + ("pos" if g > 0 else "neg" if g < 0 else ""),
                    ),
                    Cell(f"{_fmt(r['ci_low'])} to {_fmt(r['ci_high'])}", "num muted"),
                    Cell(
                        _p_text(r["p_value"]), "num" + (" sig" if sig else " muted"), title=f"U = {r['u']:g}"
                    ),
                    Cell(_fmt(r["s"], 3), "num"),
                    Cell(class_cells[r["protocol"]].get(r["cls"], "—"), f"cls-{r['cls']}"),
                ]
            )
        self.tables.insert(
            1,
            TableBlock(
                f"tab-{sd.name}-compare",
                "Protocol comparison",
                f"Gain: study E's % reduction of mean {self.g.short} (positive: the protocol is faster), "
                f"with its {CI_TEXT}; p: two-sided Mann–Whitney U on {self.g.short} (bold: < 0.05; hover "
                f"for U); s: study W's ratio of median {self.r.short}s and its class.",
                ["configuration", "comparison", "gain", "95 % CI", "p", "s", "class"],
                rows,
                open=True,
            ),
        )


def _why_band(path_json: Any) -> list[list[Any]]:
    """A load's critical path for its waterfall's band (report.js): [from_ms, to_ms, index of the part
    in the report data's ``parts``, request index]; empty without a decomposition."""
    if not isinstance(path_json, str):
        return []
    index = {p.key: i for i, p in enumerate(_facts.why_parts())}
    return [
        [round(float(a), 2), round(float(b), 2), index[part], int(req)]
        for a, b, part, req in json.loads(path_json)
        if part in index
    ]


def _trial_views(
    sd: SweepData, builder: _Builder, budget: int
) -> tuple[list[TrialView], dict[str, Any], str | None]:
    objects = sd.objects
    embed_all = len(objects) <= budget
    representatives: set[tuple[str, int]] = set()
    for trial_id in sd.configs["trial_id"]:
        for proto in sd.protocols:
            row = builder.representative(trial_id, proto)
            if row is not None:
                representatives.add((trial_id, int(row["load_index"])))
    waterfalls: dict[str, Any] = {}
    embedded = 0  # requests embedded so far
    by_load = (
        {k: g for k, g in objects.groupby(["trial_id", "load_index"], sort=False)} if len(objects) else {}
    )
    labels = sd.configs.set_index("trial_id")["label"].to_dict()
    views = []
    for t in sd.trials.to_dict("records"):
        mine = sd.loads[sd.loads["trial_id"] == t["trial_id"]].sort_values("load_index")
        loads = []
        for r in mine.to_dict("records"):
            key = (t["trial_id"], int(r["load_index"]))
            wf = None
            if key in by_load and (embed_all or (key in representatives and embedded < budget)):
                embedded += len(by_load[key])
                wf = f"{sd.name}/{t['trial_id']}/{int(r['load_index'])}"
                g = by_load[key].sort_values("entry_index")
                waterfalls[wf] = {
                    "why": _why_band(r.get("why_path_json")),
                    "title": f"{protocol_style(r['protocol']).label} · repetition {int(r['repetition'])} · "
                    f"{labels.get(t['trial_id'], '')}",
                    "objects": [
                        [
                            o["url"],
                            str(o["connection"] or "?"),
                            *(
                                round(float(v), 2) if v is not None and v == v and v > 0 else 0
                                for v in (
                                    o["started_ms"],
                                    o["blocked_ms"],
                                    o["dns_ms"],
                                    max(0.0, (o["connect_ms"] or 0) - (o["ssl_ms"] or 0))
                                    if o["connect_ms"] == o["connect_ms"]
                                    else 0,
                                    o["ssl_ms"],
                                    o["send_ms"],
                                    o["wait_ms"],
                                    o["receive_ms"],
                                )
                            ),
                            o["status"] if o["status"] == o["status"] else None,
                            o["size_bytes"] if o["size_bytes"] == o["size_bytes"] else None,
                        ]
                        for o in g.to_dict("records")
                    ],
                }
            loads.append(
                LoadView(
                    index=int(r["load_index"]),
                    protocol=r["protocol"],
                    repetition=int(r["repetition"]),
                    tow_ms=float(r["tow_ms"]),
                    plt_ms=float(r["plt_ms"]),
                    connections=int(r["connections"]),
                    retransmissions=int(r["retransmissions"]),
                    drops=int(r["drops_queue"] + r["drops_loss"]),
                    objects=int(r["objects"]),
                    error=r["error"],
                    waterfall=wf,
                    representative=key in representatives,
                    metric_ms=_number(r.get(builder.r.column)) if builder.metric else None,
                )
            )
        views.append(
            TrialView(
                trial_id=t["trial_id"],
                label=labels.get(t["trial_id"], t["trial_id"]),
                status=t["status"],
                flags=list(t["fidelity_flags"] or []),
                error=t["error"],
                lateness_p99_us=t["lateness_p99_us"]
                if t["lateness_p99_us"] == t["lateness_p99_us"]
                else None,
                loads=loads,
            )
        )
    note = None
    if not embed_all and len(objects):
        shown = len(waterfalls)
        every = shown >= len(representatives)
        note = (
            f"The sweep has {len(objects):,} requests, more than the {budget:,} the page embeds: waterfalls "
            f"are embedded for {shown:,} loads, the median-{builder.r.short} load of each protocol "
            + ("in every configuration" if every else "in the first configurations, until the budget ran out")
            + ". Any load's waterfall: wirelab results waterfall SWEEP TRIAL [LOAD | --protocol P] "
            "[-o FILE.svg] (every load's HAR is in the results directory too)."
        )
    return views, waterfalls, note


def provenance_rows(provenances: Any, spec_hash: str, *, servers: bool = False) -> dict[str, str]:
    """A sweep's provenance table: its spec hash, the engines (version, commit) and kernels its items
    ran on, with ``servers`` the servers under test (a load test's), and the control plane's settings
    of the first item that has them."""
    engines: dict[str, None] = {}
    kernels: dict[str, None] = {}
    impls: dict[str, None] = {}
    control: dict[str, Any] = {}
    for p in provenances:
        engine = (p or {}).get("engine") or {}
        if engine.get("engine_version"):
            engines[f"{engine['engine_version']} ({engine.get('git_sha', '?')})"] = None
        if engine.get("kernel"):
            kernels[str(engine["kernel"])] = None
        server = engine.get("server") or {}
        if server.get("impl"):
            impls[f"{server['impl']} {server.get('version', '')}".strip()] = None
        control = control or (p or {}).get("control") or {}
    out = {
        "spec hash": spec_hash,
        "engine": ", ".join(engines) or "—",
        "kernel": ", ".join(kernels) or "—",
        **({"servers": ", ".join(impls) or "—"} if servers else {}),
    }
    for k, v in control.items():
        if isinstance(v, str | int | float):
            out[f"control {k}"] = str(v)
    return out


def _machine(provenance: Any) -> tuple[str, str, str] | None:
    """(worker, CPU model, kernel) of a stored trial: its worker's description, else the engine's."""
    if not isinstance(provenance, dict):
        return None
    worker = provenance.get("worker") or {}
    engine = provenance.get("engine") or {}
    name = worker.get("name") or engine.get("hostname") or "?"
    return (
        name,
        worker.get("cpu_model") or engine.get("cpu") or "?",
        worker.get("kernel") or engine.get("kernel") or "?",
    )


def machines_sentence(trials: pd.DataFrame) -> str | None:
    """A data-quality sentence when a sweep's complete trials ran on machines of different CPU models or
    kernels (a cluster's workers, or resumed on another machine), or None."""
    done = trials[trials["status"] == "complete"]
    machines = [m for m in done["provenance"].map(_machine) if m is not None]
    kinds: dict[tuple[str, str], set[str]] = {}
    for name, cpu, kernel in machines:
        kinds.setdefault((cpu, kernel), set()).add(name)
    if len(kinds) < 2:
        return None
    listed = "; ".join(
        f"{cpu}, kernel {kernel} ({', '.join(sorted(names))})"
        for (cpu, kernel), names in sorted(kinds.items())
    )
    return (
        f"The trials ran on machines of {len(kinds)} different CPU models or kernels: {listed}. "
        "Timings from different machines may differ for reasons of their own; compare configurations "
        "that ran on the same kind (each trial's worker is stored: trials.worker, docs/distributed.md)."
    )


#: Kruskal–Wallis p-value below which the workers' ToW of one configuration differ more than its
#: repetitions vary (worker_tow_sentences)
WORKER_P = 0.05


def worker_tow_sentences(
    loads: pd.DataFrame, baseline: str, labels: dict[str, str] | None = None
) -> list[str]:
    """For each configuration that ran on two or more workers (``[sweep] repeat_on_each_worker``): the
    baseline protocol's median ToW on each worker, how far apart the medians are, and whether the workers
    differ more than the repetitions vary (Kruskal–Wallis across workers). ``loads``: with ``config``
    (the configuration's planned trial id) and ``worker`` columns (``SweepData.worker_loads``)."""
    if loads.empty:
        return []
    base = ok_loads(loads)
    base = base[(base["protocol"] == baseline) & base["worker"].notna()]
    out = []
    for config, rows in base.groupby("config", sort=True):
        by_worker = {str(w): g["tow_ms"].to_numpy(dtype=float) for w, g in rows.groupby("worker", sort=True)}
        if len(by_worker) < 2:
            continue
        medians = {w: float(np.median(v)) for w, v in by_worker.items()}
        low, high = min(medians.values()), max(medians.values())
        spread = (high - low) / low * 100 if low > 0 else float("nan")
        listed = ", ".join(f"{w} {medians[w]:.0f} ms (n {len(v)})" for w, v in by_worker.items())
        sizes_ok = all(len(v) >= 2 for v in by_worker.values())
        distinct = len(np.unique(np.concatenate(list(by_worker.values())))) > 1
        if sizes_ok and distinct:
            p = float(sps.kruskal(*by_worker.values()).pvalue)
            verdict = f"Kruskal–Wallis p = {p:.3g}: " + (
                "the workers differ more than the repetitions vary — compare configurations that ran "
                "on the same worker"
                if p < WORKER_P
                else f"no difference between the workers at the {WORKER_P:g} level"
            )
        elif not distinct:
            verdict = "every load took the same time"
        else:
            verdict = "too few loads per worker to test"
        name = f"{config} ({labels[config]})" if labels and config in labels else str(config)
        out.append(
            f"The baseline's ({protocol_style(baseline).label}) ToW of configuration {name} on each worker "
            f"(repeat_on_each_worker): {listed}; medians {spread:.1f} % apart; {verdict}."
        )
    return out


def build_sweep(
    sd: SweepData,
    figures_dir: Path,
    *,
    seed: int = 0,
    waterfall_budget: int = WATERFALL_OBJECT_BUDGET,
    metric: page_metrics.Metric | None = None,
) -> SweepSection:
    """Everything the report shows about one sweep; figures are written to ``figures_dir``. ``metric``
    takes the place of ToW and PLT in the comparison's figures and tables (docs/vitals.md)."""
    builder = _Builder(sd, figures_dir, seed, metric)
    trials = sd.trials
    complete = int((trials["status"] == "complete").sum())
    counts = {
        "configurations": f"{complete} / {len(trials)}",
        "loads": f"{len(sd.loads):,}",
        "errors": str(int(sd.loads["error"].notna().sum())) if len(sd.loads) else "0",
        "protocols": ", ".join(protocol_style(p).label for p in sd.protocols),
        "baseline": protocol_style(sd.baseline).label,
    }
    quality = []
    failed = trials[trials["status"] != "complete"]
    if len(failed):
        quality.append(
            f"{len(failed)} of {len(trials)} trials {'is' if len(failed) == 1 else 'are'} not complete "
            f"({', '.join(sorted(set(failed['status'])))}); "
            "their configurations are missing from every figure and table."
        )
    mixed = machines_sentence(pd.concat([trials, sd.repeat_trials]) if len(sd.repeat_trials) else trials)
    if mixed:
        quality.append(mixed)
    labels = dict(zip(sd.configs["trial_id"], sd.configs["label"], strict=True)) if len(sd.configs) else {}
    quality.extend(worker_tow_sentences(sd.worker_loads, sd.baseline, labels))
    flagged = trials[trials["fidelity_flags"].map(bool)]
    if len(flagged):
        quality.append(
            f"{len(flagged)} {'trial carries' if len(flagged) == 1 else 'trials carry'} fidelity flags "
            f"({', '.join(sorted({f for fl in flagged['fidelity_flags'] for f in fl}))}); "
            "their numbers are shown but may be distorted (docs/running.md says what each flag means)."
        )
    if len(ok_loads(sd.loads)):
        builder.build()
        quality.extend(say.power_sentences(builder.comp) if not builder.comp.empty else [])
    errors = int(sd.loads["error"].notna().sum()) if len(sd.loads) else 0
    if errors:
        common = sd.loads["error"].dropna().value_counts()
        quality.append(
            f"{errors} of {len(sd.loads)} loads ended with an error and are left out of the statistics "
            f"(most common: “{common.index[0]}”, {common.iloc[0]} loads)."
        )
        if errors == len(sd.loads):
            quality.append("No load of this sweep succeeded, so there is nothing to compare or draw.")
    if sd.loads.empty:
        quality.append(
            "This sweep has no completed loads yet: run it (wirelab run) and build the report again."
        )
    trial_views, waterfalls, wf_note = (
        _trial_views(sd, builder, waterfall_budget) if len(sd.loads) else ([], {}, None)
    )
    return sweep_section(
        sd,
        quality=quality,
        findings=builder.findings,
        fixed=sd.fixed(),
        counts=counts,
        figures=builder.figures,
        tables=builder.tables,
        notes=builder.notes + ([wf_note] if wf_note else []),
        provenance=provenance_rows(sd.trials["provenance"].dropna(), sd.spec_hash),
        trials=trial_views,
        waterfalls=waterfalls,
        metric=metric,
    )
