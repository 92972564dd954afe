"""The results database's reader: :func:`wirelab.open` returns a :class:`Results`, whose methods
return pandas DataFrames (columns in ``docs/results.md``). It opens the database read-only and never
creates or modifies a file."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from wirelab import spec as spec_mod
from wirelab._db.files import DEFAULT_DB
from wirelab._db.schema import (
    INTERVALS,
    LOADS,
    OBJECTS,
    PROBE_FIELDS,
    PROBE_PROTOCOLS,
    PROBES,
    SAMPLES,
    Database,
    RecordTable,
)
from wirelab.errors import StoreError, UsageError

__all__ = ["Frame", "Results"]


@dataclasses.dataclass(frozen=True)
class Frame:
    """One frame of a Chromium load's filmstrip (:meth:`Results.frames`)."""

    #: ms from the load's start (the zero of ``plt_ms``)
    time_ms: float
    #: visual progress in percent (WebPageTest's histogram method, ``docs/vitals.md``)
    progress: float
    #: the JPEG (the viewport, scaled by Chromium to fit 500 × 500)
    path: Path


class Results(Database):
    """Read access to a results database; every method returns a pandas DataFrame.

    >>> import wirelab
    >>> db = wirelab.open("wirelab.db")            # doctest: +SKIP
    >>> db.loads(sweep="demo").groupby(["network.rtt_ms", "protocol"]).tow_ms.median()  # doctest: +SKIP
    """

    def __init__(self, path: str | Path = DEFAULT_DB):
        super().__init__(path, readonly=True)

    def _sweep_filter(
        self, sweep: str | None, equal: Mapping[str, Any] | None = None, alias: str = "s"
    ) -> tuple[str, list[Any]]:
        """The WHERE terms (after ``WHERE 1 = 1``) and parameters that keep the sweep ``sweep`` (None:
        every sweep; an unknown name is one line naming the sweeps there are) and the rows whose columns
        in ``equal`` (``"t.status"``…) have the value given there (a None value: no condition)."""
        where, args = "", []
        if sweep is not None:
            if self.conn.execute("SELECT 1 FROM sweeps WHERE name = ?", (sweep,)).fetchone() is None:
                known = ", ".join(r[0] for r in self.conn.execute("SELECT name FROM sweeps ORDER BY name"))
                raise UsageError(f"sweep: {sweep!r} is not in {self.path}; sweeps: {known or 'none'}")
            where, args = f" AND {alias}.name = ?", [sweep]
        for column, value in (equal or {}).items():
            if value is not None:
                where += f" AND {column} = ?"
                args.append(value)
        return where, args

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

    def sweep_spec(self, sweep: str) -> tuple[dict[str, Any], str]:
        """A stored sweep's spec: as stored (the TOML's structure) and the TOML text it came from ("" when
        it came from a dict)."""
        self._sweep_filter(sweep)  # an unknown name is one line naming the sweeps there are
        row = self.conn.execute("SELECT spec_json, spec_toml FROM sweeps WHERE name = ?", (sweep,)).fetchone()
        return json.loads(row["spec_json"]), row["spec_toml"] or ""

    def trials(
        self, sweep: str | None = None, *, status: str | None = None, repeats: bool = False
    ) -> pd.DataFrame:
        """One row per trial with its grid parameters as columns (dotted names) and its parsed
        ``spec``, ``provenance`` and ``emulator`` summary. ``repeats``: also the trials of
        ``[sweep] repeat_on_each_worker`` (``repeat_of`` names the configuration they repeat)."""
        where, args = self._sweep_filter(sweep, {"t.status": status})
        where += "" if repeats else " AND t.repeat_of IS NULL"
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
        where, args = self._sweep_filter(sweep, {"l.protocol": protocol})
        where += "" if repeats else " AND t.repeat_of IS NULL"
        if not with_errors:
            where += " AND l.error IS NULL"
        cols = ", ".join(f"l.{c}" for c in LOADS.names)
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
        df["congested_flows"] = df.pop("congested_flows_json").map(
            lambda v: json.loads(v) if isinstance(v, str) else None
        )
        df["visual_progress"] = df.pop("visual_progress_json").map(
            lambda v: json.loads(v) if isinstance(v, str) else None
        )
        return _with_params(df)

    def objects(
        self, sweep: str | None = None, *, trial_id: str | None = None, load_index: int | None = None
    ) -> pd.DataFrame:
        """One row per object (HAR entry) of every stored load, with its load's protocol and repetition
        (of the planned trials, or of the trial ``trial_id`` whichever it is)."""
        where, args = self._sweep_filter(sweep, {"t.trial_id": trial_id, "l.load_index": load_index})
        where += " AND t.repeat_of IS NULL" if trial_id is None else ""
        cols = ", ".join(f"o.{c}" for c in OBJECTS.names)
        df = pd.read_sql_query(
            f"""
            SELECT s.name AS sweep, t.trial_id, t.params_json, l.load_index, l.protocol AS load_protocol,
                   l.repetition, {cols}
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
        where, args = self._sweep_filter(sweep, {"t.trial_id": trial_id})
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

    def explain(
        self, sweep: str, *, baseline: str | None = None, config: str | None = None, metric: str | None = None
    ) -> pd.DataFrame:
        """Why a protocol wins (``docs/why.md``): per configuration (trial) and protocol, the difference
        of its mean time on the wire (``tow_first_packet_ms``) against ``baseline`` (default: the
        sweep's first protocol) split into each part's signed contribution — columns named after the
        parts (``setup_ms`` …), summing to ``difference_ms`` — and ``deciding``, the part that decides.
        ``config`` keeps one trial; ``metric`` (``lcp_ms``, ``speed_index_ms`` …) adds that metric's
        difference over the same loads and the part of it outside the wire. Raises
        :class:`~wirelab.errors.UsageError` (one line) when nothing can be explained: no decomposed load,
        one protocol, an unknown baseline or trial, a metric the loads lack.
        :func:`wirelab.analysis.why.explain` documents every column."""
        from wirelab.analysis.sweep import load_sweep
        from wirelab.analysis.why import explain

        return explain(load_sweep(self, sweep), baseline=baseline, config=config, metric=metric)

    def frames(self, sweep: str, trial_id: str, load_index: int) -> list[Frame]:
        """The frames of one Chromium load (``docs/vitals.md``): one per change of the picture, from the
        blank page at 0, each with its time (ms from the load's start), visual progress (percent) and
        JPEG file."""
        row = self.conn.execute(
            "SELECT l.visual_progress_json, a.path FROM loads l JOIN trials t ON t.id = l.trial_row"
            " JOIN sweeps s ON s.id = t.sweep_id"
            " LEFT JOIN artifacts a ON a.load_id = l.id AND a.kind = 'frames'"
            " WHERE s.name = ? AND t.trial_id = ? AND l.load_index = ?",
            (sweep, trial_id, load_index),
        ).fetchone()
        if row is None or row["path"] is None or row["visual_progress_json"] is None:
            raise StoreError(
                f"no frames stored for load {load_index} of trial {trial_id} in sweep {sweep} "
                "(frames are Chromium's, with capture.screenshots)"
            )
        directory = self.absolute(row["path"])
        return [
            Frame(time_ms=float(t), progress=float(p), path=directory / f"{i:03d}.jpg")
            for i, (t, p) in enumerate(json.loads(row["visual_progress_json"]))
        ]

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
        cols = ", ".join(f"p.{c}" for c in PROBES.names if c != "record_json")
        sites = pd.read_sql_query(
            f"""
            SELECT r.name AS run, {cols}
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
        where, args = self._sweep_filter(sweep, {"l.status": status})
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
        return self._per_interval(INTERVALS, sweep, loadtest_id)

    def server_samples(self, sweep: str | None = None, *, loadtest_id: str | None = None) -> pd.DataFrame:
        """One row per server sample of every stored run: ``sweep``, ``loadtest_id``, ``protocol``,
        ``server``, ``status``, every ``server_samples`` column, ``gauges`` (dict), ``busy`` (the
        server's busy-worker gauge, or its threads: :data:`wirelab._registry.BUSY_GAUGES`) with
        ``busy_gauge`` naming which, and the grid parameters."""
        from wirelab._registry import BUSY_FALLBACK, BUSY_GAUGES

        df = self._per_interval(SAMPLES, sweep, loadtest_id)
        df["gauges"] = df.pop("gauges_json").map(json.loads)
        gauge = df["server"].map(lambda impl: BUSY_GAUGES.get(impl, BUSY_FALLBACK)[0])
        df["busy_gauge"] = gauge
        df["busy"] = [
            row["threads"] if name == BUSY_FALLBACK[0] else row["gauges"].get(name)
            for name, row in zip(gauge, df.to_dict("records"), strict=True)
        ]
        df["busy"] = pd.to_numeric(df["busy"], errors="coerce")
        return df

    def _per_interval(self, table: RecordTable, sweep: str | None, loadtest_id: str | None) -> pd.DataFrame:
        where, args = self._sweep_filter(sweep, {"l.loadtest_id": loadtest_id})
        cols = ", ".join(f"x.{c}" for c in table.names)
        df = pd.read_sql_query(
            f"""
            SELECT s.name AS sweep, l.loadtest_id, l.idx AS run_index, l.protocol, l.status, l.params_json,
                   json_extract(l.spec_json, '$.server.impl') AS server, {cols}
              FROM {table.name} x JOIN loadtests l ON l.id = x.loadtest_row JOIN sweeps s ON s.id = l.sweep_id
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
