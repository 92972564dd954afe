"""Runs a sweep: the planned trials through the engine, K at a time, resumably.

Guarantees (tested with the fixture double and, as root, with the real engine):

- A trial's loads enter the database in ONE transaction, after its ``trial.json`` appeared; so the
  database never holds part of a trial.
- Re-running the same sweep (same name, same spec hash) runs only the trials not ``complete`` in the
  database. A trial directory left by an incomplete attempt is discarded and the trial rerun — except
  when the previous run was killed between the engine finishing (``trial.json`` written) and the
  insert, in which case the finished trial is stored without rerunning it. After a SIGKILL at any
  point, a second run finishes with exactly the planned loads and no duplicates.
- Before anything exists (database, sweep, trial rows, directories), every distinct trial spec is
  validated by the engine itself (``wirelab-engine trial --check``): a bad one is one line, exit 2.
- Ctrl-C (SIGINT) or SIGTERM: every running engine gets SIGINT (its process group), wirelab waits
  ``grace_s`` for them to clean up, then SIGKILLs the rest. Trials that finished meanwhile are stored;
  the others are marked ``interrupted``. Then :class:`Interrupted`.
- An engine that dies under the runner (any signal, or any failure) has its leftovers removed before
  the runner goes on: ``wirelab-engine gc --owner PID``, the same code as ``gc`` scoped to that
  process's runs (docs/bad-input.md).
- On a cluster (``Engine.cluster``, ``wirelab._cluster``), every missing trial is submitted at once and
  the scheduler places it on a worker with a free ``trial`` slot; a trial is marked running when a
  worker starts it, and the same guarantees hold: the client is the only writer of the database.
- Every trial stores the machine it ran on (``trials.worker``, ``wirelab._machine``).
- Fidelity: a trial whose emulator timer lateness p99 exceeds 1 ms (or whose TUN devices dropped
  packets) is flagged in the database and reported in the summary; so is a Chromium trial that ran
  while another trial ran (Chromium's CPU use disturbs parallel trials' timings without making the
  emulator late: docs/running.md has the measurement).

The machinery a load test's runs share with trials (the lock, signals, the sweep's row, leftovers,
the summary and observer bases) is :mod:`wirelab._sweep`'s.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import json
import queue
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from wirelab import _facts
from wirelab import spec as spec_mod
from wirelab._contract import validate
from wirelab._db.files import fix_modes
from wirelab._db.writer import Store
from wirelab._engine import SPEC_FILE, STDERR_FILE, WORKER_FILE, Engine, TrialEvent, TrialRun
from wirelab._har import objects_from_har
from wirelab._machine import machine_provenance
from wirelab._sweep import (
    Outcome,
    Summary,
    Sweep,
    SweepLoop,
    SweepObserver,
    alias,
    check_specs,
    control_provenance,
    exit_error,
    read_json,
    read_jsonl,
)
from wirelab.errors import ContractError, UsageError, WirelabError
from wirelab.spec import Plan, PlannedTrial

__all__ = [
    "BROWSER_IN_PARALLEL_FLAG",
    "DEVICE_DROPS_FLAG",
    "EGRESS_REFUSED_FLAG",
    "LATENESS_FLAG",
    "LATENESS_LIMIT_US",
    "Observer",
    "RunSummary",
    "TrialOutcome",
    "control_provenance",
    "ingest",
    "run_plan",
]

#: Fidelity flag set on a trial whose emulator timer lateness p99 exceeded the engine's limit (a
#: stored name: it stays as it is even if the limit changes).
LATENESS_FLAG = "lateness_p99_over_1ms"
#: The engine's fidelity bar (emulator.LatenessLimit), from the engine's facts.
LATENESS_LIMIT_US = _facts.lateness_p99_limit_us()
DEVICE_DROPS_FLAG = "device_drops"
#: a trial that loaded its pages in Chromium while another trial ran
BROWSER_IN_PARALLEL_FLAG = "browser_in_parallel"
#: a live trial whose loads sent packets the egress router rejected (docs/egress.md)
EGRESS_REFUSED_FLAG = "egress_refused"


@dataclasses.dataclass(kw_only=True)
class TrialOutcome(Outcome):
    """How one trial of this run ended."""

    trial: PlannedTrial
    loads: int = 0
    load_errors: int = 0
    lateness_p99_us: float | None = None
    flags: list[str] = dataclasses.field(default_factory=list)

    @property
    def item(self) -> PlannedTrial:
        return self.trial


@dataclasses.dataclass(kw_only=True)
class RunSummary(Summary[TrialOutcome]):
    """What a run did; ``lines()`` is the text the CLI prints."""

    parallel: int
    planned_loads: int
    #: the scheduler's address when the trials ran on a cluster (``parallel`` is then its trial slots)
    cluster: str | None = None

    planned_trials = alias("planned", "Trials planned (the repeats of repeat_on_each_worker included).")
    complete_trials = alias("complete", "Trials complete in the database now.")

    @property
    def fidelity_warnings(self) -> list[TrialOutcome]:
        return [o for o in self.completed if o.flags]

    def headline(self) -> str:
        loads = sum(o.loads for o in self.completed)
        load_errors = sum(o.load_errors for o in self.completed)
        return (
            f"sweep {self.sweep}: {self.complete_trials}/{self.planned_trials} trials complete "
            f"({self.planned_loads} loads planned); this run: {len(self.completed)} trials, {loads} loads"
            f"{f' ({load_errors} with errors)' if load_errors else ''}, {len(self.failed)} failed, "
            f"{self.elapsed_s:.1f} s "
            + (
                f"on cluster {self.cluster} ({self.parallel} trial slots)"
                if self.cluster
                else f"at --parallel {self.parallel}"
            )
        )

    def warnings(self) -> list[str]:
        out = []
        timing = [o for o in self.completed if {LATENESS_FLAG, DEVICE_DROPS_FLAG} & set(o.flags)]
        if timing:
            worst = max((o.lateness_p99_us or 0.0) for o in timing)
            out.append(
                f"fidelity warning: {len(timing)} of {len(self.completed)} trials had emulator timer "
                f"lateness p99 > {LATENESS_LIMIT_US / 1000:.0f} ms (worst {worst / 1000:.2f} ms) "
                "or TUN device drops; their loads are flagged in the database — "
                + (
                    "rerun them on workers with fewer --slots"
                    if self.cluster
                    else f"rerun with a lower --parallel (was {self.parallel})"
                    if self.parallel > 1
                    else "other work on the machine delayed the emulator; rerun them when it is quieter"
                )
            )
        browser = [o for o in self.completed if BROWSER_IN_PARALLEL_FLAG in o.flags]
        if browser:
            out.append(
                f"fidelity warning: {len(browser)} of {len(self.completed)} trials loaded pages in "
                f"Chromium while other trials ran (--parallel {self.parallel}); Chromium's CPU use "
                "shifts parallel trials' timings although the emulator keeps time (docs/running.md) — "
                "their loads are flagged in the database; run Chromium sweeps with --parallel 1"
            )
        refused = [o for o in self.completed if EGRESS_REFUSED_FLAG in o.flags]
        if refused:
            out.append(
                f"egress warning: {len(refused)} of {len(self.completed)} live trials sent packets the "
                "egress router rejected (an address nobody resolved, a port other than 80 and 443, or one "
                "the policy refused); those requests failed and their pages may be incomplete — each "
                "trial's engine.log lists the refusals (docs/egress.md)"
            )
        return out


class Observer(SweepObserver[RunSummary]):
    """Receives progress; the default does nothing. The CLI's rich display is one."""

    def sweep_started(
        self, plan: Plan, todo: list[PlannedTrial], already_complete: int, parallel: int
    ) -> None:
        """Before the first trial starts."""

    def trial_started(self, trial: PlannedTrial) -> None:
        """An engine process was started for ``trial``."""

    def trial_placed(self, trial: PlannedTrial, worker: str, attempt: int) -> None:
        """On a cluster, right after :meth:`trial_started`: the worker that runs ``trial``; ``attempt``
        counts from 1 (a trial whose worker was lost starts again elsewhere)."""

    def load_done(self, trial: PlannedTrial, event: Mapping[str, Any]) -> None:
        """A ``load`` progress event (index, protocol, repetition, plt_ms, error)."""

    def trial_ended(self, outcome: TrialOutcome) -> None:
        """A trial was stored, failed or was interrupted."""


