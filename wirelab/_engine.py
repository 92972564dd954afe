"""The only module that runs ``wirelab-engine``.

:class:`Engine` is the interface the rest of wirelab uses; :class:`SubprocessEngine` implements it by
running the real binary, and ``wirelab.testing.FixtureEngine`` (a test double) by replaying recorded
trial directories. The engine's side of the interface is ``docs/trial-contract.md``.

A running trial is a :class:`TrialRun`, and so is a running load test (:meth:`Engine.start_loadtest`,
``wirelab-engine loadtest``; its ``trial_id`` is the run's ``loadtest_id``). Progress arrives as
:class:`TrialEvent` objects passed to the ``on_event`` callback given to :meth:`Engine.start_trial`,
from a reader thread: callers hand them to their own thread (the runner uses a queue). The last event
of every trial has ``kind == "exit"``.

Processes: each trial runs in its own process group, so a terminal's Ctrl-C reaches only wirelab,
which then decides (:meth:`TrialRun.interrupt` sends SIGINT to the group, :meth:`TrialRun.kill`
SIGKILL). Each engine also gets SIGTERM from the kernel if wirelab dies (``PR_SET_PDEATHSIG``), so a
SIGKILLed ``wirelab run`` leaves no trial running. Call :meth:`Engine.start_trial` from the main
thread: the kernel ties that signal to the thread that started the process.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from wirelab._paths import repo_engine
from wirelab.errors import EngineError, EngineNotFoundError, Interrupted, SpecError, UsageError

__all__ = [
    "Engine",
    "SubprocessEngine",
    "TrialEvent",
    "TrialRun",
    "find_engine",
]

ENGINE_ENV = "WIRELAB_ENGINE"
SPEC_FILE = "spec.json"  #: the trial spec, written by wirelab into the trial directory before the run
STDERR_FILE = "engine.stderr"  #: the engine's stderr, captured by wirelab into the trial directory
#: the machine a trial ran on, written into the trial directory by a cluster worker (wirelab._cluster)
WORKER_FILE = "worker.json"


#: How long a short engine command (pages, version, …) may take before it counts as hung; recording a
#: page starts Chromium and loads it, and gc may wait for many processes' grace periods.
COMMAND_TIMEOUT_S = 120.0
RECORD_TIMEOUT_S = 600.0
GC_TIMEOUT_S = 300.0
#: ``trial --check`` of a whole plan: every distinct spec, with its page and traces, in one process.
CHECK_TIMEOUT_S = 300.0


@dataclasses.dataclass(frozen=True)
class TrialEvent:
    """Something that happened in a running trial."""

    trial_id: str
    #: ``ready`` | ``load`` | ``done`` (progress lines of the engine; a load test's: ``ready`` |
    #: ``interval`` | ``done``), ``log`` (a stdout line that is not a progress event), or ``exit``
    #: (the process ended; always the last event); a cluster's runs also send ``started`` (a worker
    #: started the trial: ``worker``, ``attempt``) and ``message`` (``text``: a worker was lost, the
    #: trial is retried elsewhere)
    kind: str
    #: the progress line's object (for ``load``: index, protocol, repetition, plt_ms, error)
    data: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: ``exit`` only: the exit status (negative = killed by that signal)
    returncode: int | None = None
    #: ``exit`` only: the last lines the engine wrote to stderr
    stderr_tail: str = ""


EventCallback = Callable[[TrialEvent], None]
RecordCallback = Callable[[dict[str, Any]], None]


class TrialRun(ABC):
    """One running ``wirelab-engine trial`` (or ``loadtest``)."""

    trial_id: str
    out_dir: Path
    #: the engine process whose runs ``Engine.gc_owner`` collects (None: a double that creates nothing,
    #: or a run on a cluster worker, which collects its own engine's leftovers)
    owner_pid: int | None = None
    #: whether another trial ran beside this one on its machine, when the run knows it better than the
    #: runner (a cluster worker does); None: the runner decides from its own schedule
    beside_others: bool | None = None

    @abstractmethod
    def poll(self) -> int | None:
        """The exit status, or None while running."""

    @abstractmethod
    def interrupt(self) -> None:
        """Ask the trial to stop and clean up (SIGINT); it exits with 130 and writes no trial.json."""

    @abstractmethod
    def kill(self) -> None:
        """Stop the trial now (SIGKILL to its process group); ``wirelab-engine gc`` removes leftovers."""

    @abstractmethod
    def wait(self, timeout: float | None = None) -> int | None:
        """Wait for the exit event to have been delivered; the exit status, or None on timeout."""


class Engine(ABC):
    """What wirelab asks of the data plane."""

    #: shown in messages and stored with results
    name: str = "wirelab-engine"
    #: where trials run: None = on this machine, started at once; a cluster engine's scheduler address,
    #: whose trials wait for a free slot on some worker and announce a ``started`` event there
    cluster: str | None = None

    @abstractmethod
    def version(self) -> str:
        """One line: version and git sha."""

    @abstractmethod
    def commands(self) -> set[str]:
        """The subcommands this engine has (``trial``, ``pages``, ``shell``, ``gc`` …)."""

    def require(self, command: str) -> None:
        """Raise :class:`EngineNotFoundError` unless the engine has ``command``."""
        if command not in self.commands():
            raise EngineNotFoundError(
                f"{self.name} has no `{command}` command ({self.version()}); "
                "build a newer engine (make build)"
            )

    @abstractmethod
    def check_trials(self, specs: Sequence[Mapping[str, Any]]) -> None:
        """Validate trial specs exactly as ``trial`` would (``wirelab-engine trial --check``), creating
        nothing; raise :class:`SpecError` for the first bad one: ``index`` is its position in
        ``specs``, the message the engine's one line (field, value, what is allowed)."""

    @abstractmethod
    def start_trial(self, spec: dict[str, Any], out_dir: Path, on_event: EventCallback) -> TrialRun:
        """Start ``wirelab-engine trial`` for ``spec`` writing into ``out_dir`` (created when missing)."""

    def check_loadtests(self, specs: Sequence[Mapping[str, Any]]) -> None:
        """Validate loadtest specs exactly as ``loadtest`` would (``wirelab-engine loadtest --check``),
        creating nothing; raise :class:`SpecError` for the first bad one (``index``: its position)."""
        raise EngineNotFoundError(f"{self.name} cannot run load tests")

    def start_loadtest(
        self, spec: dict[str, Any], out_dir: Path, on_event: EventCallback, *, generators: int = 1
    ) -> TrialRun:
        """Start ``wirelab-engine loadtest`` for ``spec`` (its ``loadtest_id`` names the run's events)
        writing into ``out_dir`` (created when missing): ``intervals.jsonl``, ``server.jsonl``,
        ``engine.log``, last ``loadtest.json``; progress events ``ready``, ``interval``, ``done``.
        ``generators`` > 1: the VUs run as that many loadgen processes, their intervals merged
        (``loadtest --generators``; docs/loadtest.md, "Several generators")."""
        raise EngineNotFoundError(f"{self.name} cannot run load tests")

    @abstractmethod
    def pages_ls(self) -> list[dict[str, Any]]:
        """``wirelab-engine pages ls``: the built-in corpus, one object per page (its ``corpus`` list)."""

    @abstractmethod
    def pages_show(self, name: str) -> dict[str, Any]:
        """``wirelab-engine pages show NAME``: one page (corpus, synthetic or a JSON file)."""

    @abstractmethod
    def gc(self) -> str:
        """``wirelab-engine gc``: remove what SIGKILLed runs left behind; returns its report."""

    def gc_owner(self, pid: int) -> str:
        """``wirelab-engine gc --owner PID``: remove what the dead engine process ``pid`` left
        (its namespaces, state file, /etc/netns entries, private directory) and nothing else."""
        return ""

    def calibrate(self) -> dict[str, Any]:
        """``wirelab-engine bench link --quick --json``: the emulator's fidelity on this machine (RTT error,
        goodput, realised loss, capacity, timer lateness; about 30 s, needs root)."""
        raise EngineNotFoundError(f"{self.name} cannot run `bench link`")

    def pages_corpus(self, sub: str, args: Sequence[str]) -> Any:
        """``wirelab-engine pages generate|ls|profiles|import ARGS…``: generated and imported corpora
        (docs/pages.md), their JSON output parsed."""
        raise EngineNotFoundError(f"{self.name} cannot run `pages {sub}`")

    def pages_model(
        self, names: Sequence[str], *, seed: int = 1, shards: int = 1, shard_mode: str = "round-robin"
    ) -> list[dict[str, Any]]:
        """``wirelab-engine pages model NAME… [--seed] [--shards] [--shard-mode]``: what the prediction
        model needs of each page (sizes, origins, types, what a flat load finds each object in, the
        graph a replay follows), one object per name, in order."""
        raise EngineNotFoundError(f"{self.name} cannot run `pages model`")

    def pages_bring_in(self, sub: str, args: Sequence[str]) -> str:
        """``wirelab-engine pages record|import-har|mirror ARGS…`` (writing the page with ``--out``).

        Returns what the engine reported on stderr (warnings and a one-line summary)."""
        raise EngineNotFoundError(f"{self.name} cannot run `pages {sub}`")

    @abstractmethod
    def shell_argv(self, args: Sequence[str]) -> list[str]:
        """The argv that runs ``wirelab-engine shell ARGS…`` (the CLI replaces itself with it)."""

    def probe(self, args: Sequence[str], on_record: RecordCallback, *, local: bool = False) -> None:
        """Run ``wirelab-engine probe ARGS…`` (``docs/probe.md``) and call ``on_record`` with each site's
        record, checked against ``schemas/probe-record.schema.json``, as it arrives. With ``local`` the
        probe runs inside ``wirelab-engine sites`` (the local internet; root).

        Raises :class:`UsageError` for bad input or a refused target (the engine's one line, exit 2;
        nothing was sent), :class:`Interrupted` after Ctrl-C, :class:`EngineError` otherwise."""
        raise EngineNotFoundError(f"{self.name} cannot run `probe`")

    def sites_ls(self) -> list[dict[str, Any]]:
        """``wirelab-engine sites ls --json``: the local internet's sites, each with its URL, address
        and what a correct probe reports for it."""
        raise EngineNotFoundError(f"{self.name} cannot run `sites ls`")


