"""The Python API for notebooks and scripts; the CLI is a thin layer over it (``docs/python-api.md``).

>>> import wirelab
>>> summary = wirelab.run("experiments/demo.toml", db="wirelab.db", parallel=1)  # doctest: +SKIP
>>> wirelab.open("wirelab.db").loads(sweep="demo")                             # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from wirelab import _loadplan as loadplan
from wirelab import spec as spec_mod
from wirelab._engine import Engine, SubprocessEngine
from wirelab._har import objects_from_har
from wirelab._loadrunner import LoadObserver, LoadtestSummary, run_loadtests, validate_loadtest
from wirelab._options import (
    ARTIFACTS,
    DEFAULT_ARTIFACTS,
    DEFAULT_RETRIES,
    DEFAULT_WAIT_WORKERS_S,
    GENERATORS,
    PARALLEL,
    RETRIES,
    WAIT_WORKERS,
    only_with,
)
from wirelab._summary import median_plt_load, protocol_table
from wirelab.errors import EngineNotFoundError, NoResultsError, SpecError, TrialFailedError, UsageError, cut
from wirelab.runner import Observer, RunSummary, run_plan, validate_plan
from wirelab.store import DEFAULT_DB, Results

__all__ = ["LoadResult", "SpecCheck", "check", "load", "loadtest", "open", "plan", "plan_loadtest", "run"]

SpecLike = str | os.PathLike[str] | spec_mod.Plan | spec_mod.ExperimentSpec | Mapping[str, Any]


def _engine(engine: Engine | str | os.PathLike[str] | None) -> Engine:
    if isinstance(engine, Engine):
        return engine
    return SubprocessEngine(engine)


def plan(spec: SpecLike) -> spec_mod.Plan:
    """Expand an experiment spec: a path to a TOML file, TOML text, a dict, an ExperimentSpec or a Plan."""
    if isinstance(spec, spec_mod.Plan):
        return spec
    if isinstance(spec, spec_mod.ExperimentSpec):
        return spec_mod.expand(spec)
    return _read_spec(spec, spec_mod, "[sweep]")


def _trial_plan(spec: SpecLike, allow_internet: bool) -> spec_mod.Plan:
    """The plan ``wirelab run`` (and ``wirelab spec check``) makes of ``spec``."""
    if isinstance(spec, str | os.PathLike) and not _is_text(spec) and loadplan.is_loadtest(os.fspath(spec)):
        raise UsageError(f"{spec}: a load-test spec ([load]); run it with wirelab loadtest {spec}")
    the_plan = plan(spec)
    return spec_mod.with_internet(the_plan) if allow_internet else the_plan


def _read_spec(spec: str | os.PathLike[str] | Mapping[str, Any], reader: Any, table: str) -> Any:
    """A spec read by ``reader`` (``spec`` or ``loadplan``: their ``from_dict``, ``loads``, ``load``)
    from a dict, its TOML text (told by ``table``, see _is_text) or a path."""
    if isinstance(spec, Mapping):
        return reader.from_dict(spec)
    if _is_text(spec, table):
        return reader.loads(os.fspath(spec))
    return reader.load(os.fspath(spec))


def _is_text(spec: str | os.PathLike[str], table: str = "[sweep]") -> bool:
    """Whether ``spec`` is a spec's TOML text (several lines, or its ``table``) rather than a path."""
    text = os.fspath(spec)
    return "\n" in text or table in text


