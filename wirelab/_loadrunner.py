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
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import queue
import signal
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from wirelab._engine import Engine, TrialEvent, TrialRun
from wirelab._loadplan import LoadPlan, PlannedLoadtest
from wirelab.errors import ContractError, Interrupted, SpecError, UsageError
from wirelab.runner import (
    _discard,
    _prepare_sweep,
    _sigterm_as_interrupt,
    _sweep_lock,
    collect_leftovers,
    control_provenance,
)
from wirelab.store import Store, fix_modes, results_dir

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


@dataclasses.dataclass
class LoadtestOutcome:
    """How one run of this invocation ended."""

    run: PlannedLoadtest
    status: str  #: complete | interrupted | failed
    intervals: int = 0
    outcomes: dict[str, Any] = dataclasses.field(default_factory=dict)
    totals: dict[str, Any] = dataclasses.field(default_factory=dict)
    failed_thresholds: list[str] = dataclasses.field(default_factory=list)
    generator_saturated: bool = False
    error: str | None = None
    seconds: float = 0.0
    recovered: bool = False  #: finished by a previous, killed invocation and stored by this one


@dataclasses.dataclass
class LoadtestSummary:
    """What an invocation did; ``lines()`` is the text the CLI prints."""

    sweep: str
    db: Path
    results_dir: Path
    spec_hash: str
    planned_runs: int
    already_complete: int
    outcomes: list[LoadtestOutcome] = dataclasses.field(default_factory=list)
    interrupted: bool = False
    elapsed_s: float = 0.0
    report: Path | None = None

    @property
    def completed(self) -> list[LoadtestOutcome]:
        return [o for o in self.outcomes if o.status == "complete"]

    @property
    def failed(self) -> list[LoadtestOutcome]:
        return [o for o in self.outcomes if o.status == "failed"]

    @property
    def thresholds_failed(self) -> list[LoadtestOutcome]:
        return [o for o in self.completed if o.failed_thresholds]

    @property
    def complete_runs(self) -> int:
        return self.already_complete + len(self.completed)

    @property
    def ok(self) -> bool:
        """Every run complete and every threshold passed (the CLI's exit 0)."""
        return not self.interrupted and self.complete_runs == self.planned_runs and not self.thresholds_failed

    def lines(self) -> list[str]:
        out = [
            f"load test {self.sweep}: {self.complete_runs}/{self.planned_runs} runs complete; this run: "
            f"{len(self.completed)} complete, {len(self.failed)} failed, {self.elapsed_s:.1f} s",
        ]
        if self.already_complete:
            out.append(f"resumed: {self.already_complete} runs were already complete in {self.db}")
        recovered = [o for o in self.completed if o.recovered]
        if recovered:
            out.append(f"stored {len(recovered)} runs that a killed invocation had finished")
        for o in self.failed:
            out.append(f"failed: {o.run.id} ({o.run.label}): {o.error}")
        for o in self.thresholds_failed:
            out.append(f"thresholds failed: {o.run.id} ({o.run.label}): {'; '.join(o.failed_thresholds)}")
        saturated = [o for o in self.completed if o.generator_saturated]
        if saturated:
            out.append(
                f"generator saturated: {len(saturated)} of {len(self.completed)} runs had intervals where "
                "the load generator itself was short of CPU; their page times include its delay "
                "(docs/loadtest.md)"
            )
        if self.interrupted:
            out.append("interrupted: what was measured is stored; run the same command again to resume")
        out.append(f"results: {self.db} (sweep {self.sweep}), run directories in {self.results_dir}")
        if self.report is not None:
            out.append(f"report: {self.report}")
        return out


class LoadObserver:
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

    def message(self, text: str) -> None:
        """Something worth telling the user."""

    def sweep_ended(self, summary: LoadtestSummary) -> None:
        """After the last run (also after an interruption)."""


