"""End to end with the real engine (root): a tiny sweep, SIGKILLed mid-way, resumed; exactly the planned
loads and no wirelab namespace left. Skipped without root, and while the engine has no `trial` command."""

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wirelab import spec

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.root, pytest.mark.slow]

TINY = """
[sweep]
name = "e2e"
[base]
page = "twitter"
protocols = ["h1s", "h2"]
repetitions = 2
network = { bw = "10mbit" }
[grid]
"network.rtt" = ["10ms", "40ms", "80ms"]
"""


@pytest.fixture
def engine_path(real_engine) -> Path:
    return real_engine("trial")


def _namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith("wirelab-")]


def _leftover(before: set[str], mine: Path) -> set[str]:
    """The namespaces created since ``before`` that are this test's: their run's state file names a
    command under ``mine``, or there is no state file (a namespace no run accounts for is a leak
    whoever made it). Other engineers' runs on a shared machine are not counted."""
    out = set()
    for ns in set(_namespaces()) - before:
        run_id = ns.split("-")[1]
        try:
            state = json.loads(Path(f"/run/wirelab/{run_id}.json").read_text())
        except (OSError, ValueError):
            if Path("/run/netns", ns).exists():  # else: gone meanwhile, its run ended (state file last)
                out.add(ns)
            continue
        if any(str(mine) in part for part in state.get("command") or []):
            out.add(ns)
    return out


def _engine_pids(results: Path) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(str(results).encode() in part for part in cmdline) and b"trial" in cmdline:
            pids.append(int(proc.name))
    return pids


def _loads(db: Path) -> list[tuple]:
    if not db.exists():
        return []
    with sqlite3.connect(db, timeout=30) as c:
        try:
            return c.execute(
                "SELECT t.trial_id, l.load_index FROM loads l JOIN trials t ON t.id = l.trial_row"
            ).fetchall()
        except sqlite3.OperationalError as e:  # the run has created the file, not yet its tables
            if "no such table" in str(e):
                return []
            raise


def _wirelab(*args: str) -> list[str]:
    return [sys.executable, "-m", "wirelab.cli", *args]


def test_tiny_sweep_killed_and_resumed(tmp_path, engine_path):
    spec_path = tmp_path / "e2e.toml"
    spec_path.write_text(TINY)
    plan = spec.load(spec_path)
    db = tmp_path / "w.db"
    results = tmp_path / "w.db.d" / "e2e"
    before = set(_namespaces())
    argv = _wirelab("run", str(spec_path), "--db", str(db), "--engine", str(engine_path))

    first = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # wait until one trial is stored and the next has written at least one load: mid-way
    deadline = time.monotonic() + 300
    while True:
        stored = {r[0] for r in _loads(db)}
        in_flight = [
            d
            for d in (results.iterdir() if results.exists() else [])
            if d.name not in stored
            and (d / "loads.jsonl").exists()
            and (d / "loads.jsonl").read_text().strip()
        ]
        if stored and in_flight:
            break
        assert first.poll() is None, first.stdout.read() if first.stdout else first.returncode
        assert time.monotonic() < deadline, "the sweep did not get mid-way within 300 s"
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.wait()

    # the killed run's engine gets SIGTERM from the kernel (parent-death signal) and cleans up
    deadline = time.monotonic() + 60
    while _engine_pids(results):
        assert time.monotonic() < deadline, "the engine outlived its killed parent"
        time.sleep(0.05)
    assert len(_loads(db)) < plan.loads

    second = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert second.returncode == 0, second.stdout + second.stderr
    rows = _loads(db)
    assert len(rows) == plan.loads and len(set(rows)) == len(rows)
    assert _leftover(before, tmp_path) == set()
