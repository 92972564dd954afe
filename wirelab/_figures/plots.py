"""The figures of the studies, drawn from analysis tables (``wirelab.analysis``).

Every function takes DataFrames (or a :class:`~wirelab.analysis.tree.TreeResult`), returns a
``matplotlib.figure.Figure`` and draws each protocol with its colour and marker from
:mod:`wirelab._registry`. Pages (and other series) differ by line style and are named in the legend.
:func:`wirelab._figures.rendering.render` turns a figure into PNG and SVG.
"""

from __future__ import annotations

import dataclasses
import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.collections import PolyCollection
from matplotlib.colors import TwoSlopeNorm, to_rgb
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyBboxPatch, Patch
from matplotlib.typing import LineStyleType

from wirelab._figures.rendering import new_figure
from wirelab._registry import (
    CLASS_STYLES,
    DROP_CAUSES,
    PHASE_ORDER,
    PHASE_STYLES,
    discipline_label,
    part_colour,
    protocol_style,
)
from wirelab.analysis.stats import ecdf
from wirelab.analysis.tree import TreeResult

__all__ = [
    "LINESTYLES",
    "Panel",
    "capacity_figure",
    "category_gain_figure",
    "cdf_figure",
    "filmstrip_columns",
    "filmstrip_figure",
    "gain_figure",
    "discipline_figure",
    "gateway_figure",
    "heatmap_figure",
    "main_effects_figure",
    "multiplex_figure",
    "phase_figure",
    "probe_support_figure",
    "ratio_cdf_figure",
    "scenario_figure",
    "tree_figure",
    "waterfall_figure",
    "waterfall_from_har",
]

#: A matplotlib colour: a name or hex string, or an RGB triple.
Colour = str | tuple[float, float, float]

LINESTYLES: tuple[Any, ...] = ("-", "--", ":", "-.", (0, (5, 1, 1, 1)), (0, (1, 3)))


def shade(colour: str, index: int, count: int) -> tuple[float, float, float]:
    """The ``index``-th of ``count`` shades of ``colour`` (darker to lighter), so the series of one
    protocol keep its hue; one series gets the colour itself."""
    rgb = np.array(to_rgb(colour))
    if count <= 1:
        return (float(rgb[0]), float(rgb[1]), float(rgb[2]))
    t = np.linspace(-0.35, 0.45, count)[index]
    mixed = rgb * (1 + t) if t < 0 else rgb + (1 - rgb) * t
    r, g, b = (float(c) for c in np.clip(mixed, 0, 1))
    return (r, g, b)


def _series_key(row: Mapping[str, Any], cols: Sequence[str]) -> str:
    return " · ".join(str(row[c]) for c in cols) if cols else ""


def _proto_label(p: str) -> str:
    return protocol_style(p).label


def _series_rows(gains: pd.DataFrame, proto: str, series: Sequence[str], key: str) -> pd.DataFrame:
    """The rows of one protocol and one series value (``key`` of :func:`_series_key`)."""
    mine = gains[gains["protocol"] == proto]
    if series:
        mine = mine[[_series_key(r, series) == key for r in mine.to_dict("records")]]
    return mine


def _series_label(names: Mapping[str, str], key: str, n_protocols: int, proto: str, baseline: str) -> str:
    """Legend label of one (series value, protocol) of a gain figure."""
    label = names.get(key, key)
    if n_protocols > 1 or not label:
        st = protocol_style(proto)
        label = f"{label} — {st.label}" if label else f"{st.label} vs {_proto_label(baseline)}"
    return label


def _significance_markers(
    ax: Any, xs: np.ndarray, ys: np.ndarray, mine: pd.DataFrame, marker: str, colour: Colour, size: float
) -> None:
    """Markers at (xs, ys): filled where ``mine``'s Mann–Whitney test is significant, open elsewhere."""
    sig = mine.get("significant", pd.Series(False, index=mine.index)).fillna(False).to_numpy(bool)
    ax.scatter(xs[sig], ys[sig], marker=marker, color=colour, s=size, zorder=3)
    ax.scatter(
        xs[~sig],
        ys[~sig],
        marker=marker,
        facecolors="white",
        edgecolors=colour,
        s=size,
        zorder=3,
        linewidths=1.2,
    )


def _direction_notes(ax: Any, protocols: Sequence[str], baseline: str) -> None:
    """ "↑ X faster" at the top and "↓ baseline faster" at the bottom of a gain axis."""
    top = f"↑ {_proto_label(protocols[0]) if protocols else ''} faster"
    for y, va, text in ((0.99, "top", top), (0.01, "bottom", f"↓ {_proto_label(baseline)} faster")):
        ax.text(0.005, y, text, transform=ax.transAxes, va=va, fontsize=7.5, color="#666666")


