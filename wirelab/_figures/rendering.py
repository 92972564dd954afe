"""Rendering matplotlib figures (Agg backend, no display) to PNG and SVG.

:func:`render` turns a ``matplotlib.figure.Figure`` into a :class:`Rendered` (both formats in memory,
written to a directory on request) and closes it. The house style (:data:`STYLE`) is applied by
:func:`new_figure`, which every plotting function uses.
"""

from __future__ import annotations

import dataclasses
import io
import re
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

__all__ = ["STYLE", "Rendered", "new_figure", "render", "slug"]

STYLE: dict[Any, Any] = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.titleweight": "bold",
    "axes.labelsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e6e6e6",
    "grid.linewidth": 0.6,
    "axes.edgecolor": "#888888",
    "axes.axisbelow": True,
    "legend.frameon": False,
    "legend.fontsize": 9,
    "xtick.color": "#444444",
    "ytick.color": "#444444",
    "svg.fonttype": "path",  # text as outlines: renders the same everywhere, carries no markup
    "svg.hashsalt": "wirelab",  # stable ids: the same data gives the same file
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
}


def new_figure(width: float = 7.0, height: float = 3.6, **subplots: Any) -> tuple[Figure, Any]:
    """A figure and its axes (``plt.subplots`` arguments) in the house style."""
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(figsize=(width, height), **subplots)
    return fig, axes


@dataclasses.dataclass
class Rendered:
    """One figure in both formats."""

    name: str  #: file stem (``gain-vs-rtt``)
    svg: str
    png: bytes
    files: list[Path] = dataclasses.field(default_factory=list)  #: where it was written, if anywhere

    def write(self, directory: Path) -> list[Path]:
        directory.mkdir(parents=True, exist_ok=True)
        svg, png = directory / f"{self.name}.svg", directory / f"{self.name}.png"
        svg.write_text(self.svg)
        png.write_bytes(self.png)
        self.files = [png, svg]
        return self.files


def render(fig: Figure, name: str) -> Rendered:
    """Both formats of ``fig``; the figure is closed afterwards."""
    try:
        with plt.rc_context(STYLE):
            svg_buf, png_buf = io.StringIO(), io.BytesIO()
            fig.savefig(svg_buf, format="svg", metadata={"Date": None})
            fig.savefig(png_buf, format="png", metadata={"Software": None})
    finally:
        plt.close(fig)
    return Rendered(name=name, svg=svg_buf.getvalue(), png=png_buf.getvalue())


def slug(text: str) -> str:
    """A file-name-safe stem: ``gain vs RTT (ms)`` → ``gain-vs-rtt-ms``."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:80] or "figure"