def _fidelity_flags(trial_json: Mapping[str, Any], ran_beside_others: bool) -> list[str]:
    emulator = trial_json["emulator"]
    flags = []
    if emulator["lateness_us"]["p99"] > LATENESS_LIMIT_US:
        flags.append(LATENESS_FLAG)
    if emulator.get("device_drops", 0) > 0:
        flags.append(DEVICE_DROPS_FLAG)
    if ran_beside_others and trial_json["spec"]["client"]["impl"] == "chromium":
        flags.append(BROWSER_IN_PARALLEL_FLAG)
    if (trial_json.get("egress") or {}).get("refused_packets", 0) > 0:
        flags.append(EGRESS_REFUSED_FLAG)
    return flags


def _planned_sequence(spec: Mapping[str, Any]) -> collections.Counter[tuple[str, int]]:
    return collections.Counter((p, r) for p in spec["protocols"] for r in range(spec["repetitions"]))


def ingest(
    store: Store,
    sweep: str,
    trial: PlannedTrial,
    directory: Path,
    control: Mapping[str, Any],
    ran_beside_others: bool = False,
    worker: Mapping[str, Any] | None = None,
) -> TrialOutcome:
    """Check a finished trial directory against the contract and the plan, then store it (one transaction).

    ``ran_beside_others``: another trial ran at some point while this one did (fidelity flags).
    ``worker``: the machine it ran on, unless the directory says so itself (a cluster worker's
    ``worker.json``, whose ``remote_dir`` names where the artifacts it kept are: ``host:/path``).
    The directory gets the results' fixed modes first, whatever the umask it was written with."""
    fix_modes(directory, up_to=store.path.parent)
    trial_path = directory / "trial.json"
    trial_json = read_json(trial_path)
    validate("trial-result", trial_json, what="trial.json")
    got_spec = {k: v for k, v in trial_json["spec"].items() if k != "network_resolved"}
    if got_spec != trial.spec:
        differing = sorted(k for k in set(got_spec) | set(trial.spec) if got_spec.get(k) != trial.spec.get(k))
        raise ContractError(f"trial.json: spec differs from the planned trial spec in {', '.join(differing)}")
    loads_path = directory / "loads.jsonl"
    if not loads_path.exists():
        raise ContractError("loads.jsonl is missing")
    worker_path = directory / WORKER_FILE
    if worker_path.exists():
        worker = read_json(worker_path)
    remote_dir = (worker or {}).get("remote_dir")
    records = read_jsonl(loads_path)
    for n, rec in enumerate(records, 1):
        validate("load-record", rec, what=f"loads.jsonl line {n}")
        if rec["trial_id"] != trial.id:
            raise ContractError(f"loads.jsonl line {n}: trial_id {rec['trial_id']!r} is not {trial.id!r}")
    indexes = sorted(r["index"] for r in records)
    if indexes != list(range(len(records))):
        raise ContractError("loads.jsonl: load indexes are not 0…N-1, each once")
    if len(records) != trial_json["loads"] or len(records) != trial.loads:
        raise ContractError(
            f"loads.jsonl has {len(records)} loads; trial.json says {trial_json['loads']}, "
            f"the plan {trial.loads}"
        )
    if collections.Counter((r["protocol"], r["repetition"]) for r in records) != _planned_sequence(
        trial.spec
    ):
        raise ContractError("loads.jsonl: the (protocol, repetition) pairs are not the planned ones")
    errors = sum(1 for r in records if r["error"] is not None)
    if errors != trial_json["errors"]:
        raise ContractError(f"trial.json says {trial_json['errors']} loads failed; loads.jsonl has {errors}")

    objects: dict[int, list[dict[str, Any]]] = {}
    artifacts: list[tuple[str, int | None, Path | str]] = [
        ("trial_json", None, trial_path),
        ("loads_jsonl", None, loads_path),
    ]
    for kind, name in (("spec", SPEC_FILE), ("engine_log", "engine.log"), ("engine_stderr", STDERR_FILE)):
        if (directory / name).exists():
            artifacts.append((kind, None, directory / name))
    for rec in records:
        if rec["har"] is not None:
            har_path = directory / rec["har"]
            if not har_path.exists():
                raise ContractError(f"load {rec['index']}: HAR {rec['har']} is missing")
            har = read_json(har_path, f"load {rec['index']}: HAR {rec['har']}")
            try:
                objects[rec["index"]] = objects_from_har(har)
            except (KeyError, TypeError, ValueError) as e:
                raise ContractError(f"load {rec['index']}: HAR {rec['har']} is not HAR 1.2 ({e!r})") from None
            artifacts.append(("har", rec["index"], har_path))
        if rec.get("frames") is not None:  # Chromium's frames of the load (docs/vitals.md)
            frames_path = directory / rec["frames"]
            if not frames_path.is_dir():
                raise ContractError(f"load {rec['index']}: frames {rec['frames']} are missing")
            artifacts.append(("frames", rec["index"], frames_path))
        pcaps = rec["pcap"] or {}
        for side, path in ((side, pcaps[side]) for side in ("client", "server") if side in pcaps):
            if remote_dir is not None:  # kept on the worker (--artifacts remote): recorded as host:path
                artifacts.append((f"pcap_{side}", rec["index"], f"{remote_dir}/{path}"))
                continue
            if not (directory / path).exists():
                raise ContractError(f"load {rec['index']}: pcap {path} is missing")
            artifacts.append((f"pcap_{side}", rec["index"], directory / path))

    flags = _fidelity_flags(trial_json, ran_beside_others)
    store.complete_trial(
        sweep,
        trial.id,
        trial_json=trial_json,
        loads=records,
        objects=objects,
        artifacts=artifacts,
        control_provenance=control,
        fidelity_flags=flags,
        worker=worker,
    )
    return TrialOutcome(
        trial=trial,
        status="complete",
        loads=len(records),
        load_errors=errors,
        lateness_p99_us=float(trial_json["emulator"]["lateness_us"]["p99"]),
        flags=flags,
    )