def _read_lines(path: Path, what: str, *, partial_ok: bool) -> list[dict[str, Any]]:
    """A JSONL file's objects; with ``partial_ok`` a last line cut short (an engine killed while writing
    it) is left out instead of refused."""
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as e:
            if partial_ok and n == len(lines):
                break
            raise ContractError(f"{what} line {n}: not JSON ({e.msg})") from None
    for i, item in enumerate(out):
        if not isinstance(item, dict) or item.get("index") != i:
            raise ContractError(f"{what} line {i + 1}: its index is not {i}")
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
        try:
            result = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise ContractError(f"{RESULT_FILE}: not JSON ({e.msg})") from None
        if not isinstance(result, dict) or not isinstance(result.get("summary"), dict):
            raise ContractError(f"{RESULT_FILE}: has no summary")
        got = result.get("spec") or {}
        if got.get("loadtest_id") != run.id or got.get("protocol") != run.protocol:
            raise ContractError(
                f"{RESULT_FILE}: it is load test {got.get('loadtest_id')} ({got.get('protocol')}), "
                f"not the planned {run.id} ({run.protocol})"
            )
    intervals = _read_lines(directory / INTERVALS_FILE, INTERVALS_FILE, partial_ok=result is None)
    samples = _read_lines(directory / SERVER_FILE, SERVER_FILE, partial_ok=result is None)
    if result is not None and result.get("intervals") not in (None, len(intervals)):
        raise ContractError(
            f"{RESULT_FILE} says {result['intervals']} intervals; {INTERVALS_FILE} has {len(intervals)}"
        )
    exited = (result or {}).get("server_exited")
    if result is not None and not result.get("interrupted") and not exited and returncode in (0, 1):
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


def check_runs(engine: Engine, runs: tuple[PlannedLoadtest, ...]) -> None:
    """Have the engine check every run's spec (``loadtest --check``) before anything exists."""
    try:
        engine.check_loadtests([r.spec for r in runs])
    except SpecError as e:
        run = runs[min(getattr(e, "index", 0), len(runs) - 1)]
        raise SpecError(f"run {run.index} ({run.label}): {e}", path=e.path, value=e.value) from None


@contextlib.contextmanager
def _interrupts_held() -> Iterator[list[int]]:
    """In the main thread, SIGINT and SIGTERM are recorded instead of raising while the block runs (an
    engine is being started: interrupted half-way, nobody would stop it); the list holds what came."""
    held: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.getsignal(s) for s in signals}
    for s in signals:
        if previous[s] not in (signal.SIG_IGN, None):
            signal.signal(s, lambda signum, frame: held.append(signum))
    try:
        yield held
    finally:
        for s in signals:
            if previous[s] is not None:
                signal.signal(s, previous[s])


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
) -> LoadtestSummary:
    """Run ``plan`` into the database ``db``; see the module docstring for the guarantees. ``grace_s``:
    how long a stopped engine may take (default: the run's page timeout plus :data:`STOP_MARGIN_S`)."""
    observer = observer or LoadObserver()
    engine.require("loadtest")
    if not plan.runs:
        raise UsageError(f"load test {plan.name}: no runs planned")
    check_runs(engine, plan.runs)
    started = time.monotonic()
    store = Store(db)
    sweep_dir = results_dir(store.path) / plan.name
    control = control_provenance(engine, 1)
    try:
        with _sweep_lock(sweep_dir, plan.name), _sigterm_as_interrupt():
            _prepare_sweep(
                store,
                plan,
                resume,
                control,
                sweep_dir,
                kind="loadtest",
                create=lambda: store.create_loadtest_sweep(plan, control),
            )
            statuses = store.loadtest_statuses(plan.name)
            done = sum(1 for r in plan.runs if statuses.get(r.id) == "complete")
            summary = LoadtestSummary(
                sweep=plan.name,
                db=store.path,
                results_dir=sweep_dir,
                spec_hash=plan.spec_hash,
                planned_runs=len(plan.runs),
                already_complete=done,
            )
            todo = [r for r in plan.runs if statuses.get(r.id) != "complete"]
            observer.sweep_started(plan, todo, done)
            try:
                loop = _Loop(store, plan.name, engine, observer, control, sweep_dir, summary, grace_s)
                loop.run(todo, statuses)
            finally:
                summary.elapsed_s = time.monotonic() - started
                store.touch_sweep(plan.name)
                observer.sweep_ended(summary)
    finally:
        store.close()
    if summary.interrupted:
        error = Interrupted(f"load test {plan.name}: interrupted; run the same spec again to resume")
        error.summary = summary  # type: ignore[attr-defined]
        raise error
    return summary