def gain_figure(
    gains: pd.DataFrame,
    x: str,
    *,
    x_label: str,
    series: Sequence[str] = (),
    series_names: Mapping[str, str] | None = None,
    log_x: bool = False,
    title: str = "",
    y_label: str = "ToW reduction (%)",
) -> Figure:
    """Gain vs ``x``: one line per (series value, protocol) with its 95 % CI band; markers are filled
    where the Mann–Whitney test is significant (p < 0.05). ``gains`` is ``analysis.compare`` output
    plus ``x`` and the ``series`` columns."""
    fig, ax = new_figure(6.4, 4.6)
    series_names = dict(series_names or {})
    keys = list(dict.fromkeys(_series_key(r, series) for r in gains.to_dict("records")))
    styles = {k: LINESTYLES[i % len(LINESTYLES)] for i, k in enumerate(keys)}
    protocols = list(dict.fromkeys(gains["protocol"]))
    baseline = gains["baseline"].iloc[0] if len(gains) else ""
    handles: list[Artist] = []
    for proto in protocols:
        st = protocol_style(proto)
        for ki, key in enumerate(keys):
            colour = shade(st.colour, ki, len(keys))
            mine = _series_rows(gains, proto, series, key).sort_values(x)
            if mine.empty:
                continue
            xs = mine[x].to_numpy(float)
            ax.fill_between(
                xs,
                mine["ci_low"].to_numpy(float),
                mine["ci_high"].to_numpy(float),
                color=colour,
                alpha=0.12,
                linewidth=0,
            )
            label = _series_label(series_names, key, len(protocols), proto, baseline)
            ax.plot(xs, mine["gain_pct"], color=colour, linestyle=styles[key], linewidth=1.6, label=label)
            _significance_markers(ax, xs, mine["gain_pct"].to_numpy(float), mine, st.marker, colour, 28)
            handles.append(Line2D([], [], color=colour, linestyle=styles[key], marker=st.marker, label=label))
    ax.axhline(0, color="#555555", linewidth=0.8)
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.set_title(title, loc="left")
    handles.append(
        Line2D([], [], color="#777777", marker="o", linestyle="", label="filled: p < 0.05 (Mann–Whitney)")
    )
    handles.append(Patch(color="#777777", alpha=0.2, label="band: 95 % CI (bootstrap)"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    _direction_notes(ax, protocols, baseline)
    return fig


def category_gain_figure(
    gains: pd.DataFrame,
    x: str,
    *,
    categories: Sequence[Any],
    x_label: str,
    series: Sequence[str] = (),
    series_names: Mapping[str, str] | None = None,
    title: str = "",
    y_label: str = "ToW reduction (%)",
) -> Figure:
    """Gain per value of a categorical axis ``x`` (in the order of ``categories``): one marker per
    (series value, protocol) with its 95 % CI as an error bar, side by side within each category and
    joined across categories by a thin line of the series' style; filled where the Mann–Whitney test
    is significant (p < 0.05). ``gains`` is ``analysis.compare`` output plus ``x`` and the ``series``
    columns — :func:`gain_figure` for an axis without an order of magnitude (sharding, a policy)."""
    categories = list(categories)
    fig, ax = new_figure(max(6.4, 1.3 * len(categories) + 2.4), 4.6)
    series_names = dict(series_names or {})
    keys = list(dict.fromkeys(_series_key(r, series) for r in gains.to_dict("records")))
    styles = {k: LINESTYLES[i % len(LINESTYLES)] for i, k in enumerate(keys)}
    protocols = list(dict.fromkeys(gains["protocol"]))
    baseline = gains["baseline"].iloc[0] if len(gains) else ""
    slots = max(1, len(keys) * len(protocols))
    width = min(0.8, 0.16 * slots) / slots
    handles: list[Artist] = []
    for pi, proto in enumerate(protocols):
        st = protocol_style(proto)
        for ki, key in enumerate(keys):
            colour = shade(st.colour, ki, len(keys))
            mine = _series_rows(gains, proto, series, key)
            mine = mine[mine[x].isin(categories)]
            if mine.empty:
                continue
            mine = mine.assign(_pos=mine[x].map(categories.index)).sort_values("_pos")
            slot = pi * len(keys) + ki
            xs = mine["_pos"].to_numpy(float) + (slot - (slots - 1) / 2) * width
            ys = mine["gain_pct"].to_numpy(float)
            err = np.vstack([ys - mine["ci_low"].to_numpy(float), mine["ci_high"].to_numpy(float) - ys])
            ax.errorbar(
                xs, ys, yerr=np.clip(err, 0, None), fmt="none", ecolor=colour, elinewidth=1.1, capsize=3
            )
            ax.plot(xs, ys, color=colour, linestyle=styles[key], linewidth=0.8, alpha=0.6)
            _significance_markers(ax, xs, ys, mine, st.marker, colour, 32)
            label = _series_label(series_names, key, len(protocols), proto, baseline)
            handles.append(Line2D([], [], color=colour, linestyle=styles[key], marker=st.marker, label=label))
    ax.axhline(0, color="#555555", linewidth=0.8)
    ax.set_xticks(range(len(categories)), ["\n".join(textwrap.wrap(str(c), 18)) for c in categories])
    ax.set_xlim(-0.6, len(categories) - 0.4)
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.set_title(title, loc="left")
    handles.append(
        Line2D([], [], color="#777777", marker="o", linestyle="", label="filled: p < 0.05 (Mann–Whitney)")
    )
    handles.append(
        Line2D([], [], color="#777777", marker="|", linestyle="", label="bar: 95 % CI (bootstrap)")
    )
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    _direction_notes(ax, protocols, baseline)
    return fig


def main_effects_figure(
    effects: pd.DataFrame,
    factors: Sequence[tuple[str, str, bool]],
    *,
    baseline: str,
    categories: Mapping[str, Sequence[Any]] | None = None,
    metric: str = "ToW",
) -> Figure:
    """Small multiples, one per factor (column, axis label, log scale): the mean gain at each of its
    values over the configurations there, with the bootstrap CI over configurations, one line per
    protocol (``effects`` is ``analysis.main_effects`` output). A factor in ``categories`` is
    categorical: its values sit at even steps in that order, named on the axis."""
    categories = dict(categories or {})
    n = max(1, len(factors))
    cols = min(3, n)
    rows = math.ceil(n / cols)
    fig, axes = new_figure(6.6, 2.5 * rows + 0.6, nrows=rows, ncols=cols, squeeze=False, sharey=True)
    flat = list(np.asarray(axes).ravel())
    protocols = list(dict.fromkeys(effects["protocol"]))
    for ax, (factor, label, log) in zip(flat, factors, strict=False):
        for proto in protocols:
            st = protocol_style(proto)
            mine = effects[(effects["factor"] == factor) & (effects["protocol"] == proto)]
            if factor in categories:
                order = list(categories[factor])
                mine = mine[mine["level"].isin(order)]
                mine = mine.assign(level=mine["level"].map(order.index))
            mine = mine.sort_values("level")
            ax.fill_between(
                mine["level"].to_numpy(float),
                mine["ci_low"].to_numpy(float),
                mine["ci_high"].to_numpy(float),
                color=st.colour,
                alpha=0.15,
                linewidth=0,
            )
            ax.plot(
                mine["level"].to_numpy(float),
                mine["mean"].to_numpy(float),
                color=st.colour,
                marker=st.marker,
                markersize=4,
                linewidth=1.5,
            )
        ax.axhline(0, color="#555555", linewidth=0.8)
        if factor in categories:
            names = [str(c) for c in categories[factor]]
            ax.set_xticks(range(len(names)), ["\n".join(textwrap.wrap(n, 12)) for n in names], fontsize=7)
            ax.set_xlim(-0.3, len(names) - 0.7)
        elif log:
            ax.set_xscale("log")
        ax.set_xlabel(label)
    for ax in flat[len(factors) :]:
        ax.set_visible(False)
    for r in range(rows):
        flat[r * cols].set_ylabel(f"mean {metric} reduction (%)")
    handles: list[Artist] = [
        Line2D(
            [],
            [],
            color=protocol_style(p).colour,
            marker=protocol_style(p).marker,
            label=f"{_proto_label(p)} vs {_proto_label(baseline)}",
        )
        for p in protocols
    ]
    handles.append(Patch(color="#777777", alpha=0.2, label="95 % CI over configurations"))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), bbox_to_anchor=(0.5, 0.0))
    fig.tight_layout(rect=(0, 0.08 / rows, 1, 1))
    return fig


