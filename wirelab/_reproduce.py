"""Reproducing the studies: ``wirelab reproduce ls | NAME [--quick]``.

Each experiment is two specs in ``experiments/`` — ``NAME.toml`` (the full variant: the study's grid and
repetitions) and ``NAME.quick.toml`` (a few points, 3 repetitions) — described in
``experiments/catalog.toml``. An experiment is a trial sweep (``[base]``, ``wirelab run``) or a load test
(``[load]``, ``wirelab loadtest``: study N's capacity experiments; its quick variant ramps for minutes).
:func:`reproduce` runs one variant through its runner into the results database and writes its report.
:func:`estimate_seconds` guesses how long a variant takes (labelled as an estimate everywhere:
``docs/reproducing.md`` records measured durations).
"""

from __future__ import annotations

import dataclasses
import math
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wirelab import _corpus, _facts
from wirelab import _loadplan as loadplan
from wirelab import _netprofile as netprofile
from wirelab import spec as spec_mod
from wirelab._engine import Engine
from wirelab._loadrunner import LoadObserver, LoadtestSummary, run_loadtests
from wirelab._paths import experiments_dir
from wirelab._suggest import did_you_mean
from wirelab.analysis.sweep import parse_synthetic
from wirelab.errors import UsageError, WirelabError
from wirelab.runner import Observer, RunSummary, run_plan

__all__ = [
    "CATALOG_FILE",
    "Experiment",
    "catalog",
    "estimate_loadtest_seconds",
    "estimate_seconds",
    "estimate_trial_seconds",
    "experiment",
    "reproduce",
]

CATALOG_FILE = "catalog.toml"

