"""The rules for the paths a user names (``docs/bad-input.md``, "Files and paths"), the twin of the
engine's ``internal/userpath``:

- an input file (an experiment or load-test spec) is read only if it is a regular file — never
  blocking on a FIFO, never reading a device — and at most a stated number of bytes of it;
- an output is checked before any work starts: the directory it goes into exists and is writable,
  and an output file is not a directory (nor a FIFO, a device or a socket), an output directory
  not a file. Whether an existing output is replaced is the command's to say (in its ``--help``).

Every refusal is one line naming the option or the file (:class:`~wirelab.errors.UsageError`, exit 2),
in the engine's words: ``--out d: is a directory; give a file to write``.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from wirelab.errors import SpecError, UsageError

__all__ = ["MAX_SPEC_BYTES", "check_output_dir", "check_output_file", "read_spec_text", "size"]

#: an experiment or load-test spec (TOML) is at most this long
MAX_SPEC_BYTES = 16 << 20

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISREG, "a file"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def size(n: int) -> str:
    """``n`` bytes for a message: ``512 bytes``, ``16 MiB``, ``20.5 MiB``."""
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n} bytes"


def _reason(e: OSError) -> str:
    if e.errno == errno.ENOENT:
        return "does not exist"
    if e.errno == errno.EACCES or e.errno == errno.EPERM:
        return "cannot be read (permission denied)"
    if e.errno == errno.ENOTDIR:
        return "does not exist (a component of the path is not a directory)"
    return f"cannot be opened ({e.strerror or e})"


def read_spec_text(path: str | os.PathLike[str], limit: int = MAX_SPEC_BYTES) -> str:
    """The text of the spec file at ``path``: a regular file of at most ``limit`` bytes, UTF-8. Raises
    :class:`SpecError` naming the file (its ``path``) otherwise."""
    name = os.fspath(path)

    def refuse(what: str, want: str = "a regular file") -> SpecError:
        return SpecError(f"{name}: {what}; give {want} (a TOML spec)", path=name)

    try:
        st = os.stat(name)
        if not stat.S_ISREG(st.st_mode):
            raise refuse(f"is {_kind(st.st_mode)}")
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as e:
        raise refuse(_reason(e)) from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):  # swapped after the first look
            raise refuse(f"is {_kind(st.st_mode)}")
        if st.st_size > limit:
            raise refuse(f"is {size(st.st_size)}", f"a file of at most {size(limit)}")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise refuse(f"is more than {size(limit)}", f"a file of at most {size(limit)}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise refuse(f"is not UTF-8 text (byte {e.start})", "a UTF-8 text file") from None


def _writable_parent(option: str, path: Path, want: str) -> None:
    parent = path.parent
    try:
        st = os.stat(parent)
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ENOTDIR):
            raise UsageError(
                f"{option} {path}: cannot be written: its directory {parent} does not exist; "
                f"give {want} in an existing directory"
            ) from None
        reason = _reason(e)
        raise UsageError(f"{option} {path}: cannot be written: its directory {parent} {reason}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(
            f"{option} {path}: cannot be written: {parent} is {_kind(st.st_mode)}, not a directory; "
            f"give {want} in an existing directory"
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(
            f"{option} {path}: cannot be written: its directory {parent} is not writable; "
            f"give {want} in a writable directory"
        )


def check_output_file(option: str, path: str | os.PathLike[str]) -> None:
    """Refuse (:class:`UsageError`) an output file that cannot be written: its directory missing or
    not writable, or the path a directory or another kind of file a written file cannot replace. An
    existing regular file passes (the command says whether it is replaced)."""
    p = Path(path)
    if os.fspath(path) == "":
        raise UsageError(f"{option}: is empty; give a file to write")
    try:
        st = os.stat(p)
    except OSError:
        pass
    else:
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{option} {p}: is {_kind(st.st_mode)}; give a file to write")
    _writable_parent(option, p, "a file to write")


def check_output_dir(option: str, path: str | os.PathLike[str], *, parents: bool = False) -> None:
    """Refuse (:class:`UsageError`) an output directory that cannot be written or made: an existing
    file, an existing directory that is not writable, or (unless ``parents``: a default path the
    command makes whole) a missing directory whose parent does not exist."""
    p = Path(path)
    want = "a directory to write into"
    if os.fspath(path) == "":
        raise UsageError(f"{option}: is empty; give {want}")
    try:
        st = os.stat(p)
    except OSError:
        if parents:
            existing = next((a for a in p.absolute().parents if a.exists()), None)
            if existing is not None and not existing.is_dir():
                raise UsageError(f"{option} {p}: cannot be made: {existing} is not a directory") from None
            return
        _writable_parent(option, p, want)
        return
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{option} {p}: is {_kind(st.st_mode)}; give {want}")
    if not os.access(p, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {p}: is not writable; give {want}")
