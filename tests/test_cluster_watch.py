"""A worker's watch of one engine process (``TrialWorker.watch``, ``wirelab/_cluster.py``): the one
implementation a trial's task and a cluster load test's tasks run — events forwarded, the stop asked
for, SIGINT then SIGKILL after the grace, and ``gc --owner`` after a failed exit whose own failure is
noted in the stderr tail (the engine's errors) while anything else is a bug and is raised.

No Dask: the plugin is built without a worker (every task is wanted) and the engine runs are fakes."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

import wirelab._cluster as cluster_mod
from wirelab._cluster import TrialWorker
from wirelab._engine import EventCallback, TrialEvent, TrialRun
from wirelab.errors import EngineError


class _Run(TrialRun):
    """An engine run that says two lines, then exits with ``code`` by itself or 130 on SIGINT —
    or, ``stubborn``, only on SIGKILL (137)."""

    def __init__(self, on_event: EventCallback, code: int | None, stubborn: bool = False):
        self.on_event = on_event
        self.signals: list[str] = []
        self.stubborn = stubborn
        self.trial_id = "t"
        on_event(TrialEvent("t", "ready", {"n": 1}))
        on_event(TrialEvent("t", "interval", {"n": 2}))
        if code is not None:
            threading.Timer(0.05, self._exit, (code,)).start()

    def _exit(self, code: int) -> None:
        self.on_event(TrialEvent("t", "exit", returncode=code, stderr_tail="the tail"))

    @property
    def owner_pid(self) -> int | None:
        return 4242

    def poll(self) -> int | None:
        return None

    def wait(self, timeout: float | None = None) -> int | None:
        return None

    def interrupt(self) -> None:
        self.signals.append("INT")
        if not self.stubborn:
            self._exit(130)

    def kill(self) -> None:
        self.signals.append("KILL")
        self._exit(137)


class _Engine:
    def __init__(self, gc_error: Exception | None):
        self.gc_error = gc_error
        self.gc_owners: list[int] = []

    def gc_owner(self, pid: int) -> str:
        self.gc_owners.append(pid)
        if self.gc_error is not None:
            raise self.gc_error
        return ""


def _plugin(gc_error: Exception | None = None) -> TrialWorker:
    return TrialWorker(_Engine(gc_error), {"name": "w1"}, Path("/nonexistent"))  # type: ignore[arg-type]


def test_watch_forwards_events_and_cleans_up_after_a_failed_engine():
    plugin = _plugin(EngineError("wirelab-engine gc: namespace busy"))
    forwarded: list[str] = []
    code, tail, exited = plugin.watch(
        "k", lambda on: _Run(on, 1), lambda e: forwarded.append(e.kind), lambda: False
    )
    assert (code, forwarded, plugin.engine.gc_owners) == (1, ["ready", "interval"], [4242])  # type: ignore[attr-defined]
    assert (
        tail
        == "the tail\n(the worker could not remove what the engine left: wirelab-engine gc: namespace busy)"
    )
    assert exited > 0
    # a successful engine leaves nothing to collect
    ok = _plugin()
    assert ok.watch("k", lambda on: _Run(on, 0), lambda e: None, lambda: False)[:2] == (0, "the tail")
    assert ok.engine.gc_owners == []  # type: ignore[attr-defined]


def test_a_fault_of_the_cleanup_is_raised_not_written_into_the_tail():
    plugin = _plugin(TypeError("a bug"))
    with pytest.raises(TypeError, match="a bug"):
        plugin.watch("k", lambda on: _Run(on, 1), lambda e: None, lambda: False)


def test_watch_interrupts_when_stopped_then_kills_after_the_grace(monkeypatch):
    runs: list[_Run] = []

    def start(stubborn: bool) -> Any:
        def go(on: EventCallback) -> _Run:
            runs.append(_Run(on, None, stubborn))
            return runs[-1]

        return go

    ticks: list[TrialRun] = []
    plugin = _plugin()
    code, _, _ = plugin.watch("k", start(False), lambda e: None, lambda: True, tick=ticks.append)
    assert (code, runs[0].signals) == (130, ["INT"])
    assert ticks and ticks[0] is runs[0]
    # an engine that ignores SIGINT is killed GRACE_S later; the worker's own stop flag stops it too
    monkeypatch.setattr(cluster_mod, "GRACE_S", 0.3)
    plugin = _plugin()
    plugin.stopping.set()
    code, _, _ = plugin.watch("k", start(True), lambda e: None, lambda: False)
    assert (code, runs[1].signals) == (137, ["INT", "KILL"])
