"""Where wirelab's own files are. The trial contract's schemas ship with the package
(``wirelab/_schemas`` links to the repository's ``schemas/``; a built wheel holds copies); the
experiments and the engine binary are the repository checkout's (``make setup`` installs the package
in editable mode)."""

from __future__ import annotations

from pathlib import Path

from wirelab.errors import WirelabError

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent


def schemas_dir() -> Path:
    path = PACKAGE_DIR / "_schemas"
    if not path.is_dir():
        raise WirelabError(f"schemas: {path} not found; the wirelab installation is incomplete")
    return path


def experiments_dir() -> Path:
    return REPO_ROOT / "experiments"


def repo_engine() -> Path:
    """``bin/wirelab-engine`` in the repository (it may not be built)."""
    return REPO_ROOT / "bin" / "wirelab-engine"
