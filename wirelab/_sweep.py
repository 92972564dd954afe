"""What every sweep shares, whatever its items are: the trial runner (:mod:`wirelab.runner`,
``wirelab run``) and the load-test runner (:mod:`wirelab._loadrunner`, ``wirelab loadtest``) are its
two users, as peers.

- :class:`Sweep` opens one invocation's hold on a sweep: the database, the sweep's directory under
  ``<db>.d/`` and its lock (one process per sweep), SIGTERM taken as Ctrl-C, the sweep's row created,
  kept to resume or replaced (:func:`prepare_sweep`), and who ran it (:func:`control_provenance`);
  :meth:`Sweep.running` ends an invocation as both runners do (elapsed time, the observer, and
  :class:`~wirelab.errors.Interrupted` after Ctrl-C).
- An item (a trial, a load-test run) is the row of its kind's table (``Store.statuses`` and the rest
  take the kind); :class:`SweepLoop` starts from what a killed invocation left (stores a finished
  item, discards an incomplete attempt: :func:`discard`) and records outcomes.
- The engine: every spec checked by it before anything exists (:func:`check_specs`), what its exit
  means (:func:`exit_error`), what a dead one left (:func:`collect_leftovers`), its JSON and JSONL
  output read (:func:`read_json`, :func:`read_jsonl`) with one-line :class:`ContractError` s.
- What an invocation did: one :class:`Outcome` per item, one :class:`Summary` (``lines()`` is what the
  CLI prints), and the :class:`SweepObserver` both runners' observers extend.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import functools
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from wirelab import __version__
from wirelab._contract import CONTRACT_VERSION
from wirelab._db.files import DATA_FILE_MODE, results_dir
from wirelab._db.writer import Store
from wirelab._paths import REPO_ROOT
from wirelab.errors import ContractError, Interrupted, SpecError, SweepConflictError, UsageError, WirelabError

if TYPE_CHECKING:
    from wirelab._engine import Engine

__all__ = [
    "LOCK_FILE",
    "STALE_ERROR",
    "alias",
    "Outcome",
    "Summary",
    "Sweep",
    "SweepLoop",
    "SweepObserver",
    "check_specs",
    "collect_leftovers",
    "control_provenance",
    "discard",
    "exit_error",
    "interrupts_held",
    "prepare_sweep",
    "read_json",
    "read_jsonl",
    "sigterm_as_interrupt",
    "sweep_lock",
]

LOCK_FILE = ".lock"
#: the error of an item found ``running`` by the next invocation of its sweep (its wirelab was killed)
STALE_ERROR = "its wirelab was stopped without cleaning up (killed); run again"
#: the sweeps table's kinds, as the user meets them (a sweep of one kind refuses a run of the other)
_KIND_WORDS = {"trials": "a trial sweep (wirelab run)", "loadtest": "a load test (wirelab loadtest)"}


class Item(Protocol):
    """A planned item of a sweep: a :class:`~wirelab.spec.PlannedTrial` or a
    :class:`~wirelab._loadplan.PlannedLoadtest`."""

    @property
    def id(self) -> str: ...

    @property
    def label(self) -> str: ...

    @property
    def spec(self) -> dict[str, Any]: ...


class Plan(Protocol):
    """What a sweep needs of a plan (a :class:`~wirelab.spec.Plan` or a
    :class:`~wirelab._loadplan.LoadPlan`)."""

    @property
    def name(self) -> str: ...

    @property
    def spec_hash(self) -> str: ...


# --------------------------------------------------------------------------------------------------
# What an invocation did


def alias(name: str, doc: str) -> Any:
    """A read-only attribute that is another's under the name a kind's users know (``planned_trials``
    of a trial run's summary is its ``planned``)."""
    return property(lambda self: getattr(self, name), doc=doc)


@dataclasses.dataclass(kw_only=True)
class Outcome:
    """How one item of this invocation ended; :attr:`item` is the planned trial or run."""

    status: str  #: complete | failed | interrupted
    error: str | None = None
    seconds: float = 0.0
    recovered: bool = False  #: finished by a previous, killed invocation and stored by this one

    @property
    def item(self) -> Item:
        raise NotImplementedError


OutcomeT = TypeVar("OutcomeT", bound=Outcome)


@dataclasses.dataclass(kw_only=True)
class Summary(Generic[OutcomeT]):
    """What an invocation did; ``lines()`` is the text the CLI prints. Subclasses name their items
    (:attr:`ITEMS`) and add their own lines (:meth:`warnings`)."""

    sweep: str
    db: Path
    results_dir: Path
    spec_hash: str
    #: items planned (trials, load-test runs), and those complete before this invocation started
    planned: int
    already_complete: int
    outcomes: list[OutcomeT] = dataclasses.field(default_factory=list)
    interrupted: bool = False
    elapsed_s: float = 0.0
    #: set by the CLI's report hook when a report was written
    report: Path | None = None

    #: the items in words: one, several, what an invocation is called, what an interruption keeps
    ITEM: ClassVar[str] = "trial"
    ITEMS: ClassVar[str] = "trials"
    INVOCATION: ClassVar[str] = "run"
    INTERRUPTED: ClassVar[str] = "running trials were stopped"

    @property
    def completed(self) -> list[OutcomeT]:
        return [o for o in self.outcomes if o.status == "complete"]

    @property
    def failed(self) -> list[OutcomeT]:
        return [o for o in self.outcomes if o.status == "failed"]

    @property
    def complete(self) -> int:
        """Items complete in the database now."""
        return self.already_complete + len(self.completed)

    @property
    def ok(self) -> bool:
        return not self.interrupted and self.complete == self.planned

    def headline(self) -> str:
        raise NotImplementedError

    def warnings(self) -> list[str]:
        """Lines about this kind's outcomes, after the failures."""
        return []

    def lines(self) -> list[str]:
        out = [self.headline()]
        if self.already_complete:
            out.append(f"resumed: {self.already_complete} {self.ITEMS} were already complete in {self.db}")
        recovered = [o for o in self.completed if o.recovered]
        if recovered:
            out.append(f"stored {len(recovered)} {self.ITEMS} that a killed {self.INVOCATION} had finished")
        out += [f"failed: {o.item.id} ({o.item.label}): {o.error}" for o in self.failed]
        out += self.warnings()
        if self.interrupted:
            out.append(f"interrupted: {self.INTERRUPTED}; run the same command again to resume")
        out.append(f"results: {self.db} (sweep {self.sweep}), {self.ITEM} directories in {self.results_dir}")
        if self.report is not None:
            out.append(f"report: {self.report}")
        return out


SummaryT = TypeVar("SummaryT", bound=Summary[Any])


class SweepObserver(Generic[SummaryT]):
    """Receives an invocation's progress; the default does nothing. The runners' observers
    (:class:`wirelab.Observer`, :class:`wirelab.LoadObserver`) add their items' events."""

    def message(self, text: str) -> None:
        """Something worth telling the user (a discarded leftover directory, stopping on Ctrl-C …)."""

    def sweep_ended(self, summary: SummaryT) -> None:
        """After the last item (also after an interruption)."""


# --------------------------------------------------------------------------------------------------
# One invocation's hold on a sweep


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@functools.cache
def _git_sha() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 else "unknown"


def control_provenance(engine: Engine, parallel: int) -> dict[str, Any]:
    """Who ran the sweep with what: stored with the sweep and with every item."""
    cluster = {"cluster": engine.cluster} if engine.cluster is not None else {}
    return {
        "wirelab_version": __version__,
        "git_sha": _git_sha(),
        "python": platform.python_version(),
        "hostname": platform.node(),
        "argv": list(sys.argv),
        "engine": engine.name,
        "engine_version": engine.version(),
        "contract": CONTRACT_VERSION,
        "parallel": parallel,
        **cluster,
        "started_at": _now(),
    }


@contextlib.contextmanager
def sweep_lock(directory: Path, sweep: str) -> Iterator[None]:
    """One process per sweep: an exclusive lock on ``directory/.lock``, which holds the holder's pid."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, DATA_FILE_MODE)
    os.fchmod(fd, DATA_FILE_MODE)  # whatever the umask
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise UsageError(
                f"sweep {sweep}: another wirelab (pid {holder}) is running it ({path})"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock; the kernel does the same if we are killed


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """In the main thread, SIGTERM raises KeyboardInterrupt like Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def interrupts_held() -> Iterator[list[int]]:
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


def discard(directory: Path) -> None:
    """Remove an item's directory left by an incomplete attempt.

    Renamed first, so that an engine still winding down (a killed run's child gets SIGTERM) writes into
    the renamed directory and never into the new attempt's."""
    if not directory.exists():
        return
    graveyard = directory.with_name(f".discarded-{directory.name}-{uuid.uuid4().hex[:8]}")
    os.replace(directory, graveyard)
    shutil.rmtree(graveyard, ignore_errors=True)


def prepare_sweep(
    store: Store, plan: Plan, resume: bool, sweep_dir: Path, *, kind: str, create: Callable[[], object]
) -> None:
    """The sweep's row, created (``create``) or kept to resume, or replaced (``resume`` False); a sweep
    of that name made from another spec, or of the other kind (``trials``, ``loadtest``), is refused."""
    existing = store.sweep_row(plan.name)
    if existing is not None and existing["kind"] != kind:
        raise SweepConflictError(
            f"sweep {plan.name}: {store.path} holds {_KIND_WORDS[existing['kind']]} of that name; "
            "rename [sweep].name"
        )
    if existing is not None and existing["spec_hash"] != plan.spec_hash and resume:
        raise SweepConflictError(
            f"sweep {plan.name}: {store.path} holds results of a different spec "
            f"(hash {existing['spec_hash']}, "
            f"this spec {plan.spec_hash}); rename [sweep].name, or pass --no-resume to replace them"
        )
    if existing is not None and not resume:
        store.delete_sweep(plan.name)
        for child in sweep_dir.iterdir():
            if child.name != LOCK_FILE:
                discard(child) if child.is_dir() else child.unlink()
        existing = None
    if existing is None:
        create()
    else:
        store.touch_sweep(plan.name)


class Sweep:
    """One invocation's hold on the sweep of ``plan`` in the database ``db``; use as a context manager
    (database open, the sweep's directory locked, SIGTERM as Ctrl-C, the sweep's row prepared).

    ``create(store, control)`` inserts the sweep and its planned items when it is not there (or is
    replaced: ``resume`` False)."""

    def __init__(
        self,
        plan: Plan,
        *,
        db: str | Path,
        engine: Engine,
        parallel: int,
        resume: bool,
        kind: str,
        create: Callable[[Store, Mapping[str, Any]], object],
    ):
        self.plan, self.kind, self.resume, self._create = plan, kind, resume, create
        self.started = time.monotonic()
        self.control = control_provenance(engine, parallel)
        self.store = Store(db)
        self.dir = results_dir(self.store.path) / plan.name
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> Sweep:
        self._stack.callback(self.store.close)
        try:
            self._stack.enter_context(sweep_lock(self.dir, self.plan.name))
            self._stack.enter_context(sigterm_as_interrupt())
            prepare_sweep(
                self.store,
                self.plan,
                self.resume,
                self.dir,
                kind=self.kind,
                create=lambda: self._create(self.store, self.control),
            )
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def statuses(self) -> dict[str, str]:
        """Item id → status of every item of the sweep."""
        return self.store.statuses(self.plan.name)

    @contextlib.contextmanager
    def running(self, summary: Summary[Any], observer: SweepObserver[Any], what: str) -> Iterator[None]:
        """The items' loop runs in the block; after it, also on an exception, the summary gets the
        elapsed time and the observer :meth:`~SweepObserver.sweep_ended`. An interrupted summary then
        raises :class:`~wirelab.errors.Interrupted` (its ``.summary``); ``what`` names the sweep in it
        (``sweep demo``, ``load test capacity``)."""
        try:
            yield
        finally:
            summary.elapsed_s = time.monotonic() - self.started
            self.store.touch_sweep(self.plan.name)
            observer.sweep_ended(summary)
        if summary.interrupted:
            error = Interrupted(f"{what}: interrupted; run the same spec again to resume")
            error.summary = summary  # type: ignore[attr-defined]
            raise error


class SweepLoop(Generic[OutcomeT]):
    """What both runners' loops share: the items' directories, the outcomes recorded in the summary
    and told to the observer (``ended``)."""

    def __init__(
        self,
        sweep: Sweep,
        engine: Engine,
        summary: Summary[OutcomeT],
        observer: SweepObserver[Any],
        ended: Callable[[OutcomeT], None],
    ):
        self.sweep, self.engine, self.summary, self.observer = sweep, engine, summary, observer
        self.store, self.name, self.control = sweep.store, sweep.plan.name, sweep.control
        self._ended = ended

    def directory(self, item: Item) -> Path:
        return self.sweep.dir / item.id

    def recovered(
        self, item: Item, status: str | None, result_file: str, ingest: Callable[[], OutcomeT]
    ) -> bool:
        """Before ``item`` runs: a killed invocation may have left it finished (``result_file`` written,
        the row still ``running``) and never stored — then it is stored now (``ingest``) and this says
        True; an incomplete attempt's directory is discarded."""
        directory = self.directory(item)
        if status == "running" and (directory / result_file).exists():
            outcome = ingest()
            if outcome.status == "complete":
                outcome.recovered = True
                self.record(outcome)
                return True
        if directory.exists():
            self.observer.message(f"discarding the incomplete attempt at {item.id} ({item.label})")
            discard(directory)
        return False

    def settle_stale(self, todo: Sequence[Item], statuses: Mapping[str, str], result_file: str) -> None:
        """Before the loop: items found ``running`` without their ``result_file`` were left by an
        invocation that is gone (a SIGKILL, a power cut; this one holds the sweep's lock). Each is marked
        ``interrupted`` (:data:`STALE_ERROR`) before it runs again, and what their dead engines left is
        removed (``wirelab-engine gc``: only runs whose owner is gone, so never another run's), as a
        manual ``gc`` would."""
        stale = [
            i.id
            for i in todo
            if statuses.get(i.id) == "running" and not (self.directory(i) / result_file).exists()
        ]
        if not stale:
            return
        for ident in stale:
            self.store.mark_ended(self.name, ident, "interrupted", STALE_ERROR)
        shown = ", ".join(stale[:3]) + ("…" if len(stale) > 3 else "")
        self.observer.message(
            f"{len(stale)} left running by a wirelab that was killed ({shown}): marked interrupted, run again"
        )
        if self.engine.cluster is not None:
            return  # each worker removes what its engines leave (gc --owner)
        try:
            report = self.engine.gc()
        except WirelabError as e:
            self.observer.message(
                f"could not remove what the killed engines left ({e}); run wirelab-engine gc"
            )
            return
        removed = [line for line in report.splitlines() if line.startswith("removed ")]
        if removed:
            self.observer.message(
                f"removed what killed runs left ({len(removed)} namespaces, files and directories)"
            )

    def record(self, outcome: OutcomeT) -> None:
        self.summary.outcomes.append(outcome)
        self._ended(outcome)

    def collect(self, item: Item, pid: int, returncode: int | None) -> None:
        collect_leftovers(self.engine, self.observer, item.id, pid, returncode)


# --------------------------------------------------------------------------------------------------
# The engine


ItemT = TypeVar("ItemT", bound=Item)


def check_specs(
    check: Callable[[list[dict[str, Any]]], None], items: Sequence[ItemT], name: Callable[[ItemT], str]
) -> None:
    """Have the engine check every item's spec (``check``: ``Engine.check_trials`` or
    ``check_loadtests``) before anything exists; the first bad one raises :class:`SpecError` naming
    the item (``name``) and the engine's field (docs/bad-input.md)."""
    try:
        check([i.spec for i in items])
    except SpecError as e:
        item = items[min(getattr(e, "index", 0), len(items) - 1)]
        raise SpecError(f"{name(item)}: {e}", path=e.path, value=e.value) from None


def last_line(stderr_tail: str) -> str:
    """The engine's last stderr line without its ``wirelab-engine:`` prefix (its one-line error)."""
    return (stderr_tail.strip().splitlines() or [""])[-1].removeprefix("wirelab-engine: ")


def exit_error(returncode: int | None, stderr_tail: str, refused: str) -> str:
    """What an engine's non-zero exit means, in one line: ``refused`` names what exit status 2
    refused (``the trial spec``, ``the load test``)."""
    last = last_line(stderr_tail)
    if returncode == 2:
        return f"the engine refused {refused}: {last or 'exit status 2'}"
    if returncode is not None and returncode < 0:
        return f"the engine was killed by signal {-returncode}" + (f": {last}" if last else "")
    return last or f"the engine exited with status {returncode}"


def collect_leftovers(
    engine: Engine, observer: SweepObserver[Any], what: str, pid: int, returncode: int | None
) -> None:
    """Remove what the dead engine ``pid`` left (``gc --owner``: the same code as ``gc``, scoped to
    that process's runs) before going on. An engine that exited on its own has removed everything
    already and this finds nothing; one killed by a signal leaves namespaces and files. ``observer``
    is told (its ``message``) what happened; ``what`` names the trial or load test."""
    try:
        report = engine.gc_owner(pid)
    except WirelabError as e:
        observer.message(f"{what}: could not remove what the engine left ({e}); run wirelab gc")
        return
    if report and returncode is not None and returncode < 0:
        observer.message(f"{what}: the engine was killed; removed what it left")


def read_json(path: Path, what: str | None = None) -> Any:
    """A JSON file the engine wrote; one that is not JSON is a :class:`ContractError` naming it."""
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ContractError(f"{what or path.name}: not JSON ({e.msg})") from None


def read_jsonl(path: Path, *, partial_ok: bool = False) -> list[dict[str, Any]]:
    """A JSONL file's objects (blank lines skipped); a line that is not JSON is a
    :class:`ContractError` naming the file and the line — except, with ``partial_ok``, a last line cut
    short (an engine killed while writing it), which is left out."""
    lines = path.read_text().splitlines()
    records = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as e:
            if partial_ok and n == len(lines):
                break
            raise ContractError(f"{path.name} line {n}: not JSON ({e.msg})") from None
    return records
