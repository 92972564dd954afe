"""Trials on a Dask cluster (``docs/distributed.md``): ``wirelab worker``, ``wirelab run --cluster``.

::

    client: wirelab run SPEC --cluster ADDR          scheduler ADDR         worker: wirelab worker (root)
    plan; trial --check of every spec (client's engine)
    ClusterEngine.start_trial ──► submit(run_trial, resources={"trial": 1}) ──► TrialWorker.run
                                                                                  wirelab-engine trial
    ◄── "started", "load" events (topic wirelab-run-<id>) ◄──────────────────── log_event
    ◄── exit status + trial directory as tar.gz (+ worker.json) ◄────────────── gc --owner if it died
    the runner ingests it exactly as a local trial: the client is the database's only writer

A worker advertises the resource ``trial = N`` (``--slots``, default one per two cores), so the scheduler
never runs more trials on a machine than its emulator's fidelity allows (docs/running.md). Each worker
describes itself once (:func:`wirelab._machine.machine_provenance` plus a ``bench link --quick``
calibration); every trial it runs carries that description in ``worker.json``.

Failures: a worker lost mid-trial (its engine gets SIGTERM from the kernel and removes its namespaces)
is noticed by the scheduler, which starts the task again on another worker; the client counts the
attempts (``started`` events) and fails the trial after ``retries`` + 1. Ctrl-C on the client sets the
run's stop event: every worker interrupts its trials of that run (SIGINT, then SIGKILL after a grace)
and sends back what finished; queued trials are cancelled. A client that disappears releases its
tasks, and a worker interrupts a trial whose task nobody wants any more.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import io
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from wirelab import spec as spec_mod
from wirelab._engine import WORKER_FILE, Engine, EventCallback, SubprocessEngine, TrialEvent, TrialRun
from wirelab._machine import machine_provenance
from wirelab._options import ARTIFACTS, DEFAULT_RETRIES, DEFAULT_WAIT_WORKERS_S, RETRIES, SLOTS, WAIT_WORKERS
from wirelab._terminal import controls_escaped
from wirelab._userpath import check_output_dir
from wirelab.errors import EngineError, SpecError, UsageError, WirelabError, cut

__all__ = [
    "ARTIFACTS",
    "DEFAULT_RETRIES",
    "ClusterEngine",
    "LocalCluster",
    "TrialWorker",
    "calibration_summary",
    "default_slots",
    "local_cluster",
    "run_trial",
    "serve_worker",
]

TRIAL_RESOURCE = "trial"  #: the resource a worker advertises per slot; each trial task needs 1
PLUGIN_NAME = "wirelab-trials"
TOPIC_PREFIX = "wirelab-run-"  #: + run id: the topic of a run's progress events
STOP_PREFIX = "wirelab-stop-"  #: + run id: the event that stops a run's trials on every worker
GRACE_S = 30.0  #: a worker's wait between SIGINT and SIGKILL of an engine it stops
POLL_S = 0.25
STOP_CHECK_S = 0.5  #: how often a worker asks whether a running engine's task should stop
#: with --artifacts remote, what comes back to the client: what the database stores (records, HARs,
#: logs, Chromium's frames); pcaps and the server's records stay on the worker
DATABASE_FILES = (
    "trial.json",
    "loads.jsonl",
    "spec.json",
    "engine.log",
    "engine.stderr",
    WORKER_FILE,
    "har",
    "frames",
)


#: Dask settings of wirelab's workers and local scheduler: left at Dask's defaults an idle worker uses
#: about 8 % of a core (its statistical profiler samples every thread every 10 ms, its event loop ticks
#: every 20 ms), CPU that a two-core machine's loaders and servers need; with these, under 1 %
#: (scripts/bench_sweep.py --cluster measures it: "worker_idle_cpu_pct").
QUIET_DASK = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
}


def default_slots() -> int:
    """One trial slot per two cores (docs/running.md: more than about two trials at once on two cores
    disturbs the emulator's timing)."""
    return max(1, (os.cpu_count() or 1) // 2)


def calibration_summary(bench: Mapping[str, Any]) -> dict[str, Any]:
    """The headline figures of ``bench link --quick --json`` (docs/network.md explains each)."""
    keys = (
        "rtt_error_ms_p50",
        "rtt_error_ms_p99",
        "goodput_ratio",
        "loss_realized",
        "capacity_mbps",
        "cpu_us_per_packet",
        "device_drops",
        "lateness_us",
        "duration_s",
        "started_at",
    )
    summary = {k: bench[k] for k in keys if k in bench}
    machine = bench.get("machine")
    if isinstance(machine, Mapping) and "loadavg_before" in machine:
        summary["loadavg_before"] = machine["loadavg_before"]
    return summary


# --------------------------------------------------------------------------------------------------
# Worker side


def _probe_spec() -> dict[str, Any]:
    return spec_mod.resolve_trial({"page": "twitter", "protocols": ["h2"], "repetitions": 1}, path="probe")


def check_worker_engine(engine: Engine) -> None:
    """Refuse to serve trials unless this process is root and ``engine`` answers: it has ``trial`` and
    ``gc``, and ``trial --check`` accepts a one-load spec. One line (:class:`UsageError`), exit 2."""
    if os.geteuid() != 0:
        raise UsageError("wirelab worker: must run as root (trials create network namespaces)")
    try:
        engine.require("trial")
        engine.require("gc")
        engine.check_trials([_probe_spec()])
    except WirelabError as e:
        raise UsageError(f"--engine: {engine.name} is not runnable ({' '.join(str(e).split())})") from None


def _archive(directory: Path, only: Sequence[str] | None = None) -> bytes:
    """``directory``'s contents (or only the top-level names ``only``) as tar.gz bytes."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as tar:
        for child in sorted(directory.iterdir()):
            if only is None or child.name in only:
                tar.add(child, arcname=child.name)
    return buffer.getvalue()


def _unpack(data: bytes, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(directory, filter="data")


class TrialWorker(WorkerPlugin):
    """The worker plugin of ``wirelab worker``: its engine, its description and its running trials.

    :func:`run_trial`, the task the client submits, finds it by :data:`PLUGIN_NAME` and calls :meth:`run`."""

    name = PLUGIN_NAME

    def __init__(self, engine: Engine, provenance: Mapping[str, Any], keep_dir: Path):
        self.engine = engine
        self.provenance = dict(provenance)
        self.keep_dir = keep_dir
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        #: trial id → whether another trial ran beside it on this worker
        self._running: dict[str, bool] = {}
        self._idle = threading.Condition(self._lock)
        self.worker: Any = None
        self.scratch = Path()

    def setup(self, worker: Any) -> None:
        self.worker = worker
        self.scratch = Path(worker.local_directory) / "wirelab-trials"
        self.scratch.mkdir(parents=True, exist_ok=True)

    def teardown(self, worker: Any) -> None:
        # on the worker's event loop: never wait here. Running trials see the flag and stop their
        # engines; an engine whose worker process ends first gets SIGTERM from the kernel and cleans up.
        self.stopping.set()

    def stop(self, timeout: float) -> None:
        """Interrupt every running trial and wait up to ``timeout`` for them to end."""
        self.stopping.set()
        with self._idle:
            self._idle.wait_for(lambda: not self._running, timeout)

    def _wanted(self, key: Any) -> bool:
        """Whether the scheduler still wants the task ``key`` (False once its client cancelled it or left)."""
        state = getattr(self.worker, "state", None)
        ts = state.tasks.get(key) if state is not None else None
        return ts is None or ts.state not in ("cancelled", "released", "forgotten")

    def watch(
        self,
        key: Any,
        start: Callable[[EventCallback], TrialRun],
        forward: Callable[[TrialEvent], None],
        stopped: Callable[[], bool],
        tick: Callable[[TrialRun], None] | None = None,
    ) -> tuple[int, str, float]:
        """Run one engine process of the task ``key`` to its end: ``start(on_event)`` starts it; its
        events but the exit go to ``forward``; ``tick(run)`` every POLL_S while it runs; SIGINT once
        the worker stops, the scheduler no longer wants the task or ``stopped()`` says so (asked every
        STOP_CHECK_S), SIGKILL GRACE_S later. After a failed exit what the engine left is removed
        (``gc --owner``; a failure of that is added to the stderr tail, not raised). Returns the exit
        status, the stderr tail and when it exited (Unix s). The one watch of a trial's task and a
        load test's."""
        exited = threading.Event()
        ending: dict[str, Any] = {}

        def on_event(event: TrialEvent) -> None:
            if event.kind == "exit":
                ending.update(returncode=event.returncode, stderr_tail=event.stderr_tail)
                exited.set()
            else:
                forward(event)

        run = start(on_event)
        interrupted_at: float | None = None
        next_check = 0.0
        while not exited.wait(POLL_S):
            now = time.monotonic()
            if tick is not None:
                tick(run)
            if interrupted_at is None and now >= next_check:
                next_check = now + STOP_CHECK_S
                if self.stopping.is_set() or not self._wanted(key) or stopped():
                    run.interrupt()
                    interrupted_at = now
            elif interrupted_at is not None and now - interrupted_at > GRACE_S:
                run.kill()
        exited_at = time.time()
        returncode = int(ending["returncode"])
        stderr_tail = str(ending["stderr_tail"])
        if returncode != 0 and run.owner_pid is not None:
            try:
                self.engine.gc_owner(run.owner_pid)
            except WirelabError as e:  # gc_owner's failures (EngineError, UsageError, not found)
                stderr_tail += f"\n(the worker could not remove what the engine left: {e})"
        return returncode, stderr_tail, exited_at

    def run(self, spec: dict[str, Any], run_id: str, sweep: str, artifacts: str, key: Any) -> dict[str, Any]:
        """Run one trial with the local engine; returns its exit status and its directory as tar.gz."""
        from distributed import Event

        task_started = time.time()
        trial_id = spec["trial_id"]
        attempt = uuid.uuid4().hex[:12]
        if artifacts == "remote":
            directory = self.keep_dir / sweep / trial_id
            if directory.exists():
                shutil.rmtree(directory)
        else:
            directory = self.scratch / f"{trial_id}-{attempt}"
        topic = TOPIC_PREFIX + run_id

        def send(kind: str, **data: Any) -> None:
            self.worker.log_event(topic, {"trial_id": trial_id, "attempt": attempt, "kind": kind, **data})

        with self._lock:
            self._running[trial_id] = bool(self._running)
            if len(self._running) > 1:
                for other in self._running:
                    self._running[other] = True

        def forward(event: TrialEvent) -> None:
            if event.kind in ("ready", "load", "done"):
                send(event.kind, data=event.data)

        try:
            # "name": the scheduler sets "worker" of a worker's event to the worker's address
            send("started", name=self.provenance["name"], at=task_started)
            stop = Event(STOP_PREFIX + run_id)
            clock: dict[str, float] = {}

            def start(on_event: EventCallback) -> TrialRun:
                run = self.engine.start_trial(spec, directory, on_event)
                clock["engine_started"] = time.time()
                return run

            returncode, stderr_tail, engine_exited = self.watch(key, start, forward, lambda: _is_set(stop))
            engine_started = clock["engine_started"]
            worker = dict(self.provenance)
            if artifacts == "remote":
                worker["remote_dir"] = f"{self.provenance['host']}:{directory.resolve()}"
            (directory / WORKER_FILE).write_text(json.dumps(worker, indent=1) + "\n")
            archive = _archive(directory, DATABASE_FILES if artifacts == "remote" else None)
        finally:
            if artifacts != "remote":
                shutil.rmtree(directory, ignore_errors=True)
            with self._idle:
                beside = self._running.pop(trial_id, False)
                self._idle.notify_all()
        return {
            "trial_id": trial_id,
            "attempt": attempt,
            "worker": self.provenance["name"],
            "returncode": returncode,
            "stderr_tail": stderr_tail,
            "beside_others": beside,
            "archive": archive,
            "timings": {
                "task_started": task_started,
                "engine_started": engine_started,
                "engine_exited": engine_exited,
                "task_ended": time.time(),
            },
        }


def _is_set(event: Any) -> bool:
    """A Dask event's flag; False while the scheduler cannot be asked (the task's own state and the
    worker's stop flag still end the trial)."""
    try:
        return bool(event.is_set())
    except Exception:
        return False


def _plugin() -> TrialWorker:
    from distributed import get_worker

    worker = get_worker()
    plugin = worker.plugins.get(PLUGIN_NAME)
    if not isinstance(plugin, TrialWorker):
        raise RuntimeError(f"worker {worker.name} was not started by `wirelab worker`")
    return plugin


def run_trial(spec: dict[str, Any], run_id: str, sweep: str, artifacts: str) -> dict[str, Any]:
    """The task a client submits for one trial (needs the resource ``trial = 1``)."""
    from distributed.worker import thread_state

    return _plugin().run(spec, run_id, sweep, artifacts, thread_state.key)


def check_on_worker(specs: list[dict[str, Any]]) -> tuple[int, str, str] | None:
    """``trial --check`` of ``specs`` by a worker's engine (for a client without one): None, or the first
    bad spec's (index, message, field)."""
    try:
        _plugin().engine.check_trials(specs)
    except SpecError as e:
        return getattr(e, "index", 0), str(e), e.path
    return None


def _describe(dask_worker: Any) -> dict[str, Any] | None:
    plugin = dask_worker.plugins.get(PLUGIN_NAME)
    return plugin.provenance if isinstance(plugin, TrialWorker) else None


def connect_timeout() -> float:
    """Seconds to keep trying to reach a scheduler: Dask's ``distributed.comm.timeouts.connect``
    (30 s unless configured, e.g. ``DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=5s``)."""
    import dask
    from dask.utils import parse_timedelta

    return float(parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), default="s"))