def cdf_figure(
    panels: Sequence[tuple[str, Mapping[str, Sequence[float]]]], *, x_label: str = "ToW (ms)"
) -> Figure:
    """Small multiples: one panel per (title, {protocol: values}), an empirical CDF per protocol."""
    n = max(1, len(panels))
    longest = max((len(t) for t, _ in panels), default=0)
    cols = min(3 if longest <= 28 else 2, n)
    rows = math.ceil(n / cols)
    fig, axes = new_figure(6.6 if cols > 1 else 4.6, 2.7 * rows + 0.5, nrows=rows, ncols=cols, squeeze=False)
    flat = list(np.asarray(axes).ravel())
    protocols: dict[str, None] = {}
    for ax, (title, data) in zip(flat, panels, strict=False):
        for proto, values in data.items():
            xs, ys = ecdf(values)
            if not len(xs):
                continue
            st = protocol_style(proto)
            protocols[proto] = None
            ax.step(
                np.concatenate([[xs[0]], xs]),
                np.concatenate([[0], ys]),
                where="post",
                color=st.colour,
                linewidth=1.5,
            )
            ax.plot(xs, ys, linestyle="", marker=st.marker, color=st.colour, markersize=3)
        ax.set_title(textwrap.fill(title, 34 if cols == 2 else 26), loc="left", fontsize=8.5)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(x_label)
    for ax in flat[len(panels) :]:
        ax.set_visible(False)
    flat[0].set_ylabel("fraction of loads")
    handles: list[Artist] = [
        Line2D([], [], color=protocol_style(p).colour, marker=protocol_style(p).marker, label=_proto_label(p))
        for p in protocols
    ]
    if handles:
        fig.legend(handles=handles, loc="upper right", ncol=len(handles), bbox_to_anchor=(1.0, 1.02))
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


def ratio_cdf_figure(
    ratios: pd.DataFrame, *, baseline: str, metric: str = "PLT", unit: str = "configurations"
) -> Figure:
    """CDF across configurations (or pages: ``unit``) of W's ratio s = PLT_x / PLT_base, one line per
    compared protocol, with the class regions (s < 0.9, s > 1.1) shaded."""
    fig, ax = new_figure(5.6, 3.2)
    ax.axvspan(0, 0.9, color=CLASS_STYLES["better"][1], alpha=0.07)
    ax.axvspan(
        1.1,
        max(1.2, float(ratios["s"].max()) * 1.05 if len(ratios) else 2),
        color=CLASS_STYLES["worse"][1],
        alpha=0.07,
    )
    for proto, group in ratios.groupby("protocol", sort=False):
        xs, ys = ecdf(group["s"])
        if not len(xs):
            continue
        st = protocol_style(str(proto))
        ax.step(
            np.concatenate([[xs[0]], xs]),
            np.concatenate([[0], ys]),
            where="post",
            color=st.colour,
            label=f"{st.label} / {_proto_label(baseline)}",
            linewidth=1.6,
        )
    for v in (0.9, 1.0, 1.1):
        ax.axvline(v, color="#777777", linewidth=0.7, linestyle="-" if v == 1 else ":")
    ax.set_xlim(left=max(0.0, float(ratios["s"].min()) * 0.95) if len(ratios) else 0)
    ax.set_xlabel(f"s = {metric}ₓ / {metric} of {_proto_label(baseline)} (medians)")
    ax.set_ylabel(f"fraction of {unit}")
    ax.set_ylim(0, 1.02)
    ax.legend(loc="lower right")
    return fig


def heatmap_figure(
    grid: pd.DataFrame,
    *,
    x: str,
    y: str,
    x_label: str,
    y_label: str,
    boundary: pd.DataFrame | None = None,
    trend: tuple[float, float] | None = None,
    title: str = "",
    metric: str = "ToW",
) -> Figure:
    """Gain (%) over x × y (``grid`` has columns x, y, gain_pct). ``boundary`` (columns y, m) marks the
    smallest x that wins per y; ``trend`` = (intercept, slope) of m vs y, drawn through the cells."""
    table = grid.pivot_table(index=y, columns=x, values="gain_pct", aggfunc="mean").sort_index()
    xs, ys = [float(v) for v in table.columns], [float(v) for v in table.index]
    values = table.to_numpy(float)
    finite = values[np.isfinite(values)]
    lim = max(1.0, float(np.abs(finite).max())) if finite.size else 1.0
    fig, ax = new_figure(max(5.0, 0.45 * len(xs) + 2.5), max(3.0, 0.32 * len(ys) + 1.6))
    ax.grid(False)
    image = ax.imshow(
        values,
        cmap="RdBu",
        norm=TwoSlopeNorm(0, -lim, lim),
        aspect="auto",
        origin="lower",
        interpolation="nearest",
    )
    ax.set_xticks(range(len(xs)), [f"{v:g}" for v in xs])
    ax.set_yticks(range(len(ys)), [f"{v:g}" for v in ys])
    if len(xs) * len(ys) <= 160:
        for i in range(len(ys)):
            for j in range(len(xs)):
                v = values[i, j]
                if np.isfinite(v):
                    ax.text(
                        j,
                        i,
                        f"{v:.0f}",
                        ha="center",
                        va="center",
                        fontsize=6.5,
                        color="white" if abs(v) > lim * 0.6 else "#222222",
                    )
    legend = []
    if boundary is not None and len(boundary.dropna(subset=["m"])):
        b = boundary.dropna(subset=["m"])
        bx = [xs.index(float(m)) for m in b["m"]]
        by = [ys.index(float(v)) for v in b[y]]
        ax.plot(
            bx, by, linestyle="", marker="o", markersize=5, markerfacecolor="none", markeredgecolor="black"
        )
        legend.append(
            Line2D(
                [],
                [],
                linestyle="",
                marker="o",
                markerfacecolor="none",
                markeredgecolor="black",
                label="fewest streams that win",
            )
        )
    if trend is not None and len(xs) > 1:
        a, b_ = trend
        fine = np.linspace(ys[0], ys[-1], 50)
        m = a + b_ * fine
        pos_x = np.interp(m, xs, range(len(xs)), left=np.nan, right=np.nan)
        pos_y = np.interp(fine, ys, range(len(ys)))
        ax.plot(pos_x, pos_y, color="black", linestyle="--", linewidth=1.2)
        legend.append(
            Line2D(
                [],
                [],
                color="black",
                linestyle="--",
                label=f"trend: m ≈ {a:.1f} + {b_:.3f}·{y_label.split(' (')[0]}",
            )
        )
    if legend:
        ax.legend(handles=legend, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.set_title(title, loc="left")
    cbar = fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
    cbar.set_label(f"{metric} reduction (%)")
    return fig


def multiplex_figure(
    points: pd.DataFrame, *, slope: float, r2: float, y_label: str = "m (streams needed)"
) -> Figure:
    """m vs r per page/RTT (``points`` has r, m, page) and the fitted line m = slope·r."""
    fig, ax = new_figure(5.0, 3.2)
    pts = points.dropna(subset=["r", "m"])
    for i, (page, group) in enumerate(pts.groupby("page", sort=False)):
        ax.scatter(
            group["r"],
            group["m"],
            marker="os^Dv"[i % 5],
            color="#444444",
            s=26,
            label=str(page),
            facecolors="none" if i % 2 else "#444444",
        )
    r_max = float(pts["r"].max()) if len(pts) else 1.0
    line = np.linspace(0, r_max * 1.05, 20)
    r2_text = "undefined" if not np.isfinite(r2) else f"{r2:.2f}"
    ax.plot(
        line,
        slope * line,
        color="#0072B2",
        linewidth=1.5,
        label=f"m = r / {1 / slope:.2f}  (R² = {r2_text})" if slope else "m = 0",
    )
    ax.set_xlabel("resources on the page (r)")
    ax.set_ylabel(y_label)
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2)
    return fig


