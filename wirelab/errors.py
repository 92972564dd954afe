"""wirelab's exceptions: one hierarchy, one line of message each.

::

    WirelabError                      base of everything wirelab raises on purpose (exit_code 1)
    ├── UsageError                    bad input from the user (exit_code 2)
    │   ├── SpecError                 an experiment or trial spec field: names its dotted path,
    │   │   │                         the value and what is allowed
    │   │   └── ProfileError          a network profile string (``rtt=150ms,bw=1mbit``)
    │   └── SweepConflictError        a sweep name already used by a different spec in this database
    ├── EngineError                   the engine could not do what was asked
    │   ├── EngineNotFoundError       no ``wirelab-engine`` executable, or one without a needed command
    │   │                             (the user's setup: exit_code 2)
    │   ├── TrialFailedError          ``wirelab-engine trial`` exited without completing the trial
    │   └── ContractError             engine output that breaks ``docs/trial-contract.md``
    ├── StoreError                    the results database
    │   ├── DatabaseError             ``--db`` is no usable database: a directory, another kind of file,
    │   │                             a corrupt database (exit_code 2; never written to)
    │   └── SchemaVersionError        a database written by a newer wirelab
    ├── NoResultsError                the results hold nothing to show for what was asked (e.g. every
    │                                 load of a protocol failed): not the user's input
    └── Interrupted                   the run was stopped by SIGINT/SIGTERM (exit_code 130)

The CLI prints ``str(error)`` as one line and exits with ``error.exit_code`` — or, for an error that
is one line per item (``lines``: a probe with nothing to contact names each site), those lines.
"""

from __future__ import annotations

__all__ = [
    "ContractError",
    "DatabaseError",
    "EngineError",
    "EngineNotFoundError",
    "Interrupted",
    "NoResultsError",
    "ProfileError",
    "SchemaVersionError",
    "SpecError",
    "StoreError",
    "SweepConflictError",
    "TrialFailedError",
    "UsageError",
    "WirelabError",
]


#: the longest value a message echoes whole; longer ones show their first SHOWN_PREFIX characters and
#: their length (the engine's internal/fielderr does the same)
MAX_SHOWN = 64
SHOWN_PREFIX = 40


def cut(text: str) -> str:
    """``text`` cut to a readable length for a message: ``"abc…" (131072 characters)``."""
    if len(text) <= MAX_SHOWN:
        return text
    return f"{text[:SHOWN_PREFIX]}… ({len(text)} characters)"


class WirelabError(Exception):
    """Base class. ``str(error)`` is one line meant for the user; ``lines``, when not empty, one line
    per item the error is about (``str(error)`` joins them)."""

    exit_code = 1
    lines: tuple[str, ...] = ()


class UsageError(WirelabError):
    """The user's input is wrong; nothing was run."""

    exit_code = 2


class SpecError(UsageError):
    """A spec field is invalid. ``path`` is its dotted path (``base.server.max_concurrent_streams``)."""

    def __init__(self, message: str, *, path: str = "", value: object = None):
        super().__init__(message)
        self.path = path
        self.value = value


class ProfileError(SpecError):
    """A network profile string is invalid. ``field`` is the key as written, prefixed by the spec path."""

    def __init__(self, message: str, *, field: str, value: str):
        super().__init__(message, path=field, value=value)
        self.field = field


class SweepConflictError(UsageError):
    """The database holds a sweep of this name made from a different spec."""


class EngineError(WirelabError):
    """The data plane failed."""


class EngineNotFoundError(EngineError):
    """No usable ``wirelab-engine`` (or it lacks a command this operation needs): the user's setup,
    so exit 2 like other usage errors (``--engine`` naming no executable)."""

    exit_code = 2


class TrialFailedError(EngineError):
    """A trial ended without ``trial.json``. ``returncode`` and ``stderr_tail`` say why."""

    def __init__(self, message: str, *, returncode: int | None = None, stderr_tail: str = ""):
        super().__init__(message)
        self.returncode = returncode
        self.stderr_tail = stderr_tail


class ContractError(EngineError):
    """The engine wrote something the trial contract does not allow."""


class StoreError(WirelabError):
    """The results database cannot be used."""


class DatabaseError(StoreError):
    """``--db`` names something that is not a usable wirelab database (a directory, another kind of
    file, a corrupt database): the user's mistake, exit 2; the file is never written to."""

    exit_code = 2


class SchemaVersionError(StoreError):
    """The database's schema is newer than this wirelab understands."""


class NoResultsError(WirelabError):
    """What was asked for needs results the run did not produce (e.g. every load of a protocol failed)."""


class Interrupted(WirelabError):
    """Stopped by a signal; running trials were ended and the database is consistent."""

    exit_code = 130
