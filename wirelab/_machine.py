"""The machine a trial ran on: host, CPU model, cores, kernel and the engine's version.

Every trial stores it (``trials.worker`` and ``provenance.worker``, ``docs/results.md``): a local run
describes this machine once; a cluster worker (``wirelab worker``, ``docs/distributed.md``) describes
its own, with a ``bench link --quick`` calibration, and every trial it runs carries that description.
The report compares them (a sweep whose trials ran on different CPU models or kernels is flagged).
"""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path
from typing import Any

from wirelab._engine import Engine

__all__ = ["cpu_model", "machine_provenance"]


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), or the platform's processor string."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Hardware", "cpu model") and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


_SHA = re.compile(r"\(([0-9a-f]{7,40})\)")


def machine_provenance(engine: Engine, name: str | None = None) -> dict[str, Any]:
    """This machine and its engine: ``name`` (default: the host name), ``host``, ``cpu_model``,
    ``cores``, ``kernel``, ``engine``, ``engine_version``, ``engine_git_sha``."""
    version = engine.version()
    sha = _SHA.search(version)
    host = platform.node()
    return {
        "name": name or host,
        "host": host,
        "cpu_model": cpu_model(),
        "cores": os.cpu_count() or 1,
        "kernel": platform.release(),
        "engine": engine.name,
        "engine_version": version,
        "engine_git_sha": sha.group(1) if sha else "unknown",
    }