def phase_figure(shares: pd.DataFrame, *, group: str, protocols: Sequence[str], title: str = "") -> Figure:
    """Stacked share bars: for each value of ``group`` (a column of display labels), one bar per
    protocol; segments are the phases present (columns named after :data:`PHASE_ORDER`)."""
    phases = [p for p in PHASE_ORDER if p in shares.columns and shares[p].fillna(0).gt(0).any()]
    groups = list(dict.fromkeys(shares[group]))
    protos = [p for p in protocols if p in set(shares["protocol"])]
    width = 0.8 / max(1, len(protos))
    fig, ax = new_figure(max(5.5, 0.5 + len(groups) * len(protos) * 0.42), 3.6)
    ax.grid(axis="x", visible=False)
    for gi, g in enumerate(groups):
        for pi, proto in enumerate(protos):
            row = shares[(shares[group] == g) & (shares["protocol"] == proto)]
            if row.empty:
                continue
            xpos = gi + (pi - (len(protos) - 1) / 2) * width
            bottom = 0.0
            for phase in phases:
                v = float(row[phase].iloc[0]) if np.isfinite(row[phase].iloc[0]) else 0.0
                ax.bar(
                    xpos,
                    v * 100,
                    width * 0.92,
                    bottom=bottom,
                    color=PHASE_STYLES[phase].colour,
                    edgecolor="white",
                    linewidth=0.4,
                )
                if v >= 0.08:
                    ax.text(
                        xpos,
                        bottom + v * 50,
                        f"{v * 100:.0f}",
                        ha="center",
                        va="center",
                        fontsize=6.5,
                        color="white" if phase in ("ssl", "receive", "wait", "dns") else "#222222",
                    )
                bottom += v * 100
            st = protocol_style(proto)
            ax.plot(xpos, -4, marker=st.marker, color=st.colour, markersize=5, clip_on=False)
    ax.set_xticks(range(len(groups)), [str(g) for g in groups], fontsize=8)
    ax.tick_params(axis="x", pad=10)
    ax.set_ylim(0, 100)
    ax.set_ylabel("share of request time (%)")
    ax.set_title(title, loc="left")
    handles: list[Artist] = [
        Patch(color=PHASE_STYLES[p].colour, label=PHASE_STYLES[p].label) for p in reversed(phases)
    ]
    handles += [
        Line2D(
            [],
            [],
            linestyle="",
            marker=protocol_style(p).marker,
            color=protocol_style(p).colour,
            label=_proto_label(p),
        )
        for p in protos
    ]
    ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return fig


