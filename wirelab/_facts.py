"""Facts the control plane takes from the engine instead of keeping copies of them.

The engine owns the network profile grammar's presets, units and limits, the corpus pages (sizes,
object and origin counts), the fidelity limits, the probe's defaults and the live pages' bounds.
``wirelab-engine facts`` prints them; the repository keeps that output in
``wirelab/_engine_facts.json`` (``make facts`` regenerates it, and the engine's tests fail while the
file and the engine disagree). The file ships with the package, so these facts need neither the
engine binary nor the repository.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from importlib import resources
from typing import Any

__all__ = [
    "FACTS_FILE",
    "CorpusPage",
    "Preset",
    "byte_rate_units",
    "congestion_controls",
    "corpus",
    "engine_facts",
    "lab_domain",
    "lateness_p99_limit_us",
    "min_public_gap_ms",
    "presets",
    "probe_defaults",
    "profile_keys",
    "profile_limits",
    "units",
]

FACTS_FILE = "_engine_facts.json"


@functools.cache
def engine_facts() -> dict[str, Any]:
    """The whole of ``wirelab/_engine_facts.json`` (the output of ``wirelab-engine facts``)."""
    text = resources.files("wirelab").joinpath(FACTS_FILE).read_text(encoding="utf-8")
    facts: dict[str, Any] = json.loads(text)
    return facts


@dataclasses.dataclass(frozen=True)
class Preset:
    """A named network profile: its expansion (a profile string), where its numbers come from, and the
    engine's resolved form of it."""

    name: str
    expansion: str
    about: str
    resolved: dict[str, Any]


@functools.cache
def presets() -> dict[str, Preset]:
    """The presets in documented order."""
    return {
        p["name"]: Preset(p["name"], p["expansion"], p["about"], p["resolved"])
        for p in engine_facts()["profiles"]["presets"]
    }


def profile_keys() -> tuple[str, ...]:
    """The grammar's keys in the engine's (documented) order."""
    return tuple(engine_facts()["profiles"]["keys"])


def profile_limits() -> dict[str, int]:
    """Value limits of the grammar: ``max_duration_ns``, ``min_rate_bps``, ``max_rate_bps``,
    ``max_queue_packets``, ``min_queue_bytes``, ``max_queue_bytes``, ``default_queue_packets``,
    ``max_window``, ``max_tcpplus``, ``max_origin``; and ``congestion_controls`` is separate."""
    limits: dict[str, int] = engine_facts()["profiles"]["limits"]
    return limits


def units(kind: str) -> dict[str, int]:
    """Unit name → factor for ``duration`` (ns), ``rate`` (bit/s) or ``size`` (bytes), in the engine's
    order (``docs/profile-grammar.md``, "Units")."""
    return {u["name"]: int(u["factor"]) for u in engine_facts()["profiles"]["units"][kind]}


def byte_rate_units() -> frozenset[str]:
    """Rate units refused by name (any case) because ``tc`` reads them as bytes per second."""
    return frozenset(engine_facts()["profiles"]["units"]["byte_rates"])


def congestion_controls() -> tuple[str, ...]:
    return tuple(engine_facts()["profiles"]["congestion_controls"])


@dataclasses.dataclass(frozen=True)
class CorpusPage:
    """A page of the engine's built-in corpus, as ``wirelab-engine pages ls`` describes it."""

    name: str
    objects: int  #: objects, the root document included
    total_bytes: int
    origins: int  #: origins as the page comes (shards = 1)
    shard_origins: dict[str, int]  #: origins with shards = 0 per shard mode (``tld``, ``domain``)


@functools.cache
def corpus() -> dict[str, CorpusPage]:
    """The corpus pages by name."""
    return {
        p["name"]: CorpusPage(
            p["name"], p["objects"], p["total_bytes"], p["origins"], dict(p["shard_origins"])
        )
        for p in engine_facts()["pages"]["corpus"]
    }


def lateness_p99_limit_us() -> float:
    """The engine's fidelity bar for timer lateness (p99, µs): trials above it are flagged."""
    return float(engine_facts()["fidelity"]["lateness_p99_limit_us"])


def min_public_gap_ms() -> int:
    """The least ``gap_ms`` between two loads of a public live site (docs/live.md)."""
    return int(engine_facts()["live"]["min_public_gap_ms"])


def lab_domain() -> str:
    """The zone of the run's own names (``wirelab.test``): a live page under it is the local
    internet's, any other is a public site."""
    return str(engine_facts()["live"]["lab_domain"])


def probe_defaults() -> dict[str, Any]:
    """``wirelab-engine probe``'s defaults: ``concurrency``, ``rate`` (``2/s``), ``timeout`` and
    ``max_duration`` (Go durations), ``max_sites``."""
    defaults: dict[str, Any] = engine_facts()["probe"]
    return defaults
