"""The bounds and defaults of wirelab's own options, defined once for the CLI and the Python API (the
CLI's ``--help`` states each bound; the library refuses what the CLI refuses). Options that carry a
trial spec field take its bounds from the contract's schema (the generated models); the engine's
probe options from the engine's facts. Reading this module does not import Dask.

A bound refuses non-finite numbers (``inf``, ``nan``) as well as those out of range, with one line
naming the option, the value and what is allowed: ``--parallel: 100000 is out of range; use 1–64``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import typer

from wirelab._contract_models import ServerConfig, TrialSpecFields
from wirelab._facts import engine_facts
from wirelab.errors import UsageError

__all__ = [
    "ARTIFACTS",
    "DEFAULT_ARTIFACTS",
    "DEFAULT_RETRIES",
    "DEFAULT_WAIT_WORKERS_S",
    "GAP_MS",
    "GENERATORS",
    "MAX_STREAMS",
    "PARALLEL",
    "PORT",
    "REPETITIONS",
    "RETRIES",
    "SHARDS",
    "SLOTS",
    "WAIT_WORKERS",
    "WORKERS",
    "Bound",
    "only_with",
]

#: where a cluster trial's directory ends up: ``local`` (it comes back) or ``remote`` (pcaps and
#: server records stay on the worker)
ARTIFACTS = ("local", "remote")
DEFAULT_ARTIFACTS = "local"
#: how many times a trial whose worker was lost starts again elsewhere
DEFAULT_RETRIES = 2
#: how long ``wirelab run --cluster`` waits for the first worker (Dask's ``wait_for_workers``)
DEFAULT_WAIT_WORKERS_S = 60.0


@dataclasses.dataclass(frozen=True)
class Bound:
    """A numeric option's range, ``lo``–``hi`` inclusive (``integer``: whole numbers only)."""

    option: str
    lo: float
    hi: float
    integer: bool = True
    unit: str = ""

    @property
    def allowed(self) -> str:
        """``1–64``, ``0–3600 s``."""
        return f"{_num(self.lo)}–{_num(self.hi)}{self.unit}"

    def help(self, text: str) -> str:
        """An option's help text with its range: ``Trials run at once (1–64).``"""
        text = text.rstrip()
        end = "." if text.endswith(".") else ""
        return f"{text.removesuffix('.')} ({self.allowed}){end}"

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` (``None``: nothing)."""
        kind = "an integer" if self.integer else "a number"
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"{value!r} is not {kind}; use {self.allowed}"
        if not math.isfinite(value):
            return f"{value} is not a finite number; use {self.allowed}"
        if self.integer and value != int(value):
            return f"{value} is not an integer; use {self.allowed}"
        if not self.lo <= value <= self.hi:
            return f"{_num(value)} is out of range; use {self.allowed}"
        return None

    def check(self, value: Any) -> None:
        """Raise :class:`UsageError` naming the option unless ``value`` is in range."""
        problem = self.problem(value)
        if problem is not None:
            raise UsageError(f"{self.option}: {problem}")

    def callback(self, value: Any) -> Any:
        """A typer option's callback (``callback=BOUND.callback``): refuses as :meth:`check` does, with
        the option named by click (None, an option left out, passes)."""
        if value is not None:
            problem = self.problem(value)
            if problem is not None:
                raise typer.BadParameter(problem)
        return value


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _contract_bound(option: str, model: Any, field: str, *, integer: bool = True) -> Bound:
    """The range of a trial spec field as the contract's schema states it (the generated models)."""
    metadata = model.model_fields[field].metadata
    lo = next(m.ge for m in metadata if hasattr(m, "ge"))
    hi = next(m.le for m in metadata if hasattr(m, "le"))
    return Bound(option, lo, hi, integer=integer)


#: trials at once on this machine (docs/running.md: more than about two on two cores disturbs timing)
PARALLEL = Bound("--parallel", 1, 64)
RETRIES = Bound("--retries", 0, 10)
WAIT_WORKERS = Bound("--wait-workers", 0, 3600, integer=False, unit=" s")
#: a worker's trial slots (one per two cores by default)
SLOTS = Bound("--slots", 1, 64)
WORKERS = Bound("--workers", 0, 64)
PORT = Bound("--port", 0, 65535)
GAP_MS = _contract_bound("--gap-ms", TrialSpecFields, "gap_ms", integer=False)
MAX_STREAMS = _contract_bound("--max-streams", ServerConfig, "max_concurrent_streams")
REPETITIONS = _contract_bound("--repetitions", TrialSpecFields, "repetitions")
SHARDS = _contract_bound("--shards", TrialSpecFields, "shards")
#: a load test's generator processes per run (``wirelab-engine loadtest --generators``; the engine's bound)
GENERATORS = Bound("--generators", 1, engine_facts()["loadgen"]["max_generators"])


def only_with(option: str, given: bool, other: str, have: bool) -> None:
    """Refuse ``option`` given without ``other``, which it only means something with."""
    if given and not have:
        raise UsageError(f"{option}: only means something with {other}; leave it out or give {other}")
