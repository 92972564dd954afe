"""Where wirelab's own files are: the repository checkout it runs from (``make setup`` installs it
in editable mode), its ``schemas/``, ``experiments/`` and ``bin/``."""

from __future__ import annotations

from pathlib import Path

from wirelab.errors import WirelabError

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent


def schemas_dir() -> Path:
    path = REPO_ROOT / "schemas"
    if not path.is_dir():
        raise WirelabError(
            f"schemas: {path} not found; wirelab runs from its repository checkout (make setup)"
        )
    return path


def experiments_dir() -> Path:
    return REPO_ROOT / "experiments"


def repo_engine() -> Path:
    """``bin/wirelab-engine`` in the repository (it may not be built)."""
    return REPO_ROOT / "bin" / "wirelab-engine"