# --------------------------------------------------------------------------------------------------
# Finding the engine


def find_engine(explicit: str | os.PathLike[str] | None = None) -> Path:
    """``--engine``, then ``$WIRELAB_ENGINE``, then ``bin/wirelab-engine`` in the repository, then PATH."""
    tried: list[str] = []
    candidates: list[tuple[str, str | None]] = [
        ("--engine", os.fspath(explicit) if explicit else None),
        (f"${ENGINE_ENV}", os.environ.get(ENGINE_ENV) or None),
        ("the repository", str(repo_engine())),
        ("PATH", shutil.which("wirelab-engine")),
    ]
    for source, candidate in candidates:
        if candidate is None:
            continue
        path = Path(candidate)
        if path.is_file() and os.access(path, os.X_OK):
            return path.resolve()
        if source in ("--engine", f"${ENGINE_ENV}"):
            raise EngineNotFoundError(f"{source}: {candidate} is not an executable file")
        tried.append(f"{candidate} ({source})")
    tried.append("PATH")
    raise EngineNotFoundError(
        f"wirelab-engine not found (tried {', '.join(tried)}); "
        "build it with `make build` or pass --engine PATH"
    )


# --------------------------------------------------------------------------------------------------
# The real engine

_PR_SET_PDEATHSIG = 1