def validate_plan(engine: Engine, plan: Plan) -> int:
    """Everything ``wirelab run`` checks of a plan before anything exists (``wirelab spec check`` runs
    exactly this too): the engine has ``trial``, it accepts every distinct trial spec, and the sweep's
    thresholds are well-formed for its protocols (``wirelab-engine thresholds``). Returns how
    many distinct specs it checked."""
    engine.require("trial")
    checked = check_trials(engine, plan.trials)
    thresholds = (plan.spec.get("sweep") or {}).get("thresholds") or []
    if thresholds:
        from wirelab import _budgets

        protocols = sorted({p for t in plan.trials for p in t.spec["protocols"]})
        _budgets.check(thresholds, protocols, engine=getattr(engine, "path", None))
    return checked


def check_trials(engine: Engine, trials: Sequence[PlannedTrial]) -> int:
    """Have the engine validate every distinct trial spec (``trial --check``) before anything exists.

    Specs that differ only in ``trial_id`` are checked once; returns how many were. The first bad one
    raises :class:`SpecError` naming the trial and the engine's field (docs/bad-input.md)."""
    distinct: dict[str, PlannedTrial] = {}
    for t in trials:
        key = json.dumps({k: v for k, v in t.spec.items() if k != "trial_id"}, sort_keys=True)
        distinct.setdefault(key, t)
    checked = list(distinct.values())
    check_specs(engine.check_trials, checked, lambda t: f"trial {t.id} ({t.label})")
    return len(checked)


