"""The results database's writer: what the runners, the probe and the cluster's client store. Every
method that changes data does so in one transaction."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wirelab._db.schema import (
    ITEM_KINDS,
    LOADS,
    OBJECTS,
    PROBE_PROTOCOL_ROWS,
    PROBE_PROTOCOLS,
    PROBES,
    Database,
    ItemKind,
    now,
)
from wirelab.errors import StoreError, UsageError

if TYPE_CHECKING:
    from wirelab._loadplan import LoadPlan
    from wirelab.spec import Plan, PlannedTrial

__all__ = ["Store"]


def _set(conn: sqlite3.Connection, table: str, row: int, values: Mapping[str, Any]) -> None:
    """``UPDATE table SET <each key> = <its value> WHERE id = row``: each column named once."""
    conn.execute(
        f"UPDATE {table} SET {', '.join(f'{k} = ?' for k in values)} WHERE id = ?", (*values.values(), row)
    )


def _insert(
    conn: sqlite3.Connection, table: str, rows: Sequence[Mapping[str, Any]], *, or_ignore: bool = False
) -> None:
    """``INSERT INTO table`` of rows that share their keys (the columns)."""
    if not rows:
        return
    names = list(rows[0])
    conn.executemany(
        f"INSERT {'OR IGNORE ' if or_ignore else ''}INTO {table} ({', '.join(names)})"
        f" VALUES ({','.join('?' * len(names))})",
        [tuple(r[n] for n in names) for r in rows],
    )


class Store(Database):
    """Writes sweeps and their items (trials, load-test runs), and probe runs."""

    # sweeps --------------------------------------------------------------------------------------
    def sweep_row(self, name: str) -> sqlite3.Row | None:
        return self.conn.execute("SELECT * FROM sweeps WHERE name = ?", (name,)).fetchone()

    def delete_sweep(self, name: str) -> None:
        with self.transaction() as c:
            c.execute("DELETE FROM sweeps WHERE name = ?", (name,))

    def _insert_sweep(
        self, c: sqlite3.Connection, plan: Plan | LoadPlan, provenance: Mapping[str, Any], **values: Any
    ) -> int:
        """The sweep's row: the plan's name, description, spec and axes, and ``values`` (its kind, its
        planned counts)."""
        at = now()
        row = {
            "name": plan.name,
            "description": plan.description,
            "spec_hash": plan.spec_hash,
            "spec_json": json.dumps(plan.spec),
            "spec_toml": plan.source,
            "axes_json": json.dumps(plan.axes),
            **values,
            "provenance_json": json.dumps(dict(provenance)),
            "created_at": at,
            "updated_at": at,
        }
        cur = c.execute(
            f"INSERT INTO sweeps ({', '.join(row)}) VALUES ({','.join('?' * len(row))})", tuple(row.values())
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def _trial_rows(
        self,
        sweep_id: int,
        sweep: str,
        spec_hash: str,
        trials: Sequence[PlannedTrial],
        of: PlannedTrial | None = None,
    ) -> list[dict[str, Any]]:
        """Rows of planned trials (status ``planned``); repeats of ``of`` carry its index and id."""
        return [
            {
                "sweep_id": sweep_id,
                "trial_id": t.id,
                "idx": t.index if of is None else of.index,
                "status": "planned",
                "params_json": json.dumps(t.params),
                "spec_json": json.dumps(t.spec),
                "spec_hash": spec_hash,
                "dir": self.relative(self.results_dir / sweep / t.id),
                "loads_planned": t.loads,
                **({} if of is None else {"repeat_of": of.id}),
            }
            for t in trials
        ]

    def create_sweep(self, plan: Plan, provenance: Mapping[str, Any]) -> int:
        """Insert a trial sweep and its planned trials (status ``planned``)."""
        with self.transaction() as c:
            sweep_id = self._insert_sweep(
                c, plan, provenance, planned_trials=len(plan.trials), planned_loads=plan.loads
            )
            _insert(c, "trials", self._trial_rows(sweep_id, plan.name, plan.spec_hash, plan.trials))
        return sweep_id

    def create_loadtest_sweep(self, plan: LoadPlan, provenance: Mapping[str, Any]) -> int:
        """Insert a load-test sweep (``kind = 'loadtest'``) and its planned runs; ``planned_trials``
        counts its runs, ``planned_loads`` is 0."""
        with self.transaction() as c:
            sweep_id = self._insert_sweep(
                c, plan, provenance, kind="loadtest", planned_trials=len(plan.runs), planned_loads=0
            )
            rows = [
                {
                    "sweep_id": sweep_id,
                    "loadtest_id": r.id,
                    "idx": r.index,
                    "point": r.point,
                    "protocol": r.protocol,
                    "status": "planned",
                    "params_json": json.dumps(r.params),
                    "spec_json": json.dumps(r.spec),
                    "spec_hash": plan.spec_hash,
                    "dir": self.relative(self.results_dir / plan.name / r.id),
                    "planned_s": r.planned_s,
                }
                for r in plan.runs
            ]
            _insert(c, "loadtests", rows)
        return sweep_id

    def add_repeats(self, sweep: str, of: PlannedTrial, repeats: Sequence[PlannedTrial]) -> None:
        """Plan ``repeats`` of the configuration ``of`` (``[sweep] repeat_on_each_worker``; status
        ``planned``, ``repeat_of`` = ``of.id``) unless they are there already. They stay out of
        ``Results.trials``, ``loads`` and ``objects`` unless asked for (``repeats=True``)."""
        row = self.sweep_row(sweep)
        if row is None:
            raise StoreError(f"sweep {sweep} is not in {self.path}")
        with self.transaction() as c:
            rows = self._trial_rows(row["id"], sweep, row["spec_hash"], repeats, of)
            _insert(c, "trials", rows, or_ignore=True)

    def touch_sweep(self, name: str, provenance: Mapping[str, Any] | None = None) -> None:
        with self.transaction() as c:
            c.execute("UPDATE sweeps SET updated_at = ? WHERE name = ?", (now(), name))
            if provenance is not None:
                c.execute(
                    "UPDATE sweeps SET provenance_json = ? WHERE name = ?",
                    (json.dumps(dict(provenance)), name),
                )

    # a sweep's items, whatever their kind ---------------------------------------------------------
    def statuses(self, sweep: str) -> dict[str, str]:
        """Item id → status of every item of ``sweep`` (trials or load-test runs); {} when there is
        no such sweep."""
        name = self.sweep_kind(sweep)
        if name is None:
            return {}
        kind = ITEM_KINDS[name]
        rows = self.conn.execute(
            f"SELECT x.{kind.id} AS id, x.status FROM {kind.table} x JOIN sweeps s ON s.id = x.sweep_id"
            " WHERE s.name = ?",
            (sweep,),
        ).fetchall()
        return {r["id"]: r["status"] for r in rows}

    def _row(self, sweep: str, item_id: str) -> tuple[ItemKind, int]:
        kind = ITEM_KINDS[self.sweep_kind(sweep) or "trials"]  # no such sweep: "trial … is not planned"
        row = self.conn.execute(
            f"SELECT x.id FROM {kind.table} x JOIN sweeps s ON s.id = x.sweep_id"
            f" WHERE s.name = ? AND x.{kind.id} = ?",
            (sweep, item_id),
        ).fetchone()
        if row is None:
            raise StoreError(f"{kind.noun} {item_id} is not planned in sweep {sweep}")
        return kind, row["id"]

    def mark_running(self, sweep: str, item_id: str) -> None:
        """An item starts (again): what a previous attempt stored of it goes."""
        kind, row = self._row(sweep, item_id)
        with self.transaction() as c:
            for table, _ in kind.attempt_rows:
                c.execute(f"DELETE FROM {table.name} WHERE {table.parent} = ?", (row,))
            c.execute(
                f"UPDATE {kind.table} SET status = 'running', attempts = attempts + 1, started_at = ?,"
                " ended_at = NULL, error = NULL"
                + "".join(f", {count} = 0" for _, count in kind.attempt_rows)
                + " WHERE id = ?",
                (now(), row),
            )

    def mark_ended(self, sweep: str, item_id: str, status: str, error: str | None = None) -> None:
        """An item that left nothing to store: ``failed`` or ``interrupted`` (refused, killed before it
        measured anything), or ``planned`` again."""
        assert status in ("failed", "interrupted", "planned")
        kind, row = self._row(sweep, item_id)
        with self.transaction() as c:
            _set(c, kind.table, row, {"status": status, "error": error, "ended_at": now()})

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
        _, row = self._row(sweep, trial_id)
        lateness = trial_json["emulator"]["lateness_us"]
        provenance = {"engine": trial_json["provenance"], "control": dict(control_provenance)}
        if worker is not None:
            provenance["worker"] = dict(worker)
        with self.transaction() as c:
            c.execute("DELETE FROM loads WHERE trial_row = ?", (row,))
            c.execute("DELETE FROM artifacts WHERE trial_row = ?", (row,))
            load_ids: dict[int, int] = {}
            for rec in loads:
                cur = c.execute(LOADS.insert(), LOADS.values(row, rec))
                assert cur.lastrowid is not None
                load_ids[rec["index"]] = cur.lastrowid
            for index, rows in objects.items():
                c.executemany(OBJECTS.insert(), [OBJECTS.values(load_ids[index], o) for o in rows])
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
            _set(
                c,
                "trials",
                row,
                {
                    "status": "complete",
                    "spec_json": json.dumps(trial_json["spec"]),
                    "provenance_json": json.dumps(provenance),
                    "emulator_json": json.dumps(trial_json["emulator"]),
                    "loads": len(loads),
                    "load_errors": sum(1 for r in loads if r.get("error") is not None),
                    "error": None,
                    "ended_at": now(),
                    "lateness_p50_us": lateness["p50"],
                    "lateness_p99_us": lateness["p99"],
                    "lateness_max_us": lateness["max"],
                    "fidelity_flags_json": json.dumps(list(fidelity_flags)),
                    "worker": None if worker is None else worker.get("name"),
                },
            )
            c.execute("UPDATE sweeps SET updated_at = ? WHERE name = ?", (now(), sweep))

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
        kind, row = self._row(sweep, loadtest_id)
        result = result or {}
        summary = result.get("summary") or {}
        totals = summary.get("totals") or {}
        outcomes = result.get("outcomes") or {}
        lateness = ((result.get("emulator") or {}).get("lateness_us") or {}).get("p99")
        provenance = {"engine": result.get("provenance"), "control": dict(control_provenance)}

        def dumps(key: str) -> str | None:
            return json.dumps(result[key]) if result.get(key) is not None else None

        def flag(key: str) -> int | None:
            return None if result.get(key) is None else int(bool(result[key]))

        with self.transaction() as c:
            for (table, _), records in zip(kind.attempt_rows, (intervals, samples), strict=True):
                c.execute(f"DELETE FROM {table.name} WHERE {table.parent} = ?", (row,))
                c.executemany(table.insert(), [table.values(row, r) for r in records])
            spec = result.get("spec")
            _set(
                c,
                "loadtests",
                row,
                {
                    "status": status,
                    **({"spec_json": json.dumps(spec)} if spec is not None else {}),
                    "provenance_json": json.dumps(provenance),
                    "emulator_json": dumps("emulator"),
                    "summary_json": json.dumps(summary) if summary else None,
                    "outcomes_json": json.dumps(outcomes) if outcomes else None,
                    "thresholds_json": dumps("thresholds"),
                    "thresholds_passed": flag("thresholds_passed"),
                    "generator_saturated": flag("generator_saturated"),
                    "interrupted": flag("interrupted"),
                    "server_exited_json": dumps("server_exited"),
                    "duration_s": summary.get("duration_s"),
                    "intervals": len(intervals),
                    "server_samples": len(samples),
                    "pages": totals.get("pages"),
                    "pages_failed": totals.get("pages_failed"),
                    "hits": totals.get("hits"),
                    "errors": sum((totals.get("errors") or {}).values()) if totals else None,
                    "error_rate": totals.get("error_rate"),
                    "vus_max": totals.get("vus_max"),
                    **{
                        k: outcomes.get(k)
                        for k in (
                            "max_pages_per_s",
                            "max_hits_per_s",
                            "vus_at_first_error",
                            "vus_at_first_sla_violation",
                            "first_sla_violation_interval",
                            "server_cpu_util_max",
                        )
                    },
                    "lateness_p99_us": lateness,
                    "error": error,
                    "ended_at": now(),
                },
            )
            c.execute("UPDATE sweeps SET updated_at = ? WHERE name = ?", (now(), sweep))

    # probes ----------------------------------------------------------------------------------------
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
                    now(),
                ),
            )
            assert cur.lastrowid is not None
            return cur.lastrowid

    def add_probe(self, run_id: int, record: Mapping[str, Any]) -> None:
        """Store one probe record (``schemas/probe-record.schema.json``) and its protocols, in one
        transaction; a record of the same site index replaces the earlier one."""
        with self.transaction() as c:
            c.execute("DELETE FROM probes WHERE run_id = ? AND site_index = ?", (run_id, record["index"]))
            cur = c.execute(PROBES.insert(), PROBES.values(run_id, record))
            probe_id = cur.lastrowid
            assert probe_id is not None
            c.executemany(
                PROBE_PROTOCOL_ROWS.insert(),
                [
                    PROBE_PROTOCOL_ROWS.values(probe_id, {"protocol": proto, **record["protocols"][proto]})
                    for proto in PROBE_PROTOCOLS
                ],
            )
            c.execute(
                "UPDATE probe_runs SET sites = (SELECT COUNT(*) FROM probes WHERE run_id = ?) WHERE id = ?",
                (run_id, run_id),
            )

    def end_probe_run(self, run_id: int, status: str, error: str | None = None) -> None:
        """``complete``, ``interrupted`` or ``failed``."""
        assert status in ("complete", "interrupted", "failed")
        with self.transaction() as c:
            _set(c, "probe_runs", run_id, {"status": status, "error": error, "ended_at": now()})
