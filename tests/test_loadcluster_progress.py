"""The live progress of a cluster load test (``wirelab/_loadcluster.py``, ``_follow``/``_progress``):
each update merges only the intervals that arrived since the last (``loadmerge --from K``), so an
update costs the same at interval 5 and at interval 5,000, and a generator whose worker leaves the
scheduler is noticed at the next check while the others keep reporting.

No Dask here: the run's thread is driven with a queue of the generators' lines, a scheduler that
answers which workers are connected, and the real ``wirelab-engine loadmerge`` (no root needed)."""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from wirelab._engine import TrialEvent
from wirelab._loadcluster import LoadWorkers, _ClusterLoadtestRun

ROOT = Path(__file__).resolve().parents[1]
INTERVALS = 40
LOST_AT = 10  #: g1's worker leaves after its interval LOST_AT - 1


@pytest.fixture
def engine() -> Path:
    path = Path(os.environ.get("WIRELAB_E2E_ENGINE") or ROOT / "bin" / "wirelab-engine")
    if not os.access(path, os.X_OK):
        pytest.skip(f"no engine at {path} (make build)")
    return path


class _Scheduler:
    """The client's view of the cluster: which worker addresses are connected."""

    def __init__(self, alive: set[str]):
        self.alive = alive

    def scheduler_info(self, n_workers: int = 5) -> dict[str, Any]:
        return {"workers": {a: {} for a in set(self.alive)}}


class _Task:
    def __init__(self, finished: threading.Event):
        self.finished = finished

    def done(self) -> bool:
        return self.finished.is_set()

    def cancel(self) -> None:
        pass


def _line(k: int, part: str, pages: int) -> dict[str, Any]:
    # no histograms needed for pages without latencies: an empty one holds their 0 pages
    return {"event": "interval", "index": k, "t_start_s": k, "t_end_s": k + 1, "vus": 2, "vus_max": 2,
            "pages": 0, "pages_failed": pages, "hits": 0, "part": part}  # fmt: skip


def test_progress_merges_each_update_s_new_intervals_only_and_notices_a_lost_worker(tmp_path, engine):
    events: list[TrialEvent] = []
    run = object.__new__(_ClusterLoadtestRun)
    run.engine = SimpleNamespace(local=SimpleNamespace(path=engine))
    run.spec = {
        "protocol": "h1",
        "interval_s": 1,
        "scenario": {"stages": [{"duration_s": INTERVALS, "target": 4}]},
    }
    run.out_dir = tmp_path
    (tmp_path / "spec.json").write_text(json.dumps(run.spec))
    run.trial_id = "lt"
    run._on_event = events.append
    run._events = queue.Queue()
    run._interrupted = run._killed = False
    run.client = _Scheduler({"tcp://g0:1", "tcp://g1:1"})
    finished = threading.Event()
    w = LoadWorkers(None, [("g0", "tcp://g0:1"), ("g1", "tcp://g1:1")])

    given: list[tuple[int, int]] = []  # per loadmerge: (lines given, intervals it printed)
    merge = run._loadmerge

    def counting(files: Any, out: Any, first: int | None = None) -> str:
        lines = sum(len(Path(p).read_text().splitlines()) for p in files.values())
        printed = merge(files, out) if first is None else merge(files, out, first)
        given.append((lines, len(printed.splitlines())))
        return printed

    run._loadmerge = counting
    noticed: dict[str, float] = {}
    failed: list[BaseException] = []  # the feeder's own failure, raised again in the test's thread

    def wait_for(cond: Any, what: str) -> None:
        start = time.monotonic()
        while not cond():
            assert time.monotonic() - start < 30, what
            time.sleep(0.01)

    def g1_lost_shown() -> bool:
        return any(e.kind == "message" and "g1 lost" in e.data["text"] for e in events[:])

    def feed() -> None:
        try:
            for k in range(INTERVALS):
                if k == LOST_AT:  # once the run has shown every interval g1 reported, its worker leaves
                    wait_for(lambda: sum(e.kind == "interval" for e in events[:]) >= LOST_AT,
                             f"the first {LOST_AT} intervals were not shown")  # fmt: skip
                    run.client.alive.discard("tcp://g1:1")
                    left = time.monotonic()
                    wait_for(g1_lost_shown, "the lost worker was not noticed")
                    noticed["after_s"] = time.monotonic() - left
                for g, part in (("g0", "0/2"), ("g1", "1/2")):
                    if g == "g0" or k < LOST_AT:
                        run._events.put({"name": g, "kind": "interval", "data": _line(k, part, 1 + k % 3)})
                time.sleep(0.005)
            wait_for(run._events.empty, "the run did not take every line")
            time.sleep(0.3)
        except BaseException as e:  # an assertion in a thread fails no test: hand it over
            failed.append(e)
        finally:
            finished.set()  # the tasks end either way, so _follow returns

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    streamed: dict[str, list[str]] = {"g0": [], "g1": []}
    lost = run._follow(w, [_Task(finished), _Task(finished)], streamed)
    feeder.join(5)
    assert not feeder.is_alive(), "the feeder did not end"
    if failed:
        raise failed[0]

    assert lost == {"g1": "its worker g1 left the scheduler"}
    intervals = [e.data for e in events if e.kind == "interval"]
    assert [iv["index"] for iv in intervals] == list(range(INTERVALS))
    for iv in intervals:
        g1_lines = 1 + iv["index"] % 3 if iv["index"] < LOST_AT else 0
        assert iv["pages_failed"] == 1 + iv["index"] % 3 + g1_lines, json.dumps(iv)
        assert iv.get("degraded", False) == (iv["index"] >= LOST_AT), iv
        if iv["index"] >= LOST_AT:
            assert iv["generators_lost"] == ["g1"]
    # the work per update: the lines of the intervals it emits, never the run's so far
    assert given and all(lines <= 2 * printed for lines, printed in given), given
    assert sum(lines for lines, _ in given) <= 2 * INTERVALS
    # noticed at the next check (every POLL_S), not after merging everything reported so far
    assert noticed["after_s"] < 5, noticed
    assert not list((tmp_path / "generators").glob("*.progress.jsonl"))
    # each generator's lines so far stay on disk as they come (the run's generators/NAME.jsonl)
    kept = {g: (tmp_path / "generators" / f"{g}.jsonl").read_text().splitlines() for g in ("g0", "g1")}
    assert (len(kept["g0"]), len(kept["g1"])) == (INTERVALS, LOST_AT)
    assert [json.loads(x)["index"] for x in kept["g1"]] == list(range(LOST_AT))
