"""Runs a load-test sweep: its runs through ``wirelab-engine loadtest``, one at a time, resumably.

Guarantees (tested with the fixture double and, as root, with the real engine):

- Before anything exists (database, sweep, rows, directories), every run's spec is checked by the engine
  itself (``wirelab-engine loadtest --check``): a bad one is one line, exit 2.
- Runs go one after the other, each on a fresh server (its own lab): load tests measure the machine,
  and two at once would measure each other.
- What a run measured — ``loadtest.json``, its intervals, its server samples — enters the database in ONE
  transaction when the engine exits. A run ``complete`` in the database is not run again; one that was
  interrupted or failed is stored with what it measured (``complete`` = 0) and runs again next time.
- Ctrl-C (SIGINT) or SIGTERM: the running engine gets SIGINT (its process group): it stops the VUs,
  writes what was measured and removes the lab; wirelab stores it and raises :class:`Interrupted`
  (exit 130). A second Ctrl-C, or an engine not done within the grace period, gets SIGKILL; then
  ``wirelab-engine gc --owner PID`` removes what it left, and the intervals written so far are stored.
- A run whose thresholds failed is complete (its numbers are good); the summary says which failed and
  the CLI exits 1.

:mod:`wirelab.runner` is this module's peer for trials; what both do alike is :mod:`wirelab._sweep`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import queue
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wirelab._db.files import fix_modes
from wirelab._db.writer import Store
from wirelab._engine import Engine, TrialEvent, TrialRun
from wirelab._loadplan import LoadPlan, PlannedLoadtest
from wirelab._options import GENERATORS
from wirelab._sweep import (
    Outcome,
    Summary,
    Sweep,
    SweepLoop,
    SweepObserver,
    alias,
    check_specs,
    exit_error,
    interrupts_held,
    last_line,
    read_json,
    read_jsonl,
)
from wirelab.errors import ContractError, UsageError

__all__ = ["LoadObserver", "LoadtestOutcome", "LoadtestSummary", "ingest_loadtest", "run_loadtests"]

RESULT_FILE = "loadtest.json"
INTERVALS_FILE = "intervals.jsonl"
SERVER_FILE = "server.jsonl"
#: After SIGINT the engine stops the VUs (each page in flight ends within client.timeout_s), writes
#: what it measured and removes the lab; wirelab waits that long plus this margin before SIGKILL.
STOP_MARGIN_S = 60.0
#: How often the server's samples are read while no interval arrives.
SAMPLES_POLL_S = 1.0
#: After SIGKILL: how long the engine's process may take to be reaped, and its exit event to arrive.
KILLED_WAIT_S = 30.0
EXIT_EVENT_WAIT_S = 5.0


@dataclasses.dataclass(kw_only=True)
class LoadtestOutcome(Outcome):
    """How one run of this invocation ended."""

    run: PlannedLoadtest
    intervals: int = 0
    outcomes: dict[str, Any] = dataclasses.field(default_factory=dict)
    totals: dict[str, Any] = dataclasses.field(default_factory=dict)
    failed_thresholds: list[str] = dataclasses.field(default_factory=list)
    generator_saturated: bool = False

    @property
    def item(self) -> PlannedLoadtest:
        return self.run


@dataclasses.dataclass(kw_only=True)
class LoadtestSummary(Summary[LoadtestOutcome]):
    """What an invocation did; ``lines()`` is the text the CLI prints."""

    ITEM = "run"
    ITEMS = "runs"
    INVOCATION = "invocation"
    INTERRUPTED = "what was measured is stored"

    planned_runs = alias("planned", "Runs planned (grid points × protocols).")
    complete_runs = alias("complete", "Runs complete in the database now.")

    @property
    def thresholds_failed(self) -> list[LoadtestOutcome]:
        return [o for o in self.completed if o.failed_thresholds]

    @property
    def ok(self) -> bool:
        """Every run complete and every threshold passed (the CLI's exit 0)."""
        return super().ok and not self.thresholds_failed

    def headline(self) -> str:
        return (
            f"load test {self.sweep}: {self.complete_runs}/{self.planned_runs} runs complete; this run: "
            f"{len(self.completed)} complete, {len(self.failed)} failed, {self.elapsed_s:.1f} s"
        )

    def warnings(self) -> list[str]:
        out = [
            f"thresholds failed: {o.run.id} ({o.run.label}): {'; '.join(o.failed_thresholds)}"
            for o in self.thresholds_failed
        ]
        saturated = [o for o in self.completed if o.generator_saturated]
        if saturated:
            out.append(
                f"generator saturated: {len(saturated)} of {len(self.completed)} runs had intervals where "
                "the load generator itself was short of CPU; their page times include its delay "
                "(docs/loadtest.md)"
            )
        return out


class LoadObserver(SweepObserver[LoadtestSummary]):
    """Receives a load test's progress; the default does nothing. The CLI's rich display is one."""

    def sweep_started(self, plan: LoadPlan, todo: list[PlannedLoadtest], already_complete: int) -> None:
        """Before the first run starts."""

    def run_started(self, run: PlannedLoadtest) -> None:
        """An engine process was started for ``run``."""

    def interval(self, run: PlannedLoadtest, line: Mapping[str, Any]) -> None:
        """An interval line (docs/loadtest.md) as the engine printed it."""

    def server_sample(self, run: PlannedLoadtest, sample: Mapping[str, Any]) -> None:
        """A server sample (a line of server.jsonl) as the engine wrote it."""

    def run_ended(self, outcome: LoadtestOutcome) -> None:
        """A run was stored, failed or was interrupted."""


def _read_lines(path: Path, *, partial_ok: bool) -> list[dict[str, Any]]:
    """A run's JSONL output (none when the file is missing), each line an object whose ``index`` is
    its position; with ``partial_ok`` a last line cut short is left out (:func:`read_jsonl`)."""
    if not path.exists():
        return []
    out = read_jsonl(path, partial_ok=partial_ok)
    for i, item in enumerate(out):
        if not isinstance(item, dict) or item.get("index") != i:
            raise ContractError(f"{path.name} line {i + 1}: its index is not {i}")
    return out


def ingest_loadtest(
    store: Store,
    sweep: str,
    run: PlannedLoadtest,
    directory: Path,
    control: Mapping[str, Any],
    *,
    returncode: int | None,
    stopped: bool,
    error: str | None = None,
) -> LoadtestOutcome:
    """Check a run's directory against the load test's outputs and store what it holds (one
    transaction): complete when ``loadtest.json`` says so, else interrupted (``stopped``: wirelab stopped
    it) or failed, with every interval written. The directory gets the results' fixed modes first,
    whatever the umask it was written with."""
    if directory.is_dir():
        fix_modes(directory, up_to=store.path.parent)
    result: dict[str, Any] | None = None
    path = directory / RESULT_FILE
    if path.exists():
        result = read_json(path)
        if not isinstance(result, dict) or not isinstance(result.get("summary"), dict):
            raise ContractError(f"{RESULT_FILE}: has no summary")
        got = result.get("spec") or {}
        if got.get("loadtest_id") != run.id or got.get("protocol") != run.protocol:
            raise ContractError(
                f"{RESULT_FILE}: it is load test {got.get('loadtest_id')} ({got.get('protocol')}), "
                f"not the planned {run.id} ({run.protocol})"
            )
    intervals = _read_lines(directory / INTERVALS_FILE, partial_ok=result is None)
    samples = _read_lines(directory / SERVER_FILE, partial_ok=result is None)
    if result is not None and result.get("intervals") not in (None, len(intervals)):
        raise ContractError(
            f"{RESULT_FILE} says {result['intervals']} intervals; {INTERVALS_FILE} has {len(intervals)}"
        )
    exited = (result or {}).get("server_exited")
    degraded = bool((result or {}).get("degraded"))
    if (
        result is not None
        and not result.get("interrupted")
        and not exited
        and not degraded
        and returncode in (0, 1)
    ):
        status = "complete"
    elif stopped or (result is not None and result.get("interrupted") and not exited):
        status = "interrupted"
        error = error or "stopped by wirelab"
    else:
        status = "failed"
        if exited:
            error = (
                f"the server exited at {exited.get('t_s')} s ({exited.get('error')}); the VUs were stopped"
            )
        elif degraded:
            error = (
                "degraded: "
                + ", ".join(
                    f"generator {g.get('name')} lost after {g.get('lost_after_s')} s"
                    for g in (result or {}).get("generators") or []
                    if g.get("lost")
                )
                + " (the intervals after the loss are marked degraded)"
            )
        error = error or f"the engine exited with status {returncode}"
    store.store_loadtest(
        sweep,
        run.id,
        status=status,
        result=result,
        intervals=intervals,
        samples=samples,
        control_provenance=control,
        error=None if status == "complete" else error,
    )
    summary = (result or {}).get("summary") or {}
    thresholds = (result or {}).get("thresholds") or []
    return LoadtestOutcome(
        run=run,
        status=status,
        intervals=len(intervals),
        outcomes=dict((result or {}).get("outcomes") or {}),
        totals=dict(summary.get("totals") or {}),
        failed_thresholds=[t["expr"] for t in thresholds if not t.get("pass")],
        generator_saturated=bool((result or {}).get("generator_saturated")),
        error=None if status == "complete" else error,
    )


def validate_loadtest(engine: Engine, plan: LoadPlan) -> int:
    """Everything ``wirelab loadtest`` checks of a plan before anything exists (``wirelab spec check``
    runs exactly this too): the engine has ``loadtest``, the plan has runs, and the engine accepts
    every run's spec. Returns how many specs it checked."""
    engine.require("loadtest")
    if not plan.runs:
        raise UsageError(f"load test {plan.name}: no runs planned")
    check_runs(engine, plan.runs)
    return len(plan.runs)


def check_runs(engine: Engine, runs: tuple[PlannedLoadtest, ...]) -> None:
    """Have the engine check every run's spec (``loadtest --check``) before anything exists."""
    check_specs(engine.check_loadtests, runs, lambda r: f"run {r.index} ({r.label})")


class _Tail:
    """New complete lines of a file the engine appends to (server.jsonl, while the run goes on)."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0

    def read(self) -> list[dict[str, Any]]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1
        self.offset += end
        out = []
        for line in data[:end].splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return out


def run_loadtests(
    plan: LoadPlan,
    *,
    db: str | Path,
    engine: Engine,
    resume: bool = True,
    observer: LoadObserver | None = None,
    grace_s: float | None = None,
    generators: int = 1,
) -> LoadtestSummary:
    """Run ``plan`` into the database ``db``; see the module docstring for the guarantees. ``grace_s``:
    how long a stopped engine may take (default: the run's page timeout plus :data:`STOP_MARGIN_S`).
    ``generators``: each run's VUs as that many generator processes, their intervals merged exactly
    (``wirelab-engine loadtest --generators``); a generator lost mid-run fails the run ``degraded``."""
    observer = observer or LoadObserver()
    GENERATORS.check(generators)
    validate_loadtest(engine, plan)
    create = lambda store, control: store.create_loadtest_sweep(plan, control)  # noqa: E731
    with Sweep(
        plan, db=db, engine=engine, parallel=1, resume=resume, kind="loadtest", create=create
    ) as sweep:
        statuses = sweep.statuses()
        done = sum(1 for r in plan.runs if statuses.get(r.id) == "complete")
        summary = LoadtestSummary(
            sweep=plan.name,
            db=sweep.store.path,
            results_dir=sweep.dir,
            spec_hash=plan.spec_hash,
            planned=len(plan.runs),
            already_complete=done,
        )
        todo = [r for r in plan.runs if statuses.get(r.id) != "complete"]
        observer.sweep_started(plan, todo, done)
        with sweep.running(summary, observer, f"load test {plan.name}"):
            _Loop(sweep, engine, observer, summary, grace_s, generators).run(todo, statuses)
    return summary


class _Loop(SweepLoop[LoadtestOutcome]):
    """The runs of one invocation, one at a time (main thread)."""

    def __init__(
        self,
        sweep: Sweep,
        engine: Engine,
        observer: LoadObserver,
        summary: LoadtestSummary,
        grace_s: float | None,
        generators: int = 1,
    ):
        super().__init__(sweep, engine, summary, observer, observer.run_ended)
        self.observer: LoadObserver = observer
        self.grace_s = grace_s
        #: passed only when > 1, so that engines without the keyword still run single-generator tests
        self.spread: dict[str, int] = {"generators": generators} if generators > 1 else {}

    def run(self, todo: list[PlannedLoadtest], statuses: Mapping[str, str]) -> None:
        self.settle_stale(todo, statuses, RESULT_FILE)
        for run in todo:
            recover = functools.partial(self._ingest, run, 0, stopped=False, error=None, t0=time.monotonic())
            if self.recovered(run, statuses.get(run.id), RESULT_FILE, recover):
                continue
            self._run_one(run)
            if self.summary.interrupted:
                return

    def _run_one(self, run: PlannedLoadtest) -> None:
        events: queue.Queue[TrialEvent] = queue.Queue()
        self.store.mark_running(self.name, run.id)
        directory = self.directory(run)
        tail = _Tail(directory / SERVER_FILE)
        stopped = False
        t0 = time.monotonic()
        try:
            with interrupts_held() as held:  # an interrupt now must not lose the engine being started
                proc = self.engine.start_loadtest(run.spec, directory, events.put, **self.spread)
        except BaseException as e:
            self.store.mark_ended(self.name, run.id, "failed", str(e))
            raise
        try:  # from here on an interrupt stops the engine: it may come before the first event
            if held:
                raise KeyboardInterrupt
            self.observer.run_started(run)
            exit_event = self._follow(run, events, tail)
        except KeyboardInterrupt:
            stopped = True
            self.summary.interrupted = True
            exit_event = self._stop(run, proc, events, tail)
        code = exit_event.returncode
        if code not in (0, 1) and proc.owner_pid is not None:
            self.collect(run, proc.owner_pid, code)
        error = None
        if code == 1:  # the thresholds failed, or the engine's one line says what did
            error = last_line(exit_event.stderr_tail) or None
        elif code not in (0, 130):  # a run killed after it was stopped says so
            error = exit_error(code, exit_event.stderr_tail, "the load test")
        self.record(self._ingest(run, code, stopped=stopped, error=error, t0=t0))

    def _follow(self, run: PlannedLoadtest, events: queue.Queue[TrialEvent], tail: _Tail) -> TrialEvent:
        """Hand the run's progress to the observer until the engine exits; its exit event."""
        while True:
            try:
                event = events.get(timeout=SAMPLES_POLL_S)
            except queue.Empty:
                self._samples(run, tail)
                continue
            if event.kind == "interval":
                self.observer.interval(run, event.data)
                self._samples(run, tail)
            elif event.kind == "exit":
                self._samples(run, tail)
                return event

    def _samples(self, run: PlannedLoadtest, tail: _Tail) -> None:
        for sample in tail.read():
            self.observer.server_sample(run, sample)

    def _stop(
        self, run: PlannedLoadtest, proc: TrialRun, events: queue.Queue[TrialEvent], tail: _Tail
    ) -> TrialEvent:
        """SIGINT to the engine; SIGKILL after the grace period or a second Ctrl-C; its exit event."""
        grace = self.grace_s
        if grace is None:
            grace = float(run.resolved["client"]["timeout_s"]) + STOP_MARGIN_S
        self.observer.message(
            f"stopping {run.id} ({run.label}): SIGINT — the VUs stop and what was measured is kept "
            f"(SIGKILL after {grace:.0f} s or a second Ctrl-C)"
        )
        proc.interrupt()
        try:
            if proc.wait(grace) is None:
                self.observer.message(f"{run.id}: the engine did not stop within {grace:.0f} s; killing it")
                proc.kill()
        except KeyboardInterrupt:
            self.observer.message(f"{run.id}: second interrupt: killing the engine now")
            proc.kill()
        proc.wait(KILLED_WAIT_S)
        while True:
            try:
                event = events.get(timeout=EXIT_EVENT_WAIT_S)
            except queue.Empty:
                return TrialEvent(run.id, "exit", returncode=-signal.SIGKILL, stderr_tail="did not exit")
            if event.kind == "exit":
                self._samples(run, tail)
                return event

    def _ingest(
        self,
        run: PlannedLoadtest,
        returncode: int | None,
        *,
        stopped: bool,
        error: str | None,
        t0: float,
    ) -> LoadtestOutcome:
        try:
            outcome = ingest_loadtest(
                self.store,
                self.name,
                run,
                self.directory(run),
                self.control,
                returncode=returncode,
                stopped=stopped,
                error=error,
            )
        except (ContractError, OSError) as e:
            message = f"engine output breaks the load test's outputs: {e}"
            self.store.mark_ended(self.name, run.id, "failed", message)
            outcome = LoadtestOutcome(run=run, status="failed", error=message)
        outcome.seconds = time.monotonic() - t0
        return outcome
