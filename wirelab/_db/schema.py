"""The results database's schema: its tables, their migrations and how it is opened (``docs/results.md``).

Tables whose rows are the engine's records — a load, a HAR entry, a probed site and its protocols, a
load test's interval and server sample — are :class:`RecordTable` s: each column is declared ONCE, with
how its value comes from a record and the schema version that added it; the CREATE TABLE of the
version that made the table, the ALTER TABLE of every later column, the INSERT and its values and the
readers' column lists all come from that declaration. Adding a field of the load record is one line in
:data:`LOADS` (``Column(name, decl, since=N)``: N is the next schema version, whose migration is
generated; docs/results.md says so for users).

The schema is versioned with ``PRAGMA user_version`` and migrated forward when the database is opened
for writing (:data:`MIGRATIONS`). Reading never creates or modifies a file: :class:`Database` opened
read-only reads an older schema through a migrated copy in memory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from wirelab import _contract as contract
from wirelab import _facts
from wirelab._db.files import DATA_FILE_MODE, DEFAULT_DB, results_dir
from wirelab._har import OBJECT_TIMINGS
from wirelab._userpath import check_output_file
from wirelab.errors import DatabaseError, SchemaVersionError, cut

__all__ = [
    "ERROR_KINDS",
    "GATEWAY_COLUMNS",
    "INTERVALS",
    "ITEM_KINDS",
    "LATENCY_STATS",
    "LOADS",
    "MIGRATIONS",
    "OBJECTS",
    "OBJECT_TIMINGS",
    "PHASES",
    "PROBES",
    "PROBE_FIELDS",
    "PROBE_PROTOCOLS",
    "PROBE_PROTOCOL_ROWS",
    "SAMPLES",
    "SCHEMA_VERSION",
    "VISUAL_COLUMNS",
    "Column",
    "Database",
    "ItemKind",
    "RecordTable",
    "migrate",
    "now",
]


@dataclasses.dataclass(frozen=True)
class Column:
    """One column of a :class:`RecordTable`."""

    name: str
    #: its SQL type and constraints (``REAL NOT NULL``)
    decl: str
    #: its value from one record; default: the record's field of the column's name (``record[name]``
    #: when the column is NOT NULL, else ``record.get(name)``)
    value: Callable[[Mapping[str, Any]], Any] | None = None
    #: the schema version that added it to its table (its ALTER TABLE is that version's migration);
    #: None: created with the table
    since: int | None = None

    def of(self, record: Mapping[str, Any]) -> Any:
        if self.value is not None:
            return self.value(record)
        return record[self.name] if "NOT NULL" in self.decl else record.get(self.name)


@dataclasses.dataclass(frozen=True)
class RecordTable:
    """A table with one row per record under a parent row (``parent`` references ``parent_table``),
    keyed by ``key`` within its parent; its columns in the order readers return them."""

    name: str
    parent: str
    parent_table: str
    key: str
    columns: tuple[Column, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def create(self) -> str:
        """The CREATE TABLE of the version that made the table (its columns without ``since``)."""
        cols = [
            ("id", "INTEGER PRIMARY KEY"),
            (self.parent, f"INTEGER NOT NULL REFERENCES {self.parent_table}(id) ON DELETE CASCADE"),
            *((c.name, c.decl) for c in self.columns if c.since is None),
        ]
        width = max(len(name) for name, _ in cols) + 1
        body = "".join(f"    {name:<{width}}{decl},\n" for name, decl in cols)
        return f"CREATE TABLE {self.name} (\n{body}    UNIQUE ({self.parent}, {self.key})\n);"

    def added(self, version: int) -> str:
        """The ALTER TABLE statements of schema ``version`` (the columns it added)."""
        return "".join(
            f"ALTER TABLE {self.name} ADD COLUMN {c.name} {c.decl};\n"
            for c in self.columns
            if c.since == version
        )

    def insert(self) -> str:
        names = ", ".join((self.parent, *self.names))
        return f"INSERT INTO {self.name} ({names}) VALUES ({','.join('?' * (len(self.columns) + 1))})"

    def values(self, parent: int, record: Mapping[str, Any]) -> tuple[Any, ...]:
        return (parent, *(c.of(record) for c in self.columns))


def _at(*keys: str, default: Any = None) -> Callable[[Mapping[str, Any]], Any]:
    """The value at ``keys`` in nested objects (a missing or null object on the way: ``default``)."""

    def get(record: Mapping[str, Any]) -> Any:
        value: Any = record
        for key in keys:
            if not isinstance(value, Mapping) or value.get(key) is None:
                return default
            value = value[key]
        return value

    return get


def _flag(get: Callable[[Mapping[str, Any]], Any]) -> Callable[[Mapping[str, Any]], int | None]:
    """A boolean stored as 0/1, None staying None."""
    return lambda record: None if get(record) is None else int(bool(get(record)))


def _json(key: str, default: Any) -> Callable[[Mapping[str, Any]], str]:
    return lambda record: json.dumps(record.get(key) or default)


def _json_or_null(key: str) -> Callable[[Mapping[str, Any]], str | None]:
    return lambda record: None if record.get(key) is None else json.dumps(record[key])


# --------------------------------------------------------------------------------------------------
# The engine's records as tables

PHASES = ("dns", "connect", "ssl", "send", "wait", "receive", "blocked")


def _gateway_sum(key: str) -> Callable[[Mapping[str, Any]], Any]:
    """Both directions' ``gateway`` count ``key`` summed (None without a gateway)."""

    def get(record: Mapping[str, Any]) -> Any:
        g = record.get("gateway")
        return None if g is None else g["up"][key] + g["down"][key]

    return get


