"""The ``wirelab`` script's entry point: ``wirelab predict`` without the rest of the CLI's imports
(pandas, scipy, the report), so that it answers in well under a second; everything else is
:func:`wirelab.cli.main`."""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["predict"]:
        import typer

        from wirelab._cli_run import run_command
        from wirelab._predict._cli import app

        return run_command(typer.main.get_command(app), args[1:], "wirelab predict")
    from wirelab.cli import main as full

    return full(args)


if __name__ == "__main__":
    sys.exit(main())
