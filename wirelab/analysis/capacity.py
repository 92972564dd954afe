"""A load test (study N) as the analysis sees it: its runs, their intervals beside the server's samples,
and the outcomes per run.

:func:`load_capacity` reads one load-test sweep (``wirelab loadtest``) from a results database into a
:class:`CapacityData`: :attr:`~CapacityData.runs` (``Results.loadtests``), :attr:`~CapacityData.intervals`
(``Results.load_intervals`` with the server sample of the same interval as ``server_*`` columns) and the
axes the grid varied (:class:`wirelab.analysis.sweep.Axis`; protocols are never an axis: each
configuration runs every protocol). Figures are drawn against ``vus`` = the interval's ``vus_max`` (the
most VUs active during it) over the intervals of the scenario (``in_scenario``: the pages in flight after
the last stage are left out). :func:`capacity_table` is one row per run: the engine's outcomes (highest
interval rates, VUs at the first error and at the first SLA violation, page times and server samples at
the spec's ``at_vus``) and the server's peaks.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from wirelab._registry import BUSY_FALLBACK, BUSY_GAUGES
from wirelab.analysis.sweep import Axis, StoredSweep, _axis_for
from wirelab.store import Results

__all__ = ["CapacityData", "busy_label", "capacity_table", "load_capacity", "scenario_text"]

_SERVER_COLUMNS = ("cpu_ms", "cpu_util", "memory_bytes", "memory_peak_bytes", "processes", "threads", "busy")


@dataclasses.dataclass
class CapacityData(StoredSweep):
    """One load-test sweep's data (see the module docstring); ``spec``: the load-test spec."""

    runs: pd.DataFrame  #: ``Results.loadtests`` (every status) with ``config`` (the configuration's label)
    intervals: pd.DataFrame  #: intervals of every stored run, ``server_*`` samples beside, ``in_scenario``
    axes: list[Axis]
    protocols: list[str]  #: in spec order
    configs: list[str]  #: configuration labels in plan order ("" when the grid is empty)

    def run_spec(self, loadtest_id: str) -> dict[str, Any]:
        """A run's resolved spec (the engine's, once it ran; else the planned one)."""
        return self.runs.set_index("loadtest_id").loc[loadtest_id, "spec"]


def _label(row: dict[str, Any], axes: list[Axis]) -> str:
    """``server apache, Apache MPM event``: each axis named (a load test's columns of panels)."""
    return ", ".join(f"{a.name} {a.format(row[a.column])}" for a in axes)


def busy_label(impl: str) -> str:
    """What a server's busy gauge is called (``busy workers (mod_status)``, or its threads)."""
    return BUSY_GAUGES.get(impl, BUSY_FALLBACK)[1]


def scenario_text(spec: dict[str, Any]) -> str:
    """``closed: 1 → 1000 VUs over 1200 s`` / ``open: 0 → 50 pages/s over 600 s`` (stages joined)."""
    scenario = spec.get("scenario") or {}
    model = scenario.get("model", "closed")
    key, unit = ("target", "VUs") if model == "closed" else ("rate", "pages/s")
    level = scenario.get("start", 1 if model == "closed" else 0)
    parts = []
    for stage in scenario.get("stages") or []:
        parts.append(f"{_num(level)} → {_num(stage.get(key, 0))} {unit} over {_num(stage['duration_s'])} s")
        level = stage.get(key, 0)
    return f"{model}: " + "; then ".join(parts)


def _num(v: Any) -> str:
    return f"{float(v):g}" if isinstance(v, int | float) else str(v)


def load_capacity(results: Results, sweep: str) -> CapacityData:
    """Read the load-test sweep ``sweep`` from ``results``."""
    runs = results.loadtests(sweep)
    stored, info = StoredSweep.read(results, sweep)
    spec = stored["spec"]
    written = (spec.get("load") or {}).get("protocols") or []
    protocols = [p for p in written if p in set(runs["protocol"])]
    protocols += [p for p in dict.fromkeys(runs["protocol"]) if p not in protocols]
    axes: list[Axis] = []
    for param in info["axes"]:
        if param != "protocols":
            axes.extend(_axis_for(param, runs))
    runs["config"] = [_label(r, axes) for r in runs.to_dict("records")] if axes else ""
    configs = list(dict.fromkeys(runs.sort_values("run_index")["config"])) if len(runs) else []

    intervals = results.load_intervals(sweep)
    samples = results.server_samples(sweep)
    keep = ["loadtest_id", "interval_index", *_SERVER_COLUMNS, "busy_gauge", "gauges", "source", "error"]
    samples = samples[[c for c in keep if c in samples]].rename(
        columns={c: f"server_{c}" for c in keep if c not in ("loadtest_id", "interval_index")}
    )
    frame = intervals.merge(samples, on=["loadtest_id", "interval_index"], how="left")
    by_run = runs.set_index("loadtest_id")
    frame["config"] = frame["loadtest_id"].map(by_run["config"])
    frame["vus_x"] = frame["vus_max"]
    planned = frame["loadtest_id"].map(by_run["planned_s"])
    frame["in_scenario"] = frame["t_start_s"] < planned - 1e-9
    statistic = frame["loadtest_id"].map(lambda t: _sla(by_run.loc[t, "spec"])[1])
    frame["page_sla_ms"] = [
        row[f"page_{stat}_ms"] for stat, row in zip(statistic, frame.to_dict("records"), strict=True)
    ]
    return CapacityData(
        **stored,
        runs=runs,
        intervals=frame,
        axes=axes,
        protocols=protocols,
        configs=configs,
    )


