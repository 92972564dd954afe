"""The report's section for a load test (``wirelab loadtest``, study N): its figures, tables and sentences.

:func:`build_capacity` turns a :class:`~wirelab.analysis.capacity.CapacityData` into the same
:class:`~wirelab.report._build.SweepSection` a trial sweep makes, so the page shows both alike. Figures
(study N's, every protocol on shared axes, one column per configuration):

=============================  =====================================================================
figure                         what
=============================  =====================================================================
throughput                     pages/s and hits/s vs VUs
page time                      the SLA statistic of page time vs VUs, the SLA line, each run's first
                               error and first SLA violation
errors                         failed pages per interval vs VUs
server                         the server's CPU (cores), memory and busy workers (its gauge: Apache's
                               busy workers, nginx's active connections, …; threads otherwise) vs VUs
=============================  =====================================================================

Configurations beyond :data:`MAX_COLUMNS` are drawn in further figures of the same kind.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wirelab._figures import plots
from wirelab._registry import protocol_style
from wirelab.analysis import conclusions as say
from wirelab.analysis.capacity import CapacityData, busy_label, capacity_table, scenario_text, sla_of
from wirelab.report._build import (
    Cell,
    Finding,
    SectionBuilder,
    SweepSection,
    TableBlock,
    provenance_rows,
    sweep_section,
)
from wirelab.store import ERROR_KINDS

__all__ = ["MAX_COLUMNS", "build_capacity"]

#: configurations side by side in one figure
MAX_COLUMNS = 4


def _fmt(v: Any, digits: int = 1, suffix: str = "") -> str:
    if _none(v) is None:
        return "—"
    return f"{v:,.{digits}f}{suffix}"


def _vus(v: Any) -> str:
    return "none" if v is None or v != v else f"{int(v):,}"


def _connections(opened: Any, closed_by_server: Any) -> str:
    """``54 (6)``: opened over the run, and of them closed by the server first; ``—`` unknown."""
    if _none(opened) is None:
        return "—"
    text = f"{int(opened):,}"
    return text if _none(closed_by_server) is None else f"{text} ({int(closed_by_server):,})"


class _Builder(SectionBuilder):
    def __init__(self, data: CapacityData, figures_dir: Path):
        super().__init__(data.name, figures_dir)
        self.data = data
        self.table = capacity_table(data)

    # ------------------------------------------------------------------------------------------
    def fixed(self) -> dict[str, str]:
        """What every run shares: page, network, server, scenario, think time, interval, SLA."""
        specs = list(self.data.runs["spec"])
        out: dict[str, str] = {}

        def shared(get: Any) -> str | None:
            values = {json.dumps(get(s), sort_keys=True) for s in specs}
            return json.loads(next(iter(values))) if len(values) == 1 else None

        for name, get in (
            ("page", lambda s: s.get("page")),
            ("target", lambda s: (s.get("target") or {}).get("url")),
            ("network", lambda s: s.get("network", "native")),
            ("server", lambda s: (s.get("server") or {}).get("impl", "builtin")),
            ("scenario", scenario_text),
            ("think time", lambda s: _think(s)),
            ("interval", lambda s: f"{s.get('interval_s', 10):g} s"),
            ("connections", lambda s: (s.get("client") or {}).get("connections", "per_vu")),
        ):
            value = shared(get)
            if value is not None:
                out[name] = str(value)
        sla = sla_of(self.data)
        if sla is not None:
            out["SLA"] = f"{sla[1]} page time ≤ {sla[0]:g} ms"
        out["protocols"] = ", ".join(self.data.protocols)
        return out

    def build(self) -> None:
        data = self.data
        if data.intervals.empty:
            return
        groups = [data.configs[i : i + MAX_COLUMNS] for i in range(0, len(data.configs), MAX_COLUMNS)]
        if len(groups) > 1:
            self.notes.append(
                f"{len(data.configs)} configurations: each figure is drawn in {len(groups)} parts of at most "
                f"{MAX_COLUMNS} configurations side by side."
            )
        markers = self.table[["config", "protocol", *plots.CAPACITY_MARKERS]] if len(self.table) else None
        sla = sla_of(data)
        if sla is None:
            self.notes.append("The runs have different SLAs: the page-time figure draws no SLA line.")
        impls = data.runs.drop_duplicates("config").set_index("config")["server"].to_dict()
        fixed = self.fixed()
        by = " one column per configuration," if data.axes else ""
        statistic = sla[1] if sla else "SLA statistic"
        for part, configs in enumerate(groups, 1):
            suffix = f" ({part}/{len(groups)})" if len(groups) > 1 else ""
            self.add_figure(
                "capacity",
                f"Throughput vs VUs{suffix}",
                "Pages/s (successful pages) and hits/s (responses) per interval against the VUs active in "
                f"it,{by} one line per protocol; the intervals after the last stage (pages in flight) are "
                "left out.",
                lambda configs=configs: plots.capacity_figure(
                    data.intervals,
                    panels=[plots.Panel("pages_per_s", "pages/s"), plots.Panel("hits_per_s", "hits/s")],
                    configs=configs,
                    protocols=data.protocols,
                ),
                fixed,
            )
            self.add_figure(
                "capacity",
                f"Page time vs VUs{suffix}",
                f"The {statistic} of page time per interval (successful pages) against the VUs, the SLA "
                "line, and each run's first failed page (dash-dot) and first interval over the SLA (dotted), "
                "in the protocol's colour.",
                lambda configs=configs: plots.capacity_figure(
                    data.intervals,
                    panels=[plots.Panel("page_sla_ms", f"page time {statistic} (ms)", sla=sla, markers=True)],
                    configs=configs,
                    protocols=data.protocols,
                    markers=markers,
                ),
                fixed,
            )
            self.add_figure(
                "capacity",
                f"Errors vs VUs{suffix}",
                "Failed pages per interval (every kind: refused, reset, timeout, TLS, HTTP status, other) "
                "against the VUs; the table below has them by kind.",
                lambda configs=configs: plots.capacity_figure(
                    data.intervals,
                    panels=[plots.Panel("pages_failed", "failed pages per interval", markers=True)],
                    configs=configs,
                    protocols=data.protocols,
                    markers=markers,
                ),
                fixed,
            )
            if data.intervals["server_cpu_util"].notna().any():
                labels = {c: busy_label(impls.get(c, "builtin")) for c in configs}
                self.add_figure(
                    "capacity",
                    f"Server CPU, memory and busy workers vs VUs{suffix}",
                    "The server under test per interval, from its control group: CPU (cores: CPU time ÷ "
                    "the interval), memory charged to it, and its busy workers — Apache's mod_status busy "
                    "workers, nginx's active connections, Caddy's requests in flight; the threads of its "
                    "processes for servers without such a gauge.",
                    lambda configs=configs, labels=labels: plots.capacity_figure(
                        data.intervals,
                        panels=[
                            plots.Panel("server_cpu_util", "server CPU (cores)"),
                            plots.Panel("server_memory_bytes", "server memory (MB)", scale=1e-6),
                            plots.Panel("server_busy", "busy", labels=labels),
                        ],
                        configs=configs,
                        protocols=data.protocols,
                    ),
                    fixed,
                )
            else:
                self.notes.append("No server samples were measured: the server figure is left out.")
            for note in target_notes(data.runs):
                self.notes.append(note)

    def sentences(self) -> None:
        table = self.table
        if table.empty:
            return
        for config in self.data.configs:
            mine = table[table["config"] == config]
            sentences = say.capacity_sentences(mine, self.data.protocols)
            if sentences:
                self.findings.append(Finding(config or "Capacity", sentences))

    def tables_(self) -> None:
        table = self.table
        if table.empty:
            return
        counts = list(dict.fromkeys(k for at in table["at"] for k in at))
        columns = [
            "configuration",
            "protocol",
            "status",
            "thresholds",
            "max pages/s",
            "max hits/s",
            "VUs at 1st error",
            "VUs at SLA violation",
            "CPU max (cores)",
            "memory max (MB)",
            "busy max",
            "connections (closed by server)",
        ]
        for count in counts:
            at = f"at {count} VUs" if count != "peak" else "at the peak"
            columns += [f"page ms {at}", f"CPU {at}", f"MB {at}"]
        rows = []
        runs = self.data.runs.set_index("loadtest_id")
        for r in table.to_dict("records"):
            cells = [
                Cell(r["config"] or "—"),
                Cell(protocol_style(r["protocol"]).label, f"proto proto-{r['protocol']}"),
                Cell(r["status"], "nowrap" if r["status"] == "complete" else "nowrap neg"),
                Cell(*_thresholds(r["loadtest_id"], runs)),
                Cell(_fmt(r["max_pages_per_s"]), "num"),
                Cell(_fmt(r["max_hits_per_s"], 0), "num"),
                Cell(
                    _vus(r["vus_at_first_error"]), "num" + (" neg" if r["vus_at_first_error"] else " muted")
                ),
                Cell(
                    _vus(r["vus_at_first_sla_violation"]),
                    "num" + (" neg" if r["vus_at_first_sla_violation"] else " muted"),
                ),
                Cell(_fmt(r["cpu_max"], 2), "num"),
                Cell(_fmt(None if r["memory_max"] is None else r["memory_max"] / 1e6, 0), "num"),
                Cell(
                    _fmt(r["busy_max"], 0) + (f" / {int(r['busy_limit'])}" if _none(r["busy_limit"]) else ""),
                    "num",
                    title=busy_label(r["server"]),
                ),
                Cell(
                    _connections(r["connections_opened"], r["connections_closed_by_server"]),
                    "num",
                    title="connections the VUs opened over the run (and of them, those the server ended "
                    "before the VUs closed them: kept connections it dropped)",
                ),
            ]
            for count in counts:
                at_count: dict[str, Any] = r["at"].get(count) or {}
                memory = at_count.get("memory_bytes")
                cells += [
                    Cell(
                        _fmt(at_count.get("page_ms"), 0),
                        "num",
                        title=f"{r['sla_statistic']}, at {at_count.get('vus')} VUs",
                    ),
                    Cell(_fmt(at_count.get("cpu_util"), 2), "num"),
                    Cell(_fmt(None if memory is None else memory / 1e6, 0), "num"),
                ]
            rows.append(cells)
        at_text = (
            "at the spec's at_vus counts (the first interval in which that many VUs were active: the "
            "engine's page_ms_at and server_at)"
            if "peak" not in counts
            else "at the interval with the most VUs (the spec lists no at_vus)"
        )
        self.tables.append(
            TableBlock(
                f"tab-{self.data.name}-capacity",
                "Capacity per run",
                "Per run: the highest rates over the scenario's full intervals, the VUs active when the "
                "first page failed and in the first interval whose page time broke the SLA (none: it did "
                "not happen), the server's peaks, "
                f"and page time ({table.iloc[0]['sla_statistic']}), server CPU and memory {at_text}.",
                columns,
                rows,
                open=True,
            )
        )
        kinds = ERROR_KINDS
        rows = []
        for r in table.to_dict("records"):
            rows.append(
                [
                    Cell(r["config"] or "—"),
                    Cell(protocol_style(r["protocol"]).label, f"proto proto-{r['protocol']}"),
                    Cell(str(r["errors"]), "num" + (" neg" if r["errors"] else " muted")),
                    *(
                        Cell(
                            str(r["error_kinds"].get(k, 0)),
                            "num muted" if not r["error_kinds"].get(k) else "num",
                        )
                        for k in kinds
                    ),
                ]
            )
        self.tables.append(
            TableBlock(
                f"tab-{self.data.name}-errors",
                "Failed pages by kind",
                "Failed pages over the scenario's intervals, by the kind of their first error "
                "(docs/loadtest.md).",
                ["configuration", "protocol", "failed pages", *(k.replace("_", " ") for k in kinds)],
                rows,
            )
        )
        frame = self.data.intervals
        rows = []
        labels = self.data.runs.set_index("loadtest_id")["config"].to_dict()
        for r in frame.to_dict("records"):
            rows.append(
                [
                    Cell(labels.get(r["loadtest_id"]) or "—"),
                    Cell(protocol_style(r["protocol"]).label, f"proto proto-{r['protocol']}"),
                    Cell(str(int(r["interval_index"])), "num" + ("" if r["in_scenario"] else " muted")),
                    Cell(f"{r['t_start_s']:g}–{r['t_end_s']:g}", "num"),
                    Cell(str(int(r["vus_max"])), "num"),
                    Cell(_fmt(r["pages_per_s"]), "num"),
                    Cell(_fmt(r["hits_per_s"], 0), "num"),
                    Cell(_fmt(_none(r["page_sla_ms"]), 0), "num"),
                    Cell(str(int(r["pages_failed"])), "num" + (" neg" if r["pages_failed"] else " muted")),
                    Cell(_fmt(_none(r.get("server_cpu_util")), 2), "num"),
                    Cell(
                        _fmt(_none(r.get("server_memory_bytes")) and r["server_memory_bytes"] / 1e6, 0), "num"
                    ),
                    Cell(_fmt(_none(r.get("server_busy")), 0), "num"),
                    Cell(
                        "⚠" if r.get("generator_saturated") is True else "",
                        "muted",
                        title="the load generator was short of CPU" if r.get("generator_saturated") else "",
                    ),
                ]
            )
        self.tables.append(
            TableBlock(
                f"tab-{self.data.name}-intervals",
                "Every interval",
                "Each run's intervals with the server's sample of the same interval (greyed index: after the "
                "last stage, pages in flight; not drawn). ⚠: the load generator was short of CPU.",
                [
                    "configuration",
                    "protocol",
                    "#",
                    "t (s)",
                    "VUs",
                    "pages/s",
                    "hits/s",
                    "page ms",
                    "failed",
                    "CPU",
                    "MB",
                    "busy",
                    "",
                ],
                rows,
            )
        )
        self._generators_table(labels)

    def _generators_table(self, labels: Mapping[str, Any]) -> None:
        """One row per generator of each run spread over several (``wirelab loadtest --generators``):
        its share of the requests, its pages, its CPU and the intervals it was saturated or lost in,
        summed from the merged intervals' ``generators_json`` (absent for single-generator runs)."""
        frame = self.data.intervals
        if "generators_json" not in frame.columns or frame["generators_json"].isna().all():
            return
        rows = []
        for (loadtest_id, protocol), group in frame.groupby(["loadtest_id", "protocol"], sort=False):
            per: dict[str, dict[str, Any]] = {}
            total_hits = 0
            for r in group.to_dict("records"):
                shares = json.loads(r["generators_json"]) if isinstance(r.get("generators_json"), str) else []
                for g in shares:
                    d = per.setdefault(
                        g["name"],
                        {
                            "part": g.get("part") or "",
                            "pages": 0,
                            "failed": 0,
                            "hits": 0,
                            "cpu_ms": 0.0,
                            "cpu_max": 0.0,
                            "saturated": 0,
                            "lost_from": None,
                        },
                    )
                    d["pages"] += g.get("pages", 0)
                    d["failed"] += g.get("pages_failed", 0)
                    d["hits"] += g.get("hits", 0)
                    total_hits += g.get("hits", 0)
                    d["cpu_ms"] += g.get("cpu_ms", 0.0)
                    d["cpu_max"] = max(d["cpu_max"], g.get("cpu_util", 0.0))
                    d["saturated"] += int(bool(g.get("saturated")))
                    if g.get("lost") and d["lost_from"] is None:
                        d["lost_from"] = int(r["interval_index"])
            for name, d in per.items():
                lost = d["lost_from"] is not None
                rows.append(
                    [
                        Cell(labels.get(loadtest_id) or "—"),
                        Cell(protocol_style(protocol).label, f"proto proto-{protocol}"),
                        Cell(name),
                        Cell(d["part"], "num"),
                        Cell(f"{100 * d['hits'] / total_hits:.1f} %" if total_hits else "—", "num"),
                        Cell(str(d["pages"]), "num"),
                        Cell(str(d["failed"]), "num" + (" neg" if d["failed"] else " muted")),
                        Cell(_fmt(d["cpu_ms"] / 1000, 1), "num"),
                        Cell(_fmt(d["cpu_max"], 2), "num"),
                        Cell(str(d["saturated"]), "num" + (" neg" if d["saturated"] else " muted")),
                        Cell(f"from interval {d['lost_from']}" if lost else "—", "neg" if lost else "muted"),
                    ]
                )
        self.tables.append(
            TableBlock(
                f"tab-{self.data.name}-generators",
                "Per generator",
                "Runs whose VUs ran as several generators (wirelab loadtest --generators): each "
                "generator's part of the VUs (K/N), its share of the requests, its pages, its CPU "
                "(seconds over the run, highest cores in an interval), the intervals it was saturated "
                "in, and, for one lost mid-run, the first interval it is missing from (that interval and "
                "those after are degraded: fewer VUs than planned). Every figure is from the merged "
                "intervals.",
                [
                    "configuration",
                    "protocol",
                    "generator",
                    "part",
                    "requests",
                    "pages",
                    "failed",
                    "CPU s",
                    "cores max",
                    "saturated",
                    "lost",
                ],
                rows,
            )
        )


