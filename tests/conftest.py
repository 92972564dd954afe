import fcntl
import os
import shutil
import socket
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


@pytest.fixture
def fake_engine(tmp_path) -> Path:
    """An executable `wirelab-engine` stand-in (tests/fake_engine.py) for SubprocessEngine tests."""
    path = tmp_path / "bin" / "wirelab-engine"
    path.parent.mkdir()
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{TESTS / "fake_engine.py"}" "$@"\n')
    path.chmod(0o755)
    return path


@pytest.fixture
def real_engine() -> Callable[[str], Path]:
    """The real engine of a root end-to-end test, asked for a command it must have: the test is skipped
    without root, without an engine ($WIRELAB_E2E_ENGINE, else bin/wirelab-engine) and while the engine
    has no such command."""

    def get(command: str) -> Path:
        from wirelab._engine import SubprocessEngine
        from wirelab.errors import EngineNotFoundError

        if os.geteuid() != 0:
            pytest.skip("needs root (network namespaces)")
        candidate = os.environ.get("WIRELAB_E2E_ENGINE") or str(ROOT / "bin" / "wirelab-engine")
        try:
            engine = SubprocessEngine(candidate)
        except EngineNotFoundError as e:
            pytest.skip(f"no engine: {e}")
        if command not in engine.commands():
            pytest.skip(f"{engine.path} has no `{command}` command yet ({engine.version()})")
        return engine.path

    return get


@pytest.fixture
def fixture_engine(monkeypatch):
    """The command line's engine is a wirelab.testing.FixtureEngine (recorded trials replayed), returned."""
    import wirelab.cli as cli
    from wirelab.testing import FixtureEngine

    engine = FixtureEngine()
    monkeypatch.setattr(cli, "_engine", lambda path: engine)
    return engine


@pytest.fixture
def demo_spec() -> Path:
    return ROOT / "experiments" / "demo.toml"


@pytest.fixture(autouse=True)
def _no_engine_from_env(monkeypatch):
    """Tests choose their engine explicitly; an inherited $WIRELAB_ENGINE must not leak in."""
    if "WIRELAB_ENGINE" in os.environ and not os.environ.get("WIRELAB_TEST_KEEP_ENGINE_ENV"):
        monkeypatch.setenv("WIRELAB_E2E_ENGINE", os.environ["WIRELAB_ENGINE"])
        monkeypatch.delenv("WIRELAB_ENGINE")


def no_route_off() -> bool:
    """Whether this process's network namespace has no route off the machine: only loopback."""
    return all(name == "lo" for _, name in socket.if_nameindex())


@pytest.fixture
def off_machine() -> None:
    """For a test that gives a guard a target off the machine (a public name, a documentation
    address): it runs only where no route leads off the machine — `make test` runs every test in a
    network namespace holding only a loopback device — so that even a broken guard cannot send a
    packet anywhere (engine/internal/offmachine is the engine's side)."""
    if not no_route_off():
        pytest.skip(
            "gives a guard a target off the machine: runs only in a network namespace with no route "
            "off the machine (make test runs every test in one)"
        )


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """A directory that ``build`` fills once per test session, shared by the pytest-xdist workers: the
    first worker to ask builds it while the others wait on a lock, then they all read the same files.
    Outside xdist, a fresh directory built here. Its users must only read it (a module-scoped fixture
    of expensive data: test_report's sweeps and report)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        here = tmp_path_factory.mktemp(name)
        build(here)
        return here
    session = tmp_path_factory.getbasetemp().parent  # the workers' basetemps are popen-gwN in it
    shared = session / f"built-once-{name}"
    with open(session / f"built-once-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / ".built").exists():
            shutil.rmtree(shared, ignore_errors=True)  # what a failed build left: built again
            shared.mkdir()
            build(shared)
            (shared / ".built").touch()
    return shared