#: The load record's ``gateway`` as columns of ``loads`` (v8): the queue's drops by cause and its
#: marks (both directions), each direction's sojourn percentiles, the load's flows and those the
#: gateway dropped or marked packets of (most drops first, as JSON). NULL for loads stored before.
GATEWAY_COLUMNS: tuple[Column, ...] = (
    *(
        Column(k, "INTEGER", _gateway_sum(k), since=8)
        for k in ("drops_tail", "drops_aqm", "drops_overflow", "marks")
    ),
    *(
        Column(f"sojourn_{d}_{q}_ms", "REAL", _at("gateway", d, "sojourn_ms", q), since=8)
        for d in ("down", "up")
        for q in ("p50", "p95", "p99", "max")
    ),
    *(
        Column(k, "INTEGER", _at("gateway", k), since=8)
        for k in ("flows", "flows_congested", "max_flow_drops")
    ),
    Column(
        "congested_flows_json",
        "TEXT",
        lambda r: None if r.get("gateway") is None else json.dumps(r["gateway"]["congested_flows"]),
        since=8,
    ),
)

#: The schema version that added the view and the visual metrics to ``loads``.
_VISUAL = 10
#: The visual metrics of a Chromium load as columns of ``loads`` (the record's fields of those names).
VISUAL_COLUMNS = (
    ("lcp_ms", "REAL"),
    ("lcp_url", "TEXT"),
    ("lcp_size_px", "REAL"),
    ("lcp_type", "TEXT"),
    ("cls", "REAL"),
    ("speed_index_ms", "REAL"),
    ("visually_complete_ms", "REAL"),
)