#: Per-load overhead of a fresh client process and its bookkeeping, Chromium's extra per load, and
#: per-trial setup (estimates; scripts/durations.py compares them with measured trials).
LOAD_OVERHEAD_S = 0.2
CHROMIUM_OVERHEAD_S = 0.3
TRIAL_OVERHEAD_S = 3.0
#: Per load-test run beyond its stages: the lab and the server start, loadgen starts 0.5 s ahead, the
#: lab stops (estimate; docs/reproducing.md has measured runs).
LOADTEST_OVERHEAD_S = 6.0


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One entry of the catalog."""

    name: str
    study: str
    reproduces: str
    figures: tuple[str, ...]
    not_here: str
    full: Path
    quick: Path

    def spec_path(self, quick: bool) -> Path:
        return self.quick if quick else self.full

    @property
    def kind(self) -> str:
        """``trials`` (a ``wirelab run`` sweep) or ``loadtest`` (``wirelab loadtest``), by its spec."""
        return "loadtest" if loadplan.is_loadtest(self.full) else "trials"

    def plan(self, quick: bool) -> spec_mod.Plan | loadplan.LoadPlan:
        path = self.spec_path(quick)
        return loadplan.load(path) if loadplan.is_loadtest(path) else spec_mod.load(path)


def catalog(directory: Path | None = None) -> list[Experiment]:
    """Every experiment of ``experiments/catalog.toml``, in file order."""
    directory = directory or experiments_dir()
    path = directory / CATALOG_FILE
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise WirelabError(
            f"reproduce: {path} not found; wirelab runs its experiments from its repository checkout"
        ) from None
    out = []
    for name, entry in data.items():
        out.append(
            Experiment(
                name=name,
                study=str(entry["study"]),
                reproduces=str(entry["reproduces"]),
                figures=tuple(entry.get("figures", ())),
                not_here=str(entry.get("not_here", "")),
                full=directory / f"{name}.toml",
                quick=directory / f"{name}.quick.toml",
            )
        )
    return out


def experiment(name: str, directory: Path | None = None) -> Experiment:
    """The experiment called ``name`` (a one-line UsageError with a suggestion otherwise)."""
    entries = catalog(directory)
    for e in entries:
        if e.name == name:
            return e
    names = [e.name for e in entries]
    hint = did_you_mean(name, names)
    raise UsageError(f"reproduce: {name!r} is not an experiment; {hint}experiments: {', '.join(names)}")


#: What an estimate assumes of a page that is neither synthetic nor in the corpus (a page file).
_UNKNOWN_PAGE = (50, 500_000.0)


def _page_size(page: str) -> tuple[int, float]:
    """(objects, total bytes): a synthetic page's from its name, a corpus page's from the engine's facts,
    a named generated corpus's page the corpus's mean (also from the facts)."""
    synthetic = parse_synthetic(page)
    if synthetic is not None:
        return synthetic[0], synthetic[0] * synthetic[1]
    known = _facts.corpus().get(page)
    if known:
        return known.objects, float(known.total_bytes)
    generated = _corpus.corpus_of(page)  # a named generated corpus's page: the corpus's mean page
    named = _facts.generated_corpora().get(generated[0]) if generated else None
    return (round(named.mean_objects), named.mean_bytes) if named else _UNKNOWN_PAGE


def _origins(spec: Mapping[str, Any]) -> int:
    """Origins a trial's page is served from: ``shards``, or with ``shards = 0`` one per group of the
    shard mode (the engine's corpus facts; pages outside the corpus count as one origin)."""
    if spec.get("shards", 1):
        return int(spec.get("shards", 1))
    known = _facts.corpus().get(spec["page"])
    return known.shard_origins.get(spec.get("shard_mode", ""), 1) if known else 1


#: Round trips before the root document's request goes out: DNS across the path, then TCP (+ TLS 1.3)
#: or QUIC.
_HANDSHAKE_RTTS = {"h1": 2, "h2c": 2, "h1s": 3, "h2": 3, "spdy3": 3, "h3": 2}
#: Protocols whose requests wait for a free connection (HTTP/1.x: `client.max_connections_per_origin`
#: connections per origin, so requests go in waves); the others multiplex on one connection.
_HTTP1 = ("h1", "h1s")
_MSS_BITS = 1448 * 8


def _load_seconds(
    spec: Mapping[str, Any], protocol: str | None = None, page_size: tuple[int, float] | None = None
) -> float:
    """A rough page-load time for one protocol (the first when not given): handshakes, the root's
    round trip, one round trip per wave of requests, the page's bytes at the rate a loss-limited
    connection set can reach (Mathis et al.: MSS/RTT × 1.22/√p per connection), and the loader's
    per-load overhead. ``page_size`` (objects, bytes) replaces what the facts say of the page (a
    generated page counts as its corpus's mean page)."""
    protocol = protocol or spec["protocols"][0]
    net = netprofile.parse(spec.get("network", "native"))
    rtt = (net["up"]["delay_ns"] + net["down"]["delay_ns"]) / 1e9
    rate = net["down"]["rate_bps"] or 1e9
    loss = net["down"]["loss"].get("p", 0.0) if net["down"]["loss"]["model"] == "bernoulli" else 0.0
    objects, size = page_size or _page_size(spec["page"])
    shards = _origins(spec)
    per_origin = spec.get("client", {}).get("max_connections_per_origin", 6) if protocol in _HTTP1 else 1
    connections = shards * min(per_origin, max(1, objects - 1))
    waves = 1 + (math.ceil(max(0, objects - 1) / (per_origin * shards)) if protocol in _HTTP1 else 1)
    throughput = rate
    if loss > 0 and rtt > 0:
        throughput = min(rate, connections * _MSS_BITS / rtt * 1.22 / math.sqrt(loss))
    seconds = _HANDSHAKE_RTTS.get(protocol, 3) * rtt + waves * rtt + size * 8 / throughput
    overhead = LOAD_OVERHEAD_S + (
        CHROMIUM_OVERHEAD_S if spec.get("client", {}).get("impl") == "chromium" else 0
    )
    return seconds + overhead


def estimate_seconds(plan: spec_mod.Plan | loadplan.LoadPlan) -> float:
    """Estimated wall time of a plan at --parallel 1 (an estimate, not a measurement); a load test's
    runs go one after the other."""
    if isinstance(plan, loadplan.LoadPlan):
        return sum(estimate_loadtest_seconds(r.resolved) for r in plan.runs)
    return sum(estimate_trial_seconds(t.spec) for t in plan.trials)


def estimate_loadtest_seconds(spec: Mapping[str, Any]) -> float:
    """Estimated wall time of one load-test run (its loadtest spec with defaults): its stages, then
    the pages in flight — about one page load, at most the page timeout — and the lab's start and stop."""
    page = _load_seconds({**spec, "protocols": [spec["protocol"]]}, spec["protocol"]) - LOAD_OVERHEAD_S
    drain = min(page, float(spec["client"]["timeout_s"]))
    return LOADTEST_OVERHEAD_S + loadplan.stages_seconds(spec) + drain


def estimate_trial_seconds(spec: Mapping[str, Any]) -> float:
    """Estimated wall time of one trial (its spec as planned); ``scripts/durations.py`` compares it
    with the measured times of the trials in a results database."""
    gap = spec.get("gap_ms", 0) / 1000
    per_round = sum(_load_seconds(spec, p) + gap for p in spec["protocols"])
    return TRIAL_OVERHEAD_S + spec["repetitions"] * per_round


def format_duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``3.4 h``, ``2.1 days``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def reproduce(
    name: str,
    *,
    quick: bool = False,
    db: str | os.PathLike[str] = "wirelab.db",
    out: str | os.PathLike[str] | None = None,
    parallel: int = 1,
    engine: Engine,
    observer: Observer | LoadObserver | None = None,
) -> tuple[RunSummary | LoadtestSummary, Path]:
    """Run one experiment (resuming what the database already has) and write its report to ``out``
    (default ``wirelab-report/<sweep name>``). Returns the run's summary and the report's path. A load
    test's runs go one at a time whatever ``parallel`` says; ``observer`` is then a LoadObserver."""
    from wirelab.report import write_report  # the report pulls in matplotlib: import it only here

    exp = experiment(name)
    plan = exp.plan(quick)
    summary: RunSummary | LoadtestSummary
    if isinstance(plan, loadplan.LoadPlan):
        load_observer = observer if isinstance(observer, LoadObserver) else None
        summary = run_loadtests(plan, db=Path(db), engine=engine, resume=True, observer=load_observer)
    else:
        trial_observer = observer if isinstance(observer, Observer) else None
        summary = run_plan(
            plan, db=Path(db), engine=engine, parallel=parallel, resume=True, observer=trial_observer
        )
    target = Path(out) if out is not None else Path("wirelab-report") / plan.name
    report = write_report(db, [plan.name], target)
    summary.report = report
    return summary, report
