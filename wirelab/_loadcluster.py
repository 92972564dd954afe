"""Load tests on a Dask cluster (``docs/loadtest.md``, "A Dask cluster"): ``wirelab loadtest --cluster``.

::

    client (ClusterLoadEngine)                           workers (wirelab worker, root)
    wait for the server worker and N generator workers; check their clocks
    server task ─────────────────────────────────────► wirelab-engine loadtest --serve ADDR
                                                          --allow-from GEN_ADDRS --await-start
    ◄── {"event":"serving", url, names, ca, addr} (topic wirelab-load-<key>)
    generator task K ────────────────────────────────► wirelab-engine loadtest --serving F
                                                          --part K/N --await-start --progress
    ◄── {"event":"ready"} from each
    the start instant T (Unix ns, now + START_LEAD_S): Variable wirelab-start-<key>
        ─► each task writes it to its engine's stdin
    ◄── every interval line as it ends (each new one merged for the progress: loadmerge --from K)
    all generators ended (or lost) → Event wirelab-serve-stop-<key> → the server task stops, samples back
    wirelab-engine loadmerge --spec S --out DIR --server server.jsonl gen=F …  (the client's engine)

The merged directory is a lab run's (``loadtest.json``, ``intervals.jsonl``, ``server.jsonl``): the load
runner stores it exactly as a one-machine run. A generator is lost when its worker leaves the scheduler
or its run ends without a summary; its intervals after the loss are marked ``degraded`` by the merge.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import queue
import shutil
import subprocess
import tarfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from wirelab._cluster import (
    POLL_S,
    STOP_PREFIX,
    ClusterEngine,
    _archive,
    _is_set,
    _plugin,
    _unpack,
)
from wirelab._engine import Engine, EventCallback, SubprocessEngine, TrialEvent, TrialRun, _ProcessTrialRun
from wirelab.errors import EngineError, UsageError, cut

__all__ = ["ClusterLoadEngine", "check_clocks", "clock_bound_s", "run_load_task"]

LOAD_TOPIC_PREFIX = "wirelab-load-"  #: + run key: every task's lines (serving, ready, interval)
START_PREFIX = "wirelab-start-"  #: + run key: the Variable holding the shared start instant (Unix ns)
STARTED_PREFIX = "wirelab-started-"  #: + run key: the Event set once that Variable holds it
SERVE_STOP_PREFIX = "wirelab-serve-stop-"  #: + run key: the Event that ends the server task
START_LEAD_S = 2.0  #: the start instant is this far ahead of the moment every generator was ready
READY_TIMEOUT_S = 300.0  #: the longest wait for the server's serving line and the generators' ready
SERVER_END_TIMEOUT_S = 120.0  #: the longest wait for the server task's directory after its stop
CLOCK_BOUND_MIN_S = 0.05  #: the least clock offset bound (max(this, interval_s / 20))
MERGE_TIMEOUT_S = 300.0


def clock_bound_s(interval_s: float) -> float:
    """How far a worker's clock may be off the client's: the start instant and the interval boundaries
    are wall-clock instants on different machines; max(50 ms, a twentieth of an interval)."""
    return max(CLOCK_BOUND_MIN_S, interval_s / 20)


# --------------------------------------------------------------------------------------------------
# Worker side


def run_load_task(
    role: str, name: str, spec: dict[str, Any], run_key: str, extra: list[str], serving: str | None
) -> dict[str, Any]:
    """The task of one server (``role`` server) or generator of a cluster load test, on a ``wirelab
    worker``: ``wirelab-engine loadtest … --await-start`` with its lines sent on the run's topic, the
    start instant written to its stdin once the client sets it, SIGINT when the run stops (Ctrl-C, the
    server's stop event, the task no longer wanted); returns the exit status and its directory."""
    from distributed import Event, Variable
    from distributed.worker import thread_state

    plugin = _plugin()
    key = thread_state.key
    engine = plugin.engine
    if not isinstance(engine, SubprocessEngine):
        raise EngineError(f"worker {plugin.provenance['name']}: its engine cannot run load tests")
    directory = plugin.scratch / f"load-{run_key}-{name}"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    spec_path = directory / "spec.json"
    spec_path.write_text(json.dumps(spec, indent=1) + "\n")
    argv = [str(engine.path), "loadtest", "--spec", str(spec_path), "--out", str(directory), "--await-start"]
    argv += extra
    if serving is not None:
        serving_path = directory / "serving.json"
        serving_path.write_text(serving + "\n")
        argv += ["--serving", str(serving_path), "--progress"]
    topic = LOAD_TOPIC_PREFIX + run_key

    def forward(event: TrialEvent) -> None:
        if event.kind in ("serving", "ready", "interval"):
            plugin.worker.log_event(topic, {"name": name, "kind": event.kind, "data": event.data})

    try:
        start = Variable(START_PREFIX + run_key)
        started = Event(STARTED_PREFIX + run_key)
        stop_all = Event(STOP_PREFIX + run_key)
        stop_server = Event(SERVE_STOP_PREFIX + run_key)
        sent = False

        def send_start(run: TrialRun) -> None:  # the shared start instant, once the client set it
            nonlocal sent
            if not sent and isinstance(run, _ProcessTrialRun) and _is_set(started):
                with contextlib.suppress(Exception):  # the scheduler unreachable for now: next tick
                    run.send(str(int(start.get(timeout=10))))
                    sent = True

        returncode, stderr_tail, _ = plugin.watch(
            key,
            lambda on_event: _ProcessTrialRun(argv, name, directory, on_event, stdin=True),
            forward,
            lambda: _is_set(stop_all) or (role == "server" and _is_set(stop_server)),
            tick=send_start,
        )
        archive = _archive(directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return {
        "name": name,
        "worker": plugin.provenance["name"],
        "returncode": returncode,
        "stderr_tail": stderr_tail,
        "archive": archive,
    }


def _wall_clock() -> float:
    return time.time()


# --------------------------------------------------------------------------------------------------
# Client side


@dataclasses.dataclass
class LoadWorkers:
    """The workers of one cluster load test: name → address of the server's and the generators'."""

    server: tuple[str, str] | None  #: None: the plan's runs load external targets only
    generators: list[tuple[str, str]]


def host_of(address: str) -> str:
    """The host part of a worker's address (``tcp://10.0.0.2:40123`` → ``10.0.0.2``)."""
    return urlparse(address).hostname or ""


def check_clocks(client: Any, workers: Mapping[str, str], interval_s: float) -> dict[str, dict[str, float]]:
    """Each worker's wall clock against this machine's (``client.run`` of ``time.time``; offset = its
    reading − the midpoint of the round trip). Refuses (:class:`UsageError`, one line naming the
    worker and its offset) when an offset, less half its round trip, exceeds :func:`clock_bound_s`."""
    bound = clock_bound_s(interval_s)
    out: dict[str, dict[str, float]] = {}
    for name, address in sorted(workers.items()):
        best: tuple[float, float] | None = None
        for _ in range(3):  # the reading with the shortest round trip says the most
            t0 = time.time()
            reading = client.run(_wall_clock, workers=[address])[address]
            t1 = time.time()
            if best is None or t1 - t0 < best[1]:
                best = (float(reading) - (t0 + t1) / 2, t1 - t0)
        assert best is not None
        offset, rtt = best
        out[name] = {"offset_ms": round(offset * 1000, 3), "rtt_ms": round(rtt * 1000, 3)}
        if abs(offset) - rtt / 2 > bound:
            raise UsageError(
                f"--cluster: worker {name}'s clock is {offset * 1000:+.0f} ms off this machine's "
                f"(±{rtt * 500:.0f} ms), beyond the {bound * 1000:.0f} ms a shared start allows "
                "(max(50 ms, interval_s/20)); synchronise the machines' clocks (chrony) and run again"
            )
    return out


def choose_workers(
    names: Mapping[str, str], generators: int, server_worker: str | None, needs_server: bool = True
) -> LoadWorkers | None:
    """The server's worker (``server_worker``, else the first by name) and ``generators`` others (by
    name); None while too few are connected."""
    if server_worker is not None and server_worker not in names:
        return None
    ordered = sorted(names)
    if not needs_server and server_worker is None:
        if len(ordered) < generators:
            return None
        return LoadWorkers(None, [(n, names[n]) for n in ordered[:generators]])
    server = server_worker or (ordered[0] if ordered else None)
    others = [n for n in ordered if n != server]
    if server is None or len(others) < generators:
        return None
    return LoadWorkers(
        (server, names[server]) if needs_server else None, [(n, names[n]) for n in others[:generators]]
    )


class ClusterLoadEngine(Engine):
    """Runs load tests over a Dask cluster: the server on one ``wirelab worker``, each generator on
    another, merged by ``local`` (this machine's engine, which also checks the specs)."""

    def __init__(
        self,
        cluster: ClusterEngine,
        local: Engine,
        *,
        generators: int,
        server_worker: str | None,
        wait_workers: float,
        needs_server: bool = True,
        on_wait: Callable[[str], None] | None = None,
    ):
        if not isinstance(local, SubprocessEngine):
            raise UsageError("--cluster: a load test is merged on this machine; it needs wirelab-engine here")
        self.clusterer = cluster
        self.local = local
        self.cluster = cluster.cluster
        self.name = f"{local.name} + cluster {cluster.cluster}"
        self.generators = generators
        self.server_worker = server_worker
        self.needs_server = needs_server
        self.wait_workers = wait_workers
        self.on_wait = on_wait
        self.workers = self.wait_for_workers()

    def wait_for_workers(self) -> LoadWorkers:
        """Wait up to ``wait_workers`` for the server's worker and the generators' (saying so); then
        refuse with one line (exit 2)."""
        deadline = time.monotonic() + self.wait_workers
        said = False
        while True:
            names = self.clusterer.trial_workers()
            chosen = choose_workers(names, self.generators, self.server_worker, self.needs_server)
            if chosen is not None:
                return chosen
            left = deadline - time.monotonic()
            if left <= 0:
                server = (
                    f"the server's worker {self.server_worker} and "
                    if self.server_worker
                    else "one for the server and "
                    if self.needs_server
                    else ""
                )
                raise UsageError(
                    f"--cluster: {len(names)} wirelab worker(s) connected to {self.cluster} within "
                    f"{self.wait_workers:g} s (--wait-workers); a load test needs {server}"
                    f"{self.generators} for the generators (--generators); start them: "
                    f"wirelab worker --scheduler {self.cluster} --name NAME"
                )
            if not said and self.on_wait is not None:
                said = True
                self.on_wait(
                    f"waiting up to {self.wait_workers:g} s for {self.generators + 1} wirelab workers "
                    f"on {self.cluster} (--wait-workers)"
                )
            time.sleep(min(POLL_S, left))

    def check_clocks(self, interval_s: float) -> dict[str, dict[str, float]]:
        w = self.workers
        workers = dict(w.generators + ([w.server] if w.server else []))
        return check_clocks(self.clusterer.client, workers, interval_s)

    # Engine
    def version(self) -> str:
        return f"{self.local.version()}; workers: {self.clusterer.version()}"

    def commands(self) -> set[str]:
        return self.local.commands()

    def check_trials(self, specs: Sequence[Mapping[str, Any]]) -> None:
        raise EngineError("cluster load engine: trials run with wirelab run --cluster")

    def start_trial(self, spec: dict[str, Any], out_dir: Path, on_event: EventCallback) -> TrialRun:
        raise EngineError("cluster load engine: trials run with wirelab run --cluster")

    def check_loadtests(self, specs: Sequence[Mapping[str, Any]]) -> None:
        for spec in specs:
            if spec.get("protocol") == "h3" and not spec.get("target"):
                raise UsageError(
                    "--cluster: h3 over the cluster is not built (the server's relay carries TCP)"
                )
        self.local.check_loadtests(specs)

    def start_loadtest(
        self, spec: dict[str, Any], out_dir: Path, on_event: EventCallback, *, generators: int = 1
    ) -> TrialRun:
        return _ClusterLoadtestRun(self, spec, out_dir, on_event)

    def pages_ls(self) -> list[dict[str, Any]]:
        return self.local.pages_ls()

    def pages_show(self, name: str) -> dict[str, Any]:
        return self.local.pages_show(name)

    def gc(self) -> str:
        return self.local.gc()

    def shell_argv(self, args: Sequence[str]) -> list[str]:
        raise EngineError("cluster: wirelab shell runs on this machine; leave out --cluster")

    def close(self) -> None:
        self.clusterer.close()


class _Failed(Exception):
    def __init__(self, code: int, line: str):
        super().__init__(line)
        self.code = code


class _ClusterLoadtestRun(TrialRun):
    """One load test over the cluster, run by a thread of the client; events as a local engine's."""

    def __init__(
        self, engine: ClusterLoadEngine, spec: dict[str, Any], out_dir: Path, on_event: EventCallback
    ):
        self.engine = engine
        self.trial_id = spec["loadtest_id"]
        self.spec = spec
        self.out_dir = out_dir
        self._on_event = on_event
        self.key = uuid.uuid4().hex[:16]
        self.client = engine.clusterer.client
        self._events: queue.Queue[Mapping[str, Any]] = queue.Queue()
        self._futures: dict[str, Any] = {}
        self._interrupted = False
        self._killed = False
        self._exited = threading.Event()
        self._returncode: int | None = None
        self._thread = threading.Thread(target=self._main, daemon=True, name=f"cluster-load-{self.trial_id}")
        self._thread.start()

    # TrialRun
    def poll(self) -> int | None:
        return self._returncode if self._exited.is_set() else None

    def interrupt(self) -> None:
        from distributed import Event

        self._interrupted = True
        with contextlib.suppress(Exception):
            Event(STOP_PREFIX + self.key, client=self.client).set()

    def kill(self) -> None:
        self._killed = True
        for f in list(self._futures.values()):
            with contextlib.suppress(Exception):
                f.cancel()

    def wait(self, timeout: float | None = None) -> int | None:
        if not self._exited.wait(timeout):
            return None
        return self._returncode

    # the run
    def _message(self, text: str) -> None:
        self._on_event(TrialEvent(self.trial_id, "message", {"text": text}))

    def _main(self) -> None:
        topic = LOAD_TOPIC_PREFIX + self.key
        code, tail = 1, ""
        try:
            self.client.subscribe_topic(topic, lambda ev: self._events.put(ev[1]))
            code, tail = self._run()
        except _Failed as e:
            code, tail = e.code, str(e)
        except UsageError as e:
            code, tail = 2, str(e)
        except Exception as e:  # a Dask or worker failure: the run failed, the sweep goes on
            code, tail = 1, f"cluster load test: {e.__class__.__name__}: {cut(' '.join(str(e).split()))}"
        finally:
            self._stop_tasks()
            with contextlib.suppress(Exception):
                self.client.unsubscribe_topic(topic)
        self._returncode = code
        self._exited.set()
        self._on_event(TrialEvent(self.trial_id, "exit", returncode=code, stderr_tail=tail))

    def _stop_tasks(self) -> None:
        from distributed import Event

        with contextlib.suppress(Exception):
            Event(SERVE_STOP_PREFIX + self.key, client=self.client).set()
        for f in self._futures.values():
            if not f.done():
                with contextlib.suppress(Exception):
                    f.cancel()

    def _submit(
        self,
        role: str,
        name: str,
        address: str,
        extra: list[str],
        serving: str | None,
        spec: dict[str, Any] | None = None,
    ) -> Any:
        future = self.client.submit(
            run_load_task,
            role,
            name,
            spec or self.spec,
            self.key,
            extra,
            serving,
            key=f"wirelab-load-{role}-{name}-{self.key}",
            workers=[address],
            allow_other_workers=False,
            pure=False,
        )
        self._futures[name] = future
        return future

    def _alive(self) -> set[str]:
        return set(self.client.scheduler_info(n_workers=-1)["workers"])

    def _run(self) -> tuple[int, str]:
        from distributed import Event, Variable

        eng = self.engine
        eng.workers = eng.wait_for_workers()  # the connected workers now (one may have left)
        w = eng.workers
        clocks = eng.check_clocks(float(self.spec["interval_s"]))
        n = len(w.generators)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        spec_path = self.out_dir / "spec.json"
        spec_path.write_text(json.dumps(self.spec, indent=1) + "\n")
        (self.out_dir / "cluster.json").write_text(
            json.dumps(
                {
                    "scheduler": eng.cluster,
                    "server": None
                    if w.server is None or self.spec.get("target")
                    else {"name": w.server[0], "address": w.server[1]},
                    "generators": [
                        {"name": g, "address": a, "part": f"{k}/{n}"} for k, (g, a) in enumerate(w.generators)
                    ],
                    "clocks": clocks,
                },
                indent=1,
            )
            + "\n"
        )
        if self.spec.get("target"):
            return self._run_target(w, n)
        assert w.server is not None
        server_name = w.server[0]
        gen_hosts = sorted({host_of(a) for _, a in w.generators})
        server = self._submit(
            "server",
            w.server[0],
            w.server[1],
            ["--serve", host_of(w.server[1]), "--allow-from", ",".join(gen_hosts)],
            None,
        )
        serving = self._wait_for(
            lambda m: m.get("name") == server_name and m.get("kind") == "serving",
            [server],
            "the server's serving line",
        )
        line = json.dumps(serving["data"])
        gens = [
            self._submit("generator", g, a, ["--part", f"{k}/{n}"], line)
            for k, (g, a) in enumerate(w.generators)
        ]
        ready: set[str] = set()
        streamed: dict[str, list[str]] = {g: [] for g, _ in w.generators}
        while len(ready) < n:
            m = self._wait_for(
                lambda m: m.get("kind") in ("ready", "interval"), [server, *gens], "the generators' labs"
            )
            if m.get("kind") == "ready":
                ready.add(str(m.get("name")))
        at = time.time_ns() + int(START_LEAD_S * 1e9)
        Variable(START_PREFIX + self.key, client=self.client).set(at)
        Event(STARTED_PREFIX + self.key, client=self.client).set()
        self._on_event(
            TrialEvent(self.trial_id, "ready", {"start_unix_ns": at, "workers": [g for g, _ in w.generators]})
        )
        lost = self._follow(w, gens, streamed)
        # every generator ended: the server task ends too, its samples come back
        Event(SERVE_STOP_PREFIX + self.key, client=self.client).set()
        server_dir = self.out_dir / "server"
        try:
            result = server.result(timeout=SERVER_END_TIMEOUT_S)
        except Exception as e:
            raise _Failed(
                1, f"the server's worker {w.server[0]} did not return its samples: {cut(str(e))}"
            ) from None
        shutil.rmtree(server_dir, ignore_errors=True)
        _unpack(result["archive"], server_dir)
        if result["returncode"] not in (0, 130):
            raise _Failed(1, f"the server task on {w.server[0]} failed: {_last(result['stderr_tail'])}")
        return self._merge(w, gens, streamed, lost)

    def _run_target(self, w: LoadWorkers, n: int) -> tuple[int, str]:
        """An external target over the cluster: no server task; each generator a live lab of its own
        loading the target (``loadtest --part K/N --await-start``); generator 0 alone samples the
        target's status page (if any), and its samples are the run's."""
        from distributed import Event, Variable

        gens = []
        for k, (g, a) in enumerate(w.generators):
            spec = dict(self.spec)
            if k > 0 and isinstance(spec.get("target"), dict):
                spec["target"] = {
                    key: v for key, v in spec["target"].items() if not key.startswith("status_")
                }
            gens.append(
                self._submit("generator", g, a, ["--part", f"{k}/{n}", "--progress"], None, spec=spec)
            )
        streamed: dict[str, list[str]] = {g: [] for g, _ in w.generators}
        ready: set[str] = set()
        while len(ready) < n:
            m = self._wait_for(lambda m: m.get("kind") in ("ready", "interval"), gens, "the generators' labs")
            if m.get("kind") == "ready":
                ready.add(str(m.get("name")))
        at = time.time_ns() + int(START_LEAD_S * 1e9)
        Variable(START_PREFIX + self.key, client=self.client).set(at)
        Event(STARTED_PREFIX + self.key, client=self.client).set()
        self._on_event(TrialEvent(self.trial_id, "ready", {"start_unix_ns": at, "workers": sorted(ready)}))
        lost = self._follow(w, gens, streamed)
        code = self._merge(w, gens, streamed, lost, samples_from=w.generators[0][0])
        return code

    def _wait_for(
        self, want: Callable[[Mapping[str, Any]], bool], futures: list[Any], what: str
    ) -> Mapping[str, Any]:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._interrupted or self._killed:
                raise _Failed(130, f"interrupted while waiting for {what}")
            try:
                m = self._events.get(timeout=POLL_S)
            except queue.Empty:
                m = None
            if m is None:
                for f in futures:
                    if f.done():
                        raise _Failed(1, f"a task ended while waiting for {what}: {self._why(f)}")
                continue
            if want(m):
                return m
        raise _Failed(1, f"{what} did not come within {READY_TIMEOUT_S:g} s")

    def _why(self, future: Any) -> str:
        try:
            r = future.result(timeout=5)
        except Exception as e:
            return f"{e.__class__.__name__}: {cut(str(e))}"
        return f"{r['name']} on {r['worker']} exited {r['returncode']}: {_last(r['stderr_tail'])}"

    def _follow(self, w: LoadWorkers, gens: list[Any], streamed: dict[str, list[str]]) -> dict[str, str]:
        """Collect the generators' interval lines until each has ended or is lost; the progress is the
        merge of what every generator still running has reported. Returns name → why it was lost."""
        lost: dict[str, str] = {}
        ended: set[str] = set()
        emitted = 0
        next_check = 0.0
        names = [g for g, _ in w.generators]
        gdir = self.out_dir / "generators"
        gdir.mkdir(parents=True, exist_ok=True)
        for g in names:
            (gdir / f"{g}.jsonl").write_text("")
        while len(ended) < len(names):
            try:
                m = self._events.get(timeout=POLL_S)
            except queue.Empty:
                m = None
            if m is not None and m.get("kind") == "interval" and m.get("name") in streamed:
                line = json.dumps(m["data"])
                streamed[str(m["name"])].append(line)
                with (gdir / f"{m['name']}.jsonl").open("a") as kept:  # each one's lines so far, on disk
                    kept.write(line + "\n")
                emitted = self._progress(names, streamed, lost, emitted)
            now = time.monotonic()
            if now < next_check:
                continue
            next_check = now + POLL_S
            alive = self._alive()
            for (name, address), f in zip(w.generators, gens, strict=True):
                if name in ended:
                    continue
                if address not in alive:
                    lost[name] = f"its worker {name} left the scheduler"
                    ended.add(name)
                    with contextlib.suppress(Exception):
                        f.cancel()
                    self._message(f"generator {name} lost: its worker left the scheduler")
                elif f.done():
                    ended.add(name)
            if w.server is not None and not self.spec.get("target") and w.server[1] not in alive:
                raise _Failed(1, f"the server's worker {w.server[0]} was lost mid-run")
        return lost

    def _progress(
        self, names: list[str], streamed: dict[str, list[str]], lost: Mapping[str, str], emitted: int
    ) -> int:
        """Emit the merged intervals every generator still running has reported since the last update
        (``loadmerge --from EMITTED`` on those lines only: an update's work is its new intervals', not
        the run's so far); returns how many intervals have been emitted."""
        ready = min((len(streamed[g]) for g in names if g not in lost), default=0)
        if ready <= emitted:
            return emitted
        gdir = self.out_dir / "generators"
        gdir.mkdir(parents=True, exist_ok=True)
        files = {}
        for g in names:  # a lost generator's lines end early: the merge marks the rest degraded
            files[g] = gdir / f"{g}.progress.jsonl"
            files[g].write_text("".join(line + "\n" for line in streamed[g][emitted:ready]))
        try:
            merged = self._loadmerge(files, out=None, first=emitted)
        except _Failed:
            return emitted
        finally:
            for path in files.values():
                path.unlink(missing_ok=True)
        for line in merged.splitlines():
            data = json.loads(line)
            if data.get("event") == "interval":
                self._on_event(TrialEvent(self.trial_id, "interval", data))
        return ready

    def _write_inputs(
        self, names: list[str], streamed: Mapping[str, list[str]], summaries: Mapping[str, str]
    ) -> dict[str, Path]:
        gdir = self.out_dir / "generators"
        gdir.mkdir(parents=True, exist_ok=True)
        files = {}
        for g in names:
            path = gdir / f"{g}.jsonl"
            lines = list(streamed[g]) + ([summaries[g]] if g in summaries else [])
            path.write_text("".join(line + "\n" for line in lines))
            files[g] = path
        return files

    def _loadmerge(self, files: Mapping[str, Path], out: Path | None, first: int | None = None) -> str:
        """``wirelab-engine loadmerge`` of the generators' ``files``: into ``out`` (the run's directory),
        or to stdout — with ``first``, the files hold the intervals from that index on and only those
        are merged (``--from``)."""
        argv = [str(self.engine.local.path), "loadmerge", "--spec", str(self.out_dir / "spec.json")]
        if first is not None:
            argv += ["--from", str(first)]
        if out is not None:
            argv += ["--out", str(out)]
            server = self.out_dir / "server" / "server.jsonl"
            if server.exists():
                argv += ["--server", str(server)]
        argv += [f"{g}={p}" for g, p in files.items()]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=MERGE_TIMEOUT_S, check=False)
        if done.returncode not in (0, 1) or (out is None and done.returncode != 0):
            raise _Failed(1, f"merging the generators' intervals: {_last(done.stderr)}")
        if out is not None and done.returncode == 1:
            raise _Failed(1, _last(done.stderr))
        return done.stdout

    def _merge(
        self,
        w: LoadWorkers,
        gens: list[Any],
        streamed: dict[str, list[str]],
        lost: dict[str, str],
        samples_from: str | None = None,
    ) -> tuple[int, str]:
        """The generators' directories back, each one's lines (its own when it came back, else what was
        streamed) with its summary when it has one, merged into the run's directory; ``samples_from``:
        the generator whose server.jsonl (an external target's status page) is the run's."""
        names = [g for g, _ in w.generators]
        summaries: dict[str, str] = {}
        for name, f in zip(names, gens, strict=True):
            if name in lost:
                continue
            try:
                r = f.result(timeout=SERVER_END_TIMEOUT_S)
            except Exception as e:
                lost[name] = f"{e.__class__.__name__}"
                self._message(f"generator {name} lost: {cut(str(e))}")
                continue
            gdir = self.out_dir / "generators" / name
            shutil.rmtree(gdir, ignore_errors=True)
            with contextlib.suppress(OSError, tarfile.TarError):
                _unpack(r["archive"], gdir)
            own = gdir / "intervals.jsonl"
            result = gdir / "loadtest.json"
            if own.exists():
                streamed[name] = [line for line in own.read_text().splitlines() if line.strip()]
            if result.exists() and r["returncode"] in (0, 1, 130):
                summary = json.loads(result.read_text()).get("summary")
                if isinstance(summary, dict):
                    summaries[name] = json.dumps(summary)
            if name not in summaries:
                self._message(
                    f"generator {name} lost: its run ended without a summary ({_last(r['stderr_tail'])})"
                )
        if samples_from is not None:
            sampled = self.out_dir / "generators" / samples_from / "server.jsonl"
            if sampled.exists() and sampled.stat().st_size > 0:
                (self.out_dir / "server").mkdir(exist_ok=True)
                shutil.copyfile(sampled, self.out_dir / "server" / "server.jsonl")
        files = self._write_inputs(names, streamed, summaries)
        if not summaries:
            raise _Failed(1, "every generator was lost: nothing of the run can be merged")
        self._loadmerge(files, out=self.out_dir)
        if self._interrupted:
            return 130, "interrupted"
        return 0, ""


def _last(text: str) -> str:
    lines = [line for line in str(text).strip().splitlines() if line.strip()]
    return cut(lines[-1].removeprefix("wirelab-engine: ")) if lines else "no message"
