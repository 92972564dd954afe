"""The results database: SQLite in WAL mode, default ``./wirelab.db`` (``docs/results.md``).

:class:`Store` is the writer the runners use (sweeps, their planned items, one transaction per
completed trial or load-test run); :class:`Results` is the reader returned by :func:`wirelab.open`,
whose methods return pandas DataFrames. Trial directories live next to the database in
``<db>.d/<sweep>/<trial-id>/``; artifact paths are stored relative to the database's directory.

The code lives in :mod:`wirelab._db`, one module per job (schema and migrations, writer, reader, files);
this module keeps the names the CLI, the Python API and users import.
"""

from __future__ import annotations

from wirelab._db.files import DATA_DIR_MODE, DATA_FILE_MODE, DEFAULT_DB, fix_modes, results_dir
from wirelab._db.reader import Frame, Results
from wirelab._db.schema import (
    ERROR_KINDS,
    INTERVALS,
    LOADS,
    MIGRATIONS,
    OBJECTS,
    PHASES,
    PROBE_FIELDS,
    PROBE_PROTOCOLS,
    SAMPLES,
    SCHEMA_VERSION,
)
from wirelab._db.writer import Store
from wirelab._har import OBJECT_TIMINGS, objects_from_har

__all__ = [
    "DATA_DIR_MODE",
    "DATA_FILE_MODE",
    "DEFAULT_DB",
    "ERROR_KINDS",
    "Frame",
    "INTERVAL_COLUMNS",
    "LOAD_COLUMNS",
    "MIGRATIONS",
    "OBJECT_COLUMNS",
    "OBJECT_TIMINGS",
    "PHASES",
    "PROBE_FIELDS",
    "PROBE_PROTOCOLS",
    "Results",
    "SAMPLE_COLUMNS",
    "SCHEMA_VERSION",
    "Store",
    "fix_modes",
    "objects_from_har",
    "results_dir",
]

#: Load record fields stored as columns of ``loads`` (phases_ms → <phase>_ms; pcap → pcap_client/server).
LOAD_COLUMNS = LOADS.names
#: ``objects`` columns: one HAR entry.
OBJECT_COLUMNS = OBJECTS.names
#: ``load_intervals`` columns, in order: one line of a load test's intervals.jsonl.
INTERVAL_COLUMNS = INTERVALS.names
#: ``server_samples`` columns, in order: one line of a load test's server.jsonl.
SAMPLE_COLUMNS = SAMPLES.names