class _Loop:
    """The runs of one invocation, one at a time (main thread)."""

    def __init__(
        self,
        store: Store,
        sweep: str,
        engine: Engine,
        observer: LoadObserver,
        control: Mapping[str, Any],
        sweep_dir: Path,
        summary: LoadtestSummary,
        grace_s: float | None,
    ):
        self.store, self.sweep, self.engine, self.observer = store, sweep, engine, observer
        self.control, self.sweep_dir, self.summary, self.grace_s = control, sweep_dir, summary, grace_s

    def run(self, todo: list[PlannedLoadtest], statuses: Mapping[str, str]) -> None:
        for run in todo:
            directory = self.sweep_dir / run.id
            if statuses.get(run.id) == "running" and (directory / RESULT_FILE).exists():
                # a killed invocation left a run the engine had finished, never stored
                outcome = self._ingest(run, directory, 0, stopped=False, error=None, t0=time.monotonic())
                if outcome.status == "complete":
                    outcome.recovered = True
                    self._record(outcome)
                    continue
            if directory.exists():
                self.observer.message(f"discarding the incomplete attempt at {run.id} ({run.label})")
                _discard(directory)
            self._run_one(run, directory)
            if self.summary.interrupted:
                return

    def _run_one(self, run: PlannedLoadtest, directory: Path) -> None:
        events: queue.Queue[TrialEvent] = queue.Queue()
        self.store.mark_loadtest_running(self.sweep, run.id)
        tail = _Tail(directory / SERVER_FILE)
        stopped = False
        t0 = time.monotonic()
        try:
            with _interrupts_held() as held:  # an interrupt now must not lose the engine being started
                proc = self.engine.start_loadtest(run.spec, directory, events.put)
        except BaseException as e:
            self.store.mark_loadtest_ended(self.sweep, run.id, "failed", str(e))
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
        if exit_event.returncode not in (0, 1) and proc.owner_pid is not None:
            collect_leftovers(self.engine, self.observer, run.id, proc.owner_pid, exit_event.returncode)
        last = (exit_event.stderr_tail.strip().splitlines() or [""])[-1].removeprefix("wirelab-engine: ")
        error = None
        if exit_event.returncode == 2:
            error = f"the engine refused the load test: {last or 'exit status 2'}"
        elif exit_event.returncode is not None and exit_event.returncode < 0 and not stopped:
            error = f"the engine was killed by signal {-exit_event.returncode}" + (
                f": {last}" if last else ""
            )
        elif exit_event.returncode not in (0, 1, 130):
            error = last or f"the engine exited with status {exit_event.returncode}"
        elif exit_event.returncode == 1:
            error = last or None
        self._record(self._ingest(run, directory, exit_event.returncode, stopped=stopped, error=error, t0=t0))

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
        directory: Path,
        returncode: int | None,
        *,
        stopped: bool,
        error: str | None,
        t0: float,
    ) -> LoadtestOutcome:
        try:
            outcome = ingest_loadtest(
                self.store,
                self.sweep,
                run,
                directory,
                self.control,
                returncode=returncode,
                stopped=stopped,
                error=error,
            )
        except (ContractError, OSError) as e:
            message = f"engine output breaks the load test's outputs: {e}"
            self.store.mark_loadtest_ended(self.sweep, run.id, "failed", message)
            outcome = LoadtestOutcome(run=run, status="failed", error=message)
        outcome.seconds = time.monotonic() - t0
        return outcome

    def _record(self, outcome: LoadtestOutcome) -> None:
        self.summary.outcomes.append(outcome)
        self.observer.run_ended(outcome)
