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
from wirelab._cluster_options import DEFAULT_ARTIFACTS, DEFAULT_RETRIES
from wirelab._engine import Engine, SubprocessEngine
from wirelab._har import objects_from_har
from wirelab._loadrunner import LoadObserver, LoadtestSummary, run_loadtests
from wirelab._summary import protocol_table
from wirelab.errors import EngineNotFoundError, NoResultsError, SpecError, TrialFailedError
from wirelab.runner import Observer, RunSummary, run_plan
from wirelab.store import DEFAULT_DB, Results

__all__ = ["LoadResult", "load", "loadtest", "open", "plan", "plan_loadtest", "run"]

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
    if isinstance(spec, Mapping):
        return spec_mod.from_dict(spec)
    text = os.fspath(spec)
    if "\n" in text or "[sweep]" in text:
        return spec_mod.loads(text)
    return spec_mod.load(text)


def run(
    spec: SpecLike,
    *,
    db: str | os.PathLike[str] = DEFAULT_DB,
    parallel: int = 1,
    resume: bool = True,
    engine: Engine | str | os.PathLike[str] | None = None,
    observer: Observer | None = None,
    cluster: str | None = None,
    retries: int = DEFAULT_RETRIES,
    artifacts: str = DEFAULT_ARTIFACTS,
    allow_internet: bool = False,
) -> RunSummary:
    """Run an experiment into ``db`` (``wirelab run``). Resumes by default; raises
    :class:`~wirelab.errors.Interrupted` (with ``.summary``) when stopped by a signal.

    ``cluster``: a Dask scheduler's address (``tcp://HOST:8786``) whose ``wirelab worker``s run the
    trials (``docs/distributed.md``); ``engine`` then only checks the trial specs before anything is
    submitted (without one on this machine, a worker's engine does). ``retries``: starts of a trial
    whose worker was lost; ``artifacts``: ``local`` (trial directories come back) or ``remote`` (pcaps
    and server records stay on the worker). ``parallel`` is ignored: the workers' slots decide.
    ``allow_internet`` (``--allow-internet``) lets live pages name public sites (docs/live.md)."""
    the_plan = plan(spec)
    if allow_internet:
        the_plan = spec_mod.with_internet(the_plan)
    if cluster is None:
        return run_plan(
            the_plan, db=Path(db), engine=_engine(engine), parallel=parallel, resume=resume, observer=observer
        )
    from wirelab._cluster import ClusterEngine

    checker: Engine | None
    try:
        checker = _engine(engine)
    except EngineNotFoundError:
        if engine is not None:
            raise
        checker = None  # no engine on this machine: a worker's checks the specs
    on_cluster = ClusterEngine(cluster, retries=retries, artifacts=artifacts, checker=checker)
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


LoadSpecLike = str | os.PathLike[str] | loadplan.LoadPlan | Mapping[str, Any]


def plan_loadtest(spec: LoadSpecLike) -> loadplan.LoadPlan:
    """Expand a load-test spec (a path to a TOML file, TOML text, a dict or a LoadPlan) into its runs:
    grid points × protocols, each a loadtest spec for the engine."""
    if isinstance(spec, loadplan.LoadPlan):
        return spec
    if isinstance(spec, Mapping):
        return loadplan.from_dict(spec)
    text = os.fspath(spec)
    if "\n" in text or "[load]" in text:
        return loadplan.loads(text)
    return loadplan.load(text)


def loadtest(
    spec: LoadSpecLike,
    *,
    db: str | os.PathLike[str] = DEFAULT_DB,
    resume: bool = True,
    engine: Engine | str | os.PathLike[str] | None = None,
    observer: LoadObserver | None = None,
) -> LoadtestSummary:
    """Run a load test into ``db`` (``wirelab loadtest``): each grid point × protocol in turn, each on a
    fresh server. Resumes by default; raises :class:`~wirelab.errors.Interrupted` (with ``.summary``)
    when stopped by a signal. ``summary.ok`` is False when a run failed or a threshold did not pass.
    The results: ``wirelab.open(db).loadtests()``, ``.load_intervals()``, ``.server_samples()``."""
    return run_loadtests(
        plan_loadtest(spec), db=Path(db), engine=_engine(engine), resume=resume, observer=observer
    )


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
        ok = self.loads[(self.loads["protocol"] == protocol) & self.loads["error"].isna()]
        if ok.empty:
            failed = int((self.loads["protocol"] == protocol).sum())
            raise NoResultsError(f"load: none of the {failed} {protocol} loads succeeded; nothing to show")
        ranked = ok.sort_values("plt_ms").reset_index(drop=True)
        return ranked.iloc[(len(ranked) - 1) // 2]

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