def _reachable(address: str, timeout: float, what: str) -> None:
    """Refuse (exit 2) when nothing answers at the scheduler's address."""
    from distributed.comm import connect

    async def probe() -> None:
        comm = await connect(address, timeout=timeout)
        await comm.close()

    try:
        # in a thread of its own: the caller may be running an event loop already (a notebook)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, probe()).result()
    except (OSError, TimeoutError, ValueError) as e:
        reason = " ".join(str(e).split()) or e.__class__.__name__
        raise UsageError(f"{what}: cannot reach a scheduler at {address} ({cut(reason)})") from None


class _NameTaken(Exception):
    """The scheduler refused the worker's name: another connected worker has it."""


def _name_taken(error: BaseException) -> bool:
    """Whether ``error`` (or what it wraps) is the scheduler's "name taken" answer to a registration."""
    seen: BaseException | None = error
    while seen is not None:
        if "name taken" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def connected_names(scheduler: str, timeout: float) -> set[str]:
    """The names of the workers connected to ``scheduler`` now (its ``identity``)."""
    from distributed.core import rpc

    async def ask() -> set[str]:
        async with rpc(scheduler, timeout=timeout) as s:
            info = await s.identity(n_workers=-1)
        return {str(w.get("name")) for w in (info.get("workers") or {}).values()}

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, ask()).result()


