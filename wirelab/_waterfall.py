"""A terminal waterfall of one page load, from the objects of its HAR (rich renderable).

One row per object: its path, connection, and a bar on a common time axis whose segments are the HAR
phases — blocked, dns, connect (TCP), ssl, send, wait, receive. HAR's ``connect`` includes ``ssl``;
the bar draws the TCP part as ``connect − ssl``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from rich.table import Table
from rich.text import Text

from wirelab._terminal import shown

__all__ = ["PHASE_STYLES", "waterfall"]

_LOAD_PREFIX = re.compile(r"^/L/[A-Za-z0-9_-]{1,32}/")

#: Phase → (style, legend label), in drawing order.
PHASE_STYLES: dict[str, tuple[str, str]] = {
    "blocked": ("grey50", "blocked"),
    "dns": ("cyan", "dns"),
    "tcp": ("dark_orange", "connect"),
    "ssl": ("magenta", "ssl"),
    "send": ("green", "send"),
    "wait": ("yellow", "wait"),
    "receive": ("blue", "receive"),
}


def _phases(obj: Mapping[str, Any]) -> list[tuple[str, float]]:
    def ms(key: str) -> float:
        v = obj.get(f"{key}_ms")
        return (
            float(v) if isinstance(v, int | float) and not (isinstance(v, float) and math.isnan(v)) else 0.0
        )

    connect, ssl = ms("connect"), ms("ssl")
    return [
        ("blocked", ms("blocked")),
        ("dns", ms("dns")),
        ("tcp", max(0.0, connect - ssl)),
        ("ssl", ssl),
        ("send", ms("send")),
        ("wait", ms("wait")),
        ("receive", ms("receive")),
    ]


def waterfall(objects: Iterable[Mapping[str, Any]], *, width: int = 60, title: str | None = None) -> Table:
    """Rows of ``objects`` (``wirelab.open(db).objects(...)`` records or ``store.objects_from_har``)."""
    rows = sorted(objects, key=lambda o: o["started_ms"])
    end = max((o["started_ms"] + o["time_ms"] for o in rows), default=0.0) or 1.0
    scale = width / end
    table = Table(title=title, show_edge=False, pad_edge=False, box=None, header_style="bold")
    table.add_column("object", overflow="ellipsis", no_wrap=True, max_width=34)
    table.add_column("conn", justify="right")
    table.add_column("ms", justify="right")
    table.add_column(f"0 … {end:,.0f} ms", no_wrap=True)
    for o in rows:
        bar = Text(" " * int(round(o["started_ms"] * scale)))
        position = o["started_ms"]
        drawn = len(bar)
        for phase, ms in _phases(o):
            position += ms
            target = int(round(position * scale))
            cells = max(target - drawn, 1 if phase == "receive" else 0)
            if cells:
                bar.append("█" * cells, style=PHASE_STYLES[phase][0])
                drawn += cells
        # every load's URLs live below /L/<token>/ (docs/pages.md): the token says nothing here
        path = _LOAD_PREFIX.sub("/", urlsplit(o["url"]).path) or "/"
        host = urlsplit(o["url"]).hostname or ""
        label = path if host.startswith("www.") or not host else f"{host.split('.')[0]}:{path}"
        table.add_row(shown(label), str(o.get("connection") or ""), f"{o['time_ms']:,.0f}", bar)
    legend = Text("  ")
    for _phase, (style, label) in PHASE_STYLES.items():
        legend.append("█", style=style)
        legend.append(f" {label}  ")
    table.caption = legend
    return table