def probe_support_figure(shares: pd.DataFrame, *, title: str = "") -> Figure:
    """Per protocol, two bars: the share of contacted sites announcing it (hatched) and serving it
    (solid), in the protocol's colour; h1 has no announcement (its bar is absent, not zero).
    ``shares`` is :func:`wirelab.analysis.probes.probe_shares` for one run."""
    protos = list(shares["protocol"])
    fig, ax = new_figure(max(5.0, 0.9 + 0.85 * len(protos)), 3.2)
    ax.grid(axis="x", visible=False)
    width = 0.38
    for i, row in enumerate(shares.to_dict("records")):
        st = protocol_style(row["protocol"])
        announced = row["announced_pct"]
        if pd.notna(announced):
            ax.bar(
                i - width / 2,
                announced,
                width,
                color="white",
                edgecolor=st.colour,
                hatch="////",
                linewidth=1.0,
            )
            ax.text(i - width / 2, announced + 1.5, f"{announced:.0f}", ha="center", va="bottom", fontsize=7)
        served = row["served_pct"]
        if pd.notna(served):
            ax.bar(i + width / 2, served, width, color=st.colour, edgecolor=st.colour)
            ax.text(i + width / 2, served + 1.5, f"{served:.0f}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(protos)), [_proto_label(p) for p in protos], fontsize=8)
    ax.set_ylim(0, 112)
    ax.set_ylabel("share of contacted sites (%)")
    ax.set_title(title, loc="left")
    handles = [
        Patch(facecolor="white", edgecolor="#555555", hatch="////", label="announced"),
        Patch(facecolor="#555555", label="served"),
    ]
    ax.legend(handles=handles, loc="upper right", ncol=2)
    return fig


def gateway_figure(
    table: pd.DataFrame,
    x: str,
    *,
    x_label: str,
    series: Sequence[str] = (),
    series_names: Mapping[str, str] | None = None,
    log_x: bool = False,
    panels: Sequence[tuple[str, str]] = (
        ("retransmissions", "retransmissions per load"),
        ("drops_queue", "queue drops per load"),
        ("rtt_inflation_ms", "RTT inflation (ms, estimate)"),
    ),
) -> Figure:
    """Panels of per-load gateway metrics vs ``x``, one line per protocol (and series)."""
    panels = [(c, lbl) for c, lbl in panels if c in table and table[c].notna().any()]
    ncols = len(panels) if len(panels) <= 3 else 2
    nrows = math.ceil(max(1, len(panels)) / ncols) if panels else 1
    fig, axes = new_figure(6.6, 2.6 * nrows + 0.6, ncols=max(1, ncols), nrows=nrows, squeeze=False)
    keys = list(dict.fromkeys(_series_key(r, series) for r in table.to_dict("records")))
    series_names = dict(series_names or {})
    flat = list(np.asarray(axes).ravel())
    for ax in flat[len(panels) :]:
        ax.set_visible(False)
    for ax, (col, label) in zip(flat, panels, strict=False):
        for proto, group in table.groupby("protocol", sort=False):
            st = protocol_style(str(proto))
            for ki, key in enumerate(keys):
                mine = (
                    group
                    if not series
                    else group[[_series_key(r, series) == key for r in group.to_dict("records")]]
                )
                mine = mine.sort_values(x)
                ax.plot(
                    mine[x],
                    mine[col],
                    color=st.colour,
                    marker=st.marker,
                    markersize=3.5,
                    linestyle=LINESTYLES[ki % len(LINESTYLES)],
                    linewidth=1.3,
                )
        ax.set_title(label, loc="left", fontsize=8.5)
        ax.set_xlabel(x_label)
        if log_x:
            ax.set_xscale("log")
    handles: list[Artist] = [
        Line2D([], [], color=protocol_style(p).colour, marker=protocol_style(p).marker, label=_proto_label(p))
        for p in dict.fromkeys(table["protocol"])
    ]
    handles += [
        Line2D(
            [], [], color="#555555", linestyle=LINESTYLES[i % len(LINESTYLES)], label=series_names.get(k, k)
        )
        for i, k in enumerate(keys)
        if k
    ]
    fig.legend(handles=handles, loc="lower center", ncol=min(4, len(handles)), bbox_to_anchor=(0.5, 0.0))
    fig.tight_layout(rect=(0, 0.06 * math.ceil(len(handles) / 4) / nrows, 1, 1))
    return fig


def _scenario_bars(
    ax: Any,
    stats: pd.DataFrame,
    scenario: str,
    scenarios: list[Any],
    protos: list[str],
    width: float,
    scale: float = 1.0,
) -> None:
    """Grouped bars per scenario: each protocol's mean (× ``scale``) with its 95 % CI, scenarios on the
    x axis."""
    for pi, proto in enumerate(protos):
        st = protocol_style(proto)
        mine = stats[stats["protocol"] == proto].set_index(scenario).reindex(scenarios)
        xpos = np.arange(len(scenarios)) + (pi - (len(protos) - 1) / 2) * width
        err = np.vstack([mine["mean"] - mine["ci_low"], mine["ci_high"] - mine["mean"]]) * scale
        ax.bar(
            xpos,
            mine["mean"] * scale,
            width * 0.9,
            color=st.colour,
            label=st.label,
            yerr=err,
            capsize=2,
            error_kw={"elinewidth": 0.8, "ecolor": "#333333"},
        )
    ax.set_xticks(range(len(scenarios)), [str(x) for x in scenarios], fontsize=7.5, rotation=12)


def discipline_figure(
    table: pd.DataFrame,
    *,
    discipline: str,
    column: str | None,
    protocols: Sequence[str],
    panels: Sequence[tuple[str, str]],
) -> Figure:
    """The gateway per queue discipline: one row of panels per metric (``panels``: column, label; the
    column ``drops`` stacks the drops by cause), one column per value of ``column`` (the other axes'
    configurations, or one when None), grouped bars per discipline (x) and protocol."""
    cols = list(dict.fromkeys(table[column])) if column else [None]
    discs = list(dict.fromkeys(table[discipline]))
    protos = [p for p in protocols if p in set(table["protocol"])]
    fig, axes = new_figure(
        2.3 * len(cols) + 1.2, 2.1 * len(panels) + 0.7, ncols=len(cols), nrows=len(panels), squeeze=False
    )
    width = 0.8 / max(1, len(protos))
    for r, (metric, label) in enumerate(panels):
        for c, value in enumerate(cols):
            ax = axes[r][c]
            here = table if value is None else table[table[column] == value]
            for pi, proto in enumerate(protos):
                st = protocol_style(proto)
                mine = here[here["protocol"] == proto].set_index(discipline).reindex(discs)
                xpos = np.arange(len(discs)) + (pi - (len(protos) - 1) / 2) * width
                if metric == "drops":
                    bottom = np.zeros(len(discs))
                    for cause, _, hatch in DROP_CAUSES:
                        vals = (
                            mine[cause].fillna(0.0).to_numpy(dtype=float)
                            if cause in mine
                            else np.zeros(len(discs))
                        )
                        ax.bar(
                            xpos,
                            vals,
                            width * 0.9,
                            bottom=bottom,
                            color=st.colour,
                            hatch=hatch,
                            edgecolor="white",
                            linewidth=0.3,
                        )
                        bottom += vals
                else:
                    ax.bar(xpos, mine[metric].to_numpy(dtype=float), width * 0.9, color=st.colour)
            ax.set_xticks(
                range(len(discs)), [discipline_label(d) for d in discs], fontsize=7, rotation=30, ha="right"
            )
            if c == 0:
                ax.set_ylabel(label, fontsize=8)
            if r == 0 and value is not None:
                ax.set_title(_mpl_text(value), fontsize=8)
    handles: list[Artist] = [Patch(facecolor=protocol_style(p).colour, label=_proto_label(p)) for p in protos]
    if any(m == "drops" for m, _ in panels):
        handles += [
            Patch(facecolor="#999999", hatch=h, edgecolor="white", label=f"{n} drops")
            for _, n, h in DROP_CAUSES
        ]
    fig.legend(handles=handles, loc="lower center", ncol=min(6, len(handles)), bbox_to_anchor=(0.5, 0.0))
    fig.tight_layout(rect=(0, 0.07 / len(panels) * 2, 1, 1))
    return fig


def scenario_figure(
    stats: pd.DataFrame,
    *,
    scenario: str,
    protocols: Sequence[str],
    metric_label: str,
    throughput: pd.DataFrame | None = None,
) -> Figure:
    """Grouped bars per scenario (a categorical axis): mean ``metric`` with its 95 % CI per protocol;
    with ``throughput`` (scenario, protocol, throughput_mbit) a second panel."""
    scenarios = list(dict.fromkeys(stats[scenario]))
    protos = [p for p in protocols if p in set(stats["protocol"])]
    ncols = 2 if throughput is not None else 1
    fig, axes = new_figure(7.0 if ncols == 2 else 5.0, 3.2, ncols=ncols, squeeze=False)
    width = 0.8 / max(1, len(protos))
    ax = axes[0][0]
    _scenario_bars(ax, stats, scenario, scenarios, protos, width)
    ax.set_ylabel(metric_label)
    ax.legend(loc="upper left")
    if throughput is not None:
        ax2 = axes[0][1]
        for pi, proto in enumerate(protos):
            st = protocol_style(proto)
            mine = throughput[throughput["protocol"] == proto].set_index(scenario).reindex(scenarios)
            xpos = np.arange(len(scenarios)) + (pi - (len(protos) - 1) / 2) * width
            ax2.bar(xpos, mine["throughput_mbit"], width * 0.9, color=st.colour)
        ax2.set_xticks(range(len(scenarios)), [str(s) for s in scenarios], fontsize=7.5, rotation=12)
        ax2.set_ylabel("throughput (Mbit/s)")
    fig.tight_layout()
    return fig


def server_cost_figure(
    cpu: pd.DataFrame, memory: pd.DataFrame, *, scenario: str, protocols: Sequence[str]
) -> Figure:
    """The server under test's cost per load: mean CPU ms (left) and mean peak memory in MB (right) per
    protocol and scenario, each with its 95 % CI (``describe`` tables with a ``scenario`` column)."""
    scenarios = list(dict.fromkeys(cpu[scenario]))
    protos = [p for p in protocols if p in set(cpu["protocol"])]
    fig, axes = new_figure(7.0, 3.2, ncols=2, squeeze=False)
    width = 0.8 / max(1, len(protos))
    for ax, stats, label, scale in (
        (axes[0][0], cpu, "server CPU per load (ms)", 1.0),
        (axes[0][1], memory, "server peak memory (MB)", 1e-6),
    ):
        _scenario_bars(ax, stats, scenario, scenarios, protos, width, scale)
        ax.set_ylabel(label)
    axes[0][0].legend(loc="upper left")
    fig.tight_layout()
    return fig


@dataclasses.dataclass(frozen=True)
class Panel:
    """One row of a :func:`capacity_figure`: a column of the intervals drawn against VUs."""

    column: str  #: the intervals' column (``pages_per_s``, ``server_cpu_util`` …)
    label: str  #: the y axis' label (``pages/s``); a mapping configuration → label when it differs
    scale: float = 1.0  #: multiplies the values (bytes → MB: 1e-6)
    sla: tuple[float, str] | None = None  #: draw the SLA line (page_ms, statistic) on this panel
    markers: bool = False  #: draw each run's first error and first SLA violation on this panel
    labels: Mapping[str, str] | None = None  #: per configuration, when the label differs (busy gauges)


#: how a run's markers are drawn (vertical lines in the protocol's colour): outcome → (line style, legend)
CAPACITY_MARKERS: dict[str, tuple[LineStyleType, str]] = {
    "vus_at_first_error": ("-.", "first error"),
    "vus_at_first_sla_violation": (":", "first SLA violation"),
}


def capacity_figure(
    intervals: pd.DataFrame,
    *,
    panels: Sequence[Panel],
    configs: Sequence[str],
    protocols: Sequence[str],
    markers: pd.DataFrame | None = None,
    x: str = "vus_x",
    xlabel: str = "VUs (most active in the interval)",
) -> Figure:
    """Study N's figures: each panel's column against VUs, one line per protocol (its colour and marker),
    one column of panels per configuration on shared axes. ``intervals`` has ``config``, ``protocol``,
    ``x`` and the panels' columns (only ``in_scenario`` rows are drawn); ``markers`` has ``config``,
    ``protocol`` and the :data:`CAPACITY_MARKERS` outcomes (VUs), drawn where a panel asks for them."""
    configs = list(configs) or [""]
    rows, cols = len(panels), len(configs)
    width = 7.0 if cols == 1 else min(14.0, 1.2 + 3.6 * cols)
    fig, axes = new_figure(width, 0.6 + 2.3 * rows, nrows=rows, ncols=cols, squeeze=False, sharex="col")
    drawn = intervals[intervals["in_scenario"]] if "in_scenario" in intervals else intervals
    seen_markers: set[str] = set()
    for r, panel in enumerate(panels):
        for c, config in enumerate(configs):
            ax = axes[r][c]
            mine = drawn[drawn["config"] == config] if config else drawn
            for proto in protocols:
                st = protocol_style(proto)
                rows_ = mine[mine["protocol"] == proto].sort_values(x)
                values = (
                    pd.to_numeric(rows_[panel.column], errors="coerce") * panel.scale if len(rows_) else []
                )
                if len(rows_) and not np.all(np.isnan(np.asarray(values, dtype=float))):
                    ax.plot(
                        rows_[x],
                        values,
                        color=st.colour,
                        marker=st.marker,
                        markersize=3.5,
                        linewidth=1.4,
                        label=st.label,
                    )
                if panel.markers and markers is not None:
                    here = markers[
                        (markers["protocol"] == proto) & ((markers["config"] == config) if config else True)
                    ]
                    for outcome, (style, _name) in CAPACITY_MARKERS.items():
                        for v in here[outcome].dropna():
                            ax.axvline(float(v), color=st.colour, linestyle=style, linewidth=1.1, alpha=0.9)
                            seen_markers.add(outcome)
            if panel.sla is not None:
                ax.axhline(panel.sla[0], color="#555555", linestyle="--", linewidth=1.0)
            label = (panel.labels or {}).get(config, panel.label)
            if c == 0 or (panel.labels and label != (panel.labels or {}).get(configs[0], panel.label)):
                ax.set_ylabel(_wrap(label, 28))
            if r == 0 and config:
                ax.set_title(_wrap(config, 40), fontsize=9.5)
            if r == rows - 1:
                ax.set_xlabel(xlabel)
        # one y scale per row, from 0 (a gauge that differs per configuration keeps its own)
        tops = [ax.get_ylim()[1] for ax in axes[r]]
        for ax, top in zip(axes[r], tops, strict=True):
            ax.set_ylim(0, top if panel.labels else max(tops))
    handles: list[Any] = [
        Line2D(
            [],
            [],
            color=protocol_style(p).colour,
            marker=protocol_style(p).marker,
            label=protocol_style(p).label,
        )
        for p in protocols
        if p in set(drawn["protocol"])
    ]
    for panel in panels:
        if panel.sla is not None:
            handles.append(
                Line2D(
                    [], [], color="#555555", linestyle="--", label=f"SLA {panel.sla[0]:g} ms ({panel.sla[1]})"
                )
            )
    for outcome, (style, name) in CAPACITY_MARKERS.items():
        if outcome in seen_markers:
            handles.append(Line2D([], [], color="#333333", linestyle=style, label=name))
    fig.tight_layout(rect=(0, 0.06 if rows > 1 else 0.1, 1, 1))
    fig.legend(handles=handles, loc="lower center", ncol=min(6, len(handles)), bbox_to_anchor=(0.5, 0.0))
    return fig


def _wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(_mpl_text(text), width)) or ""