#: Loads: one row per line of a trial's loads.jsonl (``schemas/load-record.schema.json``).
LOADS = RecordTable(
    "loads",
    parent="trial_row",
    parent_table="trials",
    key="load_index",
    columns=(
        Column("load_index", "INTEGER NOT NULL", _at("index")),
        Column("protocol", "TEXT NOT NULL"),
        Column("repetition", "INTEGER NOT NULL"),
        Column("started_at", "TEXT NOT NULL"),
        Column("tow_ms", "REAL NOT NULL"),
        Column("tow_first_packet_ms", "REAL NOT NULL"),
        Column("plt_ms", "REAL NOT NULL"),
        Column("bytes_down", "INTEGER NOT NULL"),
        Column("bytes_up", "INTEGER NOT NULL"),
        Column("packets_down", "INTEGER NOT NULL"),
        Column("packets_up", "INTEGER NOT NULL"),
        Column("retransmissions", "INTEGER NOT NULL"),
        Column("drops_queue", "INTEGER NOT NULL"),
        Column("drops_loss", "INTEGER NOT NULL"),
        Column("connections", "INTEGER NOT NULL"),
        Column("tls_handshakes", "INTEGER NOT NULL"),
        Column("tls_resumed", "INTEGER NOT NULL"),
        Column("objects", "INTEGER NOT NULL"),
        Column("body_bytes", "INTEGER NOT NULL"),
        Column("pushed_bytes", "INTEGER NOT NULL"),
        Column("pushes_used", "INTEGER NOT NULL"),
        Column("pushes_unused", "INTEGER NOT NULL"),
        # v13: the client's datagrams carrying a QUIC 0-RTT packet (NULL: stored before v13)
        Column("quic_0rtt_packets", "INTEGER", since=13),
        # the server under test's cost per load (NULL: not measured, or stored before v3)
        Column("server_cpu_ms", "REAL", since=3),
        Column("server_rss_peak_bytes", "INTEGER", since=3),
        *GATEWAY_COLUMNS,
        *(Column(f"{p}_ms", "REAL NOT NULL", _at("phases_ms", p)) for p in PHASES),
        # the view and Chromium's visual metrics (docs/vitals.md; NULL: not measured — the engine's
        # loader, capture.screenshots false — or stored before v10)
        Column("view", "TEXT", _at("view", default="first"), since=_VISUAL),
        *(Column(n, d, since=_VISUAL) for n, d in VISUAL_COLUMNS),
        Column("visual_progress_json", "TEXT", _json_or_null("visual_progress"), since=_VISUAL),
        Column("frames", "TEXT", since=_VISUAL),
        Column("har", "TEXT"),
        Column("pcap_client", "TEXT", _at("pcap", "client")),
        Column("pcap_server", "TEXT", _at("pcap", "server")),
        Column("client_json", "TEXT NOT NULL DEFAULT '{}'", _json("client", {})),
        Column("error", "TEXT"),
        # v9: the decomposition of the load's time on the wire (docs/why.md): one column per part, the
        # parts and their keys the engine's (facts); its critical path; retransmissions by kind. NULL
        # for a load without one (failed) and for loads stored from an engine before it.
        *(Column(p.column, "REAL", _at("why", p.key), since=9) for p in _facts.why_parts()),
        Column("why_path_json", "TEXT", _json_or_null("why_path"), since=9),
        *(Column(k, "INTEGER", since=9) for k in _facts.retx_keys()),
    ),
)

#: Objects: one row per HAR entry of a load (``wirelab._har.objects_from_har``'s rows).
OBJECTS = RecordTable(
    "objects",
    parent="load_id",
    parent_table="loads",
    key="entry_index",
    columns=(
        Column("entry_index", "INTEGER NOT NULL"),
        Column("url", "TEXT NOT NULL"),
        Column("origin", "TEXT NOT NULL"),
        Column("protocol", "TEXT"),
        Column("connection", "TEXT"),
        Column("stream_id", "INTEGER"),
        Column("status", "INTEGER"),
        Column("mime_type", "TEXT"),
        Column("size_bytes", "INTEGER"),
        Column("started_ms", "REAL NOT NULL"),
        Column("time_ms", "REAL NOT NULL"),
        *(Column(f"{k}_ms", "REAL") for k in OBJECT_TIMINGS),
    ),
)

#: The protocols of a probe record, in its order: the probe record schema's ``protocols`` keys.
PROBE_PROTOCOLS: tuple[str, ...] = tuple(
    contract.load_schema("probe-record")["properties"]["protocols"]["required"]
)


