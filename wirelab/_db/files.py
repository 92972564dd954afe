"""The results on disk beside the database: where items' directories live (``<db>.d/<sweep>/<id>/``)
and the modes every result has whatever the umask (``docs/results.md``)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DATA_DIR_MODE", "DATA_FILE_MODE", "DEFAULT_DB", "fix_modes", "results_dir"]

DEFAULT_DB = "wirelab.db"

#: Results have fixed modes whatever the umask: data files 0644, directories 0755. They hold no
#: secrets — a run's keys live in its private directory (0711, keys 0600), removed with it.
DATA_FILE_MODE = 0o644
DATA_DIR_MODE = 0o755


def results_dir(db: str | Path) -> Path:
    """``<db>.d``: where trial directories of the database's sweeps are kept."""
    db = Path(db)
    return db.with_name(db.name + ".d")


def fix_modes(root: Path, *, up_to: Path | None = None) -> None:
    """Give ``root`` and everything below it the results' modes (:data:`DATA_FILE_MODE`,
    :data:`DATA_DIR_MODE`), and ``root``'s parents up to (not including) ``up_to``. Symbolic links are
    neither followed nor changed."""
    for directory, dirs, files in os.walk(root):
        os.chmod(directory, DATA_DIR_MODE)
        for name in files:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                os.chmod(path, DATA_FILE_MODE)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(directory, d))]
    if up_to is not None:
        top = up_to.resolve()
        for parent in root.resolve().parents:
            if parent == top or top not in parent.parents:
                break
            os.chmod(parent, DATA_DIR_MODE)