def _mpl_text(text: Any) -> str:
    return str(text).replace("$", r"\$")


def tree_figure(
    tree: TreeResult,
    *,
    names: Mapping[str, str],
    class_names: Mapping[str, str],
    formats: Mapping[str, str] | None = None,
) -> Figure:
    """The decision tree: split nodes show their condition, nodes whose majority class has likelihood >
    the threshold are filled with the class colour and labelled; others are marked 'mixed'."""
    formats = dict(formats or {})
    nodes = tree.nodes
    leaves_x: dict[int, float] = {}
    counter = [0]

    def place(i: int) -> float:
        node = nodes[i]
        if node.is_leaf:
            leaves_x[i] = counter[0]
            counter[0] += 1
            return leaves_x[i]
        left, right = place(node.left), place(node.right)  # type: ignore[arg-type]
        leaves_x[i] = (left + right) / 2
        return leaves_x[i]

    place(0)
    max_depth = max(n.depth for n in nodes)
    n_leaves = counter[0]
    fig, ax = new_figure(max(6.0, 1.55 * n_leaves), 1.45 * (max_depth + 1) + 0.4)
    ax.axis("off")
    ax.set_xlim(-0.7, n_leaves - 0.3)
    ax.set_ylim(-max_depth - 0.5, 0.5)
    for node in nodes:
        if node.is_leaf:
            continue
        for child, text in ((node.left, "yes"), (node.right, "no")):
            cx, cy = leaves_x[child], -nodes[child].depth  # type: ignore[index]
            ax.plot([leaves_x[node.id], cx], [-node.depth, cy], color="#999999", linewidth=0.9, zorder=1)
            ax.text(
                (leaves_x[node.id] + cx) / 2,
                (-node.depth + cy) / 2,
                text,
                fontsize=6.5,
                color="#777777",
                ha="center",
                va="center",
                backgroundcolor="white",
                zorder=2,
            )
    for node in nodes:
        x, y = leaves_x[node.id], -node.depth
        colour = CLASS_STYLES[node.label][1] if node.label in CLASS_STYLES else "#ffffff"
        filled = node.label is not None
        majority = node.majority or ""
        share = f"{node.likelihood * 100:.0f} % {class_names.get(majority, majority)}"
        if node.is_leaf:
            label = node.label or ""
            head = textwrap.fill(class_names.get(label, label), 16) if filled else "mixed"
        else:
            name = names.get(node.feature or "", node.feature or "")
            value = formats.get(node.feature or "", "{:g}").format(node.threshold)
            head = f"{textwrap.fill(name, 18)}\n≤ {value}"
        body = f"{textwrap.fill(share, 20)}\nn = {node.samples}"
        text_colour = "white" if filled and node.label != "equal" else "#222222"
        box = FancyBboxPatch(
            (x - 0.46, y - 0.36),
            0.92,
            0.72,
            boxstyle="round,pad=0.02,rounding_size=0.08",
            facecolor=colour if filled else "#ffffff",
            edgecolor="#666666" if not filled else colour,
            linewidth=0.9,
            zorder=3,
        )
        ax.add_patch(box)
        ax.text(
            x,
            y + 0.12,
            head,
            ha="center",
            va="center",
            fontsize=7,
            fontweight="bold",
            color=text_colour,
            zorder=4,
            linespacing=1.05,
        )
        ax.text(
            x,
            y - 0.19,
            body,
            ha="center",
            va="center",
            fontsize=6.3,
            color=text_colour,
            zorder=4,
            linespacing=1.05,
        )
    return fig


