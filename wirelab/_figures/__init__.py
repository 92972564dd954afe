"""Figures of the studies (matplotlib, Agg): :mod:`~wirelab._figures.plots` draws them from analysis
tables, :mod:`~wirelab._figures.rendering` writes PNG and SVG. Colours and markers come from
:mod:`wirelab._registry`."""

from wirelab._figures.plots import (
    category_gain_figure,
    cdf_figure,
    gain_figure,
    gateway_figure,
    heatmap_figure,
    main_effects_figure,
    multiplex_figure,
    phase_figure,
    probe_support_figure,
    ratio_cdf_figure,
    scenario_figure,
    tree_figure,
    waterfall_figure,
    waterfall_from_har,
)
from wirelab._figures.rendering import Rendered, render

__all__ = [
    "Rendered",
    "category_gain_figure",
    "cdf_figure",
    "gain_figure",
    "gateway_figure",
    "heatmap_figure",
    "main_effects_figure",
    "multiplex_figure",
    "phase_figure",
    "probe_support_figure",
    "ratio_cdf_figure",
    "render",
    "scenario_figure",
    "tree_figure",
    "waterfall_figure",
    "waterfall_from_har",
]