def default_worker_name(taken: set[str] = frozenset()) -> str:  # type: ignore[assignment]
    """A worker's name unless ``--name``: the host name and this process's id, which tells two workers
    of one machine apart (and a random suffix when even that is taken: cloned machines share host
    names)."""
    name = f"{platform.node()}-{os.getpid()}"
    while name in taken:
        name = f"{platform.node()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    return name


def _taken_line(name: str, scheduler: str) -> UsageError:
    return UsageError(
        f"--name: a worker named {controls_escaped(cut(name))!r} is already connected to {scheduler}; "
        "give each worker its own name (default: host name and process id)"
    )


def serve_worker(
    scheduler: str,
    *,
    slots: int | None = None,
    engine: str | os.PathLike[str] | None = None,
    name: str | None = None,
    calibrate: bool = True,
    keep_dir: str | os.PathLike[str] = "wirelab-worker.d",
    ready: Any = None,
) -> None:
    """``wirelab worker``: check, describe and calibrate this machine, then serve trials until SIGINT or
    SIGTERM (which interrupt the running trials and wait for their engines to clean up).

    ``ready`` is called with one line once the worker is registered with the scheduler."""
    slots = default_slots() if slots is None else slots
    SLOTS.check(slots)
    check_output_dir("--keep-dir", keep_dir)
    the_engine = SubprocessEngine(engine)
    check_worker_engine(the_engine)
    _reachable(scheduler, connect_timeout(), "--scheduler")
    # a taken name is refused now, before the calibration, rather than by the scheduler after it
    taken = connected_names(scheduler, connect_timeout())
    if name is not None and name in taken:
        raise _taken_line(name, scheduler)
    named = name is not None
    name = name if named else default_worker_name(taken)
    provenance = machine_provenance(the_engine, name)
    provenance["slots"] = slots
    provenance["calibration"] = None
    if calibrate:
        try:
            provenance["calibration"] = calibration_summary(the_engine.calibrate())
        except WirelabError as e:
            raise UsageError(f"--engine: {the_engine.name} is not runnable (bench link: {e})") from None
    plugin = TrialWorker(the_engine, provenance, Path(keep_dir).resolve())
    for attempt in range(3):
        try:
            asyncio.run(_serve(scheduler, slots, provenance["name"], plugin, ready))
            return
        except _NameTaken:
            # another worker took the name since we looked: --name is the user's to change; a default
            # name gets a random suffix
            if named or attempt == 2:
                raise _taken_line(provenance["name"], scheduler) from None
            provenance["name"] = default_worker_name({provenance["name"]})