def run(
    spec: SpecLike,
    *,
    db: str | os.PathLike[str] = DEFAULT_DB,
    parallel: int | None = None,
    resume: bool = True,
    engine: Engine | str | os.PathLike[str] | None = None,
    observer: Observer | None = None,
    cluster: str | None = None,
    retries: int | None = None,
    artifacts: str | None = None,
    wait_workers: float | None = None,
    allow_internet: bool = False,
) -> RunSummary:
    """Run an experiment into ``db`` (``wirelab run``). Resumes by default; raises
    :class:`~wirelab.errors.Interrupted` (with ``.summary``) when stopped by a signal.

    ``parallel``: trials at once on this machine (1–64, default 1). ``cluster``: a Dask scheduler's
    address (``tcp://HOST:8786``) whose ``wirelab worker``s run the trials (``docs/distributed.md``);
    ``engine`` then only checks the trial specs before anything is submitted (without one on this
    machine, a worker's engine does), and the workers' slots replace ``parallel``. Only with a
    cluster: ``retries`` (0–10, default 2), starts of a trial whose worker was lost; ``artifacts``,
    ``local`` (trial directories come back, the default) or ``remote`` (pcaps and server records stay
    on the worker); ``wait_workers`` (0–3600 s, default 60), how long to wait for the first worker.
    ``allow_internet`` (``--allow-internet``) lets live pages name public sites (docs/live.md)."""
    if cluster is None:
        for option, value in (
            ("--retries", retries),
            ("--artifacts", artifacts),
            ("--wait-workers", wait_workers),
        ):
            only_with(option, value is not None, "--cluster", False)
    elif parallel is not None:
        raise UsageError("--parallel: with --cluster the workers' trial slots decide; leave it out")
    if parallel is not None:
        PARALLEL.check(parallel)
    if retries is not None:
        RETRIES.check(retries)
    if wait_workers is not None:
        WAIT_WORKERS.check(wait_workers)
    if artifacts is not None and artifacts not in ARTIFACTS:
        raise UsageError(f'--artifacts: "{cut(str(artifacts))}" is not allowed; use {" or ".join(ARTIFACTS)}')
    the_plan = _trial_plan(spec, allow_internet)
    if cluster is None:
        return run_plan(
            the_plan,
            db=Path(db),
            engine=_engine(engine),
            parallel=parallel or 1,
            resume=resume,
            observer=observer,
        )
    from wirelab._cluster import ClusterEngine

    checker: Engine | None
    try:
        checker = _engine(engine)
    except EngineNotFoundError:
        if engine is not None:
            raise
        checker = None  # no engine on this machine: a worker's checks the specs
    on_cluster = ClusterEngine(
        cluster,
        retries=DEFAULT_RETRIES if retries is None else retries,
        artifacts=artifacts or DEFAULT_ARTIFACTS,
        checker=checker,
        wait_workers=DEFAULT_WAIT_WORKERS_S if wait_workers is None else wait_workers,
        on_wait=getattr(observer, "message", None),
    )
    try:
        return run_plan(
            the_plan,
            db=Path(db),
            engine=on_cluster,
            parallel=on_cluster.slots(),
            resume=resume,
            observer=observer,
        )
    finally:
        on_cluster.close()


@dataclasses.dataclass(frozen=True)
class SpecCheck:
    """What :func:`check` (``wirelab spec check``) found: the spec is good."""

    plan: spec_mod.Plan | loadplan.LoadPlan
    kind: str  #: ``trials`` (``wirelab run``) or ``loadtest`` (``wirelab loadtest``)
    engine: str  #: the engine that checked the specs
    checked: int  #: distinct specs the engine checked


def check(
    spec: SpecLike | LoadSpecLike,
    *,
    engine: Engine | str | os.PathLike[str] | None = None,
    allow_internet: bool = False,
) -> SpecCheck:
    """Validate ``spec`` exactly as ``wirelab run`` (a trial sweep) or ``wirelab loadtest`` (a load-test
    spec) does before it creates anything — the same functions: the spec's own fields, then the engine's
    check of every distinct trial spec (``trial --check``: page files, traces, server and client knobs)
    or of every run (``loadtest --check``). Raises what they raise (a one-line :class:`UsageError`);
    creates nothing."""
    the_engine = _engine(engine)
    if isinstance(spec, loadplan.LoadPlan) or (
        isinstance(spec, str | os.PathLike) and not _is_text(spec) and loadplan.is_loadtest(os.fspath(spec))
    ):
        if allow_internet:
            raise UsageError(
                "--allow-internet: for trial sweeps (live pages); a load test serves its own page"
            )
        load_plan = plan_loadtest(spec)
        return SpecCheck(load_plan, "loadtest", the_engine.name, validate_loadtest(the_engine, load_plan))
    the_plan = _trial_plan(spec, allow_internet)
    return SpecCheck(the_plan, "trials", the_engine.name, validate_plan(the_engine, the_plan))


