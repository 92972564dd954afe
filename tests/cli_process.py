"""The `wirelab` command line in a process of its own, for tests that signal it (Ctrl-C) or kill what it
started mid-run: started from the repository (``python -m wirelab.cli``), killed if a test leaves it
running."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cli_argv(*args: str) -> list[str]:
    """The command line of ``wirelab ARGS…`` with this interpreter."""
    return [sys.executable, "-m", "wirelab.cli", *args]


@contextlib.contextmanager
def cli_process(*args: str, **popen) -> Iterator[subprocess.Popen[str]]:
    """``wirelab ARGS…`` running in the repository, text standard output piped (``popen``: other
    Popen arguments — ``stderr``, ``env``); killed on leaving the block if it still runs."""
    proc = subprocess.Popen(cli_argv(*args), cwd=ROOT, stdout=subprocess.PIPE, text=True, **popen)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()


def ctrl_c(proc: subprocess.Popen[str], timeout: float) -> tuple[str, str]:
    """SIGINT to ``proc`` as Ctrl-C sends it; its standard output and error once it has ended."""
    proc.send_signal(signal.SIGINT)
    return proc.communicate(timeout=timeout)
