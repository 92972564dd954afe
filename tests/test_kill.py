"""The kill test (root, docs/bad-input.md "Hard stops leave nothing"): SIGKILL the engine under a live
``wirelab run``; the runner removes that trial's namespaces, state file, /etc/netns entries and
private directory itself (``gc --owner``), goes on with the next trial, and nothing is left without a
manual ``wirelab-engine gc``."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from cli_process import cli_argv

from wirelab._engine import SubprocessEngine
from wirelab.errors import EngineNotFoundError

ROOT = Path(__file__).resolve().parent.parent
STATE_DIR = Path("/run/wirelab")
pytestmark = [pytest.mark.root]

SWEEP = """
[sweep]
name = "kill"
[base]
page = "twitter"
protocols = ["h2"]
repetitions = 1
network = { bw = "10mbit" }
[grid]
"network.rtt" = ["10ms", "20ms"]
"""


@pytest.fixture
def engine_path() -> Path:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces)")
    try:
        engine = SubprocessEngine(os.environ.get("WIRELAB_E2E_ENGINE") or ROOT / "bin" / "wirelab-engine")
    except EngineNotFoundError as e:
        pytest.skip(f"no engine: {e}")
    return engine.path


def _trial_engines(results: Path) -> list[int]:
    """Pids of `wirelab-engine trial` processes writing under ``results``."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if len(argv) > 1 and argv[1] == b"trial" and any(str(results).encode() in a for a in argv):
            pids.append(int(proc.name))
    return pids


def _state_of(pid: int) -> dict | None:
    for path in STATE_DIR.glob("*.json"):
        try:
            state = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if state.get("pid") == pid:
            return state
    return None


def test_engine_killed_under_runner_leaves_nothing(tmp_path, engine_path):
    db, results, argv = _sweep(tmp_path, engine_path)
    run = _spawn_run(argv)
    try:
        # the first trial's engine, once its run exists (state file written, namespaces made)
        deadline = time.monotonic() + 120
        state = None
        while state is None or not state.get("namespaces"):
            assert run.poll() is None, run.stdout.read() if run.stdout else run.returncode
            assert time.monotonic() < deadline, "no trial engine with a state file within 120 s"
            pids = _trial_engines(results)
            state = _state_of(pids[0]) if pids else None
            time.sleep(0.02)
        victim = state["pid"]
        os.kill(victim, signal.SIGKILL)
        output, _ = run.communicate(timeout=600)
    finally:
        if run.poll() is None:
            run.kill()
    # the sweep went on: the other trial completed, the killed one is reported failed
    assert "1/2 trials complete" in output and "killed by signal 9" in output, output
    # nothing of the killed run is left, and no manual gc ran
    assert not (STATE_DIR / f"{state['id']}.json").exists()
    for name in state["namespaces"]:
        assert not Path("/run/netns", name).exists(), f"namespace {name} left"
    for d in state.get("etc_dirs") or []:
        assert not Path(d).exists(), f"{d} left"
    tmp = Path(os.environ.get("TMPDIR") or "/tmp")
    assert not (tmp / f"wirelab-trial-{state['id']}").exists(), "private directory left"
    assert _state_of(victim) is None


def _sweep(tmp_path: Path, engine_path: Path) -> tuple[Path, Path, list[str]]:
    """SWEEP written under ``tmp_path``: its database, its results directory and the ``wirelab run``
    arguments that run it with ``engine_path``."""
    spec = tmp_path / "kill.toml"
    spec.write_text(SWEEP)
    db = tmp_path / "w.db"
    return db, tmp_path / "w.db.d" / "kill", ["run", str(spec), "--db", str(db), "--engine", str(engine_path)]


def _spawn_run(argv: list[str]) -> subprocess.Popen[str]:
    """``wirelab ARGV…`` in a process of its own, standard error in its standard output."""
    return subprocess.Popen(
        cli_argv(*argv),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _left(state: dict) -> list[str]:
    """What of the run ``state`` describes still exists: its state file, namespaces, /etc/netns entries,
    control groups and private directories (its TLS key among them)."""
    paths = [
        STATE_DIR / f"{state['id']}.json",
        *(Path("/run/netns", n) for n in state.get("namespaces") or []),
        *(Path(d) for d in state.get("etc_dirs") or []),
        *(Path(d) for d in state.get("cgroups") or []),
        *(Path(d) for d in state.get("dirs") or []),
    ]
    return [str(p) for p in paths if p.exists()]


def test_runner_and_engine_killed_together_then_gc_then_rerun(tmp_path, engine_path):
    """Issue 26 (docs/bad-input.md "Hard stops leave nothing"): SIGKILL the runner and its trial's engine
    at once — nobody is left to clean up. ``wirelab-engine gc`` then removes every namespace, the state
    file, the /etc/netns entries, the server's control group and the lab's directory with its TLS key;
    a rerun marks the trial left ``running`` interrupted and runs it again, and the sweep ends with
    exactly its planned loads."""
    import sqlite3

    db, results, argv = _sweep(tmp_path, engine_path)
    run = _spawn_run(argv)
    try:
        # the first trial's engine once its lab is up: namespaces, its private directory and (where the
        # machine has a hierarchy) the server's control group recorded in its state and made
        deadline = time.monotonic() + 120
        state: dict | None = None
        lab_up = time.monotonic()
        while True:
            assert run.poll() is None, run.stdout.read() if run.stdout else run.returncode
            assert time.monotonic() < deadline, "no trial engine with a lab within 120 s"
            pids = _trial_engines(results)
            state = _state_of(pids[0]) if pids else None
            if state is not None and state.get("namespaces") and state.get("dirs"):
                if state.get("cgroups") or time.monotonic() > lab_up + 20:
                    break  # (no control group within 20 s: this machine has no hierarchy)
            else:
                lab_up = time.monotonic()
            time.sleep(0.02)
        before = _left(state)
        assert len(before) >= 4, f"the run's objects should exist before the kill: {before}"
        os.kill(run.pid, signal.SIGKILL)
        os.kill(state["pid"], signal.SIGKILL)
        run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    # the engine's children (server, DNS) may outlive it for a moment; gc removes what has no owner
    deadline = time.monotonic() + 30
    while True:
        done = subprocess.run([str(engine_path), "gc"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        if not _left(state) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert _left(state) == [], f"gc left {_left(state)}"
    tmp = Path(os.environ.get("TMPDIR") or "/tmp")
    assert not (tmp / f"wirelab-trial-{state['id']}").exists(), "private directory left"
    conn = sqlite3.connect(db)
    killed = conn.execute("SELECT trial_id FROM trials WHERE status = 'running'").fetchall()
    conn.close()
    assert len(killed) == 1, killed

    rerun = _spawn_run(argv)
    output, _ = rerun.communicate(timeout=900)
    assert rerun.returncode == 0, output
    assert "marked interrupted, run again" in output and killed[0][0] in output, output
    assert "2/2 trials complete" in output, output
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT t.trial_id, t.status, t.attempts, t.loads_planned, COUNT(l.id) FROM trials t"
            " LEFT JOIN loads l ON l.trial_row = t.id GROUP BY t.id ORDER BY t.idx"
        ).fetchall()
    finally:
        conn.close()
    assert [r[1] for r in rows] == ["complete", "complete"], rows
    assert all(r[3] == r[4] for r in rows), f"not exactly the planned loads: {rows}"
    assert {r[0]: r[2] for r in rows}[killed[0][0]] == 2, rows
    assert not list(STATE_DIR.glob(f"{state['id']}*")), "the killed run's state file is back"
