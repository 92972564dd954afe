"""Trials on a real Dask cluster on this machine (wirelab._cluster, docs/distributed.md): a LocalCluster
scheduler and two ``wirelab worker`` processes with one slot each.

The workers' engine is tests/fake_engine.py (trials replayed from fixtures, real processes, signals and
progress lines), so these tests need no namespaces; ``wirelab worker`` refuses to start without root, so
they run as root (as CI does). The last test runs the real engine and checks that a worker SIGKILLed
mid-trial leaves no namespace behind."""

import _thread
import dataclasses
import io
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import dask
import pytest
from rich.console import Console
from test_cli import run_cli

# the runner's tests' sweep (name "small") and its check; the kill test's state-file lookup
from test_kill import STATE_DIR, SWEEP, _state_of
from test_kill import engine_path as real_engine  # noqa: F401 - a fixture: the built engine (root)
from test_runner import SMALL, assert_exactly_planned

import wirelab
from wirelab import spec
from wirelab._cluster import local_cluster
from wirelab._engine import SubprocessEngine
from wirelab._progress import RichProgress
from wirelab.errors import Interrupted, UsageError

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
pytestmark = [pytest.mark.root]


@pytest.fixture(scope="module")
def fake(tmp_path_factory) -> Path:
    if os.geteuid() != 0:
        pytest.skip("wirelab worker runs as root")
    path = tmp_path_factory.mktemp("bin") / "wirelab-engine"
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{TESTS / "fake_engine.py"}" "$@"\n')
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def cluster(fake, tmp_path_factory):
    """Two workers; their engines fail every trial while ``cluster.fail`` exists."""
    fail = tmp_path_factory.mktemp("fail") / "fail"
    with local_cluster(2, slots=1, engine=fake, env={"FAKE_ENGINE_FAIL_IF": str(fail)}) as c:
        c.fail = fail  # type: ignore[attr-defined]
        yield c


@pytest.fixture
def small(tmp_path) -> Path:
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    return path


@pytest.fixture(scope="module")
def holding_cluster(fake, tmp_path_factory):
    """A cluster whose first trial (counted over both workers) holds after one load until signalled."""
    tmp = tmp_path_factory.mktemp("holding")
    env = {
        "FAKE_ENGINE_HOLD": "0:1",
        "FAKE_ENGINE_ORDER": str(tmp / "order"),
        "FAKE_ENGINE_MARKER": str(tmp / "holding"),
    }
    with local_cluster(2, slots=1, engine=fake, env=env) as c:
        yield c, tmp


@pytest.fixture
def holding(holding_cluster):
    """The holding cluster with its trial count reset: the next trial started holds. The test that
    SIGKILLs one of its workers is the last of this module to use it."""
    c, tmp = holding_cluster
    for name in ("order", "holding"):
        (tmp / name).unlink(missing_ok=True)
    assert all(p.poll() is None for p in c.procs), "a worker of the holding cluster is gone"
    return c, tmp / "holding"