def run_plan(
    plan: Plan,
    *,
    db: str | Path,
    engine: Engine,
    parallel: int = 1,
    resume: bool = True,
    observer: Observer | None = None,
    grace_s: float = 30.0,
) -> RunSummary:
    """Run ``plan`` into the database ``db``; see the module docstring for the guarantees.

    On a cluster engine ``parallel`` is the cluster's trial slots (shown and stored); every missing
    trial is submitted at once."""
    if parallel < 1:
        raise UsageError(f"--parallel: {parallel} is out of range; use 1 or more")
    observer = observer or Observer()
    # Everything the engine would refuse is refused now, before the database, the sweep, a trial row
    # or a directory exists.
    validate_plan(engine, plan)
    # a local run describes this machine once; a cluster's workers describe themselves
    worker = machine_provenance(engine) if engine.cluster is None else None
    create = lambda store, control: store.create_sweep(plan, control)  # noqa: E731
    with Sweep(
        plan, db=db, engine=engine, parallel=parallel, resume=resume, kind="trials", create=create
    ) as sweep:
        repeats = _worker_repeats(sweep.store, plan, engine, observer)
        planned = [*plan.trials, *repeats]
        statuses = sweep.statuses()
        done = sum(1 for t in planned if statuses.get(t.id) == "complete")
        summary = RunSummary(
            sweep=plan.name,
            db=sweep.store.path,
            results_dir=sweep.dir,
            spec_hash=plan.spec_hash,
            parallel=parallel,
            planned=len(planned),
            planned_loads=sum(t.loads for t in planned),
            already_complete=done,
            cluster=engine.cluster,
        )
        todo = [t for t in planned if statuses.get(t.id) != "complete"]
        # the observer counts the repeats of repeat_on_each_worker with the plan's trials
        observer.sweep_started(dataclasses.replace(plan, trials=tuple(planned)), todo, done, parallel)
        with sweep.running(summary, observer, f"sweep {plan.name}"):
            in_flight = parallel if engine.cluster is None else max(1, len(todo))
            loop = _Loop(sweep, plan, engine, in_flight, observer, summary, grace_s)
            loop.worker = worker
            loop.run(todo, statuses)
    return summary