#: the most lines of a probe's stderr kept (one per site when none could be probed: --max-sites ≤ 100 000)
PROBE_MAX_LINES = 100_000


def _pdeathsig_preexec() -> Callable[[], None]:
    """A preexec_fn that makes the child receive SIGTERM when this process dies (Linux)."""
    parent = os.getpid()
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: no parent-death signal
        prctl = None

    def preexec() -> None:
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(130)

    return preexec


class _ProcessTrialRun(TrialRun):
    def __init__(
        self, argv: list[str], trial_id: str, out_dir: Path, on_event: EventCallback, *, stdin: bool = False
    ):
        self.trial_id = trial_id
        self.out_dir = out_dir
        self._on_event = on_event
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=20)
        self._exited = threading.Event()
        self._returncode: int | None = None
        self._stderr_file = open(out_dir / STDERR_FILE, "w")  # noqa: SIM115 - closed by the reader
        try:
            self._proc = _spawn(argv, stdin=stdin)
        except EngineNotFoundError:
            self._stderr_file.close()
            raise
        self._stderr_thread = threading.Thread(
            target=self._read_stderr, daemon=True, name=f"stderr-{trial_id}"
        )
        self._stdout_thread = threading.Thread(
            target=self._read_stdout, daemon=True, name=f"stdout-{trial_id}"
        )
        self._stderr_thread.start()
        self._stdout_thread.start()

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def owner_pid(self) -> int | None:  # type: ignore[override]
        return self._proc.pid

    def _read_stderr(self) -> None:
        assert self._proc.stderr is not None
        with self._stderr_file:
            for line in self._proc.stderr:
                self._stderr_file.write(line)
                self._stderr_file.flush()
                if line.strip():
                    self._stderr_tail.append(line.rstrip("\n"))

    def _read_stdout(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            line = line.strip()
            if not line:
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                data = None
            if isinstance(data, dict) and isinstance(data.get("event"), str):
                self._on_event(TrialEvent(self.trial_id, data["event"], data))
            else:
                self._on_event(TrialEvent(self.trial_id, "log", {"line": line}))
        self._stderr_thread.join()
        self._returncode = self._proc.wait()
        self._exited.set()
        self._on_event(
            TrialEvent(
                self.trial_id, "exit", returncode=self._returncode, stderr_tail="\n".join(self._stderr_tail)
            )
        )

    def poll(self) -> int | None:
        return self._proc.poll()

    def send(self, line: str) -> None:
        """Write one line to the engine's stdin (started with ``stdin=True``: a cluster task's start
        instant, ``loadtest --await-start``)."""
        assert self._proc.stdin is not None
        with contextlib.suppress(BrokenPipeError, ValueError):
            self._proc.stdin.write(line.rstrip("\n") + "\n")
            self._proc.stdin.flush()

    def _signal(self, sig: int) -> None:
        if self._proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._proc.pid, sig)

    def interrupt(self) -> None:
        self._signal(signal.SIGINT)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int | None:
        if not self._exited.wait(timeout):
            return None
        return self._returncode