def _thresholds(loadtest_id: str, runs: Any) -> tuple[str, str, str]:
    """(text, classes, hover) of a run's thresholds: ``passed``, ``failed`` (the failed ones on hover)."""
    results = runs.loc[loadtest_id, "thresholds"] or []
    if not results:
        return "—", "muted", ""
    failed = [t["expr"] for t in results if not t.get("pass")]
    if failed:
        return f"{len(failed)} of {len(results)} failed", "neg", "; ".join(failed)
    return "passed", "", "; ".join(t["expr"] for t in results)


def _think(spec: dict[str, Any]) -> str:
    if (spec.get("scenario") or {}).get("model") == "open":
        return "— (open model)"
    think = spec.get("think") or {}
    return f"{think.get('distribution', 'fixed')} {think.get('mean_s', 5):g} s"


def _none(v: Any) -> Any:
    """``v``, or None for None and NaN (a DataFrame's missing value)."""
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v


def target_notes(runs: Any) -> list[str]:
    """What the report says of external targets (``[load.target]``): which server side was measured."""
    notes: list[str] = []
    seen: set[str] = set()
    for spec in runs["spec"]:
        target = (spec or {}).get("target") if isinstance(spec, dict) else None
        if not target or target.get("url") in seen:
            continue
        seen.add(target["url"])
        if target.get("status_url"):
            notes.append(
                f"External target {target['url']}: its server side was measured only through its status page "
                f"{target['status_url']} ({target.get('status_format', 'apache')}); CPU and memory of its "
                "machine were not measured."
            )
        else:
            notes.append(
                f"External target {target['url']}: the server side was not measured (no target.status_url): "
                "page times, errors and throughput are the users' side only."
            )
    return notes


def build_capacity(data: CapacityData, figures_dir: Path) -> SweepSection:
    """Everything the report shows about one load test; figures are written to ``figures_dir``."""
    builder = _Builder(data, figures_dir)
    runs = data.runs
    complete = int((runs["status"] == "complete").sum())
    counts = {
        "runs": f"{complete} / {len(runs)}",
        "configurations": str(len(data.configs)),
        "intervals": f"{len(data.intervals):,}",
        "failed pages": f"{int(data.intervals['pages_failed'].sum()):,}" if len(data.intervals) else "0",
        "protocols": ", ".join(protocol_style(p).label for p in data.protocols),
    }
    builder.build()
    builder.sentences()
    builder.tables_()
    quality = say.capacity_quality_sentences(builder.table, runs)
    if data.intervals.empty:
        quality.append(
            "This load test has no measured intervals yet: run it (wirelab loadtest) and build the report "
            "again."
        )
    return sweep_section(
        data,
        quality=quality,
        findings=builder.findings,
        fixed=builder.fixed() if len(runs) else {},
        counts=counts,
        figures=builder.figures,
        tables=builder.tables,
        notes=builder.notes,
        provenance=provenance_rows(data.runs["provenance"].dropna(), data.spec_hash, servers=True),
    )
