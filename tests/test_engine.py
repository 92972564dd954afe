"""SubprocessEngine against a stand-in executable (tests/fake_engine.py): finding the engine, commands,
trial processes with progress lines, signals and exit codes; and FixtureEngine's contract."""

import json
import os
import queue
import subprocess
import time
from pathlib import Path

import pytest

from wirelab import _contract as contract
from wirelab import _facts, spec
from wirelab._engine import STDERR_FILE, SubprocessEngine, find_engine
from wirelab.errors import EngineNotFoundError, UsageError
from wirelab.testing import FIXTURES_DIR, FixtureEngine, FixtureFailure

SPEC = spec.resolve_trial(
    {"page": "twitter", "protocols": ["h1s", "h2"], "repetitions": 2, "network": "cable"}
)


def wait_for_file(path: Path, timeout: float = 30.0) -> None:
    """Wait until the stand-in engine touches ``path`` (readiness by file, never by a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear within {timeout} s"
        time.sleep(0.01)


def _collect(run, events, timeout=30):
    got = []
    while True:
        ev = events.get(timeout=timeout)
        got.append(ev)
        if ev.kind == "exit":
            return got


def test_find_engine_order(tmp_path, fake_engine, monkeypatch):
    other = tmp_path / "other-engine"
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    monkeypatch.setenv("WIRELAB_ENGINE", str(other))
    assert find_engine(fake_engine) == fake_engine.resolve()  # --engine wins
    assert find_engine() == other.resolve()  # then $WIRELAB_ENGINE
    monkeypatch.setenv("WIRELAB_ENGINE", str(tmp_path / "missing"))
    with pytest.raises(EngineNotFoundError, match=r"\$WIRELAB_ENGINE: .*missing is not an executable"):
        find_engine()
    monkeypatch.delenv("WIRELAB_ENGINE")
    monkeypatch.setattr("wirelab._engine.repo_engine", lambda: tmp_path / "no-bin" / "wirelab-engine")
    monkeypatch.setenv("PATH", str(fake_engine.parent))
    assert find_engine() == fake_engine.resolve()  # PATH last
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(EngineNotFoundError, match="make build"):
        find_engine()


def test_commands_version_and_missing_trial(fake_engine, monkeypatch):
    engine = SubprocessEngine(fake_engine)
    assert {"trial", "pages", "gc", "shell"} <= engine.commands()
    assert engine.version() == "0.0.0-fake (tests/fake_engine.py)"
    monkeypatch.setenv("FAKE_ENGINE_COMMANDS", "version")
    old = SubprocessEngine(fake_engine)
    with pytest.raises(EngineNotFoundError, match="has no `trial` command"):
        old.require("trial")


@pytest.mark.clock
def test_trial_runs_in_its_own_process_group_with_progress(fake_engine, tmp_path):
    engine = SubprocessEngine(fake_engine)
    events: queue.Queue = queue.Queue()
    run = engine.start_trial(SPEC, tmp_path / "t", events.put)
    assert os.getpgid(run.pid) == run.pid != os.getpgid(0)
    got = _collect(run, events)
    kinds = [e.kind for e in got]
    assert kinds == ["ready", "load", "load", "load", "load", "done", "exit"]
    assert [e.data["protocol"] for e in got if e.kind == "load"] == ["h1s", "h2", "h1s", "h2"]
    assert got[-1].returncode == 0 and run.wait(1) == 0
    trial = json.loads((tmp_path / "t" / "trial.json").read_text())
    contract.validate("trial-result", trial)
    assert json.loads((tmp_path / "t" / "spec.json").read_text()) == SPEC
    assert (tmp_path / "t" / STDERR_FILE).exists()


@pytest.mark.clock
def test_interrupt_sends_sigint_to_the_group(fake_engine, tmp_path, monkeypatch):
    marker = tmp_path / "held"
    monkeypatch.setenv("FAKE_ENGINE_HOLD", "0:1")
    monkeypatch.setenv("FAKE_ENGINE_MARKER", str(marker))
    engine = SubprocessEngine(fake_engine)
    events: queue.Queue = queue.Queue()
    run = engine.start_trial(SPEC, tmp_path / "t", events.put)
    wait_for_file(marker)
    run.interrupt()
    got = _collect(run, events)
    assert got[-1].returncode == 130
    assert "interrupted" in got[-1].stderr_tail
    assert not (tmp_path / "t" / "trial.json").exists()


@pytest.mark.serial
def test_kill_when_sigint_is_ignored(fake_engine, tmp_path, monkeypatch):
    marker = tmp_path / "held"
    monkeypatch.setenv("FAKE_ENGINE_HOLD", "0:1")
    monkeypatch.setenv("FAKE_ENGINE_MARKER", str(marker))
    monkeypatch.setenv("FAKE_ENGINE_IGNORE_SIGINT", "1")
    engine = SubprocessEngine(fake_engine)
    events: queue.Queue = queue.Queue()
    run = engine.start_trial(SPEC, tmp_path / "t", events.put)
    wait_for_file(marker)
    run.interrupt()
    assert run.wait(0.5) is None  # SIGINT ignored: still running
    run.kill()
    assert run.wait(30) == -9


def test_pages_and_gc_and_shell_argv(fake_engine):
    engine = SubprocessEngine(fake_engine)
    names = [p["name"] for p in engine.pages_ls()]
    assert names == ["flags", "imgur", "neoload50", "nytimes", "twitter", "unh100", "youtube"]
    assert len(engine.pages_show("twitter")["objects"]) == 7
    with pytest.raises(UsageError, match="'nope' is not a page"):
        engine.pages_show("nope")
    assert "removed 0" in engine.gc()
    assert engine.shell_argv(["--net", "cable", "--", "true"]) == [
        str(fake_engine.resolve()),
        "shell",
        "--net",
        "cable",
        "--",
        "true",
    ]


# FixtureEngine: the double itself must keep the contract, or the tests built on it prove nothing


def test_fixtures_follow_the_contract():
    root = FIXTURES_DIR / "trials"
    dirs = sorted(root.iterdir())
    assert [d.name for d in dirs] == ["live-h3", "live-slow", "twitter", "youtube"]
    for d in dirs:
        contract.validate("trial-result", json.loads((d / "trial.json").read_text()))
        lines = (d / "loads.jsonl").read_text().splitlines()
        for line in lines:
            rec = json.loads(line)
            contract.validate("load-record", rec)
            har = json.loads((d / rec["har"]).read_text())
            assert len(har["log"]["entries"]) == rec["objects"]
            assert sum(e["response"]["bodySize"] for e in har["log"]["entries"]) == rec["body_bytes"]
            assert rec["tow_ms"] <= rec["plt_ms"] + 1


@pytest.mark.clock
def test_fixture_engine_replays_the_spec(tmp_path):
    events: queue.Queue = queue.Queue()
    s = spec.resolve_trial(
        {"page": "youtube", "protocols": ["h2", "h1s"], "repetitions": 3, "order": "random"}
    )
    run = FixtureEngine().start_trial(s, tmp_path / "t", events.put)
    assert _collect(run, events)[-1].returncode == 0
    trial = json.loads((tmp_path / "t" / "trial.json").read_text())
    contract.validate("trial-result", trial)
    assert {k: v for k, v in trial["spec"].items() if k != "network_resolved"} == s
    records = [json.loads(x) for x in (tmp_path / "t" / "loads.jsonl").read_text().splitlines()]
    assert sorted((r["protocol"], r["repetition"]) for r in records) == sorted(
        (p, r) for p in ("h2", "h1s") for r in range(3)
    )
    assert [r["index"] for r in records] == list(range(6))
    for r in records:
        contract.validate("load-record", r)
        assert (tmp_path / "t" / r["har"]).is_file()


@pytest.mark.clock
@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"page": "imgur"}, "has no recording"),
        ({"page": "twitter", "protocols": ["h3"]}, "has no h3 loads"),
    ],
)
def test_fixture_engine_refuses_what_it_cannot_replay(tmp_path, fields, message):
    events: queue.Queue = queue.Queue()
    run = FixtureEngine().start_trial(spec.resolve_trial(fields), tmp_path / "t", events.put)
    last = _collect(run, events)[-1]
    assert last.returncode == 2 and message in last.stderr_tail


@pytest.mark.clock
def test_fixture_engine_failure_hook(tmp_path):
    events: queue.Queue = queue.Queue()
    engine = FixtureEngine(fail=lambda s: FixtureFailure(after_loads=1))
    run = engine.start_trial(SPEC, tmp_path / "t", events.put)
    got = _collect(run, events)
    assert got[-1].returncode == 1 and "did not start" in got[-1].stderr_tail
    assert len((tmp_path / "t" / "loads.jsonl").read_text().splitlines()) == 1
    assert not (tmp_path / "t" / "trial.json").exists()


def test_real_engine_pages_contract():
    """The control plane's reading of ``pages ls`` / ``pages show`` against the real engine binary."""
    path = os.environ.get("WIRELAB_E2E_ENGINE")  # conftest moves make test's $WIRELAB_ENGINE here
    if not path or not Path(path).is_file():
        pytest.skip("$WIRELAB_ENGINE does not name a built engine (make test sets it)")
    engine = SubprocessEngine(path)
    pages = {p["name"]: p for p in engine.pages_ls()}
    assert {"twitter", "youtube", "imgur", "nytimes", "flags", "neoload50", "unh100"} <= set(pages)
    assert pages["twitter"]["objects"] == 7
    assert pages["twitter"]["total_bytes"] == 7 * 46_400
    page = engine.pages_show("twitter")
    assert len(page["objects"]) == 7 and sum(o["size"] for o in page["objects"]) == 7 * 46_400
    with pytest.raises(UsageError):
        engine.pages_show("no-such-page")
    # The control plane's facts (wirelab/_engine_facts.json) are what this engine says.
    facts = json.loads(subprocess.run([path, "facts"], capture_output=True, text=True, check=True).stdout)
    assert facts == _facts.engine_facts()
    for name, known in _facts.corpus().items():
        assert (pages[name]["objects"], pages[name]["total_bytes"]) == (known.objects, known.total_bytes)
        for mode, origins in known.shard_origins.items():
            out = subprocess.run(
                [path, "pages", "show", name, "--shards", "0", "--shard-mode", mode],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            assert len(json.loads(out)["origins"]) == origins, (name, mode)


def test_real_engine_pages_bring_in(tmp_path):
    """``wirelab pages mirror`` / ``import-har`` through the real engine: valid pages written."""
    path = os.environ.get("WIRELAB_E2E_ENGINE")
    if not path or not Path(path).is_file():
        pytest.skip("$WIRELAB_ENGINE does not name a built engine (make test sets it)")
    engine = SubprocessEngine(path)
    root = Path(__file__).resolve().parent.parent
    site = root / "engine" / "page" / "testdata" / "mirror-site"
    out = tmp_path / "mirror.json"
    report = engine.pages_bring_in("mirror", [str(site), "--out", str(out)])
    page = json.loads(out.read_text())
    assert "9 objects" in report and page["root_dir"] == str(site)
    assert {o["file"] for o in page["objects"]} >= {"index.html", "static/css/site.css", "img/photo.jpg"}
    har = root / "engine" / "browser" / "testdata" / "twitter-chromium-h2.har"
    out = tmp_path / "imported.json"
    engine.pages_bring_in("import-har", [str(har), "--out", str(out), "--name", "tw"])
    page = json.loads(out.read_text())
    assert page["name"] == "tw" and sum(o["size"] for o in page["objects"]) == 7 * 46_400
    assert {a["kind"] for a in page["activities"]} == {"download", "parse", "evaluate"}
    with pytest.raises(UsageError):
        engine.pages_bring_in("import-har", [str(tmp_path / "missing.har"), "--out", str(out)])