class SubprocessEngine(Engine):
    """The real ``wirelab-engine`` binary."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = find_engine(path)
        self.name = str(self.path)
        self._commands: set[str] | None = None
        self._version: str | None = None

    def _run(
        self,
        args: Sequence[str],
        *,
        timeout: float = COMMAND_TIMEOUT_S,
        input: str | None = None,
        ok: tuple[int, ...] = (0,),
    ) -> subprocess.CompletedProcess[str]:
        """Run the engine with ``args``; an exit status outside ``ok`` raises (2: :class:`UsageError`
        with the engine's last line, else :class:`EngineError`)."""
        try:
            done = subprocess.run(
                [str(self.path), *args],
                capture_output=True,
                text=True,
                timeout=timeout,
                input=input,
                stdin=subprocess.DEVNULL if input is None else None,
            )
        except subprocess.TimeoutExpired:
            raise EngineError(f"{self.path} {' '.join(args)}: no answer within {timeout:.0f} s") from None
        except OSError as e:
            raise EngineNotFoundError(f"{self.path}: cannot run ({e.strerror})") from None
        if done.returncode not in ok:
            last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
            last = last.removeprefix("wirelab-engine: ")
            if done.returncode == 2:
                raise UsageError(last)
            raise EngineError(f"wirelab-engine {' '.join(args[:2])}: {last}")
        return done

    def version(self) -> str:
        if self._version is None:
            out = self._run(["version"]).stdout.strip()
            self._version = out.removeprefix("wirelab-engine ").strip() or "unknown"
        return self._version

    def commands(self) -> set[str]:
        """Parsed from ``wirelab-engine --help`` (the ``commands:`` list, one ``  name  summary`` a line)."""
        if self._commands is None:
            text = self._run(["--help"]).stdout
            names: set[str] = set()
            in_list = False
            for line in text.splitlines():
                if line.strip().lower().startswith("commands:"):
                    in_list = True
                    continue
                if in_list and line.startswith("  ") and line.strip():
                    names.add(line.split()[0])
            self._commands = names
        return self._commands

    def check_trials(self, specs: Sequence[Mapping[str, Any]]) -> None:
        self.require("trial")
        if not specs:
            return
        lines = "".join(json.dumps(s, allow_nan=False) + "\n" for s in specs)
        try:
            self._run(["trial", "--check", "--specs", "-"], input=lines, timeout=CHECK_TIMEOUT_S)
        except UsageError as e:
            raise _check_error(str(e)) from None

    def start_trial(self, spec: dict[str, Any], out_dir: Path, on_event: EventCallback) -> TrialRun:
        self.require("trial")
        out_dir.mkdir(parents=True, exist_ok=True)
        spec_path = out_dir / SPEC_FILE
        spec_path.write_text(json.dumps(spec, indent=1) + "\n")
        argv = [str(self.path), "trial", "--spec", str(spec_path), "--out", str(out_dir), "--progress"]
        return _ProcessTrialRun(argv, spec["trial_id"], out_dir, on_event)

    def check_loadtests(self, specs: Sequence[Mapping[str, Any]]) -> None:
        self.require("loadtest")
        for index, spec in enumerate(specs):
            try:
                # the spec on stdin: nothing is written anywhere before it is known to be good
                self._run(
                    ["loadtest", "--check", "--spec", "-"],
                    input=json.dumps(spec, allow_nan=False),
                    timeout=CHECK_TIMEOUT_S,
                )
            except UsageError as e:
                error = SpecError(str(e), path=str(e).split(":", 1)[0])
                error.index = index  # type: ignore[attr-defined]
                raise error from None

    def start_loadtest(
        self, spec: dict[str, Any], out_dir: Path, on_event: EventCallback, *, generators: int = 1
    ) -> TrialRun:
        self.require("loadtest")
        out_dir.mkdir(parents=True, exist_ok=True)
        spec_path = out_dir / SPEC_FILE
        spec_path.write_text(json.dumps(spec, indent=1) + "\n")
        argv = [str(self.path), "loadtest", "--spec", str(spec_path), "--out", str(out_dir), "--progress"]
        if generators > 1:
            argv += ["--generators", str(generators)]
        return _ProcessTrialRun(argv, spec["loadtest_id"], out_dir, on_event)

    def thresholds(
        self, exprs: Sequence[str], protocols: Sequence[str], loads: Sequence[Mapping[str, Any]] | None = None
    ) -> dict[str, Any] | None:
        """``wirelab-engine thresholds``: with ``loads`` None only check ``exprs`` (a bad one raises
        :class:`UsageError`, ``thresholds[i]: …``); else evaluate them on the loads and return the
        engine's ``{"passed", "results"}`` (a failed threshold is not an error here)."""
        self.require("thresholds")
        args = ["thresholds", "--protocols", ",".join(protocols)]
        if loads is None:
            self._run([*args, "--", *exprs], timeout=CHECK_TIMEOUT_S)
            return None
        lines = "".join(json.dumps(row, allow_nan=False) + "\n" for row in loads)
        # exit 1 is a verdict (a threshold failed), not an error: the JSON says which
        done = self._run([*args, "--loads", "-", "--", *exprs], input=lines, ok=(0, 1))
        try:
            result: dict[str, Any] = json.loads(done.stdout)
        except json.JSONDecodeError:
            raise EngineError("wirelab-engine thresholds: output is not JSON") from None
        return result

    def _json(self, args: list[str], timeout: float = 120) -> Any:
        out = self._run(args, timeout=timeout).stdout
        try:
            return json.loads(out)
        except json.JSONDecodeError:
            raise EngineError(f"wirelab-engine {' '.join(args)}: output is not JSON") from None

    def pages_ls(self) -> list[dict[str, Any]]:
        self.require("pages")
        listing = self._json(["pages", "ls"])
        pages = listing.get("corpus") if isinstance(listing, dict) else None
        if not isinstance(pages, list) or not all(isinstance(p, dict) and "name" in p for p in pages):
            raise EngineError('wirelab-engine pages ls: expected {"corpus": [objects with a name], …}')
        return pages

    def pages_show(self, name: str) -> dict[str, Any]:
        self.require("pages")
        page = self._json(["pages", "show", name])
        if not isinstance(page, dict):
            raise EngineError("wirelab-engine pages show: expected an object")
        return page

    def pages_corpus(self, sub: str, args: Sequence[str]) -> Any:
        if sub not in ("generate", "ls", "profiles", "import"):
            raise UsageError(f"pages {sub}: want generate, ls, profiles or import")
        self.require("pages")
        return self._json(["pages", sub, *args], timeout=COMMAND_TIMEOUT_S)

    def pages_model(
        self, names: Sequence[str], *, seed: int = 1, shards: int = 1, shard_mode: str = "round-robin"
    ) -> list[dict[str, Any]]:
        args = ["pages", "model", "--seed", str(seed), "--shards", str(shards), "--shard-mode", shard_mode]
        out = self._run([*args, "--", *names], timeout=COMMAND_TIMEOUT_S).stdout
        try:
            facts = [json.loads(line) for line in out.splitlines() if line.strip()]
        except json.JSONDecodeError:
            raise EngineError("wirelab-engine pages model: output is not JSON lines") from None
        if len(facts) != len(names) or not all(isinstance(f, dict) and "size" in f for f in facts):
            raise EngineError(f"wirelab-engine pages model: expected {len(names)} page models")
        return facts

    def pages_bring_in(self, sub: str, args: Sequence[str]) -> str:
        if sub not in ("record", "import-har", "mirror"):
            raise UsageError(f"pages {sub}: want record, import-har or mirror")
        self.require("pages")
        # Recording starts Chromium and loads the page; the others only read files.
        timeout = RECORD_TIMEOUT_S if sub == "record" else COMMAND_TIMEOUT_S
        done = self._run(["pages", sub, *args], timeout=timeout)
        return done.stderr.strip()

    def gc(self) -> str:
        self.require("gc")
        done = self._run(["gc"], timeout=GC_TIMEOUT_S)
        return (done.stdout + done.stderr).strip()

    def gc_owner(self, pid: int) -> str:
        self.require("gc")
        done = self._run(["gc", "-q", "--owner", str(pid)], timeout=GC_TIMEOUT_S)
        return (done.stdout + done.stderr).strip()

    def calibrate(self) -> dict[str, Any]:
        self.require("bench")
        result = self._json(["bench", "link", "--quick", "--json"], timeout=300)
        if not isinstance(result, dict):
            raise EngineError("wirelab-engine bench link: expected an object")
        return result

    def shell_argv(self, args: Sequence[str]) -> list[str]:
        self.require("shell")
        return [str(self.path), "shell", *args]

    def sites_ls(self) -> list[dict[str, Any]]:
        self.require("sites")
        listing = self._json(["sites", "ls", "--json"])
        if not isinstance(listing, list) or not all(isinstance(s, dict) and "url" in s for s in listing):
            raise EngineError("wirelab-engine sites ls --json: expected a list of sites with a url")
        return listing

    def probe(self, args: Sequence[str], on_record: RecordCallback, *, local: bool = False) -> None:
        from wirelab._contract import validate

        self.require("probe")
        argv = [str(self.path), "probe", *args]
        if local:
            self.require("sites")
            argv = [str(self.path), "sites", "--", *argv]
        proc = _spawn(argv)
        # the last lines: with exit 2 one per site that could not be probed (at most --max-sites)
        tail: collections.deque[str] = collections.deque(maxlen=PROBE_MAX_LINES)

        def read_stderr() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                if line.strip():
                    tail.append(line.rstrip("\n"))

        reader = threading.Thread(target=read_stderr, daemon=True, name="probe-stderr")
        reader.start()
        assert proc.stdout is not None
        lines = enumerate(proc.stdout, 1)
        interrupted = False

        def take(n: int, line: str) -> None:
            if not line.strip():
                return
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                raise EngineError(f"wirelab-engine probe: output line {n} is not JSON") from None
            validate("probe-record", record, what=f"wirelab-engine probe, line {n}")
            on_record(record)

        # Ctrl-C is forwarded to the engine (it finishes the steps under way and exits 130), and what
        # it still writes is stored: no record is cut in half by a KeyboardInterrupt. A second Ctrl-C
        # sends SIGTERM (which still cleans up), a third SIGKILL (then `wirelab-engine gc`). Only the
        # main thread can catch signals; elsewhere Ctrl-C stays Python's.
        interrupts = 0

        def forward(signum: int, frame: object) -> None:
            nonlocal interrupted, interrupts
            interrupted, interrupts = True, interrupts + 1
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)[min(interrupts, 3) - 1])

        previous = None
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGINT, forward)
        try:
            for n, line in lines:
                take(n, line)
        except KeyboardInterrupt:
            interrupted = True
            _stop(proc)
        except BaseException:
            _stop(proc)
            raise
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
        code = proc.wait()
        reader.join()
        last = (tail[-1] if tail else f"exit status {code}").removeprefix("wirelab-engine: ")
        if code == 2:
            # bad input is one line; nothing to contact is one line per site, each "probe: SITE: …"
            said = [t.removeprefix("wirelab-engine: ") for t in tail]
            per_site = len(said) > 1 and all(t.startswith("probe: ") for t in said)
            error = UsageError("; ".join(said) if per_site else last)
            if per_site:
                error.lines = tuple(said)
            raise error
        if code == 130 or interrupted:
            raise Interrupted("probe interrupted; the records so far are kept")
        if code != 0:
            raise EngineError(f"wirelab-engine probe: {last}")