LoadSpecLike = str | os.PathLike[str] | loadplan.LoadPlan | Mapping[str, Any]


def plan_loadtest(spec: LoadSpecLike) -> loadplan.LoadPlan:
    """Expand a load-test spec (a path to a TOML file, TOML text, a dict or a LoadPlan) into its runs:
    grid points × protocols, each a loadtest spec for the engine."""
    if isinstance(spec, loadplan.LoadPlan):
        return spec
    return _read_spec(spec, loadplan, "[load]")


def loadtest(
    spec: LoadSpecLike,
    *,
    db: str | os.PathLike[str] = DEFAULT_DB,
    resume: bool = True,
    engine: Engine | str | os.PathLike[str] | None = None,
    observer: LoadObserver | None = None,
    generators: int = 1,
    cluster: str | None = None,
    server_worker: str | None = None,
    wait_workers: float | None = None,
) -> LoadtestSummary:
    """Run a load test into ``db`` (``wirelab loadtest``): each grid point × protocol in turn, each on a
    fresh server. Resumes by default; raises :class:`~wirelab.errors.Interrupted` (with ``.summary``)
    when stopped by a signal. ``summary.ok`` is False when a run failed or a threshold did not pass.
    ``generators``: each run's VUs as that many generator processes, intervals merged exactly; a
    generator lost mid-run fails the run (``degraded``). ``cluster`` (``tcp://HOST:8786``): the
    generators on that many ``wirelab worker``s of the Dask scheduler, each behind an access link of
    its own, the server on another (``server_worker``, default the first by name); ``wait_workers``
    seconds for them to connect (docs/loadtest.md, "A Dask cluster").
    The results: ``wirelab.open(db).loadtests()``, ``.load_intervals()``, ``.server_samples()``."""
    the_plan = plan_loadtest(spec)
    if cluster is None:
        for option, value in (("--server-worker", server_worker), ("--wait-workers", wait_workers)):
            if value is not None:
                raise UsageError(f"{option}: only with --cluster")
        return run_loadtests(
            the_plan,
            db=Path(db),
            engine=_engine(engine),
            resume=resume,
            observer=observer,
            generators=generators,
        )
    from wirelab._cluster import ClusterEngine
    from wirelab._loadcluster import ClusterLoadEngine

    GENERATORS.check(generators)
    if wait_workers is not None:
        WAIT_WORKERS.check(wait_workers)
    local = _engine(engine)
    validate_loadtest(local, the_plan)  # bad input refused before the cluster is asked anything
    wait = DEFAULT_WAIT_WORKERS_S if wait_workers is None else wait_workers
    on_wait = getattr(observer, "message", None)
    on_cluster = ClusterEngine(cluster, checker=local, wait_workers=wait, on_wait=on_wait)
    try:
        load_engine = ClusterLoadEngine(
            on_cluster,
            local,
            generators=generators,
            server_worker=server_worker,
            wait_workers=wait,
            on_wait=on_wait,
            needs_server=any(not r.spec.get("target") for r in the_plan.runs),
        )
        load_engine.check_loadtests([r.spec for r in the_plan.runs])
        for interval in sorted({float(r.spec["interval_s"]) for r in the_plan.runs}):
            load_engine.check_clocks(interval)
        return run_loadtests(the_plan, db=Path(db), engine=load_engine, resume=resume, observer=observer)
    finally:
        on_cluster.close()


