"""HAR 1.2 → one row per request: what the ``objects`` table stores for each load, and what the
waterfalls and ``LoadResult.objects`` draw from a HAR file."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

__all__ = ["OBJECT_TIMINGS", "objects_from_har"]

#: The HAR timings of an entry, as ``<timing>_ms`` columns.
OBJECT_TIMINGS = ("blocked", "dns", "connect", "ssl", "send", "wait", "receive")


def _har_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _timing(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


def objects_from_har(har: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per HAR entry: url, origin, protocol, connection, stream id, status, size, start offset
    from the page's start, total time and the HAR timings (-1 → None; ``connect`` includes ``ssl``).

    Reads the HAR 1.2 fields plus the engine's extensions ``_protocol``, ``_stream_id`` and
    ``connection`` (or ``_connection``)."""
    log = har.get("log", {})
    entries = log.get("entries", [])
    if not entries:
        return []
    pages = log.get("pages") or []
    starts = [_har_time(e["startedDateTime"]) for e in entries]
    page_start = _har_time(pages[0]["startedDateTime"]) if pages else min(starts)
    rows = []
    for i, (entry, start) in enumerate(zip(entries, starts, strict=True)):
        url = entry["request"]["url"]
        parts = urlsplit(url)
        response = entry.get("response", {})
        timings = entry.get("timings", {})
        size = response.get("bodySize")
        if not isinstance(size, int) or size < 0:
            size = response.get("content", {}).get("size")
        stream = entry.get("_stream_id")
        protocol = entry.get("_protocol") or response.get("httpVersion") or None
        connection = entry.get("connection", entry.get("_connection"))
        rows.append(
            {
                "entry_index": i,
                "url": url,
                "origin": f"{parts.scheme}://{parts.netloc}",
                "protocol": protocol,
                "connection": None if connection is None else str(connection),
                "stream_id": stream if isinstance(stream, int) else None,
                "status": response.get("status"),
                "mime_type": response.get("content", {}).get("mimeType"),
                "size_bytes": size if isinstance(size, int) and size >= 0 else None,
                "started_ms": (start - page_start).total_seconds() * 1000,
                "time_ms": float(entry.get("time", 0)),
                **{f"{k}_ms": _timing(timings.get(k)) for k in OBJECT_TIMINGS},
            }
        )
    return rows