def _spawn(argv: list[str], *, stdin: bool = False) -> subprocess.Popen[str]:
    """An engine process in a process group of its own (wirelab decides what a Ctrl-C does to it), given
    SIGTERM if wirelab dies, its stdout and stderr read line by line as text; ``stdin``: a pipe to it."""
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            process_group=0,
            preexec_fn=_pdeathsig_preexec(),
            text=True,
            bufsize=1,
        )
    except OSError as e:
        raise EngineNotFoundError(f"{argv[0]}: cannot run ({e.strerror})") from None


def _stop(proc: subprocess.Popen[str], grace: float = 30) -> None:
    """Interrupt a command's process group (SIGINT: it cleans up), SIGKILL after ``grace`` seconds."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


_CHECK_LINE = re.compile(r"^spec (\d+) \(trial_id [^)]*\): (.*)$")


def _check_error(line: str) -> SpecError:
    """``trial --check --specs``'s line ("spec N (trial_id …): field: …") as a SpecError whose
    ``index`` is N-1 and whose ``path`` is the field."""
    m = _CHECK_LINE.match(line)
    index, rest = (int(m.group(1)) - 1, m.group(2)) if m else (0, line)
    error = SpecError(rest, path=rest.split(":", 1)[0])
    error.index = index  # type: ignore[attr-defined]
    return error