def _lanes(objects: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[list[Mapping[str, Any]]]]]:
    """Objects grouped by connection (in order of first use), packed into rows without overlap."""
    lanes: dict[str, list[list[Mapping[str, Any]]]] = {}
    for o in sorted(objects, key=lambda o: (o["started_ms"], o.get("entry_index", 0))):
        rows = lanes.setdefault(str(o.get("connection") or "?"), [])
        for row in rows:
            last = row[-1]
            if last["started_ms"] + last["time_ms"] <= o["started_ms"]:
                row.append(o)
                break
        else:
            rows.append([o])
    return list(lanes.items())


def _segments(o: Mapping[str, Any]) -> list[tuple[str, float]]:
    def ms(k: str) -> float:
        v = o.get(f"{k}_ms")
        return float(v) if isinstance(v, int | float) and np.isfinite(v) and v > 0 else 0.0

    return [
        ("blocked", ms("blocked")),
        ("dns", ms("dns")),
        ("connect", max(0.0, ms("connect") - ms("ssl"))),
        ("ssl", ms("ssl")),
        ("send", ms("send")),
        ("wait", ms("wait")),
        ("receive", ms("receive")),
    ]


def waterfall_figure(objects: Sequence[Mapping[str, Any]], *, title: str = "") -> Figure:
    """A request waterfall: one lane per connection (objects sharing a connection at the same time are
    stacked within its lane), each request's bar split into its HAR phases."""
    lanes = _lanes(objects)
    n_rows = sum(len(rows) for _, rows in lanes)
    fig, ax = new_figure(7.0, min(14.0, 0.9 + 0.16 * n_rows + 0.12 * len(lanes)))
    ax.grid(axis="y", visible=False)
    y = 0.0
    ticks, labels = [], []
    bars: dict[str, list[tuple[float, float, float]]] = {p: [] for p in PHASE_ORDER}
    for li, (conn, rows) in enumerate(lanes):
        top = y
        for row in rows:
            for o in row:
                x = float(o["started_ms"])
                for phase, width in _segments(o):
                    if width > 0:
                        bars[phase].append((x, width, y))
                    x += width
            y += 1
        if li % 2 == 0:
            ax.axhspan(top - 0.5, y - 0.5, color="#f4f4f4", zorder=0)
        ticks.append((top + y - 1) / 2)
        labels.append(f"conn {conn} ({sum(len(r) for r in rows)})")
        y += 0.4
    for phase, items in bars.items():
        if items:
            verts = [
                [(x, yy - 0.4), (x + w, yy - 0.4), (x + w, yy + 0.4), (x, yy + 0.4)] for x, w, yy in items
            ]
            ax.add_collection(PolyCollection(verts, facecolors=PHASE_STYLES[phase].colour, linewidths=0))
    ax.set_xlim(0, max((x + w for items in bars.values() for x, w, _ in items), default=1.0) * 1.01)
    ax.set_yticks(ticks, labels, fontsize=7)
    ax.set_ylim(y - 0.4, -0.6)
    ax.set_xlabel("time since the load started (ms)")
    ax.set_title(title, loc="left")
    phases = [p for p in PHASE_ORDER if any(w > 0 for o in objects for ph, w in _segments(o) if ph == p)]
    ax.legend(
        handles=[Patch(color=PHASE_STYLES[p].colour, label=PHASE_STYLES[p].label) for p in phases],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.12),
        ncol=len(phases),
    )
    return fig


