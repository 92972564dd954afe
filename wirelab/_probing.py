"""Probing sites (``wirelab probe``, ``docs/probe.md``): which protocols they announce and serve.

The engine does the probing (``wirelab-engine probe``: one JSON record per site, checked against
``schemas/probe-record.schema.json``) and owns every check of its input — site syntax, list limits,
knob ranges and the address policy — answering bad input with one line and exit 2 before anything is
sent. This module passes the options on, stores each record as it arrives (one transaction per site)
and exports a run::

    import wirelab
    run = wirelab.probe(["h1.wirelab.test", "h3.wirelab.test"], local=True, db="wirelab.db")  # root
    wirelab.open("wirelab.db").probes(run.name)[["site", "h2_served", "h3_announced", "h3_served"]]

Without ``allow_internet`` nothing outside the run's own namespaces is ever contacted.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from wirelab._engine import Engine, SubprocessEngine
from wirelab._userpath import check_output_file
from wirelab.errors import EngineError, Interrupted, UsageError
from wirelab.store import DEFAULT_DB, Results, Store

__all__ = ["EXPORT_FORMATS", "ProbeOptions", "ProbeRun", "export_probes", "probe", "run_name"]

EXPORT_FORMATS = ("csv", "parquet")


@dataclasses.dataclass(frozen=True)
class ProbeOptions:
    """The engine's probe options; None leaves the engine's default (``wirelab-engine probe -h``)."""

    sites: Sequence[str] = ()
    list_file: str | Path | None = None
    allow_internet: bool = False
    concurrency: int | None = None
    rate: str | None = None  #: connections per host, ``N/s``, ``N/min`` or ``N/h``
    timeout: str | None = None  #: per step, a Go duration (``5s``)
    max_sites: int | None = None
    max_duration: str | None = None  #: the whole run, a Go duration (``1h``)
    dns: str | None = None  #: resolver ``IP[:PORT]``

    def engine_args(self) -> list[str]:
        """The arguments of ``wirelab-engine probe``."""
        args: list[str] = []
        if self.allow_internet:
            args.append("--allow-internet")
        for flag, value in (
            ("--list", self.list_file),
            ("--concurrency", self.concurrency),
            ("--rate", self.rate),
            ("--timeout", self.timeout),
            ("--max-sites", self.max_sites),
            ("--max-duration", self.max_duration),
            ("--dns", self.dns),
        ):
            if value is not None:
                args += [flag, str(value)]
        if self.sites:
            args += ["--", *self.sites]
        return args


@dataclasses.dataclass
class ProbeRun:
    """A stored probe run."""

    name: str
    db: Path
    sites: int = 0  #: records stored
    status: str = "running"


def run_name() -> str:
    """The default name of a probe run: ``probe-<UTC time>``."""
    return "probe-" + datetime.now(UTC).strftime("%Y%m%d-%H%M%S")


def probe(
    sites: Sequence[str] = (),
    *,
    db: str | Path = DEFAULT_DB,
    name: str | None = None,
    local: bool = False,
    engine: Engine | None = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    **options: Any,
) -> ProbeRun:
    """Probe ``sites`` (or ``list_file=``) and store every record in ``db`` as probe run ``name``.

    ``local`` probes the local internet (``wirelab-engine sites``; root); without sites, all of its
    sites that a probe may contact. ``options`` are :class:`ProbeOptions` fields. The run is created
    with the first record, so bad input (:class:`UsageError`, the engine's line) leaves nothing.
    Ctrl-C keeps the records so far (status ``interrupted``) and raises :class:`Interrupted`."""
    engine = engine or SubprocessEngine()
    if local and not sites and options.get("list_file") is None:
        sites = [s["url"] for s in engine.sites_ls() if not s.get("expected_refused")]
    opts = ProbeOptions(sites=tuple(sites), **options)
    run = ProbeRun(name=name or run_name(), db=Path(db))
    if run.db.exists():
        with Results(run.db) as results:
            if run.name in set(results.probe_runs()["run"]):
                raise UsageError(
                    f"--name: a probe run {run.name!r} is already in {run.db}; choose another name"
                )
    store: Store | None = None
    run_id = 0

    def store_record(record: dict[str, Any]) -> None:
        nonlocal store, run_id
        if store is None:
            from wirelab.runner import control_provenance

            store = Store(run.db)
            provenance = control_provenance(engine, 1)
            run_id = store.create_probe_run(
                run.name,
                local=local,
                allow_internet=opts.allow_internet,
                args=opts.engine_args(),
                provenance=provenance,
            )
        store.add_probe(run_id, record)
        run.sites += 1
        if on_record is not None:
            on_record(record)

    try:
        engine.probe(opts.engine_args(), store_record, local=local)
    except Interrupted:
        run.status = "interrupted"
        raise
    except EngineError as e:
        run.status = "failed"
        if store is not None:
            store.end_probe_run(run_id, "failed", str(e))
        raise
    else:
        run.status = "complete"
    finally:
        if store is not None:
            if run.status in ("complete", "interrupted"):
                store.end_probe_run(run_id, run.status)
            store.close()
    return run


def export_probes(db: str | Path, run: str, fmt: str, out: str | Path | None = None) -> tuple[Path, int, int]:
    """Write a run's per-site table (:meth:`Results.probes`) to CSV or Parquet; lists become
    comma-joined strings. Returns the path, rows and columns."""
    if fmt not in EXPORT_FORMATS:
        raise UsageError(f'--export: "{fmt}" is not a format; use csv or parquet')
    if out is not None:
        check_output_file("--out", out)
    with Results(db) as results:
        df = results.probes(run)
    for col in df.columns:
        if df[col].map(lambda v: isinstance(v, list)).any():
            df[col] = df[col].map(lambda v: ",".join(v) if isinstance(v, list) else v)
        elif df[col].map(lambda v: isinstance(v, dict)).any():
            df[col] = df[col].map(lambda v: json.dumps(v) if isinstance(v, dict) else v)
    target = Path(out) if out is not None else Path(f"{run}-probes.{fmt}")
    check_output_file("--out", target)
    if fmt == "csv":
        df.to_csv(target, index=False)
    else:
        df.to_parquet(target, index=False)
    return target, len(df), len(df.columns)
