"""The results database: SQLite in WAL mode, default ``./wirelab.db`` (``docs/results.md``).

:class:`Store` is the writer the runner uses (sweeps, planned trials, one transaction per completed
trial); :class:`Results` is the reader returned by :func:`wirelab.open`, whose methods return pandas
DataFrames. Trial directories live next to the database in ``<db>.d/<sweep>/<trial-id>/``; artifact
paths are stored relative to the database's directory.

The schema is versioned with ``PRAGMA user_version`` and migrated forward when the database is opened
for writing (:data:`MIGRATIONS`). Reading never creates or modifies a file: :class:`Results` opens the
database read-only, and reads an older schema through a migrated copy in memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pandas as pd

from wirelab import _contract as contract
from wirelab import _facts
from wirelab import spec as spec_mod
from wirelab.errors import DatabaseError, SchemaVersionError, StoreError, UsageError, cut

__all__ = [
    "DATA_DIR_MODE",
    "DATA_FILE_MODE",
    "DEFAULT_DB",
    "LOAD_COLUMNS",
    "PROBE_FIELDS",
    "PROBE_PROTOCOLS",
    "MIGRATIONS",
    "OBJECT_TIMINGS",
    "PHASES",
    "Results",
    "SCHEMA_VERSION",
    "Store",
    "fix_modes",
    "objects_from_har",
    "open_results",
    "results_dir",
]

DEFAULT_DB = "wirelab.db"
PHASES = ("dns", "connect", "ssl", "send", "wait", "receive", "blocked")
#: The protocols of a probe record, in its order: the probe record schema's ``protocols`` keys.
PROBE_PROTOCOLS: tuple[str, ...] = tuple(
    contract.load_schema("probe-record")["properties"]["protocols"]["required"]
)
#: Per-protocol fields of a probe record stored as columns of ``probe_protocols``.
PROBE_FIELDS = (
    "announced",
    "announced_by",
    "served",
    "status",
    "server",
    "alpn",
    "tls_version",
    "cert_error",
    "connect_ms",
    "handshake_ms",
    "first_byte_ms",
    "port",
    "error",
)
OBJECT_TIMINGS = ("blocked", "dns", "connect", "ssl", "send", "wait", "receive")

#: Load record fields stored as columns of ``loads`` (phases_ms → <phase>_ms; pcap → pcap_client/server).
LOAD_COLUMNS = (
    "load_index",
    "protocol",
    "repetition",
    "started_at",
    "tow_ms",
    "tow_first_packet_ms",
    "plt_ms",
    "bytes_down",
    "bytes_up",
    "packets_down",
    "packets_up",
    "retransmissions",
    "drops_queue",
    "drops_loss",
    "connections",
    "tls_handshakes",
    "tls_resumed",
    "objects",
    "body_bytes",
    "pushed_bytes",
    "pushes_used",
    "pushes_unused",
    "server_cpu_ms",
    "server_rss_peak_bytes",
    *(f"{p}_ms" for p in PHASES),
    "har",
    "pcap_client",
    "pcap_server",
    "client_json",
    "error",
)

_V1 = """
CREATE TABLE sweeps (
    id              INTEGER PRIMARY KEY,
    name            TEXT NOT NULL UNIQUE,
    description     TEXT NOT NULL DEFAULT '',
    spec_hash       TEXT NOT NULL,
    spec_json       TEXT NOT NULL,
    spec_toml       TEXT NOT NULL DEFAULT '',
    axes_json       TEXT NOT NULL DEFAULT '[]',
    planned_trials  INTEGER NOT NULL,
    planned_loads   INTEGER NOT NULL,
    provenance_json TEXT NOT NULL DEFAULT '{}',
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE TABLE trials (
    id              INTEGER PRIMARY KEY,
    sweep_id        INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
    trial_id        TEXT NOT NULL,
    idx             INTEGER NOT NULL,
    status          TEXT NOT NULL
                    CHECK (status IN ('planned', 'running', 'complete', 'failed', 'interrupted')),
    params_json     TEXT NOT NULL,
    spec_json       TEXT NOT NULL,
    spec_hash       TEXT NOT NULL,
    dir             TEXT NOT NULL,
    provenance_json TEXT,
    emulator_json   TEXT,
    loads_planned   INTEGER NOT NULL,
    loads           INTEGER,
    load_errors     INTEGER,
    error           TEXT,
    attempts        INTEGER NOT NULL DEFAULT 0,
    started_at      TEXT,
    ended_at        TEXT,
    UNIQUE (sweep_id, trial_id)
);
CREATE TABLE loads (
    id                  INTEGER PRIMARY KEY,
    trial_row           INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
    load_index          INTEGER NOT NULL,
    protocol            TEXT NOT NULL,
    repetition          INTEGER NOT NULL,
    started_at          TEXT NOT NULL,
    tow_ms              REAL NOT NULL,
    tow_first_packet_ms REAL NOT NULL,
    plt_ms              REAL NOT NULL,
    bytes_down          INTEGER NOT NULL,
    bytes_up            INTEGER NOT NULL,
    packets_down        INTEGER NOT NULL,
    packets_up          INTEGER NOT NULL,
    retransmissions     INTEGER NOT NULL,
    drops_queue         INTEGER NOT NULL,
    drops_loss          INTEGER NOT NULL,
    connections         INTEGER NOT NULL,
    tls_handshakes      INTEGER NOT NULL,
    tls_resumed         INTEGER NOT NULL,
    objects             INTEGER NOT NULL,
    body_bytes          INTEGER NOT NULL,
    pushed_bytes        INTEGER NOT NULL,
    pushes_used         INTEGER NOT NULL,
    pushes_unused       INTEGER NOT NULL,
    dns_ms              REAL NOT NULL,
    connect_ms          REAL NOT NULL,
    ssl_ms              REAL NOT NULL,
    send_ms             REAL NOT NULL,
    wait_ms             REAL NOT NULL,
    receive_ms          REAL NOT NULL,
    blocked_ms          REAL NOT NULL,
    har                 TEXT,
    pcap_client         TEXT,
    pcap_server         TEXT,
    client_json         TEXT NOT NULL DEFAULT '{}',
    error               TEXT,
    UNIQUE (trial_row, load_index)
);
CREATE TABLE artifacts (
    id        INTEGER PRIMARY KEY,
    trial_row INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
    load_id   INTEGER REFERENCES loads(id) ON DELETE CASCADE,
    kind      TEXT NOT NULL,
    path      TEXT NOT NULL
);
CREATE INDEX trials_by_sweep ON trials (sweep_id, status);
CREATE INDEX artifacts_by_trial ON artifacts (trial_row);
"""

_V2 = """
CREATE TABLE objects (
    id          INTEGER PRIMARY KEY,
    load_id     INTEGER NOT NULL REFERENCES loads(id) ON DELETE CASCADE,
    entry_index INTEGER NOT NULL,
    url         TEXT NOT NULL,
    origin      TEXT NOT NULL,
    protocol    TEXT,
    connection  TEXT,
    stream_id   INTEGER,
    status      INTEGER,
    mime_type   TEXT,
    size_bytes  INTEGER,
    started_ms  REAL NOT NULL,
    time_ms     REAL NOT NULL,
    blocked_ms  REAL,
    dns_ms      REAL,
    connect_ms  REAL,
    ssl_ms      REAL,
    send_ms     REAL,
    wait_ms     REAL,
    receive_ms  REAL,
    UNIQUE (load_id, entry_index)
);
CREATE INDEX objects_by_load ON objects (load_id);
CREATE INDEX loads_by_trial ON loads (trial_row);
ALTER TABLE trials ADD COLUMN lateness_p50_us REAL;
ALTER TABLE trials ADD COLUMN lateness_p99_us REAL;
ALTER TABLE trials ADD COLUMN lateness_max_us REAL;
ALTER TABLE trials ADD COLUMN fidelity_flags_json TEXT NOT NULL DEFAULT '[]';
UPDATE trials SET lateness_p50_us = json_extract(emulator_json, '$.lateness_us.p50'),
                  lateness_p99_us = json_extract(emulator_json, '$.lateness_us.p99'),
                  lateness_max_us = json_extract(emulator_json, '$.lateness_us.max')
 WHERE emulator_json IS NOT NULL;
"""

_V3 = """
ALTER TABLE loads ADD COLUMN server_cpu_ms REAL;
ALTER TABLE loads ADD COLUMN server_rss_peak_bytes INTEGER;
"""

_V4 = """
CREATE TABLE probe_runs (
    id              INTEGER PRIMARY KEY,
    name            TEXT NOT NULL UNIQUE,
    status          TEXT NOT NULL CHECK (status IN ('running', 'complete', 'interrupted', 'failed')),
    local           INTEGER NOT NULL,
    allow_internet  INTEGER NOT NULL,
    args_json       TEXT NOT NULL,
    sites           INTEGER NOT NULL DEFAULT 0,
    provenance_json TEXT NOT NULL DEFAULT '{}',
    error           TEXT,
    started_at      TEXT NOT NULL,
    ended_at        TEXT
);
CREATE TABLE probes (
    id          INTEGER PRIMARY KEY,
    run_id      INTEGER NOT NULL REFERENCES probe_runs(id) ON DELETE CASCADE,
    site_index  INTEGER NOT NULL,
    site        TEXT NOT NULL,
    url         TEXT NOT NULL,
    host        TEXT NOT NULL,
    addr        TEXT NOT NULL,
    started_at  TEXT NOT NULL,
    duration_ms REAL NOT NULL,
    dns_ms      REAL,
    dns_a       TEXT,
    dns_aaaa    TEXT,
    https_alpn  TEXT,
    https_ech   INTEGER,
    alt_svc     TEXT NOT NULL,
    refused     TEXT,
    error       TEXT,
    record_json TEXT NOT NULL,
    UNIQUE (run_id, site_index)
);
CREATE TABLE probe_protocols (
    id            INTEGER PRIMARY KEY,
    probe_id      INTEGER NOT NULL REFERENCES probes(id) ON DELETE CASCADE,
    protocol      TEXT NOT NULL,
    announced     INTEGER,
    announced_by  TEXT NOT NULL,
    served        INTEGER NOT NULL,
    status        INTEGER,
    server        TEXT NOT NULL,
    alpn          TEXT NOT NULL,
    tls_version   TEXT NOT NULL,
    cert_error    TEXT NOT NULL,
    connect_ms    REAL,
    handshake_ms  REAL,
    first_byte_ms REAL,
    port          INTEGER NOT NULL,
    error         TEXT,
    UNIQUE (probe_id, protocol)
);
CREATE INDEX probes_by_run ON probes (run_id);
CREATE INDEX probe_protocols_by_probe ON probe_protocols (probe_id);
"""

_V5 = """
ALTER TABLE trials ADD COLUMN worker TEXT;
ALTER TABLE trials ADD COLUMN repeat_of TEXT;
"""

#: Latency statistics of an interval (the engine's ``{p50, p90, p95, p99, max, mean}``).
LATENCY_STATS = ("p50", "p90", "p95", "p99", "max", "mean")
#: Error kinds of an interval (the engine's ``errors`` object).
ERROR_KINDS = ("connect_refused", "reset", "timeout", "tls", "http_status", "other")

#: ``load_intervals`` columns, in order: one line of a load test's intervals.jsonl.
INTERVAL_COLUMNS = (
    "interval_index",
    "t_start_s",
    "t_end_s",
    "vus",
    "vus_max",
    "pages",
    "pages_failed",
    "pages_per_s",
    "hits",
    "hits_per_s",
    "bytes",
    "bytes_per_s",
    *(f"page_{s}_ms" for s in LATENCY_STATS),
    *(f"request_{s}_ms" for s in LATENCY_STATS),
    "errors",
    *(f"errors_{k}" for k in ERROR_KINDS),
    "dropped",
    "open_connections",
    "connections_closed_by_server",
    "generator_cpu_ms",
    "generator_cpu_util",
    "generator_rss_bytes",
    "generator_goroutines",
    "generator_sched_p99_ms",
    "generator_saturated",
)
#: ``server_samples`` columns, in order: one line of a load test's server.jsonl.
SAMPLE_COLUMNS = (
    "interval_index",
    "t_s",
    "cpu_ms",
    "cpu_util",
    "memory_bytes",
    "memory_peak_bytes",
    "processes",
    "threads",
    "source",
    "gauges_json",
    "error",
)

_V6 = """
ALTER TABLE sweeps ADD COLUMN kind TEXT NOT NULL DEFAULT 'trials' CHECK (kind IN ('trials', 'loadtest'));
CREATE TABLE loadtests (
    id                           INTEGER PRIMARY KEY,
    sweep_id                     INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
    loadtest_id                  TEXT NOT NULL,
    idx                          INTEGER NOT NULL,
    point                        INTEGER NOT NULL,
    protocol                     TEXT NOT NULL,
    status                       TEXT NOT NULL CHECK
                                 (status IN ('planned', 'running', 'complete', 'failed', 'interrupted')),
    complete                     INTEGER GENERATED ALWAYS AS (status = 'complete') VIRTUAL,
    params_json                  TEXT NOT NULL,
    spec_json                    TEXT NOT NULL,
    spec_hash                    TEXT NOT NULL,
    dir                          TEXT NOT NULL,
    planned_s                    REAL NOT NULL,
    provenance_json              TEXT,
    emulator_json                TEXT,
    summary_json                 TEXT,
    outcomes_json                TEXT,
    thresholds_json              TEXT,
    thresholds_passed            INTEGER,
    generator_saturated          INTEGER,
    interrupted                  INTEGER,
    server_exited_json           TEXT,
    duration_s                   REAL,
    intervals                    INTEGER NOT NULL DEFAULT 0,
    server_samples               INTEGER NOT NULL DEFAULT 0,
    pages                        INTEGER,
    pages_failed                 INTEGER,
    hits                         INTEGER,
    errors                       INTEGER,
    error_rate                   REAL,
    vus_max                      INTEGER,
    max_pages_per_s              REAL,
    max_hits_per_s               REAL,
    vus_at_first_error           INTEGER,
    vus_at_first_sla_violation   INTEGER,
    first_sla_violation_interval INTEGER,
    server_cpu_util_max          REAL,
    lateness_p99_us              REAL,
    error                        TEXT,
    attempts                     INTEGER NOT NULL DEFAULT 0,
    started_at                   TEXT,
    ended_at                     TEXT,
    UNIQUE (sweep_id, loadtest_id)
);
CREATE TABLE load_intervals (
    id                     INTEGER PRIMARY KEY,
    loadtest_row           INTEGER NOT NULL REFERENCES loadtests(id) ON DELETE CASCADE,
    interval_index         INTEGER NOT NULL,
    t_start_s              REAL NOT NULL,
    t_end_s                REAL NOT NULL,
    vus                    INTEGER NOT NULL,
    vus_max                INTEGER NOT NULL,
    pages                  INTEGER NOT NULL,
    pages_failed           INTEGER NOT NULL,
    pages_per_s            REAL NOT NULL,
    hits                   INTEGER NOT NULL,
    hits_per_s             REAL NOT NULL,
    bytes                  INTEGER NOT NULL,
    bytes_per_s            REAL NOT NULL,
    page_p50_ms            REAL,
    page_p90_ms            REAL,
    page_p95_ms            REAL,
    page_p99_ms            REAL,
    page_max_ms            REAL,
    page_mean_ms           REAL,
    request_p50_ms         REAL,
    request_p90_ms         REAL,
    request_p95_ms         REAL,
    request_p99_ms         REAL,
    request_max_ms         REAL,
    request_mean_ms        REAL,
    errors                 INTEGER NOT NULL,
    errors_connect_refused INTEGER NOT NULL,
    errors_reset           INTEGER NOT NULL,
    errors_timeout         INTEGER NOT NULL,
    errors_tls             INTEGER NOT NULL,
    errors_http_status     INTEGER NOT NULL,
    errors_other           INTEGER NOT NULL,
    dropped                INTEGER NOT NULL,
    open_connections       INTEGER NOT NULL,
    generator_cpu_ms       REAL,
    generator_cpu_util     REAL,
    generator_rss_bytes    INTEGER,
    generator_goroutines   INTEGER,
    generator_sched_p99_ms REAL,
    generator_saturated    INTEGER,
    UNIQUE (loadtest_row, interval_index)
);
CREATE TABLE server_samples (
    id                INTEGER PRIMARY KEY,
    loadtest_row      INTEGER NOT NULL REFERENCES loadtests(id) ON DELETE CASCADE,
    interval_index    INTEGER NOT NULL,
    t_s               REAL NOT NULL,
    cpu_ms            REAL,
    cpu_util          REAL,
    memory_bytes      INTEGER,
    memory_peak_bytes INTEGER,
    processes         INTEGER,
    threads           INTEGER,
    source            TEXT,
    gauges_json       TEXT NOT NULL DEFAULT '{}',
    error             TEXT,
    UNIQUE (loadtest_row, interval_index)
);
CREATE INDEX loadtests_by_sweep ON loadtests (sweep_id, status);
"""

_V7 = """
ALTER TABLE load_intervals ADD COLUMN connections_closed_by_server INTEGER;
"""

#: Schema migrations: MIGRATIONS[i] takes a database from user_version i to i + 1.
#: v1: sweeps, trials, loads, artifacts. v2: objects (per-request HAR timings), emulator lateness
#: and fidelity flags on trials (back-filled from emulator_json). v3: the server under test's cost
#: per load (server_cpu_ms, server_rss_peak_bytes; NULL for loads stored before, or not measured).
#: v4: probe runs, one row per probed site and one per site and protocol (``wirelab probe``,
#: ``docs/probe.md``).
#: v5: the worker a trial ran on (trials.worker: this machine's name for local runs, the cluster
#: worker's name otherwise; its description is provenance_json's "worker"; NULL for trials stored before)
#: and trials.repeat_of (a trial of ``[sweep] repeat_on_each_worker``: the id of the planned configuration
#: it repeats on one worker; NULL for planned trials).
#: v6: load tests (sweeps.kind; loadtests, load_intervals, server_samples; ``wirelab loadtest``,
#: ``docs/loadtest.md``).
#: v7: load_intervals.connections_closed_by_server (connections the server ended before the VUs
#: closed them; NULL for intervals stored before, or from an engine that did not count them).
MIGRATIONS: tuple[str, ...] = (_V1, _V2, _V3, _V4, _V5, _V6, _V7)
SCHEMA_VERSION = len(MIGRATIONS)

#: An artifact kept on the cluster worker that ran its trial (``--artifacts remote``): ``host:/path``.
REMOTE_PATH = re.compile(r"^[^/:]+:/")

#: Fidelity flag set on a trial whose emulator timer lateness p99 exceeded the engine's limit (a
#: stored name: it stays as it is even if the limit changes).
LATENESS_FLAG = "lateness_p99_over_1ms"
#: The engine's fidelity bar (emulator.LatenessLimit), from the engine's facts.
LATENESS_LIMIT_US = _facts.lateness_p99_limit_us()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def results_dir(db: str | Path) -> Path:
    """``<db>.d``: where trial directories of the database's sweeps are kept."""
    db = Path(db)
    return db.with_name(db.name + ".d")


#: Results have fixed modes whatever the umask: data files 0644, directories 0755. They hold no
#: secrets — a run's keys live in its private directory (0711, keys 0600), removed with it.
DATA_FILE_MODE = 0o644
DATA_DIR_MODE = 0o755


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


#: How long a connection waits for another writer's lock before it fails (sqlite3's timeout and
#: SQLite's busy_timeout, one value).
BUSY_TIMEOUT_S = 30.0


def _is_wal(path: Path) -> bool:
    """Whether the database file's header says WAL mode (bytes 18 and 19 are 2)."""
    with open(path, "rb") as f:
        header = f.read(20)
    return len(header) == 20 and header[18] == 2 and header[19] == 2


def _connect_readonly(path: Path) -> sqlite3.Connection:
    """Open a database for reading without creating or modifying any file.

    ``mode=ro`` alone is not enough for a WAL database: SQLite would create its ``-wal`` and ``-shm``
    files and leave them behind. When no ``-wal`` file exists no writer has the database open (the
    last writer to close removes it) and the file is complete, so it is read as ``immutable``;
    otherwise a writer is at work and the reader shares its ``-wal`` and ``-shm`` files."""
    uri = "file:" + quote(str(path.resolve()))
    wal = Path(str(path) + "-wal")
    if _is_wal(path) and not wal.exists():
        uri += "?immutable=1"
    else:
        uri += "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    return conn


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    return conn


def migrate(conn: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Bring the database to schema ``target``; returns the version it had."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"database schema v{version} is newer than this wirelab understands (v{SCHEMA_VERSION}); "
            "upgrade wirelab"
        )
    for v in range(version, target):
        conn.execute("BEGIN IMMEDIATE")
        try:
            # executescript would COMMIT the open transaction first; run statement by statement instead
            for statement in _statements(MIGRATIONS[v]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {v + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return version


def _statements(script: str) -> Iterator[str]:
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                yield buffer.strip()
            buffer = ""
    if buffer.strip():
        raise AssertionError(f"incomplete SQL statement: {buffer!r}")


class _Base:
    def __init__(self, path: str | Path = DEFAULT_DB, *, create: bool = True, readonly: bool = False):
        self.path = Path(path)
        if (readonly or not create) and not self.path.exists():
            raise DatabaseError(f"{self.path}: no such database")
        if self.path.exists() and not self.path.is_file():
            raise DatabaseError(f"{self.path}: is not a database file (a directory or a device)")
        existed = self.path.exists()
        if not readonly:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise DatabaseError(f"{self.path}: cannot create its directory ({e.strerror})") from None
        try:
            self.conn = _connect_readonly(self.path) if readonly else _connect(self.path)
            if existed:
                # Before anything is written: a corrupt database or another kind of file is refused.
                problems = [r[0] for r in self.conn.execute("PRAGMA quick_check(1)")]
                if problems != ["ok"]:
                    self.conn.close()
                    raise DatabaseError(
                        f"{self.path}: the database is corrupt ({cut(problems[0])}); it was not written to"
                    )
            if readonly:
                self._migrated_copy()
            else:
                self.conn.execute("PRAGMA journal_mode = WAL")
                migrate(self.conn)
                if not existed:
                    os.chmod(self.path, DATA_FILE_MODE)
        except sqlite3.DatabaseError as e:
            raise DatabaseError(f"{self.path}: not a usable SQLite database ({e})") from None
        except OSError as e:
            raise DatabaseError(f"{self.path}: cannot read it ({e.strerror})") from None
        self.results_dir = results_dir(self.path)

    def _migrated_copy(self) -> None:
        """A reader of an older schema reads a copy in memory brought to the current one; the file
        keeps its version until a command opens it for writing."""
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            migrate(self.conn)  # raises SchemaVersionError, naming both versions
        if version == SCHEMA_VERSION:
            return
        memory = sqlite3.connect(":memory:", isolation_level=None)
        self.conn.backup(memory)
        self.conn.close()
        memory.row_factory = sqlite3.Row
        memory.execute("PRAGMA foreign_keys = ON")
        migrate(memory)
        self.conn = memory

    def close(self) -> None:
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE … COMMIT, rolled back on any exception)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def relative(self, path: Path) -> str:
        """A path as stored: relative to the database's directory when below it."""
        base = self.path.resolve().parent
        try:
            return str(path.resolve().relative_to(base))
        except ValueError:
            return str(path.resolve())

    def absolute(self, stored: str) -> Path:
        """A stored path made absolute; one left on a cluster worker (``host:/path``) as it is."""
        p = Path(stored)
        if p.is_absolute() or REMOTE_PATH.match(stored):
            return p
        return self.path.resolve().parent / p

    def sweep_kind(self, name: str) -> str | None:
        """``trials`` (a ``wirelab run`` sweep) or ``loadtest`` (``wirelab loadtest``) for a stored
        sweep; None when there is none of that name."""
        row = self.conn.execute("SELECT kind FROM sweeps WHERE name = ?", (name,)).fetchone()
        return None if row is None else row["kind"]


# --------------------------------------------------------------------------------------------------
# HAR → objects


def _har_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _timing(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


def objects_from_har(har: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per HAR entry: url, origin, protocol, connection, stream id, status, size, start offset
    from the page's start, total time and the HAR timings (-1 → None; ``connect`` includes ``ssl``).

    Reads the HAR 1.2 fields plus the engine's extensions ``_protocol``, ``_stream_id`` and
    ``connection`` (or ``_connection``)."""
    log = har.get("log", {})
    entries = log.get("entries", [])
    if not entries:
        return []
    pages = log.get("pages") or []
    starts = [_har_time(e["startedDateTime"]) for e in entries]
    page_start = _har_time(pages[0]["startedDateTime"]) if pages else min(starts)
    rows = []
    for i, (entry, start) in enumerate(zip(entries, starts, strict=True)):
        url = entry["request"]["url"]
        parts = urlsplit(url)
        response = entry.get("response", {})
        timings = entry.get("timings", {})
        size = response.get("bodySize")
        if not isinstance(size, int) or size < 0:
            size = response.get("content", {}).get("size")
        stream = entry.get("_stream_id")
        protocol = entry.get("_protocol") or response.get("httpVersion") or None
        connection = entry.get("connection", entry.get("_connection"))
        rows.append(
            {
                "entry_index": i,
                "url": url,
                "origin": f"{parts.scheme}://{parts.netloc}",
                "protocol": protocol,
                "connection": None if connection is None else str(connection),
                "stream_id": stream if isinstance(stream, int) else None,
                "status": response.get("status"),
                "mime_type": response.get("content", {}).get("mimeType"),
                "size_bytes": size if isinstance(size, int) and size >= 0 else None,
                "started_ms": (start - page_start).total_seconds() * 1000,
                "time_ms": float(entry.get("time", 0)),
                **{f"{k}_ms": _timing(timings.get(k)) for k in OBJECT_TIMINGS},
            }
        )
    return rows


# --------------------------------------------------------------------------------------------------
# Writer


class Store(_Base):
    """Writes sweeps and trials. Every method that changes data does so in one transaction."""

    def sweep_row(self, name: str) -> sqlite3.Row | None:
        return self.conn.execute("SELECT * FROM sweeps WHERE name = ?", (name,)).fetchone()

    def delete_sweep(self, name: str) -> None:
        with self.transaction() as c:
            c.execute("DELETE FROM sweeps WHERE name = ?", (name,))

    def create_sweep(self, plan: spec_mod.Plan, provenance: Mapping[str, Any]) -> int:
        """Insert the sweep and its planned trials (status ``planned``)."""
        now = _now()
        sweep_dir = self.results_dir / plan.name
        with self.transaction() as c:
            cur = c.execute(
                "INSERT INTO sweeps (name, description, spec_hash, spec_json, spec_toml, axes_json,"
                " planned_trials,"
                " planned_loads, provenance_json, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    plan.name,
                    plan.description,
                    plan.spec_hash,
                    json.dumps(plan.spec),
                    plan.source,
                    json.dumps(plan.axes),
                    len(plan.trials),
                    plan.loads,
                    json.dumps(dict(provenance)),
                    now,
                    now,
                ),
            )
            sweep_id = cur.lastrowid
            assert sweep_id is not None
            c.executemany(
                "INSERT INTO trials (sweep_id, trial_id, idx, status, params_json, spec_json, spec_hash, dir,"
                " loads_planned) VALUES (?,?,?,?,?,?,?,?,?)",
                [
                    (
                        sweep_id,
                        t.id,
                        t.index,
                        "planned",
                        json.dumps(t.params),
                        json.dumps(t.spec),
                        plan.spec_hash,
                        self.relative(sweep_dir / t.id),
                        t.loads,
                    )
                    for t in plan.trials
                ],
            )
        return sweep_id

    def add_repeats(
        self, sweep: str, of: spec_mod.PlannedTrial, repeats: Sequence[spec_mod.PlannedTrial]
    ) -> None:
        """Plan ``repeats`` of the configuration ``of`` (``[sweep] repeat_on_each_worker``; status
        ``planned``, ``repeat_of`` = ``of.id``) unless they are there already. They stay out of
        ``Results.trials``, ``loads`` and ``objects`` unless asked for (``repeats=True``)."""
        row = self.sweep_row(sweep)
        if row is None:
            raise StoreError(f"sweep {sweep} is not in {self.path}")
        sweep_dir = self.results_dir / sweep
        with self.transaction() as c:
            c.executemany(
                "INSERT OR IGNORE INTO trials (sweep_id, trial_id, idx, status, params_json, spec_json,"
                " spec_hash, dir, loads_planned, repeat_of) VALUES (?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        row["id"],
                        t.id,
                        of.index,
                        "planned",
                        json.dumps(t.params),
                        json.dumps(t.spec),
                        row["spec_hash"],
                        self.relative(sweep_dir / t.id),
                        t.loads,
                        of.id,
                    )
                    for t in repeats
                ],
            )

    def touch_sweep(self, name: str, provenance: Mapping[str, Any] | None = None) -> None:
        with self.transaction() as c:
            c.execute("UPDATE sweeps SET updated_at = ? WHERE name = ?", (_now(), name))
            if provenance is not None:
                c.execute(
                    "UPDATE sweeps SET provenance_json = ? WHERE name = ?",
                    (json.dumps(dict(provenance)), name),
                )

    def trial_statuses(self, sweep: str) -> dict[str, str]:
        rows = self.conn.execute(
            "SELECT t.trial_id, t.status FROM trials t JOIN sweeps s ON s.id = t.sweep_id WHERE s.name = ?",
            (sweep,),
        ).fetchall()
        return {r["trial_id"]: r["status"] for r in rows}

    def _trial_row(self, sweep: str, trial_id: str) -> int:
        row = self.conn.execute(
            "SELECT t.id FROM trials t JOIN sweeps s ON s.id = t.sweep_id"
            " WHERE s.name = ? AND t.trial_id = ?",
            (sweep, trial_id),
        ).fetchone()
        if row is None:
            raise StoreError(f"trial {trial_id} is not planned in sweep {sweep}")
        return row["id"]

    def mark_running(self, sweep: str, trial_id: str) -> None:
        row = self._trial_row(sweep, trial_id)
        with self.transaction() as c:
            c.execute(
                "UPDATE trials SET status = 'running', attempts = attempts + 1, started_at = ?,"
                " ended_at = NULL,"
                " error = NULL WHERE id = ?",
                (_now(), row),
            )

    def mark_ended(self, sweep: str, trial_id: str, status: str, error: str | None = None) -> None:
        """A trial that did not complete: ``failed`` or ``interrupted`` (it has no loads)."""
        assert status in ("failed", "interrupted", "planned")
        row = self._trial_row(sweep, trial_id)
        with self.transaction() as c:
            c.execute(
                "UPDATE trials SET status = ?, error = ?, ended_at = ? WHERE id = ?",
                (status, error, _now(), row),
            )

    def complete_trial(
        self,
        sweep: str,
        trial_id: str,
        *,
        trial_json: Mapping[str, Any],
        loads: Sequence[Mapping[str, Any]],
        objects: Mapping[int, list[dict[str, Any]]],
        artifacts: Sequence[tuple[str, int | None, Path | str]],
        control_provenance: Mapping[str, Any],
        fidelity_flags: Sequence[str],
        worker: Mapping[str, Any] | None = None,
    ) -> None:
        """Store a completed trial — its loads, their objects and the artifacts — in ONE transaction.

        ``objects`` maps a load's index to its object rows; ``artifacts`` is (kind, load index or
        None, path); a path given as a string is stored as it is (an artifact left on a cluster
        worker: ``host:/path``). ``worker`` describes the machine the trial ran on
        (:func:`wirelab._machine.machine_provenance`). Any previous loads of the trial are replaced, so
        storing is idempotent.
        """
        row = self._trial_row(sweep, trial_id)
        lateness = trial_json["emulator"]["lateness_us"]
        provenance = {"engine": trial_json["provenance"], "control": dict(control_provenance)}
        if worker is not None:
            provenance["worker"] = dict(worker)
        with self.transaction() as c:
            c.execute("DELETE FROM loads WHERE trial_row = ?", (row,))
            c.execute("DELETE FROM artifacts WHERE trial_row = ?", (row,))
            load_ids: dict[int, int] = {}
            placeholders = ",".join("?" * (len(LOAD_COLUMNS) + 1))
            for rec in loads:
                phases = rec["phases_ms"]
                pcap = rec.get("pcap") or {}
                values = [
                    row,
                    rec["index"],
                    rec["protocol"],
                    rec["repetition"],
                    rec["started_at"],
                    *(
                        rec[k]
                        for k in (
                            "tow_ms",
                            "tow_first_packet_ms",
                            "plt_ms",
                            "bytes_down",
                            "bytes_up",
                            "packets_down",
                            "packets_up",
                            "retransmissions",
                            "drops_queue",
                            "drops_loss",
                            "connections",
                            "tls_handshakes",
                            "tls_resumed",
                            "objects",
                            "body_bytes",
                            "pushed_bytes",
                            "pushes_used",
                            "pushes_unused",
                        )
                    ),
                    rec.get("server_cpu_ms"),
                    rec.get("server_rss_peak_bytes"),
                    *(phases[p] for p in PHASES),
                    rec.get("har"),
                    pcap.get("client"),
                    pcap.get("server"),
                    json.dumps(rec.get("client") or {}),
                    rec.get("error"),
                ]
                cur = c.execute(
                    f"INSERT INTO loads (trial_row, {', '.join(LOAD_COLUMNS)}) VALUES ({placeholders})",
                    values,
                )
                assert cur.lastrowid is not None
                load_ids[rec["index"]] = cur.lastrowid
            for index, rows in objects.items():
                c.executemany(
                    "INSERT INTO objects (load_id, entry_index, url, origin, protocol, connection,"
                    " stream_id, status, mime_type, size_bytes, started_ms, time_ms, blocked_ms, dns_ms,"
                    " connect_ms, ssl_ms, send_ms,"
                    " wait_ms, receive_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    [
                        (
                            load_ids[index],
                            o["entry_index"],
                            o["url"],
                            o["origin"],
                            o["protocol"],
                            o["connection"],
                            o["stream_id"],
                            o["status"],
                            o["mime_type"],
                            o["size_bytes"],
                            o["started_ms"],
                            o["time_ms"],
                            *(o[f"{k}_ms"] for k in OBJECT_TIMINGS),
                        )
                        for o in rows
                    ],
                )
            c.executemany(
                "INSERT INTO artifacts (trial_row, load_id, kind, path) VALUES (?,?,?,?)",
                [
                    (
                        row,
                        None if index is None else load_ids[index],
                        kind,
                        self.relative(path) if isinstance(path, Path) else path,
                    )
                    for kind, index, path in artifacts
                ],
            )
            c.execute(
                "UPDATE trials SET status = 'complete', spec_json = ?, provenance_json = ?,"
                " emulator_json = ?, loads = ?, load_errors = ?, error = NULL, ended_at = ?,"
                " lateness_p50_us = ?, lateness_p99_us = ?,"
                " lateness_max_us = ?, fidelity_flags_json = ?, worker = ? WHERE id = ?",
                (
                    json.dumps(trial_json["spec"]),
                    json.dumps(provenance),
                    json.dumps(trial_json["emulator"]),
                    len(loads),
                    sum(1 for r in loads if r.get("error") is not None),
                    _now(),
                    lateness["p50"],
                    lateness["p99"],
                    lateness["max"],
                    json.dumps(list(fidelity_flags)),
                    None if worker is None else worker.get("name"),
                    row,
                ),
            )
            c.execute("UPDATE sweeps SET updated_at = ? WHERE name = ?", (_now(), sweep))

    # ----------------------------------------------------------------------------------------------
    # probes

    def create_probe_run(
        self,
        name: str,
        *,
        local: bool,
        allow_internet: bool,
        args: Sequence[str],
        provenance: Mapping[str, Any],
    ) -> int:
        """A new probe run in status ``running``; its records come with :meth:`add_probe`."""
        if self.conn.execute("SELECT 1 FROM probe_runs WHERE name = ?", (name,)).fetchone() is not None:
            raise UsageError(f"--name: a probe run {name!r} is already in {self.path}; choose another name")
        with self.transaction() as c:
            cur = c.execute(
                "INSERT INTO probe_runs (name, status, local, allow_internet, args_json, provenance_json,"
                " started_at) VALUES (?, 'running', ?, ?, ?, ?, ?)",
                (
                    name,
                    int(local),
                    int(allow_internet),
                    json.dumps(list(args)),
                    json.dumps(dict(provenance)),
                    _now(),
                ),
            )
            assert cur.lastrowid is not None
            return cur.lastrowid

    def add_probe(self, run_id: int, record: Mapping[str, Any]) -> None:
        """Store one probe record (``schemas/probe-record.schema.json``) and its protocols, in one
        transaction; a record of the same site index replaces the earlier one."""
        dns = record.get("dns") or None
        https = (dns or {}).get("https") or []
        alpn = ",".join(dict.fromkeys(a for h in https for a in h["alpn"])) if https else None
        with self.transaction() as c:
            c.execute("DELETE FROM probes WHERE run_id = ? AND site_index = ?", (run_id, record["index"]))
            cur = c.execute(
                "INSERT INTO probes (run_id, site_index, site, url, host, addr, started_at, duration_ms,"
                " dns_ms, dns_a, dns_aaaa, https_alpn, https_ech, alt_svc, refused, error, record_json)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    record["index"],
                    record["site"],
                    record["url"],
                    record["host"],
                    record["addr"],
                    record["started_at"],
                    record["duration_ms"],
                    dns["ms"] if dns else None,
                    ",".join(dns["a"]) if dns else None,
                    ",".join(dns["aaaa"]) if dns else None,
                    alpn,
                    int(any(h["ech"] for h in https)) if https else None,
                    record["alt_svc"],
                    record["refused"] or None,
                    record["error"] or None,
                    json.dumps(record),
                ),
            )
            probe_id = cur.lastrowid
            rows = []
            for proto in PROBE_PROTOCOLS:
                r = record["protocols"][proto]
                rows.append(
                    (
                        probe_id,
                        proto,
                        None if r["announced"] is None else int(r["announced"]),
                        ",".join(r["announced_by"]),
                        int(r["served"]),
                        r["status"] or None,
                        r["server"],
                        r["alpn"],
                        r["tls_version"],
                        r["cert_error"],
                        r["connect_ms"],
                        r["handshake_ms"],
                        r["first_byte_ms"],
                        r["port"],
                        r["error"] or None,
                    )
                )
            c.executemany(
                f"INSERT INTO probe_protocols (probe_id, protocol, {', '.join(PROBE_FIELDS)})"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                rows,
            )
            c.execute(
                "UPDATE probe_runs SET sites = (SELECT COUNT(*) FROM probes WHERE run_id = ?) WHERE id = ?",
                (run_id, run_id),
            )

    def end_probe_run(self, run_id: int, status: str, error: str | None = None) -> None:
        """``complete``, ``interrupted`` or ``failed``."""
        assert status in ("complete", "interrupted", "failed")
        with self.transaction() as c:
            c.execute(
                "UPDATE probe_runs SET status = ?, error = ?, ended_at = ? WHERE id = ?",
                (status, error, _now(), run_id),
            )

    # load tests ------------------------------------------------------------------------------------
    def create_loadtest_sweep(self, plan: Any, provenance: Mapping[str, Any]) -> int:
        """Insert a load-test sweep (``kind = 'loadtest'``) and its planned runs (a
        ``wirelab._loadplan.LoadPlan``); ``planned_trials`` counts its runs, ``planned_loads`` is 0."""
        now = _now()
        sweep_dir = self.results_dir / plan.name
        with self.transaction() as c:
            cur = c.execute(
                "INSERT INTO sweeps (name, kind, description, spec_hash, spec_json, spec_toml, axes_json,"
                " planned_trials, planned_loads, provenance_json, created_at, updated_at)"
                " VALUES (?,'loadtest',?,?,?,?,?,?,0,?,?,?)",
                (
                    plan.name,
                    plan.description,
                    plan.spec_hash,
                    json.dumps(plan.spec),
                    plan.source,
                    json.dumps(plan.axes),
                    len(plan.runs),
                    json.dumps(dict(provenance)),
                    now,
                    now,
                ),
            )
            sweep_id = cur.lastrowid
            assert sweep_id is not None
            c.executemany(
                "INSERT INTO loadtests (sweep_id, loadtest_id, idx, point, protocol, status, params_json,"
                " spec_json, spec_hash, dir, planned_s) VALUES (?,?,?,?,?,'planned',?,?,?,?,?)",
                [
                    (
                        sweep_id,
                        r.id,
                        r.index,
                        r.point,
                        r.protocol,
                        json.dumps(r.params),
                        json.dumps(r.spec),
                        plan.spec_hash,
                        self.relative(sweep_dir / r.id),
                        r.planned_s,
                    )
                    for r in plan.runs
                ],
            )
        return sweep_id

    def loadtest_statuses(self, sweep: str) -> dict[str, str]:
        rows = self.conn.execute(
            "SELECT l.loadtest_id, l.status FROM loadtests l JOIN sweeps s ON s.id = l.sweep_id"
            " WHERE s.name = ?",
            (sweep,),
        ).fetchall()
        return {r["loadtest_id"]: r["status"] for r in rows}

    def _loadtest_row(self, sweep: str, loadtest_id: str) -> int:
        row = self.conn.execute(
            "SELECT l.id FROM loadtests l JOIN sweeps s ON s.id = l.sweep_id"
            " WHERE s.name = ? AND l.loadtest_id = ?",
            (sweep, loadtest_id),
        ).fetchone()
        if row is None:
            raise StoreError(f"load test {loadtest_id} is not planned in sweep {sweep}")
        return row["id"]

    def mark_loadtest_running(self, sweep: str, loadtest_id: str) -> None:
        """A run starts: its previous attempt's intervals and samples go."""
        row = self._loadtest_row(sweep, loadtest_id)
        with self.transaction() as c:
            c.execute("DELETE FROM load_intervals WHERE loadtest_row = ?", (row,))
            c.execute("DELETE FROM server_samples WHERE loadtest_row = ?", (row,))
            c.execute(
                "UPDATE loadtests SET status = 'running', attempts = attempts + 1, started_at = ?,"
                " ended_at = NULL, error = NULL, intervals = 0, server_samples = 0 WHERE id = ?",
                (_now(), row),
            )

    def store_loadtest(
        self,
        sweep: str,
        loadtest_id: str,
        *,
        status: str,
        result: Mapping[str, Any] | None,
        intervals: Sequence[Mapping[str, Any]],
        samples: Sequence[Mapping[str, Any]],
        control_provenance: Mapping[str, Any],
        error: str | None = None,
    ) -> None:
        """Store what a run measured — ``loadtest.json`` (``result``, None when the engine wrote none),
        its interval lines and server samples — in ONE transaction, replacing what the run had;
        ``status``: ``complete`` (thresholds passed or not), ``interrupted`` or ``failed``."""
        assert status in ("complete", "interrupted", "failed")
        row = self._loadtest_row(sweep, loadtest_id)
        result = result or {}
        summary = result.get("summary") or {}
        totals = summary.get("totals") or {}
        outcomes = result.get("outcomes") or {}
        lateness = ((result.get("emulator") or {}).get("lateness_us") or {}).get("p99")
        provenance = {"engine": result.get("provenance"), "control": dict(control_provenance)}

        def dumps(key: str, source: Mapping[str, Any] = result) -> str | None:
            return json.dumps(source[key]) if source.get(key) is not None else None

        def flag(key: str) -> int | None:
            return None if result.get(key) is None else int(bool(result[key]))

        with self.transaction() as c:
            c.execute("DELETE FROM load_intervals WHERE loadtest_row = ?", (row,))
            c.execute("DELETE FROM server_samples WHERE loadtest_row = ?", (row,))
            c.executemany(
                f"INSERT INTO load_intervals (loadtest_row, {', '.join(INTERVAL_COLUMNS)})"
                f" VALUES ({','.join('?' * (len(INTERVAL_COLUMNS) + 1))})",
                [(row, *interval_values(line)) for line in intervals],
            )
            c.executemany(
                f"INSERT INTO server_samples (loadtest_row, {', '.join(SAMPLE_COLUMNS)})"
                f" VALUES ({','.join('?' * (len(SAMPLE_COLUMNS) + 1))})",
                [(row, *sample_values(line)) for line in samples],
            )
            spec = result.get("spec")
            c.execute(
                "UPDATE loadtests SET status = ?, spec_json = COALESCE(?, spec_json), provenance_json = ?,"
                " emulator_json = ?, summary_json = ?, outcomes_json = ?, thresholds_json = ?,"
                " thresholds_passed = ?, generator_saturated = ?, interrupted = ?, server_exited_json = ?,"
                " duration_s = ?, intervals = ?, server_samples = ?, pages = ?, pages_failed = ?, hits = ?,"
                " errors = ?, error_rate = ?, vus_max = ?, max_pages_per_s = ?, max_hits_per_s = ?,"
                " vus_at_first_error = ?, vus_at_first_sla_violation = ?, first_sla_violation_interval = ?,"
                " server_cpu_util_max = ?, lateness_p99_us = ?, error = ?, ended_at = ? WHERE id = ?",
                (
                    status,
                    json.dumps(spec) if spec is not None else None,
                    json.dumps(provenance),
                    dumps("emulator"),
                    json.dumps(summary) if summary else None,
                    json.dumps(outcomes) if outcomes else None,
                    dumps("thresholds"),
                    flag("thresholds_passed"),
                    flag("generator_saturated"),
                    flag("interrupted"),
                    dumps("server_exited"),
                    summary.get("duration_s"),
                    len(intervals),
                    len(samples),
                    totals.get("pages"),
                    totals.get("pages_failed"),
                    totals.get("hits"),
                    sum((totals.get("errors") or {}).values()) if totals else None,
                    totals.get("error_rate"),
                    totals.get("vus_max"),
                    outcomes.get("max_pages_per_s"),
                    outcomes.get("max_hits_per_s"),
                    outcomes.get("vus_at_first_error"),
                    outcomes.get("vus_at_first_sla_violation"),
                    outcomes.get("first_sla_violation_interval"),
                    outcomes.get("server_cpu_util_max"),
                    lateness,
                    error,
                    _now(),
                    row,
                ),
            )
            c.execute("UPDATE sweeps SET updated_at = ? WHERE name = ?", (_now(), sweep))

    def mark_loadtest_ended(
        self, sweep: str, loadtest_id: str, status: str, error: str | None = None
    ) -> None:
        """A run that left nothing to store (refused, killed before it measured anything)."""
        assert status in ("failed", "interrupted", "planned")
        row = self._loadtest_row(sweep, loadtest_id)
        with self.transaction() as c:
            c.execute(
                "UPDATE loadtests SET status = ?, error = ?, ended_at = ? WHERE id = ?",
                (status, error, _now(), row),
            )


def interval_values(line: Mapping[str, Any]) -> tuple[Any, ...]:
    """An interval line (``intervals.jsonl``) as the values of :data:`INTERVAL_COLUMNS`."""
    page = line.get("page_ms") or {}
    request = line.get("request_ms") or {}
    errors = line.get("errors") or {}
    gen = line.get("generator") or {}
    return (
        line["index"],
        line["t_start_s"],
        line["t_end_s"],
        line["vus"],
        line["vus_max"],
        line["pages"],
        line["pages_failed"],
        line["pages_per_s"],
        line["hits"],
        line["hits_per_s"],
        line["bytes"],
        line["bytes_per_s"],
        *(page.get(s) for s in LATENCY_STATS),
        *(request.get(s) for s in LATENCY_STATS),
        sum(int(errors.get(k, 0)) for k in ERROR_KINDS),
        *(int(errors.get(k, 0)) for k in ERROR_KINDS),
        line.get("dropped", 0),
        line.get("open_connections", 0),
        line.get("connections_closed_by_server"),
        gen.get("cpu_ms"),
        gen.get("cpu_util"),
        gen.get("rss_bytes"),
        gen.get("goroutines"),
        gen.get("sched_p99_ms"),
        None if gen.get("saturated") is None else int(bool(gen["saturated"])),
    )


def sample_values(line: Mapping[str, Any]) -> tuple[Any, ...]:
    """A server sample (``server.jsonl``) as the values of :data:`SAMPLE_COLUMNS`; a sample without a
    source (the server's group could not be read) has its usage columns NULL, not 0."""
    measured = bool(line.get("source"))

    def usage(key: str) -> Any:
        return line.get(key) if measured else None

    return (
        line["index"],
        line["t_s"],
        usage("cpu_ms"),
        usage("cpu_util"),
        usage("memory_bytes"),
        usage("memory_peak_bytes"),
        usage("processes"),
        usage("threads"),
        line.get("source") or None,
        json.dumps(line.get("gauges") or {}),
        line.get("error"),
    )


# --------------------------------------------------------------------------------------------------
# Reader


class Results(_Base):
    """Read access to a results database; every method returns a pandas DataFrame.

    >>> import wirelab
    >>> db = wirelab.open("wirelab.db")            # doctest: +SKIP
    >>> db.loads(sweep="demo").groupby(["network.rtt_ms", "protocol"]).tow_ms.median()  # doctest: +SKIP
    """

    def __init__(self, path: str | Path = DEFAULT_DB):
        super().__init__(path, readonly=True)

    def _sweep_filter(self, sweep: str | None, alias: str = "s") -> tuple[str, list[Any]]:
        if sweep is None:
            return "", []
        if self.conn.execute("SELECT 1 FROM sweeps WHERE name = ?", (sweep,)).fetchone() is None:
            known = [r[0] for r in self.conn.execute("SELECT name FROM sweeps ORDER BY name")]
            raise UsageError(f"sweep: {sweep!r} is not in {self.path}; sweeps: {', '.join(known) or 'none'}")
        return f" AND {alias}.name = ?", [sweep]

    def sweeps(self) -> pd.DataFrame:
        """One row per sweep: name, kind (``trials`` or ``loadtest``), description, spec_hash, axes,
        planned/complete/failed trials (a load-test sweep's runs), loads."""
        df = pd.read_sql_query(
            """
            SELECT s.name AS sweep, s.kind, s.description, s.spec_hash, s.axes_json, s.planned_trials,
                   s.planned_loads,
                   COALESCE(SUM(t.status = 'complete'), 0) + (SELECT COUNT(*) FROM loadtests l
                        WHERE l.sweep_id = s.id AND l.status = 'complete') AS complete_trials,
                   COALESCE(SUM(t.status = 'failed'), 0) + (SELECT COUNT(*) FROM loadtests l
                        WHERE l.sweep_id = s.id AND l.status = 'failed') AS failed_trials,
                   COALESCE(SUM(t.loads), 0) AS loads, COALESCE(SUM(t.load_errors), 0) AS load_errors,
                   COALESCE(SUM(t.fidelity_flags_json != '[]'), 0) AS fidelity_warnings,
                   s.created_at, s.updated_at
              FROM sweeps s LEFT JOIN trials t ON t.sweep_id = s.id AND t.repeat_of IS NULL
             GROUP BY s.id ORDER BY s.created_at, s.name
            """,
            self.conn,
        )
        df["axes"] = df.pop("axes_json").map(json.loads)
        return df

    def trials(
        self, sweep: str | None = None, *, status: str | None = None, repeats: bool = False
    ) -> pd.DataFrame:
        """One row per trial with its grid parameters as columns (dotted names) and its parsed
        ``spec``, ``provenance`` and ``emulator`` summary. ``repeats``: also the trials of
        ``[sweep] repeat_on_each_worker`` (``repeat_of`` names the configuration they repeat)."""
        where, args = self._sweep_filter(sweep)
        where += "" if repeats else " AND t.repeat_of IS NULL"
        if status is not None:
            where += " AND t.status = ?"
            args.append(status)
        df = pd.read_sql_query(
            f"""
            SELECT s.name AS sweep, t.trial_id, t.idx AS trial_index, t.status, t.params_json, t.spec_json,
                   t.loads_planned, t.loads, t.load_errors, t.lateness_p50_us, t.lateness_p99_us,
                   t.lateness_max_us, t.fidelity_flags_json, t.attempts, t.error, t.started_at, t.ended_at,
                   t.worker, t.repeat_of, t.dir, t.provenance_json, t.emulator_json
              FROM trials t JOIN sweeps s ON s.id = t.sweep_id
             WHERE 1 = 1 {where} ORDER BY s.name, t.idx
            """,
            self.conn,
            params=args,
        )
        df["fidelity_flags"] = df.pop("fidelity_flags_json").map(json.loads)
        df["spec"] = df.pop("spec_json").map(json.loads)
        df["provenance"] = df.pop("provenance_json").map(
            lambda v: json.loads(v) if isinstance(v, str) else None
        )
        df["emulator"] = df.pop("emulator_json").map(lambda v: json.loads(v) if isinstance(v, str) else None)
        return _with_params(df)

    def loads(
        self,
        sweep: str | None = None,
        *,
        protocol: str | None = None,
        with_errors: bool = True,
        repeats: bool = False,
    ) -> pd.DataFrame:
        """One row per load of every complete trial: the load record's fields, ``page`` and ``network``
        from the trial spec, one column per grid parameter (dotted name) and numeric companions of
        unit-bearing parameters (``network.rtt`` → ``network.rtt_ms``). ``repeats``: also the loads of
        ``[sweep] repeat_on_each_worker``'s trials."""
        where, args = self._sweep_filter(sweep)
        where += "" if repeats else " AND t.repeat_of IS NULL"
        if protocol is not None:
            where += " AND l.protocol = ?"
            args.append(protocol)
        if not with_errors:
            where += " AND l.error IS NULL"
        cols = ", ".join(f"l.{c}" for c in LOAD_COLUMNS)
        df = pd.read_sql_query(
            f"""
            SELECT s.name AS sweep, t.trial_id, t.idx AS trial_index, t.params_json, t.spec_json,
                   t.lateness_p99_us, t.fidelity_flags_json, t.worker, t.repeat_of, l.id AS load_id, {cols}
              FROM loads l JOIN trials t ON t.id = l.trial_row JOIN sweeps s ON s.id = t.sweep_id
             WHERE t.status = 'complete' {where} ORDER BY s.name, t.idx, l.load_index
            """,
            self.conn,
            params=args,
        )
        specs = df.pop("spec_json").map(json.loads)
        df.insert(3, "page", specs.map(lambda s: s["page"]))
        df.insert(4, "network", specs.map(lambda s: s["network"]))
        df["fidelity_flags"] = df.pop("fidelity_flags_json").map(json.loads)
        df["client"] = df.pop("client_json").map(json.loads)
        return _with_params(df)

    def objects(
        self, sweep: str | None = None, *, trial_id: str | None = None, load_index: int | None = None
    ) -> pd.DataFrame:
        """One row per object (HAR entry) of every stored load, with its load's protocol and repetition
        (of the planned trials, or of the trial ``trial_id`` whichever it is)."""
        where, args = self._sweep_filter(sweep)
        if trial_id is not None:
            where += " AND t.trial_id = ?"
            args.append(trial_id)
        else:
            where += " AND t.repeat_of IS NULL"
        if load_index is not None:
            where += " AND l.load_index = ?"
            args.append(load_index)
        df = pd.read_sql_query(
            f"""
            SELECT s.name AS sweep, t.trial_id, t.params_json, l.load_index, l.protocol AS load_protocol,
                   l.repetition, o.entry_index, o.url, o.origin, o.protocol, o.connection, o.stream_id,
                   o.status,
                   o.mime_type, o.size_bytes, o.started_ms, o.time_ms, o.blocked_ms, o.dns_ms, o.connect_ms,
                   o.ssl_ms, o.send_ms, o.wait_ms, o.receive_ms
              FROM objects o JOIN loads l ON l.id = o.load_id JOIN trials t ON t.id = l.trial_row
                   JOIN sweeps s ON s.id = t.sweep_id
             WHERE 1 = 1 {where} ORDER BY s.name, t.idx, l.load_index, o.entry_index
            """,
            self.conn,
            params=args,
        )
        return _with_params(df)

    def artifacts(self, sweep: str | None = None, *, trial_id: str | None = None) -> pd.DataFrame:
        """Files kept for each trial and load (kind, path relative to the database, absolute path)."""
        where, args = self._sweep_filter(sweep)
        if trial_id is not None:
            where += " AND t.trial_id = ?"
            args.append(trial_id)
        df = pd.read_sql_query(
            f"""
            SELECT s.name AS sweep, t.trial_id, l.load_index, a.kind, a.path
              FROM artifacts a JOIN trials t ON t.id = a.trial_row JOIN sweeps s ON s.id = t.sweep_id
                   LEFT JOIN loads l ON l.id = a.load_id
             WHERE 1 = 1 {where} ORDER BY s.name, t.idx, a.id
            """,
            self.conn,
            params=args,
        )
        df["abspath"] = df["path"].map(lambda p: str(self.absolute(p)))
        return df

    def har(self, sweep: str, trial_id: str, load_index: int) -> dict[str, Any]:
        """The parsed HAR of one load."""
        row = self.conn.execute(
            "SELECT a.path FROM artifacts a JOIN loads l ON l.id = a.load_id"
            " JOIN trials t ON t.id = a.trial_row"
            " JOIN sweeps s ON s.id = t.sweep_id WHERE s.name = ? AND t.trial_id = ? AND l.load_index = ?"
            " AND a.kind = 'har'",
            (sweep, trial_id, load_index),
        ).fetchone()
        if row is None:
            raise StoreError(f"no HAR stored for load {load_index} of trial {trial_id} in sweep {sweep}")
        return json.loads(self.absolute(row["path"]).read_text())

    # ----------------------------------------------------------------------------------------------
    # probes (docs/probe.md)

    def _probe_filter(self, run: str | None) -> tuple[str, list[Any]]:
        if run is None:
            return "", []
        if self.conn.execute("SELECT 1 FROM probe_runs WHERE name = ?", (run,)).fetchone() is None:
            known = [r[0] for r in self.conn.execute("SELECT name FROM probe_runs ORDER BY started_at, name")]
            raise UsageError(
                f"--run: {run!r} is not a probe run in {self.path}; runs: {', '.join(known) or 'none'}"
            )
        return " AND r.name = ?", [run]

    def probe_runs(self) -> pd.DataFrame:
        """One row per probe run: name, status, local, allow_internet, sites stored, refused and failed
        sites, start and end, the engine arguments and provenance."""
        df = pd.read_sql_query(
            """
            SELECT r.name AS run, r.status, r.local, r.allow_internet, r.sites,
                   COALESCE(SUM(p.refused IS NOT NULL), 0) AS refused,
                   COALESCE(SUM(p.error IS NOT NULL), 0) AS errors,
                   r.started_at, r.ended_at, r.error, r.args_json, r.provenance_json
              FROM probe_runs r LEFT JOIN probes p ON p.run_id = r.id
             GROUP BY r.id ORDER BY r.started_at, r.name
            """,
            self.conn,
        )
        df["local"] = df["local"].astype(bool)
        df["allow_internet"] = df["allow_internet"].astype(bool)
        df["args"] = df.pop("args_json").map(json.loads)
        df["provenance"] = df.pop("provenance_json").map(json.loads)
        return df

    def probe_protocols(self, run: str | None = None) -> pd.DataFrame:
        """One row per probed site and protocol: run, site_index, site, host, addr, refused, protocol
        and the protocol's fields (``PROBE_FIELDS``; ``announced`` is None for h1, ``announced_by`` a
        list)."""
        where, args = self._probe_filter(run)
        cols = ", ".join(f"x.{c}" for c in PROBE_FIELDS)
        df = pd.read_sql_query(
            f"""
            SELECT r.name AS run, p.site_index, p.site, p.host, p.addr, p.refused, x.protocol, {cols}
              FROM probe_protocols x JOIN probes p ON p.id = x.probe_id JOIN probe_runs r ON r.id = p.run_id
             WHERE 1 = 1 {where} ORDER BY r.started_at, r.name, p.site_index, x.id
            """,
            self.conn,
            params=args,
        )
        df["announced"] = (
            df["announced"].map(lambda v: None if v is None or v != v else bool(v)).astype(object)
        )
        df["served"] = df["served"].astype(bool)
        df["announced_by"] = df["announced_by"].map(lambda v: [x for x in v.split(",") if x])
        return df

    def probes(self, run: str | None = None) -> pd.DataFrame:
        """One row per probed site: the site's fields (url, host, addr, DNS, HTTPS record alpn and ech,
        Alt-Svc, refused, error, duration) and, per protocol P, ``P_announced``, ``P_served``,
        ``P_status`` … (every field of ``PROBE_FIELDS``)."""
        where, args = self._probe_filter(run)
        sites = pd.read_sql_query(
            f"""
            SELECT r.name AS run, p.site_index, p.site, p.url, p.host, p.addr, p.started_at, p.duration_ms,
                   p.dns_ms, p.dns_a, p.dns_aaaa, p.https_alpn, p.https_ech, p.alt_svc, p.refused, p.error
              FROM probes p JOIN probe_runs r ON r.id = p.run_id
             WHERE 1 = 1 {where} ORDER BY r.started_at, r.name, p.site_index
            """,
            self.conn,
            params=args,
        )
        protos = self.probe_protocols(run)
        for proto in PROBE_PROTOCOLS:
            mine = protos[protos["protocol"] == proto].set_index(["run", "site_index"])
            for field in PROBE_FIELDS:
                values = mine[field].to_dict()
                sites[f"{proto}_{field}"] = [
                    values.get(k) for k in zip(sites["run"], sites["site_index"], strict=True)
                ]
        return sites

    # load tests ------------------------------------------------------------------------------------
    def loadtests(self, sweep: str | None = None, *, status: str | None = None) -> pd.DataFrame:
        """One row per load-test run: ``sweep``, ``loadtest_id``, ``run_index``, ``point``, ``protocol``,
        ``status``, ``complete``, ``server`` (``server.impl``), the outcome columns, parsed ``spec``,
        ``outcomes``, ``thresholds``, ``summary``, ``provenance``, ``emulator`` and
        ``server_exited``, and the grid parameters (dotted names, with numeric companions)."""
        where, args = self._sweep_filter(sweep)
        if status is not None:
            where += " AND l.status = ?"
            args.append(status)
        df = pd.read_sql_query(
            f"""
            SELECT s.name AS sweep, l.loadtest_id, l.idx AS run_index, l.point, l.protocol, l.status,
                   l.complete, l.params_json, l.spec_json, l.planned_s, l.duration_s, l.intervals,
                   l.server_samples, l.pages, l.pages_failed, l.hits, l.errors, l.error_rate, l.vus_max,
                   l.max_pages_per_s, l.max_hits_per_s, l.vus_at_first_error, l.vus_at_first_sla_violation,
                   l.first_sla_violation_interval, l.server_cpu_util_max, l.thresholds_passed,
                   l.generator_saturated, l.interrupted, l.lateness_p99_us, l.error, l.attempts,
                   l.started_at, l.ended_at, l.dir, l.outcomes_json, l.thresholds_json, l.summary_json,
                   l.provenance_json, l.emulator_json, l.server_exited_json
              FROM loadtests l JOIN sweeps s ON s.id = l.sweep_id
             WHERE 1 = 1 {where} ORDER BY s.name, l.idx
            """,
            self.conn,
            params=args,
        )
        df["spec"] = df.pop("spec_json").map(json.loads)
        df.insert(5, "server", df["spec"].map(lambda spec: (spec.get("server") or {}).get("impl", "builtin")))
        for name in ("outcomes", "thresholds", "summary", "provenance", "emulator", "server_exited"):
            df[name] = df.pop(f"{name}_json").map(lambda v: json.loads(v) if isinstance(v, str) else None)
        for name in ("thresholds_passed", "generator_saturated", "interrupted"):
            df[name] = df[name].map(lambda v: None if v is None or v != v else bool(v))
        df["complete"] = df["complete"].astype(bool)
        return _with_params(df)

    def load_intervals(self, sweep: str | None = None, *, loadtest_id: str | None = None) -> pd.DataFrame:
        """One row per interval of every stored run (complete or not): ``sweep``, ``loadtest_id``,
        ``protocol``, ``server``, ``status``, every ``load_intervals`` column (``page_p90_ms``,
        ``errors_timeout`` …) and the grid parameters."""
        return self._per_interval("load_intervals", INTERVAL_COLUMNS, sweep, loadtest_id)

    def server_samples(self, sweep: str | None = None, *, loadtest_id: str | None = None) -> pd.DataFrame:
        """One row per server sample of every stored run: ``sweep``, ``loadtest_id``, ``protocol``,
        ``server``, ``status``, every ``server_samples`` column, ``gauges`` (dict), ``busy`` (the
        server's busy-worker gauge, or its threads: :data:`wirelab._registry.BUSY_GAUGES`) with
        ``busy_gauge`` naming which, and the grid parameters."""
        from wirelab._registry import BUSY_FALLBACK, BUSY_GAUGES

        df = self._per_interval("server_samples", SAMPLE_COLUMNS, sweep, loadtest_id)
        df["gauges"] = df.pop("gauges_json").map(json.loads)
        gauge = df["server"].map(lambda impl: BUSY_GAUGES.get(impl, BUSY_FALLBACK)[0])
        df["busy_gauge"] = gauge
        df["busy"] = [
            row["threads"] if name == BUSY_FALLBACK[0] else row["gauges"].get(name)
            for name, row in zip(gauge, df.to_dict("records"), strict=True)
        ]
        df["busy"] = pd.to_numeric(df["busy"], errors="coerce")
        return df

    def _per_interval(
        self, table: str, columns: Sequence[str], sweep: str | None, loadtest_id: str | None
    ) -> pd.DataFrame:
        where, args = self._sweep_filter(sweep)
        if loadtest_id is not None:
            where += " AND l.loadtest_id = ?"
            args.append(loadtest_id)
        cols = ", ".join(f"x.{c}" for c in columns)
        df = pd.read_sql_query(
            f"""
            SELECT s.name AS sweep, l.loadtest_id, l.idx AS run_index, l.protocol, l.status, l.params_json,
                   json_extract(l.spec_json, '$.server.impl') AS server, {cols}
              FROM {table} x JOIN loadtests l ON l.id = x.loadtest_row JOIN sweeps s ON s.id = l.sweep_id
             WHERE 1 = 1 {where} ORDER BY s.name, l.idx, x.interval_index
            """,
            self.conn,
            params=args,
        )
        df["server"] = df["server"].fillna("builtin")
        if "generator_saturated" in df:
            df["generator_saturated"] = df["generator_saturated"].map(
                lambda v: None if v is None or v != v else bool(v)
            )
        return _with_params(df)


def _with_params(df: pd.DataFrame) -> pd.DataFrame:
    """Replace ``params_json`` by one column per grid parameter plus numeric companions.

    Rows of one trial share its params string, so each distinct string is parsed once and the
    columns are filled by mapping (objects tables have hundreds of thousands of rows)."""
    if "params_json" not in df:
        return df
    raw = df.pop("params_json")
    parsed: dict[str, dict[str, Any]] = {}
    for text in raw.unique():
        p = json.loads(text)
        parsed[text] = {**p, **spec_mod.numeric_params(p)}
    names = list(dict.fromkeys(name for values in parsed.values() for name in values))
    for name in names:
        if name in df.columns:
            continue
        df[name] = raw.map({text: values.get(name) for text, values in parsed.items()})
    return df


def open_results(path: str | Path = DEFAULT_DB) -> Results:
    """Open an existing results database for reading (``wirelab.open``)."""
    return Results(path)
