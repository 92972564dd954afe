"""The kill test (root, docs/bad-input.md "Hard stops leave nothing"): SIGKILL the engine under a live
``wirelab run``; the runner removes that trial's namespaces, state file, /etc/netns entries and
private directory itself (``gc --owner``), goes on with the next trial, and nothing is left without a
manual ``wirelab-engine gc``."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

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
    spec = tmp_path / "kill.toml"
    spec.write_text(SWEEP)
    db = tmp_path / "w.db"
    results = tmp_path / "w.db.d" / "kill"
    argv = ["run", str(spec), "--db", str(db), "--engine", str(engine_path)]
    run = subprocess.Popen(
        [sys.executable, "-m", "wirelab.cli", *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
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