def _sla(spec: dict[str, Any]) -> tuple[float, str]:
    """(page_ms, statistic) of a run's SLA (its resolved spec holds the defaults)."""
    sla = spec.get("sla") or {}
    return float(sla.get("page_ms", 3000)), str(sla.get("statistic", "p90"))


def sla_of(data: CapacityData) -> tuple[float, str] | None:
    """The SLA every run shares, or None when they differ (the grid varied it)."""
    slas = {_sla(s) for s in data.runs["spec"]}
    return next(iter(slas)) if len(slas) == 1 else None


def _busy(sample: dict[str, Any] | None, impl: str) -> float | None:
    if not sample or not sample.get("source"):
        return None
    gauge = BUSY_GAUGES.get(impl, BUSY_FALLBACK)[0]
    value = sample.get("threads") if gauge == BUSY_FALLBACK[0] else (sample.get("gauges") or {}).get(gauge)
    return None if value is None else float(value)


def capacity_table(data: CapacityData) -> pd.DataFrame:
    """One row per run that measured something: ``config``, ``protocol``, ``server``, ``status``, the
    highest pages/s and hits/s over the scenario's full intervals (``max_pages_per_s``, ``max_hits_per_s``:
    the engine's outcomes of those names, which define them), the engine's outcomes ``vus_at_first_error`` and
    ``vus_at_first_sla_violation``, the server's peaks over the scenario (``cpu_max``, ``memory_max``,
    ``busy_max``; ``busy_limit`` when the server has one: Apache's MaxRequestWorkers), ``pages``
    (successful, over the run), the VUs' ``connections_opened`` and, of them,
    ``connections_closed_by_server`` over the run (the engine's totals; None when the engine did not
    count them), and ``at``: for
    each of the spec's ``at_vus`` (else the peak's VUs) → ``{vus, page_ms, cpu_util, memory_bytes,
    busy}`` from the engine's ``page_ms_at`` and ``server_at``."""
    rows = []
    for run in data.runs.to_dict("records"):
        if not run["intervals"]:
            continue
        frame = data.intervals
        mine = frame[(frame["loadtest_id"] == run["loadtest_id"]) & frame["in_scenario"]]
        impl = run["server"]
        spec = run["spec"]
        page_ms, statistic = _sla(spec)
        outcomes = run["outcomes"] or {}
        at: dict[str, dict[str, Any]] = {}
        counts = [str(n) for n in spec.get("at_vus") or []]
        for count in counts:
            page = (outcomes.get("page_ms_at") or {}).get(count)
            sample = (outcomes.get("server_at") or {}).get(count)
            measured = sample if sample and sample.get("source") else None
            at[count] = {
                "vus": page["vus"] if page else None,
                "page_ms": ((page or {}).get("page_ms") or {}).get(statistic),
                "cpu_util": measured["cpu_util"] if measured else None,
                "memory_bytes": measured["memory_bytes"] if measured else None,
                "busy": _busy(sample, impl),
            }
        if not counts and len(mine):
            peak = mine.loc[mine["vus_x"].idxmax()]
            at["peak"] = {
                "vus": int(peak["vus_x"]),
                "page_ms": _nan_none(peak["page_sla_ms"]),
                "cpu_util": _nan_none(peak.get("server_cpu_util")),
                "memory_bytes": _nan_none(peak.get("server_memory_bytes")),
                "busy": _nan_none(peak.get("server_busy")),
            }
        engine = (run["provenance"] or {}).get("engine") or {}
        effective = (engine.get("server") or {}).get("effective") or {}
        limit = (effective.get("apache") or {}).get("max_request_workers") if impl == "apache" else None
        totals = (run.get("summary") or {}).get("totals") or {}
        rows.append(
            {
                "loadtest_id": run["loadtest_id"],
                "config": run["config"],
                "protocol": run["protocol"],
                "server": impl,
                "status": run["status"],
                "thresholds_passed": run["thresholds_passed"],
                "intervals": int(run["intervals"]),
                "peak_vus": int(mine["vus_x"].max()) if len(mine) else None,
                "max_pages_per_s": outcomes.get("max_pages_per_s"),
                "max_hits_per_s": outcomes.get("max_hits_per_s"),
                "vus_at_first_error": outcomes.get("vus_at_first_error"),
                "vus_at_first_sla_violation": outcomes.get("vus_at_first_sla_violation"),
                "sla_page_ms": page_ms,
                "sla_statistic": statistic,
                "errors": int(mine["errors"].sum()) if len(mine) else 0,
                "error_kinds": {
                    k.removeprefix("errors_"): int(mine[k].sum())
                    for k in mine.columns
                    if k.startswith("errors_") and len(mine) and mine[k].sum() > 0
                },
                "cpu_max": _max(mine, "server_cpu_util"),
                "memory_max": _max(mine, "server_memory_bytes"),
                "busy_max": _max(mine, "server_busy"),
                "busy_limit": limit if limit else None,
                "pages": int(run["pages"]) if run.get("pages") is not None else None,
                "connections_opened": totals.get("connections_opened"),
                "connections_closed_by_server": totals.get("connections_closed_by_server"),
                "generator_saturated_intervals": _count_true(mine, "generator_saturated"),
                "at": at,
            }
        )
    return pd.DataFrame(rows)


def _count_true(frame: pd.DataFrame, column: str) -> int:
    if column not in frame:
        return 0
    return int(sum(1 for v in frame[column] if v is True or v == 1))


def _max(frame: pd.DataFrame, column: str) -> float | None:
    if column not in frame or frame[column].dropna().empty:
        return None
    return float(frame[column].max())


def _nan_none(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, float | np.floating) and not np.isfinite(v):
        return None
    return v
