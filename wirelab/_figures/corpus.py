"""The characteristics figure of a corpus (study W's real pages: object count, page size, object-size
spread) from ``wirelab-engine pages ls --corpus``'s listing, plus the profile's domains."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from wirelab._figures.rendering import new_figure
from wirelab.analysis.stats import ecdf

__all__ = ["characteristics_figure"]


def _cdf(ax: Any, values: Sequence[float], label: str | None = None, **style: Any) -> None:
    xs, ys = ecdf(np.asarray(values, dtype=float))
    if len(xs):
        ax.step(
            np.concatenate([[xs[0]], xs]),
            np.concatenate([[0], ys]),
            where="post",
            label=label,
            linewidth=1.5,
            **style,
        )


def characteristics_figure(listing: Mapping[str, Any]) -> Figure:
    """Four CDFs over the corpus's pages: objects, page size, object sizes (p10, median, p90 of each
    page) and domains."""
    pages = listing["pages"]
    fig, axes = new_figure(10.0, 2.9, ncols=4)
    panels = [
        ("objects per page", [p["objects"] for p in pages], False),
        ("page size (kB)", [p["total_bytes"] / 1000 for p in pages], True),
        ("object size (kB)", None, True),
        ("domains per page", [p["domains"] for p in pages], False),
    ]
    for ax, (title, values, log) in zip(axes, panels, strict=True):
        if values is None:
            for key, shade, label in (
                ("object_bytes_p10", "#9ecae1", "p10"),
                ("object_bytes_p50", "#3182bd", "median"),
                ("object_bytes_p90", "#08519c", "p90"),
            ):
                _cdf(ax, [p[key] / 1000 for p in pages], label, color=shade)
            ax.legend(loc="lower right")
        else:
            _cdf(ax, values, color="#3182bd")
        if log:
            ax.set_xscale("log")
        ax.set_xlabel(title)
        ax.set_ylim(0, 1.02)
    axes[0].set_ylabel("fraction of pages")
    fig.suptitle(
        f"{listing['corpus']}: {len(pages)} pages like {listing['profile']} (seed {listing['seed']})",
        fontsize=10,
    )
    return fig
