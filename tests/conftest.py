import os
import sys
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
def demo_spec() -> Path:
    return ROOT / "experiments" / "demo.toml"


@pytest.fixture(autouse=True)
def _no_engine_from_env(monkeypatch):
    """Tests choose their engine explicitly; an inherited $WIRELAB_ENGINE must not leak in."""
    if "WIRELAB_ENGINE" in os.environ and not os.environ.get("WIRELAB_TEST_KEEP_ENGINE_ENV"):
        monkeypatch.setenv("WIRELAB_E2E_ENGINE", os.environ["WIRELAB_ENGINE"])
        monkeypatch.delenv("WIRELAB_ENGINE")