def waterfall_from_har(har: Mapping[str, Any], *, title: str = "") -> Figure:
    """The waterfall of one load straight from its HAR (``Results.har(sweep, trial_id, load_index)`` or a
    file of a trial directory), via :func:`wirelab._har.objects_from_har`."""
    from wirelab._har import objects_from_har

    objects = objects_from_har(har)
    if not objects:
        raise ValueError("the HAR has no entries")
    return waterfall_figure(objects, title=title)


def why_figure(
    frame: pd.DataFrame,
    *,
    parts: Sequence[tuple[str, str]],
    label: str = "label",
    title: str = "",
) -> Figure:
    """Why a protocol wins (``wirelab.analysis.why.explain``'s frame): per compared protocol a panel,
    per configuration (``label``, in the frame's order) a diverging bar — each part's signed
    contribution to the difference in time on the wire, negatives (the protocol faster) left of
    zero, positives right — and a black diamond at the difference itself (their sum).
    ``parts`` are (key, label) pairs in the engine's order."""
    protos = list(dict.fromkeys(frame["protocol"]))
    configs = list(dict.fromkeys(frame[label].astype(str)))
    height = 0.9 + max(1, len(configs)) * 0.34
    fig, axes = new_figure(7.0, height * len(protos) + 0.5, nrows=len(protos), squeeze=False, sharex=True)
    present = [k for k, _ in parts if frame[k].abs().gt(0.5).any()] if len(frame) else []
    for ax, proto in zip(np.asarray(axes).ravel(), protos, strict=True):
        rows = frame[frame["protocol"] == proto]
        base = str(rows["baseline"].iloc[0])
        ax.grid(axis="y", visible=False)
        ax.axvline(0, color="#555555", linewidth=0.8)
        for yi, cfg in enumerate(configs):
            row = rows[rows[label].astype(str) == cfg]
            if row.empty:
                continue
            r = row.iloc[0]
            ends = {-1: 0.0, 1: 0.0}  # where the negative and the positive stacks have reached
            for key in present:
                v = float(r[key])
                if v == 0:
                    continue
                side = -1 if v < 0 else 1
                ax.barh(
                    yi,
                    v,
                    left=ends[side],
                    height=0.62,
                    color=part_colour(key),
                    edgecolor="white",
                    linewidth=0.4,
                )
                ends[side] += v
            ax.plot(float(r["difference_ms"]), yi, marker="D", color="black", markersize=4.5, zorder=3)
        ax.set_yticks(range(len(configs)), configs, fontsize=7.5)
        ax.set_ylim(len(configs) - 0.5, -0.5)
        ax.set_title(f"{_proto_label(proto)} against {_proto_label(base)}", loc="left", fontsize=8.5)
    np.asarray(axes).ravel()[-1].set_xlabel("contribution to the difference in time on the wire (ms)")
    if title:
        fig.suptitle(title, x=0.01, ha="left")
    names = dict(parts)
    handles: list[Artist] = [Patch(color=part_colour(k), label=names[k]) for k in present]
    handles.append(Line2D([], [], linestyle="", marker="D", color="black", label="difference"))
    ncol = min(5, len(handles))
    fig.legend(handles=handles, loc="lower center", ncol=ncol, bbox_to_anchor=(0.5, 0.0), fontsize=7.5)
    fig.tight_layout(rect=(0, 0.03 + 0.045 * math.ceil(len(handles) / ncol), 1, 1))
    return fig


def filmstrip_columns(strips: Sequence[Sequence[tuple[float, float]]], max_columns: int = 10) -> list[float]:
    """The moments a side-by-side filmstrip shows: every time one of the strips' pictures changed
    (``(t_ms, progress)`` per frame, the blank frame at 0 included), thinned evenly to at most
    ``max_columns`` keeping the first and the last."""
    times = sorted({float(t) for strip in strips for t, _ in strip})
    if len(times) <= max_columns:
        return times
    picks = np.linspace(0, len(times) - 1, max_columns).round().astype(int)
    return [times[i] for i in dict.fromkeys(picks)]


def _on_screen(frames: Sequence[Any], t: float) -> Any:
    """The frame on screen at ``t``: the last one shown at or before it."""
    shown = frames[0]
    for f in frames:
        if f.time_ms <= t:
            shown = f
    return shown


def filmstrip_figure(strips: Sequence[tuple[str, str, Sequence[Any]]], *, max_columns: int = 10) -> Figure:
    """Filmstrips side by side, as WebPageTest draws them: one row per load (``(protocol, label,
    frames)``, frames with ``time_ms``, ``progress`` and ``path`` of a JPEG, as
    :meth:`wirelab.store.Results.frames` returns them), one column per moment one of them changed; each
    cell is the frame on screen then, with its visual progress, framed in the protocol's colour where
    that load's picture changed at that moment."""
    from matplotlib.image import imread

    columns = filmstrip_columns([[(f.time_ms, f.progress) for f in fr] for _, _, fr in strips], max_columns)
    images: dict[Any, Any] = {}
    n_rows, n_cols = len(strips), max(1, len(columns))
    fig, axes = new_figure(
        1.05 * n_cols + 0.9, 1.15 * n_rows + 0.5, nrows=n_rows, ncols=n_cols, squeeze=False
    )
    for r, (proto, label, frames) in enumerate(strips):
        style = protocol_style(proto)
        changed = {f.time_ms for f in frames}
        for c, t in enumerate(columns):
            ax = axes[r][c]
            ax.set_xticks([])
            ax.set_yticks([])
            ax.grid(visible=False)
            f = _on_screen(frames, t)
            if f.path not in images:
                images[f.path] = imread(f.path)
            img = images[f.path]
            if img.ndim == 2:  # a greyscale JPEG (the blank start frame)
                ax.imshow(img, aspect="equal", cmap="gray", vmin=0, vmax=255)
            else:
                ax.imshow(img, aspect="equal")
            edge = style.colour if t in changed else "#cccccc"
            for spine in ax.spines.values():
                spine.set_visible(True)
                spine.set_edgecolor(edge)
                spine.set_linewidth(2.0 if t in changed else 0.6)
            ax.set_xlabel(f"{f.progress:.0f} %", fontsize=7, labelpad=1)
            if r == 0:
                ax.set_title(f"{t / 1000:.2f} s", fontsize=7, pad=2)
            if c == 0:
                ax.set_ylabel(label, fontsize=7, color=style.colour)
    fig.tight_layout(pad=0.3, h_pad=0.4, w_pad=0.2)
    return fig