def children(pids: list[int], word: str) -> list[int]:
    """Processes whose parent is one of ``pids`` and whose command line holds ``word``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid in pids and any(word.encode() in a for a in argv):
            found.append(int(proc.name))
    return found


def start_client(c, db: Path, spec_path: Path, fake: Path, **output) -> subprocess.Popen:
    """``wirelab run SPEC --cluster`` in a process of its own (so that a test can signal it)."""
    argv = ["run", str(spec_path), "--db", str(db), "--cluster", c.address, "--engine", str(fake)]
    return subprocess.Popen([sys.executable, "-m", "wirelab.cli", *argv], cwd=ROOT, text=True, **output)


def wait_for(condition, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"{what} within {timeout:.0f} s"
        time.sleep(0.02)
    return value


def test_cluster_sweep_matches_a_local_run_of_the_same_sweep(tmp_path, small, cluster, fake):
    plan = spec.load(small)
    on_cluster = wirelab.run(small, db=tmp_path / "cluster.db", cluster=cluster.address, engine=fake)
    assert on_cluster.ok and on_cluster.cluster == cluster.address and on_cluster.parallel == 2
    assert "on cluster" in on_cluster.lines()[0]
    assert_exactly_planned(tmp_path / "cluster.db", plan)
    local = wirelab.run(small, db=tmp_path / "local.db", engine=SubprocessEngine(fake))
    assert local.ok
    with wirelab.open(tmp_path / "cluster.db") as c, wirelab.open(tmp_path / "local.db") as lo:
        sweeps = (c.sweeps(), lo.sweeps())
        trials = (c.trials("small"), lo.trials("small"))
        loads = (c.loads("small"), lo.loads("small"))
        objects = (c.objects("small"), lo.objects("small"))
        artifacts = c.artifacts("small")
    # same trial ids, configuration hashes, specs and columns; only timings (and machines) differ
    assert list(sweeps[0]["spec_hash"]) == list(sweeps[1]["spec_hash"]) == [plan.spec_hash]
    assert list(trials[0]["trial_id"]) == list(trials[1]["trial_id"]) == [t.id for t in plan.trials]
    assert list(trials[0]["spec"]) == list(trials[1]["spec"])
    for ours, theirs in (trials, loads, objects):
        assert list(ours.columns) == list(theirs.columns)
    assert len(objects[0]) == len(objects[1]) and len(loads[0]) == len(loads[1]) == plan.loads
    # every trial stores its worker, both workers ran some, each described itself once
    assert set(trials[0]["worker"]) == {"local-1", "local-2"}
    described = trials[0]["provenance"][0]["worker"]
    assert described["slots"] == 1 and described["calibration"] is None  # --no-calibrate
    assert described["cores"] == os.cpu_count() and "fake" in described["engine_version"]
    assert trials[0]["provenance"][0]["control"]["cluster"] == cluster.address
    assert (artifacts["kind"] == "har").sum() == plan.loads and all(map(os.path.isfile, artifacts["abspath"]))
    # rerunning resumes: nothing is submitted, nothing stored twice
    again = wirelab.run(small, db=tmp_path / "cluster.db", cluster=cluster.address, engine=fake)
    assert again.ok and again.already_complete == 6 and not again.outcomes


def test_repeat_on_each_worker_runs_the_first_configuration_on_every_worker(tmp_path, cluster, fake):
    import hashlib

    from wirelab.analysis.sweep import load_sweep

    path = tmp_path / "small.toml"
    path.write_text(SMALL.replace('name = "small"', 'name = "small"\nrepeat_on_each_worker = 2'))
    plan = spec.load(path)
    db = tmp_path / "w.db"
    shown = io.StringIO()  # a log, not a terminal: one line per finished trial, with its worker
    progress = RichProgress(Console(file=shown, width=300, force_terminal=False))
    summary = wirelab.run(path, db=db, cluster=cluster.address, engine=fake, observer=progress)
    of = plan.trials[0]
    assert summary.ok and summary.planned_trials == len(plan.trials) + 2 * 2
    assert summary.planned_loads == plan.loads + 4 * of.loads and len(summary.completed) == 10
    # exactly the planned loads of the plan and of each worker's repeats, each once
    pinned = [t for w in ("local-1", "local-2") for t in spec.worker_repeats(of, w, 2)]
    assert_exactly_planned(db, dataclasses.replace(plan, trials=(*plan.trials, *pinned)))
    with wirelab.open(db) as results:
        every = results.trials("small", repeats=True)
        sd = load_sweep(results, "small")
    repeats = every[every["repeat_of"].notna()]
    assert (
        len(repeats) == 4 and set(repeats["repeat_of"]) == {of.id} and set(repeats["status"]) == {"complete"}
    )
    [stored] = every.loc[every["trial_id"] == of.id, "spec"]
    assert all(s | {"trial_id": of.id} == stored for s in repeats["spec"])  # the same configuration
    # each ran on the worker it was pinned to (its id names it), two on each
    for trial_id, worker in zip(repeats["trial_id"], repeats["worker"], strict=True):
        assert trial_id.split("-")[1] == "w" + hashlib.sha256(worker.encode()).hexdigest()[:8]
    assert sorted(repeats["worker"]) == ["local-1", "local-1", "local-2", "local-2"]
    lines = [line for line in shown.getvalue().splitlines() if line.lstrip().startswith("complete")]
    assert len(lines) == 10
    for trial_id, worker in zip(every["trial_id"], every["worker"], strict=True):
        [line] = [line for line in lines if f" {trial_id} " in line]
        assert line.split("  @ ")[1].split()[0] == worker
    # the report compares the baseline's ToW of that configuration across the workers
    assert set(sd.worker_loads["config"]) == {of.id} and len(sd.worker_loads) == 5 * of.loads
    from wirelab.report._build import worker_tow_sentences

    [sentence] = worker_tow_sentences(sd.worker_loads, sd.baseline)
    assert f"configuration {of.id}" in sentence and "local-1" in sentence and "local-2" in sentence
    # the sweep's own tables hold the plan alone
    with wirelab.open(db) as results:
        assert list(results.trials("small")["trial_id"]) == [t.id for t in plan.trials]
        assert len(results.loads("small")) == plan.loads
    # a rerun resumes: nothing is submitted, nothing stored twice
    again = wirelab.run(path, db=db, cluster=cluster.address, engine=fake)
    assert again.ok and again.already_complete == 10 and not again.outcomes


def test_a_trial_the_engine_fails_is_stored_as_failed_as_locally(tmp_path, small, cluster, fake):
    db = tmp_path / "w.db"
    cluster.fail.write_text("wirelab-engine: trial: server s1 did not start: address in use")
    try:
        first = wirelab.run(small, db=db, cluster=cluster.address, engine=fake)
    finally:
        cluster.fail.unlink()
    assert not first.ok and len(first.failed) == 6 and not first.completed
    assert {o.error for o in first.failed} == {"trial: server s1 did not start: address in use"}
    with wirelab.open(db) as results:
        trials = results.trials("small")
    assert set(trials["status"]) == {"failed"} and set(trials["attempts"]) == {1}
    assert set(trials["error"]) == {"trial: server s1 did not start: address in use"}
    again = wirelab.run(small, db=db, cluster=cluster.address, engine=fake)
    assert again.ok and len(again.completed) == 6
    assert_exactly_planned(db, spec.load(small))


def test_remote_artifacts_stay_on_the_worker(tmp_path, small, cluster, fake):
    summary = wirelab.run(
        small, db=tmp_path / "w.db", cluster=cluster.address, engine=fake, artifacts="remote"
    )
    assert summary.ok
    with wirelab.open(tmp_path / "w.db") as results:
        trials = results.trials("small")
        objects = results.objects("small")
    remote = [t["worker"]["remote_dir"] for t in trials["provenance"]]
    assert all(r.split(":", 1)[0] == os.uname().nodename for r in remote)
    for directory in (Path(r.split(":", 1)[1]) for r in remote):
        assert (directory / "trial.json").is_file() and (directory / "worker.json").is_file()
    assert len(objects) == (7 * 4 + 50 * 4) * 3  # HARs came back: every object is stored


def test_bad_cluster_input_is_one_line_and_creates_nothing(tmp_path, small, fake, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # --db and --keep-dir default to the working directory

    def cli(*args: str) -> tuple[int, str, str]:
        with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):  # nothing listens there
            return run_cli(capsys, *args)

    cases = [
        (["run", str(small), "--cluster", "tcp://127.0.0.1:9", "--engine", str(fake)], "--cluster"),
        (["worker", "--scheduler", "tcp://127.0.0.1:9", "--slots", "0", "--engine", str(fake)], "--slots"),
        (["worker", "--scheduler", "tcp://127.0.0.1:9", "--engine", str(tmp_path / "none")], "--engine"),
        (["worker", "--scheduler", "tcp://127.0.0.1:9", "--engine", "/bin/false"], "--engine"),
        (["worker", "--scheduler", "tcp://127.0.0.1:9", "--engine", str(fake)], "--scheduler"),
    ]
    for args, field in cases:
        code, out, err = cli(*args)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and field in lines[0], (args, err)
        assert not out.strip(), (args, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.toml"], "something was created"
    # the API's own checks come before any connection
    for kwargs, field in (({"retries": -1}, "--retries"), ({"artifacts": "nas"}, "--artifacts")):
        with pytest.raises(UsageError, match=field):
            wirelab.run(small, db=tmp_path / "w.db", cluster="tcp://127.0.0.1:9", engine=fake, **kwargs)
    assert not (tmp_path / "w.db").exists()


def test_first_use_waits_for_a_worker_and_workers_of_one_host_get_their_own_names(tmp_path, small, fake):
    """Issue 26, item 6: ``wirelab run --cluster`` started before its workers waits for the first one
    (saying so) up to --wait-workers, then refuses with one line; two ``wirelab worker`` s of one host
    without --name get names of their own (host name and process id), and a taken --name is one line,
    exit 2."""
    import platform

    from distributed import Client
    from distributed import LocalCluster as DaskLocalCluster

    def worker(*extra: str) -> list[str]:
        argv = [sys.executable, "-m", "wirelab.cli", "worker", "--scheduler", address, "--engine", str(fake)]
        return [*argv, "--no-calibrate", *extra]

    db = tmp_path / "w.db"
    run = [sys.executable, "-m", "wirelab.cli", "run", str(small), "--db", str(db), "--engine", str(fake)]
    workers: list[subprocess.Popen] = []
    with DaskLocalCluster(
        n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1", dashboard_address="127.0.0.1:0"
    ) as scheduler:
        address = scheduler.scheduler_address
        try:
            # nobody comes: refused after --wait-workers, one line naming it, nothing created
            t0 = time.monotonic()
            done = subprocess.run(
                [*run, "--cluster", address, "--wait-workers", "1"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=120,
            )
            lines = done.stderr.strip().splitlines()
            assert done.returncode == 2, done.stderr
            assert "waiting up to 1 s for a wirelab worker" in done.stderr
            assert "--wait-workers" in lines[-1] and "no wirelab worker connected" in lines[-1], lines
            assert time.monotonic() - t0 >= 1 and not db.exists()

            # the client first, its workers after it (a cluster started beside them): it waits and runs
            client = subprocess.Popen(
                [*run, "--cluster", address, "--wait-workers", "600"],  # a loaded machine starts slowly
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            try:
                waiting = client.stderr.readline()
                assert "waiting up to 600 s for a wirelab worker" in waiting, waiting
                for i in (1, 2):
                    workers.append(
                        subprocess.Popen(
                            worker("--keep-dir", str(tmp_path / f"keep{i}")),
                            cwd=ROOT,
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL,
                        )
                    )
                out, err = client.communicate(timeout=600)
            finally:
                if client.poll() is None:
                    client.kill()
            assert client.returncode == 0, err
            assert_exactly_planned(db, spec.load(small))

            with Client(address, set_as_default=False) as c:
                names = [w["name"] for w in c.scheduler_info(n_workers=-1)["workers"].values()]
            assert len(names) == 2 and len(set(names)) == 2, names
            assert all(str(n).startswith(platform.node() + "-") for n in names), names

            # a third worker asking for a taken name: one line, exit 2, before any calibration
            done = subprocess.run(
                worker("--name", str(names[0]), "--keep-dir", str(tmp_path / "keep3")),
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
            assert "--name" in done.stderr and "already connected" in done.stderr, done.stderr
            assert not (tmp_path / "keep3").exists()
        finally:
            for w in workers:
                w.send_signal(signal.SIGTERM)
            for w in workers:
                try:
                    w.wait(60)
                except subprocess.TimeoutExpired:
                    w.kill()


def test_cluster_up_serves_a_scheduler_until_sigterm(tmp_path):
    argv = [sys.executable, "-m", "wirelab.cli", "cluster", "up", "--port", "0"]
    up = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = up.stdout.readline()
        assert line.startswith("scheduler tcp://127.0.0.1:"), line
        from distributed import Client

        with Client(line.split()[1], timeout=30, set_as_default=False) as client:
            assert client.scheduler_info()["workers"] == {}
        up.send_signal(signal.SIGTERM)
        assert up.wait(60) == 0
    finally:
        if up.poll() is None:
            up.kill()
    # a port in use: one line, exit 2
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*argv[:-1], str(port)], cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--port" in done.stderr, done.stderr


def test_ctrl_c_of_the_client_then_a_rerun_gives_exactly_the_planned_loads(tmp_path, small, holding, fake):
    c, marker = holding
    db = tmp_path / "w.db"
    client = start_client(c, db, small, fake, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_for(marker.exists, "a trial holding on a worker")
        client.send_signal(signal.SIGINT)
        output, _ = client.communicate(timeout=120)
    finally:
        if client.poll() is None:
            client.kill()
    assert client.returncode == 130, output
    assert "interrupted" in output
    worker_pids = [p.pid for p in c.procs]
    # the workers ended the run's trials: no engine is left running
    wait_for(lambda: not children(worker_pids, "fake_engine.py"), "engines gone", timeout=30)
    with wirelab.open(db) as results:
        statuses = set(results.trials("small")["status"])
    assert "running" not in statuses and "interrupted" in statuses
    rerun = wirelab.run(small, db=db, cluster=c.address, engine=fake)
    assert rerun.ok
    assert_exactly_planned(db, spec.load(small))


def test_a_client_killed_mid_run_leaves_no_trial_running_then_a_rerun_completes(
    tmp_path, small, holding, fake
):
    c, marker = holding
    db = tmp_path / "w.db"
    client = start_client(c, db, small, fake, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(marker.exists, "a trial holding on a worker")
        client.kill()
        client.wait(30)
    finally:
        if client.poll() is None:
            client.kill()
    # the scheduler released the dead client's tasks; the workers stopped the trials nobody wants
    wait_for(lambda: not children([p.pid for p in c.procs], "fake_engine.py"), "engines gone", timeout=60)
    assert wirelab.run(small, db=db, cluster=c.address, engine=fake).ok
    assert_exactly_planned(db, spec.load(small))


def test_interrupted_in_python_raises_with_a_summary(tmp_path, small, holding, fake):
    c, marker = holding

    def interrupt() -> None:
        wait_for(marker.exists, "a trial holding on a worker")
        _thread.interrupt_main()

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(Interrupted) as stopped:
        wirelab.run(small, db=tmp_path / "w.db", cluster=c.address, engine=fake)
    summary = stopped.value.summary
    assert summary.interrupted and summary.cluster == c.address


def test_a_worker_killed_mid_trial_is_replaced_by_the_other(tmp_path, small, holding, fake):
    c, marker = holding
    db = tmp_path / "w.db"
    messages: list[str] = []

    class Watch(wirelab.runner.Observer):
        def message(self, text: str) -> None:
            messages.append(text)

    def kill_the_holding_worker() -> None:
        wait_for(marker.exists, "a trial holding on a worker")
        engine = int(marker.read_text())  # the holding engine: its worker is the one to kill
        parent = int(Path(f"/proc/{engine}/stat").read_text().rsplit(")", 1)[1].split()[1])
        assert parent in [p.pid for p in c.procs]
        os.kill(parent, signal.SIGKILL)
        killed.append(parent)

    killed: list[int] = []
    thread = threading.Thread(target=kill_the_holding_worker, daemon=True)
    thread.start()
    summary = wirelab.run(small, db=db, cluster=c.address, engine=fake, observer=Watch())
    thread.join(5)
    assert killed and summary.ok, summary.lines()
    assert_exactly_planned(db, spec.load(small))
    assert any("was lost mid-trial; attempt 2 of 3" in m for m in messages), messages
    with wirelab.open(db) as results:
        trials = results.trials("small")
    survivor = ({"local-1", "local-2"} - {c.names[[p.pid for p in c.procs].index(killed[0])]}).pop()
    retried = trials[trials["attempts"] == 2]
    assert len(retried) == 1 and list(retried["worker"]) == [survivor]
    # the killed worker's engine got SIGTERM from the kernel and ended
    wait_for(lambda: not children(killed, "fake_engine.py"), "the killed worker's engine gone", timeout=30)


def assert_removed(state: dict) -> None:
    """Nothing of the engine run ``state`` is left: its state file, namespaces, private directory."""
    wait_for(lambda: not (STATE_DIR / f"{state['id']}.json").exists(), "the killed run's state file gone", 30)
    for name in state["namespaces"]:
        assert not Path("/run/netns", name).exists(), f"namespace {name} left"
    tmp = Path(os.environ.get("TMPDIR") or "/tmp")
    assert not (tmp / f"wirelab-trial-{state['id']}").exists(), "private directory left"


def test_real_engine_killed_on_a_worker_or_with_it_leaves_nothing(tmp_path, real_engine):  # noqa: F811
    """The real engine, three kinds of stop on a worker. (1) The engine is SIGKILLed under a live
    worker: the worker removes its leftovers itself (gc --owner) and the trial is stored as failed, as
    locally. (2) On the rerun, Ctrl-C of the client: the worker interrupts its trial, whose engine
    removes its namespaces; stored as interrupted. (3) On the next rerun, the worker running the trial
    is SIGKILLed: its engine gets SIGTERM from the kernel and removes its namespaces; the trial runs
    again on the other worker. Exactly the planned loads, nothing left, no manual gc."""
    path = tmp_path / "sweep.toml"
    # six loads a trial: long enough that Ctrl-C reaches the worker before the trial ends
    path.write_text(
        SWEEP.replace('name = "kill"', 'name = "small"').replace("repetitions = 1", "repetitions = 6")
    )
    db = tmp_path / "w.db"
    with local_cluster(2, slots=1, engine=real_engine) as c:
        states: list[dict] = []

        def kill_a_trial(target: str) -> None:
            def running() -> dict | None:
                for pid in children([p.pid for p in c.procs], "trial"):
                    state = _state_of(pid)
                    if state is not None and state.get("namespaces"):
                        return state
                return None

            state = wait_for(running, "a trial engine with namespaces", timeout=120)
            worker = int(Path(f"/proc/{state['pid']}/stat").read_text().rsplit(")", 1)[1].split()[1])
            states.append(state)
            if target == "client":
                _thread.interrupt_main()  # Ctrl-C
            else:
                os.kill(state["pid"] if target == "engine" else worker, signal.SIGKILL)

        for target in ("engine", "client", "worker"):
            thread = threading.Thread(target=kill_a_trial, args=(target,), daemon=True)
            thread.start()
            if target == "client":
                with pytest.raises(Interrupted) as stopped:
                    wirelab.run(path, db=db, cluster=c.address, engine=real_engine)
                summary = stopped.value.summary
                assert [o.status for o in summary.outcomes] == ["interrupted"], summary.lines()
                assert_removed(states[1])
                continue
            summary = wirelab.run(path, db=db, cluster=c.address, engine=real_engine)
            thread.join(5)
            if target == "engine":
                assert len(states) == 1 and len(summary.failed) == 1, summary.lines()
                assert summary.failed[0].error.startswith("the engine was killed by signal 9")
                assert_removed(states[0])
    assert len(states) == 3 and summary.ok, summary.lines()
    assert_exactly_planned(db, spec.load(path))
    assert_removed(states[2])
