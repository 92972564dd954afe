"""The ``wirelab`` command line. A thin layer over the library."""

from __future__ import annotations

import typer

from wirelab import __version__

app = typer.Typer(
    help="wirelab: load pages over HTTP/1.1, HTTP/2 and HTTP/3 through an emulated network and compare.",
    no_args_is_help=True,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"wirelab {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """wirelab: a laboratory for web protocols."""


def main() -> None:
    app()
