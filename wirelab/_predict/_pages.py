"""What the model knows of a page: the engine's ``pages model`` facts, as arrays.

The engine owns the page model (building corpus, synthetic, generated and imported pages, sharding,
what a flat load finds where, the dependency graph); this module only asks it
(``wirelab-engine pages model``, :meth:`wirelab._engine.Engine.pages_model`) and keeps the answers
for the life of the process, so a grid over one page asks once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from wirelab.errors import UsageError

__all__ = ["PageFacts", "PageKey", "page_facts", "prefetch"]

#: (name, seed, shards, shard mode): what decides a page's facts.
PageKey = tuple[str, int, int, str]

_KIND = {"download": 0, "parse": 1, "evaluate": 1}


@dataclasses.dataclass(frozen=True)
class Activity:
    """One activity of the graph a replay follows, by index."""

    download: bool
    object: int
    duration_ms: float
    deps: tuple[int, ...]
    first_chunk: tuple[bool, ...]


@dataclasses.dataclass(frozen=True)
class PageFacts:
    """A page as the model sees it (``page.ModelFacts`` in the engine)."""

    name: str
    origins: int
    size: tuple[int, ...]  #: body bytes per object, root first
    origin: tuple[int, ...]  #: origin index per object
    type: tuple[str, ...]  #: html css js image font other
    found_by: tuple[int, ...]  #: the document a flat load finds the object in (-1: root, or never)
    activities: tuple[Activity, ...]

    @property
    def objects(self) -> int:
        return len(self.size)

    @property
    def total_bytes(self) -> int:
        return sum(self.size)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> PageFacts:
        acts = tuple(
            Activity(
                _KIND[a["kind"]] == 0,
                int(a["object"]),
                float(a.get("duration_ms") or 0.0),
                tuple(int(x) for x in a.get("deps") or ()),
                tuple(bool(x) for x in a.get("first_chunk") or ()),
            )
            for a in d["activities"]
        )
        return cls(
            d["name"],
            int(d["origins"]),
            tuple(int(x) for x in d["size"]),
            tuple(int(x) for x in d["origin"]),
            tuple(d["type"]),
            tuple(int(x) for x in d["found_by"]),
            acts,
        )


_CACHE: dict[PageKey, PageFacts] = {}


def _engine(engine: Any) -> Any:
    if engine is not None:
        return engine
    from wirelab._engine import SubprocessEngine

    return SubprocessEngine()


def prefetch(keys: Iterable[PageKey], engine: Any = None) -> None:
    """Ask the engine once per (seed, shards, mode) for every page of ``keys`` not known yet."""
    missing: dict[tuple[int, int, str], list[str]] = {}
    for key in keys:
        if key not in _CACHE:
            names = missing.setdefault(key[1:], [])
            if key[0] not in names:
                names.append(key[0])
    for (seed, shards, mode), names in missing.items():
        if any(n.startswith("url:") for n in names):
            live = next(n for n in names if n.startswith("url:"))
            raise UsageError(
                f"page: {live!r} is a live page; the model needs the page's objects, which only a load "
                "discovers — predict a corpus, synthetic, generated or imported page"
            )
        eng = _engine(engine)
        for i in range(0, len(names), 200):  # one engine process per 200 pages
            chunk = names[i : i + 200]
            for name, facts in zip(
                chunk, eng.pages_model(chunk, seed=seed, shards=shards, shard_mode=mode), strict=True
            ):
                _CACHE[(name, seed, shards, mode)] = PageFacts.from_json(facts)


def page_facts(key: PageKey, engine: Any = None) -> PageFacts:
    """The facts of one page (asking the engine if this process has not yet)."""
    if key not in _CACHE:
        prefetch([key], engine)
    return _CACHE[key]


def known(keys: Sequence[PageKey]) -> list[PageFacts]:
    """The facts of pages already fetched, in order."""
    return [_CACHE[k] for k in keys]