def open(db: str | os.PathLike[str] = DEFAULT_DB) -> Results:  # noqa: A001 - mirrors the built-in on purpose
    """Open a results database; its methods return pandas DataFrames."""
    return Results(Path(db))


@dataclasses.dataclass
class LoadResult:
    """The outcome of :func:`load`: one configuration, every protocol."""

    sweep: str
    trial_id: str
    protocols: list[str]
    db: Path
    loads: pd.DataFrame  #: one row per load (``Results.loads`` columns)
    summary: RunSummary

    def table(self) -> pd.DataFrame:
        """Per protocol: loads, errors, median/mean ToW and PLT, ToW gain over the first protocol (%)."""
        return protocol_table(self.loads, self.protocols)

    def representative(self, protocol: str | None = None) -> pd.Series:
        """The load with the median PLT among ``protocol``'s loads without error (default: the last
        protocol). A protocol this configuration did not load is the caller's mistake
        (:class:`~wirelab.errors.SpecError`, exit 2); a protocol whose every load failed is not
        (:class:`~wirelab.errors.NoResultsError`, exit 1)."""
        protocol = protocol or self.protocols[-1]
        if protocol not in self.protocols:
            raise SpecError(
                f'protocol: "{protocol}" was not loaded; use one of {", ".join(self.protocols)}',
                path="protocol",
                value=protocol,
            )
        mine = self.loads[self.loads["protocol"] == protocol]
        row = median_plt_load(mine)
        if row is None:
            raise NoResultsError(f"load: none of the {len(mine)} {protocol} loads succeeded; nothing to show")
        return row

    def objects(self, load_index: int) -> list[dict[str, Any]]:
        """The objects (HAR entries) of one load."""
        with Results(self.db) as results:
            return objects_from_har(results.har(self.sweep, self.trial_id, load_index))


def load(
    page: str,
    *,
    protocols: Sequence[str] = ("h1s", "h2"),
    network: str = "native",
    repetitions: int = 5,
    db: str | os.PathLike[str] = DEFAULT_DB,
    engine: Engine | str | os.PathLike[str] | None = None,
    observer: Observer | None = None,
    allow_internet: bool = False,
    **fields: Any,
) -> LoadResult:
    """Load ``page`` over each protocol ``repetitions`` times through ``network`` (``wirelab load``).

    Other trial-spec fields go in ``fields`` (``shards=4``, ``server={"max_concurrent_streams": 1}``).
    The loads are kept in ``db`` as a sweep of their own, named ``load-<UTC time>-<config>``.
    ``page`` may be a live page (``url:https://h3.wirelab.test/L/fixture/``, docs/live.md); a public
    site needs ``allow_internet`` (``--allow-internet``)."""
    trial = spec_mod.resolve_trial(
        {
            "page": page,
            "protocols": list(protocols),
            "network": network,
            "repetitions": repetitions,
            **fields,
            **({"allow_internet": True} if allow_internet else {}),
        },
        path="load",
    )
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    name = f"load-{stamp}-{trial['trial_id'][1:9]}"
    the_plan = spec_mod.Plan(
        name=name,
        description=f"wirelab load {page} --proto {','.join(protocols)} --net {network} -n {repetitions}",
        spec_hash=trial["trial_id"],
        trials=(spec_mod.PlannedTrial(id=trial["trial_id"], index=0, params={}, spec=trial),),
        spec={
            "sweep": {"name": name},
            "base": {k: v for k, v in trial.items() if k != "trial_id"},
            "grid": {},
        },
    )
    summary = run_plan(
        the_plan, db=Path(db), engine=_engine(engine), parallel=1, resume=True, observer=observer
    )
    if summary.failed:
        failure = summary.failed[0]
        raise TrialFailedError(f"load: the trial failed: {failure.error}")
    with Results(Path(db)) as results:
        loads = results.loads(sweep=name)
    return LoadResult(
        sweep=name,
        trial_id=trial["trial_id"],
        protocols=list(trial["protocols"]),
        db=Path(db),
        loads=loads,
        summary=summary,
    )