def _worker_repeats(store: Store, plan: Plan, engine: Engine, observer: Observer) -> list[PlannedTrial]:
    """``[sweep] repeat_on_each_worker = K`` on a cluster: K trials of the first configuration pinned to
    each connected worker, planned in the store (``trials.repeat_of``) and returned; none elsewhere."""
    k = int(plan.spec.get("sweep", {}).get("repeat_on_each_worker", 0))
    if k == 0 or not plan.trials:
        return []
    trial_workers = getattr(engine, "trial_workers", None)
    if engine.cluster is None or trial_workers is None:
        observer.message(
            "repeat_on_each_worker: a cluster's setting (--cluster); one machine runs the plan alone"
        )
        return []
    of = plan.trials[0]
    repeats: list[PlannedTrial] = []
    workers = trial_workers()
    for name, address in workers.items():
        for trial in spec_mod.worker_repeats(of, name, k):
            engine.pin(trial.id, address)  # type: ignore[attr-defined]
            repeats.append(trial)
    store.add_repeats(plan.name, of, repeats)
    observer.message(
        f"repeat_on_each_worker: {of.id} ({of.label}) {k} more time(s) on each of "
        f"{len(workers)} worker(s): {', '.join(workers)}"
    )
    return repeats


class _Loop(SweepLoop[TrialOutcome]):
    """The event loop of one run (main thread): start trials, handle their events, stop them."""

    def __init__(
        self,
        sweep: Sweep,
        plan: Plan,
        engine: Engine,
        parallel: int,
        observer: Observer,
        summary: RunSummary,
        grace_s: float,
    ):
        super().__init__(sweep, engine, summary, observer, observer.trial_ended)
        self.plan, self.parallel, self.grace_s = plan, parallel, grace_s
        self.observer: Observer = observer
        #: the machine trials run on (local runs); None when the trial directory says (cluster)
        self.worker: Mapping[str, Any] | None = None
        self.events: queue.Queue[TrialEvent] = queue.Queue()
        self.running: dict[str, tuple[PlannedTrial, TrialRun, float]] = {}
        #: trials that ran while another one did
        self.overlapped: set[str] = set()
        self.stopping = False

    def run(self, todo: list[PlannedTrial], statuses: Mapping[str, str]) -> None:
        pending: collections.deque[PlannedTrial] = collections.deque()
        self.settle_stale(todo, statuses, "trial.json")
        for trial in todo:
            recover = functools.partial(self._finish, trial, 0, "", time.monotonic())
            if not self.recovered(trial, statuses.get(trial.id), "trial.json", recover):
                pending.append(trial)
        try:
            while pending or self.running:
                while pending and len(self.running) < self.parallel:
                    self._start(pending.popleft())
                self._handle(self.events.get())
        except KeyboardInterrupt:
            self.summary.interrupted = True
            self._stop_all()
        except BaseException:
            self._stop_all()
            raise

    def _start(self, trial: PlannedTrial) -> None:
        # a cluster's trial is queued until a worker starts it (its ``started`` event)
        queued = self.engine.cluster is not None
        if not queued:
            self.store.mark_running(self.name, trial.id)
        try:
            run = self.engine.start_trial(trial.spec, self.directory(trial), self.events.put)
        except WirelabError as e:
            self.store.mark_ended(self.name, trial.id, "failed", str(e))
            raise
        if self.running and not queued:
            self.overlapped.update(self.running, (trial.id,))
        self.running[trial.id] = (trial, run, time.monotonic())
        if not queued:
            self.observer.trial_started(trial)

    def _handle(self, event: TrialEvent) -> None:
        entry = self.running.get(event.trial_id)
        if entry is None:
            return
        trial, run, t0 = entry
        if event.kind == "load":
            self.observer.load_done(trial, event.data)
        elif event.kind == "started":
            self.store.mark_running(self.name, trial.id)
            self.running[trial.id] = (trial, run, time.monotonic())
            self.observer.trial_started(trial)
            self.observer.trial_placed(
                trial, str(event.data.get("worker")), int(event.data.get("attempt", 1))
            )
        elif event.kind == "message":
            self.observer.message(f"{trial.id} ({trial.label}): {event.data.get('text')}")
        elif event.kind == "exit":
            del self.running[event.trial_id]
            if event.returncode != 0 and run.owner_pid is not None:
                self.collect(trial, run.owner_pid, event.returncode)
            if run.beside_others is not None:
                (self.overlapped.add if run.beside_others else self.overlapped.discard)(trial.id)
            self.record(self._finish(trial, event.returncode, event.stderr_tail, t0))

    def _finish(
        self, trial: PlannedTrial, returncode: int | None, stderr_tail: str, t0: float
    ) -> TrialOutcome:
        """Store a trial whose engine exited (``returncode``), or mark it failed or interrupted."""
        seconds = time.monotonic() - t0
        directory = self.directory(trial)
        if returncode == 0 and (directory / "trial.json").exists():
            try:
                outcome = ingest(
                    self.store,
                    self.name,
                    trial,
                    directory,
                    self.control,
                    trial.id in self.overlapped,
                    worker=self.worker,
                )
                outcome.seconds = seconds
                return outcome
            except (ContractError, OSError) as e:
                error = f"engine output breaks the trial contract: {e}"
        elif self.stopping and returncode in (130, -signal.SIGINT, -signal.SIGKILL, -signal.SIGTERM):
            self.store.mark_ended(self.name, trial.id, "interrupted", "stopped by wirelab")
            return TrialOutcome(trial=trial, status="interrupted", seconds=seconds, error="stopped")
        elif returncode == 0:
            error = "the engine exited 0 without writing trial.json"
        else:
            error = exit_error(returncode, stderr_tail, "the trial spec")
        if directory.is_dir():  # kept for its logs
            fix_modes(directory, up_to=self.store.path.parent)
        self.store.mark_ended(self.name, trial.id, "failed", error)
        return TrialOutcome(trial=trial, status="failed", error=error, seconds=seconds)

    def _stop_all(self) -> None:
        """SIGINT every running trial, wait up to grace_s, SIGKILL the rest, then store what finished."""
        self.stopping = True
        if not self.running:
            return
        self.observer.message(
            f"stopping {len(self.running)} running trial(s): SIGINT, then SIGKILL after {self.grace_s:.0f} s"
        )
        for _trial, run, _t0 in self.running.values():
            run.interrupt()
        deadline = time.monotonic() + self.grace_s
        try:
            for _trial, run, _t0 in list(self.running.values()):
                run.wait(max(0.0, deadline - time.monotonic()))
        except KeyboardInterrupt:
            self.observer.message("second interrupt: killing the running trials now")
        for _trial, run, _t0 in list(self.running.values()):
            if run.poll() is None:
                run.kill()  # its leftovers are removed by gc --owner when its exit is handled
        for _trial, run, _t0 in list(self.running.values()):
            run.wait(10.0)
        # every exit event is queued by now (or the process is unkillable); store what finished
        while self.running:
            try:
                event = self.events.get(timeout=5.0)
            except queue.Empty:
                for trial_id, (trial, _run, _t0) in list(self.running.items()):
                    self.store.mark_ended(
                        self.plan.name, trial.id, "interrupted", "did not exit after SIGKILL"
                    )
                    del self.running[trial_id]
                break
            self._handle(event)