async def _serve(scheduler: str, slots: int, name: str, plugin: TrialWorker, ready: Any) -> None:
    import dask
    from distributed import Worker

    dask.config.set(QUIET_DASK)
    loop = asyncio.get_running_loop()
    stopped = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopped.set)
    worker = Worker(
        scheduler,
        nthreads=slots,
        resources={TRIAL_RESOURCE: slots},
        name=name,
        plugins=(plugin,),
        death_timeout=60,
    )
    try:
        await worker
    except Exception as e:
        if _name_taken(e):
            raise _NameTaken(name) from None
        raise
    async with worker:
        if ready is not None:
            ready(f"worker {name} at {worker.address}: {slots} trial slot(s), scheduler {scheduler}")
        finished = asyncio.ensure_future(worker.finished())
        waiting = asyncio.ensure_future(stopped.wait())
        await asyncio.wait({finished, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if waiting.done():
            # end the running trials first (their engines remove their namespaces), then leave
            await loop.run_in_executor(None, plugin.stop, GRACE_S + 15)
        waiting.cancel()


# --------------------------------------------------------------------------------------------------
# Client side


class _ClusterTrialRun(TrialRun):
    """A trial submitted to the cluster: events from the run's topic, the end from the task's result."""

    def __init__(self, engine: ClusterEngine, spec: dict[str, Any], out_dir: Path, on_event: EventCallback):
        self.trial_id = spec["trial_id"]
        self.out_dir = out_dir
        self._engine = engine
        self._on_event = on_event
        self._lock = threading.Lock()
        self._exited = threading.Event()
        self._returncode: int | None = None
        self.attempt: str | None = None  #: the current attempt (a worker's run of the task)
        self.attempts = 0
        self.worker: str | None = None
        self.future: Any = None
        self.submitted = time.time()

    # TrialRun
    def poll(self) -> int | None:
        return self._returncode if self._exited.is_set() else None

    def interrupt(self) -> None:
        self._engine.stop()
        if self.attempt is None:  # still queued: no worker has it
            self.future.cancel()
            self._exit(130, "stopped before a worker started it")

    def kill(self) -> None:
        self.future.cancel(force=True)
        self._exit(-signal.SIGKILL, "cancelled; its worker stops the engine and removes what it left")

    def wait(self, timeout: float | None = None) -> int | None:
        if not self._exited.wait(timeout):
            return None
        return self._returncode

    # events
    def _exit(self, returncode: int, stderr_tail: str) -> None:
        with self._lock:
            if self._exited.is_set():
                return
            self._returncode = returncode
            self._exited.set()
        self._on_event(TrialEvent(self.trial_id, "exit", returncode=returncode, stderr_tail=stderr_tail))

    def _started(self, attempt: str, worker: str) -> None:
        retries = self._engine.retries
        with self._lock:
            if self._exited.is_set() or attempt == self.attempt:
                return
            previous, self.attempt, self.worker = self.worker, attempt, worker
            self.attempts += 1
            n = self.attempts
        if n > 1:
            if n > retries + 1:
                self.future.cancel()
                self._exit(1, f"lost its worker {n - 1} times (last {previous}; --retries {retries})")
                return
            text = f"worker {previous} was lost mid-trial; attempt {n} of {retries + 1} on {worker}"
            self._on_event(TrialEvent(self.trial_id, "message", {"text": text}))
        self._on_event(TrialEvent(self.trial_id, "started", {"worker": worker, "attempt": n}))

    def topic_event(self, msg: Mapping[str, Any]) -> None:
        kind = msg.get("kind")
        if kind == "started":
            self._started(str(msg["attempt"]), str(msg.get("name")))
        elif msg.get("attempt") == self.attempt and kind in ("ready", "load", "done"):
            self._on_event(TrialEvent(self.trial_id, str(kind), dict(msg.get("data") or {})))

    def done(self, future: Any) -> None:
        """The task ended (a thread of the client's): unpack its directory, then the exit event."""
        if self._exited.is_set():
            return
        if future.cancelled():
            self._exit(130, "cancelled")
            return
        try:
            result = future.result()
        except Exception as e:  # a worker-side failure, or the scheduler gave up (KilledWorker)
            name = e.__class__.__name__
            if name == "KilledWorker":
                self._exit(
                    1, f"its workers died {self.attempts} times (the scheduler gave up: {cut(str(e))})"
                )
            else:
                self._exit(1, f"the worker failed: {name}: {cut(' '.join(str(e).split()))}")
            return
        received = time.time()
        self._started(result["attempt"], result["worker"])  # when its started event is late
        if self._exited.is_set():
            return
        try:
            if self.out_dir.exists():
                shutil.rmtree(self.out_dir)
            _unpack(result["archive"], self.out_dir)
        except (OSError, tarfile.TarError) as e:
            self._exit(1, f"the trial directory from {result['worker']} could not be unpacked ({e})")
            return
        self.beside_others = bool(result["beside_others"])
        self._engine.timings[self.trial_id] = {
            "worker": result["worker"],
            "submitted": self.submitted,
            **result["timings"],
            "received": received,
            "unpacked": time.time(),
            "archive_bytes": len(result["archive"]),
        }
        self._exit(int(result["returncode"]), str(result["stderr_tail"]))


class ClusterEngine(Engine):
    """Runs trials on the workers of a Dask scheduler (``wirelab run --cluster ADDR``).

    ``checker`` validates trial specs on the client before anything is submitted (the client's own
    engine; without one, a worker's engine does it). ``retries``: how many times a trial whose worker
    was lost starts again elsewhere. ``artifacts``: ``local`` brings every trial directory back,
    ``remote`` leaves pcaps and the server's records on the worker (``host:path`` in the database)."""

    def __init__(
        self,
        address: str,
        *,
        retries: int = DEFAULT_RETRIES,
        artifacts: str = "local",
        checker: Engine | None = None,
        timeout: float | None = None,
        wait_workers: float = DEFAULT_WAIT_WORKERS_S,
        on_wait: Callable[[str], None] | None = None,
    ):
        RETRIES.check(retries)
        WAIT_WORKERS.check(wait_workers)
        if artifacts not in ARTIFACTS:
            raise UsageError(f'--artifacts: "{cut(artifacts)}" is not allowed; use {" or ".join(ARTIFACTS)}')
        from distributed import Client
        from distributed import Event as DaskEvent

        timeout = connect_timeout() if timeout is None else timeout
        _reachable(address, timeout, "--cluster")
        try:
            self.client = Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError) as e:
            raise UsageError(f"--cluster: cannot reach a scheduler at {address} ({cut(str(e))})") from None
        self.cluster = address
        self.name = f"cluster {address}"
        self.retries = retries
        self.artifacts = artifacts
        self.checker = checker
        self.run_id = uuid.uuid4().hex
        self.runs: dict[str, _ClusterTrialRun] = {}
        #: trial id → the address of the worker it should run on (pin)
        self.pinned: dict[str, str] = {}
        #: per trial: submitted, task_started, engine_started, engine_exited, task_ended, received (wall
        #: clock, seconds) — the scheduling overhead (scripts/bench_sweep.py --cluster)
        self.timings: dict[str, dict[str, Any]] = {}
        self._stop = DaskEvent(STOP_PREFIX + self.run_id, client=self.client)
        self._stopped = False
        self._describe_cache: dict[str, dict[str, Any]] | None = None
        self.client.subscribe_topic(TOPIC_PREFIX + self.run_id, self._on_topic)
        try:
            self._wait_for_workers(wait_workers, on_wait)
        except BaseException:
            self.close()
            raise

    def _wait_for_workers(self, wait_s: float, on_wait: Callable[[str], None] | None) -> None:
        """Wait up to ``wait_s`` for a wirelab worker's first trial slot (a cluster started beside its
        workers has none yet; Dask's ``wait_for_workers`` convention), saying so; then refuse."""
        if self.slots() > 0:
            return
        if on_wait is not None and wait_s > 0:
            on_wait(
                f"waiting up to {wait_s:g} s for a wirelab worker to connect to {self.cluster} "
                "(--wait-workers)"
            )
        deadline = time.monotonic() + wait_s
        while self.slots() == 0:
            left = deadline - time.monotonic()
            if left <= 0:
                raise UsageError(
                    f"--cluster: no wirelab worker connected to {self.cluster} within {wait_s:g} s "
                    f"(--wait-workers); start one on each machine: wirelab worker --scheduler {self.cluster}"
                )
            time.sleep(min(POLL_S, left))

    # the cluster
    def workers(self) -> dict[str, dict[str, Any]]:
        """Address → description of every connected ``wirelab worker``."""
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        addresses = [a for a, w in info.items() if (w.get("resources") or {}).get(TRIAL_RESOURCE, 0) > 0]
        if not addresses:
            return {}
        described = self.client.run(_describe, workers=addresses)
        return {a: d for a, d in described.items() if d is not None}

    def trial_workers(self) -> dict[str, str]:
        """Name → address of every connected ``wirelab worker``."""
        return {str(d["name"]): a for a, d in sorted(self.workers().items())}

    def pin(self, trial_id: str, address: str) -> None:
        """Run the trial ``trial_id`` on the worker at ``address`` (``[sweep] repeat_on_each_worker``); if
        that worker is lost the trial may go to another one, and stores the one it ran on."""
        self.pinned[trial_id] = address

    def slots(self) -> int:
        """Trial slots of the connected wirelab workers."""
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        return int(sum((w.get("resources") or {}).get(TRIAL_RESOURCE, 0) for w in info.values()))

    def stop(self) -> None:
        """Ask every worker to interrupt this run's trials (Ctrl-C); idempotent."""
        if not self._stopped:
            self._stopped = True
            with contextlib.suppress(Exception):
                self._stop.set()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.unsubscribe_topic(TOPIC_PREFIX + self.run_id)
        with contextlib.suppress(Exception):
            self.client.close(timeout=10)

    def _on_topic(self, event: tuple[float, Any]) -> None:
        msg = event[1]
        if isinstance(msg, Mapping):
            run = self.runs.get(str(msg.get("trial_id")))
            if run is not None:
                run.topic_event(msg)

    # Engine
    def version(self) -> str:
        if self._describe_cache is None:
            self._describe_cache = self.workers()
        versions = sorted({d["engine_version"] for d in self._describe_cache.values()})
        return f"{', '.join(versions) or 'unknown'} on {len(self._describe_cache)} worker(s)"

    def commands(self) -> set[str]:
        # every worker checked at its start that its engine runs trials and gc (check_worker_engine)
        return {"trial", "gc"}

    def check_trials(self, specs: Sequence[Mapping[str, Any]]) -> None:
        if not specs:
            return
        if self.checker is not None:
            self.checker.check_trials(specs)
            return
        address = next(iter(self.workers()), None)
        if address is None:
            raise UsageError(f"--cluster: no wirelab worker is connected to {self.cluster}")
        found = self.client.submit(check_on_worker, [dict(s) for s in specs], workers=[address], pure=False)
        bad = found.result()
        if bad is not None:
            index, message, field = bad
            error = SpecError(message, path=field)
            error.index = index  # type: ignore[attr-defined]
            raise error

    def start_trial(self, spec: dict[str, Any], out_dir: Path, on_event: EventCallback) -> TrialRun:
        run = _ClusterTrialRun(self, spec, out_dir, on_event)
        self.runs[run.trial_id] = run
        pinned = self.pinned.get(run.trial_id)
        where: dict[str, Any] = {"workers": [pinned], "allow_other_workers": True} if pinned else {}
        run.future = self.client.submit(
            run_trial,
            spec,
            self.run_id,
            out_dir.parent.name,
            self.artifacts,
            key=f"wirelab-trial-{run.trial_id}-{self.run_id[:8]}",
            resources={TRIAL_RESOURCE: 1},
            pure=False,
            **where,
        )
        run.future.add_done_callback(run.done)
        return run

    def pages_ls(self) -> list[dict[str, Any]]:
        if self.checker is None:
            raise EngineError("cluster: pages ls needs a local engine")
        return self.checker.pages_ls()

    def pages_show(self, name: str) -> dict[str, Any]:
        if self.checker is None:
            raise EngineError("cluster: pages show needs a local engine")
        return self.checker.pages_show(name)

    def gc(self) -> str:
        return "cluster: each worker removes what its engines leave (gc --owner)"

    def shell_argv(self, args: Sequence[str]) -> list[str]:
        raise EngineError("cluster: wirelab shell runs on this machine; leave out --cluster")


# --------------------------------------------------------------------------------------------------
# A cluster on this machine (tests, the benchmark, wirelab cluster up --workers N)


@dataclasses.dataclass
class LocalCluster:
    """A scheduler in this process and ``wirelab worker`` processes (``procs``) connected to it."""

    address: str
    procs: list[subprocess.Popen[str]]
    names: list[str]
    logs: Path  #: each worker's output, NAME.log (removed on exit)


@contextlib.contextmanager
def local_cluster(
    workers: int = 2,
    *,
    slots: int = 1,
    engine: str | os.PathLike[str] | None = None,
    calibrate: bool = False,
    host: str = "127.0.0.1",
    port: int = 0,
    env: Mapping[str, str] | None = None,
    keep_dir: str | os.PathLike[str] | None = None,
    timeout: float = 120.0,
) -> Iterator[LocalCluster]:
    """A Dask ``LocalCluster`` scheduler (no workers of its own) and ``workers`` ``wirelab worker``
    processes with ``slots`` each; all stopped on exit (workers by SIGTERM: they end their trials).

    ``keep_dir``: the workers' ``--keep-dir`` (``KEEP_DIR/NAME``; default: a temporary directory
    removed on exit with the workers' logs)."""
    import dask
    from distributed import Client
    from distributed import LocalCluster as DaskLocalCluster

    dask.config.set({"distributed.admin.tick.interval": QUIET_DASK["distributed.admin.tick.interval"]})
    scheduler = DaskLocalCluster(
        n_workers=0,
        processes=False,
        protocol="tcp://",
        host=host,
        scheduler_port=port,
        dashboard_address=f"{host}:0",  # its HTTP endpoints on the scheduler's interface, any free port
    )
    procs: list[subprocess.Popen[str]] = []
    names = [f"local-{i + 1}" for i in range(workers)]
    logs = tempfile.TemporaryDirectory(prefix="wirelab-local-cluster-")
    try:
        for name in names:
            argv = [sys.executable, "-m", "wirelab.cli", "worker", "--scheduler", scheduler.scheduler_address]
            argv += ["--slots", str(slots), "--name", name]
            argv += ["--engine", str(engine)] if engine is not None else []
            argv += [] if calibrate else ["--no-calibrate"]
            argv += ["--keep-dir", str(Path(keep_dir or logs.name) / name)]
            with open(Path(logs.name) / f"{name}.log", "w") as log:
                procs.append(
                    subprocess.Popen(
                        argv,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        text=True,
                        env={**os.environ, **(env or {})},
                    )
                )
        with Client(scheduler.scheduler_address, set_as_default=False) as client:
            deadline = time.monotonic() + timeout
            while len(client.scheduler_info(n_workers=-1)["workers"]) < workers:
                for name, proc in zip(names, procs, strict=True):
                    if proc.poll() is not None:
                        output = (Path(logs.name) / f"{name}.log").read_text().strip().splitlines()
                        raise EngineError(
                            f"local worker {name} exited ({proc.returncode}): {output[-1] if output else ''}"
                        )
                if time.monotonic() > deadline:
                    raise EngineError(f"local workers did not connect within {timeout:.0f} s")
                time.sleep(0.1)
        yield LocalCluster(scheduler.scheduler_address, procs, names, Path(logs.name))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(GRACE_S + 30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        scheduler.close()
        logs.cleanup()
