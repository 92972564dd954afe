"""Running a command of the ``wirelab`` CLI: one line per error, exit codes 0/1/2/130, a crash log
instead of a traceback. Shared by :func:`wirelab.cli.main` and the light ``wirelab predict`` entry
(:mod:`wirelab._main`), so it imports only click's and rich's basics."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Any

import typer
from rich.console import Console

from wirelab._terminal import controls_escaped
from wirelab.errors import WirelabError, cut

__all__ = ["reflow_all", "run_command"]

err = Console(stderr=True, highlight=False)


def _reflow(text: str) -> str:
    """A docstring's paragraphs as single lines (rich keeps a help text's line breaks, so wrapped
    source lines would break mid-sentence on screen); indented lines and list items stay lines."""
    paragraphs = []
    for para in inspect.cleandoc(text).split("\n\n"):
        lines: list[str] = []
        for line in para.splitlines():
            keep = not lines or line[:1].isspace() or line.lstrip()[:2] in ("- ", "* ", "• ")
            if keep:
                lines.append(line)
            else:
                lines[-1] += " " + line.strip()
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


def reflow_all(command: Any) -> None:
    if getattr(command, "help", None):
        command.help = _reflow(command.help)
    for sub in getattr(command, "commands", {}).values():
        reflow_all(sub)


def run_command(command: Any, args: list[str], prog: str, prelude: Callable[[], None] | None = None) -> int:
    """Run a click command on ``args`` (``prelude`` first, inside the same error handling)."""
    reflow_all(command)
    try:
        if prelude is not None:
            prelude()
        result = command.main(args=args, prog_name=prog, standalone_mode=False)
    except typer.TyperException as e:  # command-line usage errors (unknown option, bad value …)
        ctx = getattr(e, "ctx", None)
        if type(e).__name__ == "NoArgsIsHelpError":
            typer.echo(e.format_message())
            return 2
        where = ctx.command_path if ctx is not None else prog
        message = " ".join(e.format_message().split())
        err.print(f"{where}: {message} (see {where} --help)", soft_wrap=True, markup=False)
        return e.exit_code
    except typer.Abort:
        err.print("wirelab: interrupted", markup=False)
        return 130
    except WirelabError as e:
        for line in e.lines or (str(e),):
            err.print(f"wirelab: {controls_escaped(' '.join(line.split()))}", soft_wrap=True, markup=False)
        return e.exit_code
    except KeyboardInterrupt:
        err.print("wirelab: interrupted", markup=False)
        return 130
    except Exception as e:  # last resort: a bug, never a traceback on the terminal
        log = _write_crash_log(prog, args)
        err.print(
            f"wirelab: internal error ({e.__class__.__name__}: {cut(' '.join(str(e).split()))}); "
            f"details in {log} — please report it",
            soft_wrap=True,
            markup=False,
        )
        return 1
    return result if isinstance(result, int) else 0


def _write_crash_log(prog: str, args: list[str]) -> str:
    """Write the current exception's traceback to a private log file; return its path."""
    import tempfile
    import traceback

    try:
        fd, path = tempfile.mkstemp(prefix="wirelab-crash-", suffix=".log")  # 0600
        with os.fdopen(fd, "w") as f:
            f.write(f"{prog} {' '.join(args)}\n\n{traceback.format_exc()}")
        return path
    except OSError:
        return "(no log: the temporary directory is not writable)"