def _https(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return (record.get("dns") or {}).get("https") or []


def _dns(get: Callable[[Mapping[str, Any]], Any]) -> Callable[[Mapping[str, Any]], Any]:
    return lambda record: get(record["dns"]) if record.get("dns") else None


#: Probes: one row per probed site (a line of ``wirelab-engine probe``, schemas/probe-record.schema.json).
PROBES = RecordTable(
    "probes",
    parent="run_id",
    parent_table="probe_runs",
    key="site_index",
    columns=(
        Column("site_index", "INTEGER NOT NULL", _at("index")),
        Column("site", "TEXT NOT NULL"),
        Column("url", "TEXT NOT NULL"),
        Column("host", "TEXT NOT NULL"),
        Column("addr", "TEXT NOT NULL"),
        Column("started_at", "TEXT NOT NULL"),
        Column("duration_ms", "REAL NOT NULL"),
        Column("dns_ms", "REAL", _dns(lambda d: d["ms"])),
        Column("dns_a", "TEXT", _dns(lambda d: ",".join(d["a"]))),
        Column("dns_aaaa", "TEXT", _dns(lambda d: ",".join(d["aaaa"]))),
        Column(
            "https_alpn",
            "TEXT",
            lambda r: ",".join(dict.fromkeys(a for h in _https(r) for a in h["alpn"])) if _https(r) else None,
        ),
        Column(
            "https_ech", "INTEGER", lambda r: int(any(h["ech"] for h in _https(r))) if _https(r) else None
        ),
        Column("alt_svc", "TEXT NOT NULL"),
        Column("refused", "TEXT", lambda r: r["refused"] or None),
        Column("error", "TEXT", lambda r: r["error"] or None),
        Column("record_json", "TEXT NOT NULL", json.dumps),
    ),
)

#: Probe protocols: one row per probed site and protocol (a probe record's ``protocols[P]`` with
#: ``protocol`` = P).
PROBE_PROTOCOL_ROWS = RecordTable(
    "probe_protocols",
    parent="probe_id",
    parent_table="probes",
    key="protocol",
    columns=(
        Column("protocol", "TEXT NOT NULL"),
        Column("announced", "INTEGER", _flag(_at("announced"))),
        Column("announced_by", "TEXT NOT NULL", lambda r: ",".join(r["announced_by"])),
        Column("served", "INTEGER NOT NULL", lambda r: int(r["served"])),
        Column("status", "INTEGER", lambda r: r["status"] or None),
        Column("server", "TEXT NOT NULL"),
        Column("alpn", "TEXT NOT NULL"),
        Column("tls_version", "TEXT NOT NULL"),
        Column("cert_error", "TEXT NOT NULL"),
        Column("connect_ms", "REAL"),
        Column("handshake_ms", "REAL"),
        Column("first_byte_ms", "REAL"),
        Column("port", "INTEGER NOT NULL"),
        Column("error", "TEXT", lambda r: r["error"] or None),
    ),
)
#: Per-protocol fields of a probe record stored as columns of ``probe_protocols``.
PROBE_FIELDS = PROBE_PROTOCOL_ROWS.names[1:]

#: Latency statistics of an interval (the engine's ``{p50, p90, p95, p99, max, mean}``).
LATENCY_STATS = ("p50", "p90", "p95", "p99", "max", "mean")
#: Error kinds of an interval (the engine's ``errors`` object).
ERROR_KINDS = ("connect_refused", "reset", "timeout", "tls", "http_status", "other")


def _error_count(kind: str) -> Callable[[Mapping[str, Any]], int]:
    return lambda line: int((line.get("errors") or {}).get(kind, 0))


#: Load intervals: one row per line of a load test's intervals.jsonl.
INTERVALS = RecordTable(
    "load_intervals",
    parent="loadtest_row",
    parent_table="loadtests",
    key="interval_index",
    columns=(
        Column("interval_index", "INTEGER NOT NULL", _at("index")),
        Column("t_start_s", "REAL NOT NULL"),
        Column("t_end_s", "REAL NOT NULL"),
        Column("vus", "INTEGER NOT NULL"),
        Column("vus_max", "INTEGER NOT NULL"),
        Column("pages", "INTEGER NOT NULL"),
        Column("pages_failed", "INTEGER NOT NULL"),
        Column("pages_per_s", "REAL NOT NULL"),
        Column("hits", "INTEGER NOT NULL"),
        Column("hits_per_s", "REAL NOT NULL"),
        Column("bytes", "INTEGER NOT NULL"),
        Column("bytes_per_s", "REAL NOT NULL"),
        *(Column(f"page_{s}_ms", "REAL", _at("page_ms", s)) for s in LATENCY_STATS),
        *(Column(f"request_{s}_ms", "REAL", _at("request_ms", s)) for s in LATENCY_STATS),
        Column("errors", "INTEGER NOT NULL", lambda line: sum(_error_count(k)(line) for k in ERROR_KINDS)),
        *(Column(f"errors_{k}", "INTEGER NOT NULL", _error_count(k)) for k in ERROR_KINDS),
        Column("dropped", "INTEGER NOT NULL", _at("dropped", default=0)),
        Column("open_connections", "INTEGER NOT NULL", _at("open_connections", default=0)),
        # connections the server ended before the VUs closed them (NULL: stored before v7, or an
        # engine that did not count them)
        Column("connections_closed_by_server", "INTEGER", since=7),
        Column("generator_cpu_ms", "REAL", _at("generator", "cpu_ms")),
        Column("generator_cpu_util", "REAL", _at("generator", "cpu_util")),
        Column("generator_rss_bytes", "INTEGER", _at("generator", "rss_bytes")),
        Column("generator_goroutines", "INTEGER", _at("generator", "goroutines")),
        Column("generator_sched_p99_ms", "REAL", _at("generator", "sched_p99_ms")),
        Column("generator_saturated", "INTEGER", _flag(_at("generator", "saturated"))),
        # v12: a run spread over several generators (wirelab loadtest --generators): the interval is
        # the merge of theirs; degraded when a generator had been lost before it ended (NULL: one
        # generator, or stored before), generators_json each one's share, CPU and saturation
        Column("degraded", "INTEGER", _flag(_at("degraded", default=False)), since=12),
        Column(
            "generators_lost",
            "TEXT",
            lambda line: ",".join(line.get("generators_lost") or []) or None,
            since=12,
        ),
        Column("generators_json", "TEXT", _json_or_null("generators"), since=12),
    ),
)


def _usage(key: str) -> Callable[[Mapping[str, Any]], Any]:
    """A sample without a source (the server's group could not be read) has its usage NULL, not 0."""
    return lambda line: line.get(key) if line.get("source") else None


#: Server samples: one row per line of a load test's server.jsonl.
SAMPLES = RecordTable(
    "server_samples",
    parent="loadtest_row",
    parent_table="loadtests",
    key="interval_index",
    columns=(
        Column("interval_index", "INTEGER NOT NULL", _at("index")),
        Column("t_s", "REAL NOT NULL"),
        Column("cpu_ms", "REAL", _usage("cpu_ms")),
        Column("cpu_util", "REAL", _usage("cpu_util")),
        Column("memory_bytes", "INTEGER", _usage("memory_bytes")),
        Column("memory_peak_bytes", "INTEGER", _usage("memory_peak_bytes")),
        Column("processes", "INTEGER", _usage("processes")),
        Column("threads", "INTEGER", _usage("threads")),
        Column("source", "TEXT", lambda line: line.get("source") or None),
        Column("gauges_json", "TEXT NOT NULL DEFAULT '{}'", _json("gauges", {})),
        Column("error", "TEXT"),
    ),
)

_RECORD_TABLES = (LOADS, OBJECTS, PROBES, PROBE_PROTOCOL_ROWS, INTERVALS, SAMPLES)


@dataclasses.dataclass(frozen=True)
class ItemKind:
    """A sweep's kind (``sweeps.kind``) and the table of its items: trials or load-test runs."""

    table: str
    #: the item's id column, and the item in words
    id: str
    noun: str
    #: record tables whose rows an attempt replaces when it starts, each with the item's column that
    #: counts them
    attempt_rows: tuple[tuple[RecordTable, str], ...] = ()


ITEM_KINDS = {
    "trials": ItemKind("trials", "trial_id", "trial"),
    "loadtest": ItemKind(
        "loadtests", "loadtest_id", "load test", ((INTERVALS, "intervals"), (SAMPLES, "server_samples"))
    ),
}


# --------------------------------------------------------------------------------------------------
# Migrations

_V1 = f"""
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
    provenance_json TEXT NOT NULL DEFAULT '{{}}',
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
{LOADS.create()}
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

_V2 = f"""
{OBJECTS.create()}
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

# v3: LOADS' server_cpu_ms, server_rss_peak_bytes
_V3 = ""

_V4 = f"""
CREATE TABLE probe_runs (
    id              INTEGER PRIMARY KEY,
    name            TEXT NOT NULL UNIQUE,
    status          TEXT NOT NULL CHECK (status IN ('running', 'complete', 'interrupted', 'failed')),
    local           INTEGER NOT NULL,
    allow_internet  INTEGER NOT NULL,
    args_json       TEXT NOT NULL,
    sites           INTEGER NOT NULL DEFAULT 0,
    provenance_json TEXT NOT NULL DEFAULT '{{}}',
    error           TEXT,
    started_at      TEXT NOT NULL,
    ended_at        TEXT
);
{PROBES.create()}
{PROBE_PROTOCOL_ROWS.create()}
CREATE INDEX probes_by_run ON probes (run_id);
CREATE INDEX probe_protocols_by_probe ON probe_protocols (probe_id);
"""

_V5 = """
ALTER TABLE trials ADD COLUMN worker TEXT;
ALTER TABLE trials ADD COLUMN repeat_of TEXT;
"""

_V6 = f"""
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
{INTERVALS.create()}
{SAMPLES.create()}
CREATE INDEX loadtests_by_sweep ON loadtests (sweep_id, status);
"""

# v7: INTERVALS' connections_closed_by_server
_V7 = ""

#: Hand-written steps: _STEPS[i] takes a database from user_version i to i + 1, with the ALTER TABLE
#: statements of the record tables' columns added in that version after it (:data:`MIGRATIONS`).
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
#: v8: what the emulated gateway's queue did to each load (LOADS' :data:`GATEWAY_COLUMNS`: drops by
#: cause, ECN marks, sojourn percentiles per direction, congested flows; NULL for loads stored before).
#: v9: loads' decomposition (why_<part>_ms per part, why_path_json) and retransmissions by kind
#: (retx_fast, retx_timeout, retx_tlp, retx_spurious); NULL for loads stored before (docs/why.md).
#: v10: the loads' view and Chromium's visual metrics (view, lcp_ms, lcp_url, lcp_size_px, lcp_type, cls,
#: speed_index_ms, visually_complete_ms, visual_progress_json, frames; ``docs/vitals.md``); NULL for
#: loads stored before (first views) — generated from :data:`LOADS`.
#: v12: load_intervals.degraded, generators_lost, generators_json (a run's VUs spread over several
#: generators, its intervals merged: ``wirelab loadtest --generators``; NULL for intervals stored
#: before) — generated from :data:`INTERVALS`. (v11 is another branch's; a number with no column
#: is an empty step, so renumbering at merge is changing ``since``.)
#: v13: loads.quic_0rtt_packets (the client's UDP datagrams carrying a QUIC 0-RTT packet, from the
#: packet log; NULL for loads stored before; ``docs/vitals.md`` "Views") — generated from :data:`LOADS`.
_STEPS: tuple[str, ...] = (_V1, _V2, _V3, _V4, _V5, _V6, _V7)

#: The schema's version: the last hand-written step's, or the last version a record table's column
#: was added in.
SCHEMA_VERSION = max(len(_STEPS), *(c.since or 1 for t in _RECORD_TABLES for c in t.columns))

#: Schema migrations: MIGRATIONS[i] takes a database from user_version i to i + 1.
MIGRATIONS: tuple[str, ...] = tuple(
    (_STEPS[v - 1] if v <= len(_STEPS) else "") + "".join(t.added(v) for t in _RECORD_TABLES)
    for v in range(1, SCHEMA_VERSION + 1)
)

#: An artifact kept on the cluster worker that ran its trial (``--artifacts remote``): ``host:/path``.
REMOTE_PATH = re.compile(r"^[^/:]+:/")


def now() -> str:
    """The time stored in rows: UTC, to the second (``2026-01-02T03:04:05Z``)."""
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


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


class Database:
    """An open results database: the writer (:class:`wirelab._db.writer.Store`) and the reader
    (:class:`wirelab._db.reader.Results`) are its two kinds. A corrupt file, or one that is not a
    database, is refused before anything is written."""

    def __init__(self, path: str | Path = DEFAULT_DB, *, create: bool = True, readonly: bool = False):
        self.path = Path(path)
        if (readonly or not create) and not self.path.exists():
            raise DatabaseError(f"{self.path}: no such database")
        if self.path.exists() and not self.path.is_file():
            raise DatabaseError(f"{self.path}: is not a database file (a directory or a device)")
        existed = self.path.exists()
        if not readonly and not existed:
            # a new database goes into an existing, writable directory (docs/bad-input.md)
            check_output_file("--db", self.path)
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
