#!/usr/bin/env python3
"""Two results databases of the same sweep, compared: is a change's "behaviour unchanged" true of what
it stores? The schema (every table's and index's SQL) must be the same to the byte; then every table's
rows, matched by their natural key, column by column. Columns that hold measurements or times of day
(timing noise: ToW, PLT, packet counts, phases, lateness and the flags it raises, timestamps,
provenance) are compared as "present in both, same type"; every other column must be equal, once the
databases' own names and the per-run URL token are taken out of paths and URLs.

Usage: scripts/compare_dbs.py BEFORE.db AFTER.db
Prints one line per table (rows, columns compared exactly, columns that differ) and exits 1 when the
schema or an exactly compared value differs.
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from pathlib import Path

#: Per table: the columns that identify a row across the two databases.
KEYS = {
    "sweeps": ("name",),
    "trials": ("trial_id",),
    "loads": ("trial_row", "load_index"),
    "objects": ("load_id", "entry_index"),
    "artifacts": ("trial_row", "load_id", "kind", "path"),
}
#: Columns whose values are measurements or clock readings: each run has its own (fidelity flags are
#: the emulator's measured lateness over its limit).
NOISE = re.compile(
    r"(_ms|_us|_at)$|^(tow|plt|bytes_|packets_|retransmissions|drops_|server_|provenance_json|emulator_json|"
    r"client_json|attempts$|connection$|stream_id$|fidelity_flags_json$)"
)
#: Each run serves its page under a token of its own (docs/pages.md: /L/<token>/).
TOKEN = re.compile(r"/L/[0-9a-f]{16}/")


def schema(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    query = "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid"
    return conn.execute(query).fetchall()


def rows(conn: sqlite3.Connection, table: str, db: str) -> tuple[list[str], dict[tuple, dict]]:
    """The table's rows by key; paths under the database's own directory (``<db>.d/``) are written
    ``<db>.d/`` so that two databases of different names compare."""
    own = Path(db).name + ".d/"
    cur = conn.execute(f"SELECT * FROM {table}")
    cols = [d[0] for d in cur.description]
    out = {}
    for r in cur:
        rec = dict(zip(cols, r, strict=True))
        rec = {
            c: TOKEN.sub("/L/<token>/", v.replace(own, "<db>.d/")) if isinstance(v, str) else v
            for c, v in rec.items()
        }
        out[tuple(rec[k] for k in KEYS[table])] = rec
    return cols, out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    before, after = (sqlite3.connect(f"file:{p}?mode=ro", uri=True) for p in argv)
    bad = 0
    if schema(before) != schema(after):
        print("schema: DIFFERENT")
        bad += 1
    else:
        print(f"schema: identical ({len(schema(before))} tables and indexes)")
    for table in KEYS:
        cols, a = rows(before, table, argv[0])
        cols_b, b = rows(after, table, argv[1])
        if cols != cols_b or set(a) != set(b):
            print(f"{table}: rows or columns differ ({len(a)} vs {len(b)} rows)")
            bad += 1
            continue
        exact = [c for c in cols if not NOISE.search(c) and c != "id"]
        differing: dict[str, int] = {}
        for key, ra in a.items():
            rb = b[key]
            for c in cols:
                if c == "id":
                    continue
                if c in exact:
                    va, vb = ra[c], rb[c]
                    if c.endswith("_json") and isinstance(va, str):
                        va, vb = json.loads(va), json.loads(vb)
                    if va != vb:
                        differing[c] = differing.get(c, 0) + 1
                elif (ra[c] is None) != (rb[c] is None) or type(ra[c]) is not type(rb[c]):
                    differing[c] = differing.get(c, 0) + 1
        bad += bool(differing)
        print(
            f"{table}: {len(a)} rows, {len(exact)} of {len(cols) - 1} columns compared exactly; "
            + (f"DIFFER: {differing}" if differing else "the same")
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
