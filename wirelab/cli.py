"""The ``wirelab`` command line. A thin layer over the library (``wirelab.run`` and friends).

Every error is one line on stderr, ``wirelab: <message>``; bad input exits 2, an interrupted run 130,
other failures 1.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from wirelab import __version__, _facts
from wirelab import _api as api
from wirelab import _netprofile as netprofile
from wirelab import spec as spec_mod
from wirelab._cli_run import run_command
from wirelab._contract_models import TrialSpecFields
from wirelab._engine import Engine, SubprocessEngine
from wirelab._options import (
    DEFAULT_ARTIFACTS,
    DEFAULT_RETRIES,
    DEFAULT_WAIT_WORKERS_S,
    GAP_MS,
    GENERATORS,
    MAX_STREAMS,
    PARALLEL,
    PORT,
    REPETITIONS,
    RETRIES,
    SHARDS,
    SLOTS,
    WAIT_WORKERS,
    WORKERS,
    Bound,
    only_with,
)
from wirelab._paths import experiments_dir
from wirelab._predict._cli import app as predict_app
from wirelab._predict._cli import print_plan_prediction
from wirelab._progress import RichLoadProgress, RichProgress
from wirelab._spec_models import show_value
from wirelab._summary import median_plt_load
from wirelab._terminal import shown
from wirelab._userpath import check_output_dir, check_output_file
from wirelab._waterfall import waterfall
from wirelab.analysis import live as live_pages
from wirelab.analysis.metrics import METRICS as _METRICS
from wirelab.analysis.metrics import by_name as _metric_by_name
from wirelab.errors import Interrupted, ProfileError, SpecError, StoreError, UsageError, cut
from wirelab.runner import RunSummary
from wirelab.spec import PROTOCOLS
from wirelab.store import DEFAULT_DB, PROBE_PROTOCOLS, Results

__all__ = ["app", "main", "write_report"]

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

app = typer.Typer(
    help="wirelab: load pages over HTTP/1.1, HTTP/2 and HTTP/3 through an emulated network and compare.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)
pages_app = typer.Typer(help="The engine's page corpus.", no_args_is_help=True)
profiles_app = typer.Typer(
    help="Network profiles and presets (docs/profile-grammar.md).", no_args_is_help=True
)
results_app = typer.Typer(help="Look at and export stored results.", no_args_is_help=True)
spec_app = typer.Typer(help="Experiment specs: check, expand, schema.", no_args_is_help=True)
cluster_app = typer.Typer(
    help="Run trials on a Dask cluster (docs/distributed.md): wirelab cluster up, wirelab worker, "
    "wirelab run --cluster.",
    no_args_is_help=True,
)
app.add_typer(cluster_app, name="cluster")
app.add_typer(pages_app, name="pages")
app.add_typer(profiles_app, name="profiles")
app.add_typer(results_app, name="results")
app.add_typer(spec_app, name="spec")
app.add_typer(predict_app, name="predict")

DB_OPTION = typer.Option(
    DEFAULT_DB, "--db", help="Results database (SQLite); trial directories go to <db>.d/."
)
ENGINE_OPTION = typer.Option(
    None,
    "--engine",
    help="wirelab-engine binary (default: $WIRELAB_ENGINE, bin/wirelab-engine in the repository, then PATH).",
)
CLUSTER_OPTION = typer.Option(
    None,
    "--cluster",
    help="Run the trials on the wirelab workers of this Dask scheduler (tcp://HOST:8786; "
    "docs/distributed.md); the workers' slots then replace --parallel.",
)
RETRIES_OPTION = typer.Option(
    None,
    "--retries",
    callback=RETRIES.callback,
    help=RETRIES.help(
        "Only with --cluster: starts again elsewhere of a trial whose worker was lost; "
        f"default {DEFAULT_RETRIES}"
    ),
    show_default=False,
)
ARTIFACTS_OPTION = typer.Option(
    None,
    "--artifacts",
    help=f"Only with --cluster: local (trial directories come back; the default, {DEFAULT_ARTIFACTS}) or "
    "remote (pcaps and server records stay on the worker, recorded as host:path).",
    show_default=False,
)
WAIT_WORKERS_OPTION = typer.Option(
    None,
    "--wait-workers",
    callback=WAIT_WORKERS.callback,
    help=WAIT_WORKERS.help(
        "Only with --cluster: how long to wait, saying so, for the first wirelab worker to connect "
        f"before refusing; default {DEFAULT_WAIT_WORKERS_S:g} s"
    ),
    show_default=False,
)
PARALLEL_OPTION = typer.Option(
    None,
    "--parallel",
    "-j",
    callback=PARALLEL.callback,
    help=PARALLEL.help(
        "Trials run at once on this machine, each in its own namespaces; measured effects in "
        "docs/running.md (Chromium trials: keep 1); default 1, not with --cluster"
    ),
    show_default=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"wirelab {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """wirelab: a laboratory for web protocols.

    Describe an experiment in TOML, run it ([bold]wirelab run[/]), keep every load in SQLite and look at it
    ([bold]wirelab results[/]); or compare protocols on one configuration ([bold]wirelab load[/]).
    """


# ------------------------------------------------------------------------------------------------
# Hooks and helpers


def write_report(db: Path, sweep: str) -> Path:
    """The demo's report: ``wirelab-report/index.html`` for ``sweep`` of ``db``."""
    from wirelab.report import write_report as build

    return build(db=db, sweeps=[sweep], out_dir=Path("wirelab-report"))


def _engine(path: Path | None) -> Engine:
    return SubprocessEngine(path)


def _print_summary(summary: RunSummary) -> None:
    for i, line in enumerate(summary.lines()):
        style = "bold" if i == 0 else ("yellow" if line.startswith(("fidelity", "interrupted")) else "")
        style = "red" if line.startswith("failed") else style
        out.print(line, style=style or None, soft_wrap=True)


def _run(
    spec: Path | spec_mod.Plan,
    db: Path,
    parallel: int | None,
    resume: bool,
    engine: Path | None,
    cluster: str | None = None,
    **options: Any,
) -> RunSummary:
    """``api.run`` with the progress display and the summary printed; ``options`` are
    ``api.run``'s own (retries, artifacts, wait_workers, allow_internet), passed on as they are."""
    try:
        summary = api.run(
            spec,
            db=db,
            parallel=parallel,
            resume=resume,
            engine=engine if cluster is not None else _engine(engine),
            observer=RichProgress(err),
            cluster=cluster,
            **options,
        )
    except Interrupted as e:
        if hasattr(e, "summary"):
            _print_summary(e.summary)
        raise
    _print_summary(summary)
    return summary


def _ms(v: Any) -> str:
    return "—" if v is None or v != v else f"{v:,.1f}"


def _pct(v: Any) -> str:
    return "—" if v is None or v != v else f"{v:+.1f} %"


# ------------------------------------------------------------------------------------------------
# run, load, demo

ALLOW_INTERNET_OPTION = typer.Option(
    False,
    "--allow-internet",
    help="Let live pages (page = url:…) name public sites, loaded through the egress router out of "
    "this host's default route, at most one load a second; special-purpose addresses stay refused. "
    "Without it only the local internet's *.wirelab.test sites load and nothing leaves the machine "
    "(docs/live.md, docs/egress.md).",
)


@app.command()
def run(
    spec: Path = typer.Argument(..., help="Experiment spec (TOML), see docs/spec.md.", show_default=False),
    db: Path = DB_OPTION,
    parallel: int | None = PARALLEL_OPTION,
    resume: bool = typer.Option(
        True,
        "--resume/--no-resume",
        help="Run only trials not complete in the database; --no-resume replaces the sweep's results.",
    ),
    engine: Path = ENGINE_OPTION,
    cluster: str = CLUSTER_OPTION,
    retries: int | None = RETRIES_OPTION,
    artifacts: str | None = ARTIFACTS_OPTION,
    wait_workers: float | None = WAIT_WORKERS_OPTION,
    allow_internet: bool = ALLOW_INTERNET_OPTION,
    predict: bool = typer.Option(
        False,
        "--predict",
        help="First print each trial's predicted PLT and gains and the predicted wall time "
        "(docs/predict.md).",
    ),
    predict_only: bool = typer.Option(False, "--predict-only", help="Print the prediction and run nothing."),
) -> None:
    """Run an experiment: every trial of the spec's grid, resumably, into the results database.

    Ctrl-C stops the running trials cleanly; run the same command again to resume. With --cluster the
    trials run on the workers of a Dask scheduler and come back into the same database.
    """
    if predict or predict_only:
        print_plan_prediction(api._trial_plan(spec, allow_internet), out, engine=_engine(engine))
        if predict_only:
            return
    summary = _run(
        spec,
        db,
        parallel,
        resume,
        engine,
        cluster,
        retries=retries,
        artifacts=artifacts,
        wait_workers=wait_workers,
        allow_internet=allow_internet,
    )
    if not summary.ok:
        raise typer.Exit(1)
    _check_budgets(db, summary.sweep, engine)


def _check_budgets(db: Path, sweep: str, engine: Path | None) -> None:
    """The sweep's ``[sweep] thresholds`` on its stored loads: a line per failed check, exit 1."""
    from wirelab import _budgets

    with _open(db) as results:
        budgets = _budgets.evaluate(results, sweep, engine=engine)
    if budgets is None:
        return
    n = len(budgets.results)
    if budgets.passed:
        out.print(f"budgets: {n} of {n} thresholds passed", style="green")
        return
    out.print(f"budgets: {len(budgets.failed)} of {n} thresholds failed", style="red")
    for line in budgets.lines():
        out.print(f"  {shown(line)}", soft_wrap=True, markup=False)
    raise typer.Exit(1)


#: the contract's default repetitions; bounds of the options that carry spec fields: wirelab._options
_REPETITIONS_DEFAULT = TrialSpecFields.model_fields["repetitions"].default
_LOAD_SHARDS = Bound("--shards", 1, SHARDS.hi)


def _default_gap_ms(page: str, allow_internet: bool) -> float:
    """``wirelab load``'s gap between loads unless given: none, but for a public live site the
    least the engine accepts (a live trial is polite to the site it measures)."""
    return _facts.min_public_gap_ms() if allow_internet and live_pages.is_public(page) else 0


@app.command()
def load(
    page: str = typer.Argument(
        ...,
        help="Page: corpus name (twitter), synthetic:64x10kB, a page JSON file, or a live page "
        "url:https://… (the local internet's h3.wirelab.test…; public sites need --allow-internet).",
    ),
    proto: str = typer.Option(
        "h1s,h2", "--proto", "-p", help="Protocols to compare, the first is the baseline."
    ),
    net: str = typer.Option("native", "--net", help="Network profile, e.g. rtt=100ms,bw=10mbit or a preset."),
    repetitions: int = typer.Option(
        _REPETITIONS_DEFAULT,
        "-n",
        "--repetitions",
        callback=REPETITIONS.callback,
        help=REPETITIONS.help("Loads per protocol."),
    ),
    # at least 1: the per-domain arrangement (0) needs a shard mode, which `load` does not offer
    shards: int = typer.Option(
        1,
        "--shards",
        callback=_LOAD_SHARDS.callback,
        help=_LOAD_SHARDS.help("Spread the page over N origins."),
    ),
    server: str = typer.Option(
        "builtin",
        "--server",
        help="The server under test: builtin, apache, nginx, h2o or caddy (wirelab-engine servers ls).",
    ),
    max_streams: int | None = typer.Option(
        None,
        "--max-streams",
        callback=MAX_STREAMS.callback,
        help=MAX_STREAMS.help(
            "HTTP/2 and HTTP/3 concurrent streams the server allows; default: the spec's (100, or the "
            "server's own where it cannot set it: wirelab-engine servers ls)"
        ),
    ),
    waterfall_proto: str | None = typer.Option(
        None, "--waterfall", help="Protocol whose median-PLT load is drawn (default: the last of --proto)."
    ),
    gap_ms: float | None = typer.Option(
        None,
        "--gap-ms",
        callback=GAP_MS.callback,
        help=GAP_MS.help(
            "Idle time between two loads, in ms (default 0; for a public site, and at least, "
            f"{_facts.min_public_gap_ms()})"
        ),
    ),
    db: Path = DB_OPTION,
    engine: Path = ENGINE_OPTION,
    allow_internet: bool = ALLOW_INTERNET_OPTION,
) -> None:
    """Load one page over several protocols through one network and compare them.

    Prints median and mean Time on Wire (ToW) and page load time (PLT) per protocol, the ToW gain of each
    protocol over the first (study E's % reduction), and a waterfall of one load.
    """
    protocols = [p.strip() for p in proto.split(",") if p.strip()]
    for p in protocols:
        if p not in PROTOCOLS:
            raise UsageError(f'--proto: "{p}" is not a protocol; use {", ".join(PROTOCOLS)}')
    if not protocols or len(set(protocols)) != len(protocols):
        raise UsageError(f'--proto: "{proto}" must list each protocol once, e.g. h1s,h2')
    try:
        netprofile.parse(net)
    except ProfileError as e:
        raise UsageError(f"--net: {e}") from None
    if waterfall_proto is not None and waterfall_proto not in protocols:
        raise UsageError(f'--waterfall: "{waterfall_proto}" is not one of --proto ({",".join(protocols)})')
    server_fields: dict[str, Any] = {"impl": server}
    live = live_pages.is_live(page)
    if live and (server != "builtin" or max_streams is not None or shards != 1):
        raise UsageError(
            "--server, --max-streams, --shards: a live page (url:) is served by its site; leave them out"
        )
    if max_streams is not None:
        server_fields["max_concurrent_streams"] = max_streams
    if gap_ms is None:
        gap_ms = _default_gap_ms(page, allow_internet)
    result = api.load(
        page,
        protocols=protocols,
        network=net,
        repetitions=repetitions,
        db=db,
        engine=_engine(engine),
        observer=RichProgress(err),
        allow_internet=allow_internet,
        gap_ms=gap_ms,
        **({} if live else {"shards": shards, "server": server_fields}),
    )
    served_by = "served by the site" if live else f"server {server}"
    title = f"{page} over {net} — {repetitions} loads per protocol, {served_by}"
    table = Table(title=title, title_justify="left")
    rows = result.table().to_dict("records")
    cost = any(row["server_cpu_median_ms"] is not None for row in rows)
    for col, justify in (
        ("protocol", "left"),
        ("loads", "right"),
        ("errors", "right"),
        ("ToW median ms", "right"),
        ("ToW mean ms", "right"),
        ("PLT median ms", "right"),
        ("PLT mean ms", "right"),
        (f"ToW gain vs {protocols[0]}", "right"),
        *((("server CPU ms", "right"),) if cost else ()),
    ):
        table.add_column(col, justify=justify)
    for row in rows:
        cells = [
            row["protocol"],
            str(row["loads"]),
            str(row["errors"]),
            _ms(row["tow_median_ms"]),
            _ms(row["tow_mean_ms"]),
            _ms(row["plt_median_ms"]),
            _ms(row["plt_mean_ms"]),
            "baseline" if row["protocol"] == protocols[0] else _pct(row["tow_gain_pct"]),
        ]
        if cost:
            cells.append(_ms(row["server_cpu_median_ms"]))
        table.add_row(*cells)
    out.print(table)
    median_load = result.representative(waterfall_proto)
    objects = result.objects(int(median_load["load_index"]))
    if objects:
        title = (
            f"waterfall: {median_load['protocol']} repetition {median_load['repetition']} "
            f"(median PLT {median_load['plt_ms']:,.0f} ms, {int(median_load['connections'])} connection(s))"
        )
        out.print(waterfall(objects, width=max(20, min(80, out.width - 60)), title=title))
    out.print(f"stored as sweep {result.sweep} in {result.db}", style="dim", soft_wrap=True)


@app.command()
def loadtest(
    spec: Path = typer.Argument(
        ...,
        help=r"Load-test spec (TOML: \[sweep], \[load], \[grid]), see docs/loadtest.md.",
        show_default=False,
    ),
    db: Path = DB_OPTION,
    resume: bool = typer.Option(
        True,
        "--resume/--no-resume",
        help="Run only runs not complete in the database; --no-resume replaces the sweep's results.",
    ),
    generators: int = typer.Option(
        1,
        "--generators",
        help=GENERATORS.help(
            "Run each run's VUs as this many generator processes, their intervals merged exactly (HDR "
            "histograms merged, never percentiles averaged); one process holds at most RLIMIT_NOFILE "
            "connections (docs/loadtest.md, 'Several generators')"
        ),
        callback=GENERATORS.callback,
    ),
    allow_internet: bool = typer.Option(
        False,
        "--allow-internet",
        help="Let a \\[load.target] be outside loopback and the run's local internet: public addresses, and "
        "private (RFC 1918) ones the spec names; never link-local/metadata, multicast or documentation "
        "addresses. Only this flag allows it, never the spec file. Load only servers you may load.",
    ),
    cluster: str = typer.Option(
        None,
        "--cluster",
        help="Run each generator (--generators) on a wirelab worker of this Dask scheduler "
        "(tcp://HOST:8786), each behind an emulated access link of its own, and the server on another "
        "worker; the intervals "
        "merged exactly on this machine (docs/loadtest.md, 'A Dask cluster').",
    ),
    server_worker: str = typer.Option(
        None,
        "--server-worker",
        help="Only with --cluster: the name of the wirelab worker that runs the server under test (reachable "
        "by the generators' workers only); default: the first connected worker by name.",
    ),
    wait_workers: float = WAIT_WORKERS_OPTION,
    engine: Path = ENGINE_OPTION,
) -> None:
    """Run a load test (study N): virtual users against the server under test, through the emulated path.

    Each grid point × protocol of the spec is one run, in turn, each on a fresh server: VUs ramp as the
    scenario says, each loads the page like a browser and thinks; every interval's pages/s, hits/s, page
    times and errors and the server's CPU, memory and busy workers are kept in the database
    ([bold]wirelab report NAME[/] draws them). Exit status: 0 every run complete and every threshold
    passed, 1 a run failed or a threshold did not pass, 2 bad input, 130 interrupted.

    Ctrl-C stops the VUs and keeps what was measured; run the same command again to resume.
    """
    from wirelab import _loadplan as loadplan

    if _is_trial_spec(spec):
        raise UsageError(f"{spec}: a trial sweep ([base]); run it with wirelab run {spec}")
    if cluster is not None:
        summary = _loadtest(
            loadplan.load(spec, allow_internet=allow_internet),
            db,
            resume,
            _engine(engine),
            generators,
            cluster={"cluster": cluster, "server_worker": server_worker, "wait_workers": wait_workers},
        )
    else:
        for option, value in (("--server-worker", server_worker), ("--wait-workers", wait_workers)):
            only_with(option, value is not None, "--cluster", False)
        summary = _loadtest(
            loadplan.load(spec, allow_internet=allow_internet), db, resume, _engine(engine), generators
        )
    if not summary.ok:
        raise typer.Exit(1)


def _loadtest(
    plan: Any,
    db: Path,
    resume: bool,
    engine: Engine,
    generators: int = 1,
    cluster: dict[str, Any] | None = None,
) -> Any:
    """Run a load-test plan with the live display and print its summary (also when interrupted)."""
    try:
        summary = api.loadtest(
            plan,
            db=db,
            resume=resume,
            engine=engine,
            observer=RichLoadProgress(err),
            generators=generators,
            **(cluster or {}),
        )
    except Interrupted as e:
        if hasattr(e, "summary"):
            _print_loadtest_summary(e.summary)
        raise
    _print_loadtest_summary(summary)
    return summary


def _is_trial_spec(path: Path) -> bool:
    """Whether ``path`` is a trial sweep's spec (a [base] table and no [load])."""
    import tomllib

    from wirelab._userpath import read_spec_text

    try:
        data = tomllib.loads(read_spec_text(path))
    except (SpecError, tomllib.TOMLDecodeError):
        return False
    return "base" in data and "load" not in data


def _print_loadtest_summary(summary: Any) -> None:
    """The runs' table and the summary lines of ``wirelab loadtest``."""
    if summary.outcomes:
        table = Table(title=f"load test {shown(summary.sweep)}", title_justify="left")
        # below 110 columns the run id, hits/s and the thresholds (said below the table) give their room
        wide = out.width >= 110
        columns = [
            ("run", "left", wide),
            ("configuration", "left", True),
            ("status", "left", True),
            ("pages/s max", "right", True),
            ("hits/s max", "right", wide),
            ("1st error", "right", True),
            ("SLA violated", "right", True),
            ("CPU cores max", "right", True),
            ("thresholds", "left", wide),
        ]
        for col, justify, visible in columns:
            if visible:  # the configuration folds; the rest keeps its line
                table.add_column(col, justify=justify, overflow="fold", no_wrap=col != "configuration")  # type: ignore[arg-type]
        for o in summary.outcomes:
            found = o.outcomes
            cpu = found.get("server_cpu_util_max")
            thresholds = (
                ("failed: " + "; ".join(o.failed_thresholds))
                if o.failed_thresholds
                else ("passed" if o.status == "complete" else "—")
            )
            cells = [
                (o.run.id, wide),
                (shown(o.run.label), True),
                (o.status, True),
                (_num(found.get("max_pages_per_s")), True),
                (_num(found.get("max_hits_per_s"), 0), wide),
                (_vus(found.get("vus_at_first_error")), True),
                (_vus(found.get("vus_at_first_sla_violation")), True),
                ("—" if cpu is None else f"{cpu:.2f}", True),
                (shown(thresholds), wide),
            ]
            table.add_row(*(text for text, visible in cells if visible))
        out.print(table)
    for i, line in enumerate(summary.lines()):
        style = "bold" if i == 0 else ("yellow" if line.startswith(("generator", "interrupted")) else "")
        style = "red" if line.startswith(("failed", "thresholds failed")) else style
        out.print(shown(line), style=style or None, soft_wrap=True)


def _num(v: Any, digits: int = 1) -> str:
    return "—" if v is None or v != v else f"{v:,.{digits}f}"


def _vus(v: Any) -> str:
    """A VU count that may not have happened (None, or NaN in a DataFrame)."""
    return "none" if v is None or v != v else f"{int(v)} VUs"


@app.command()
def demo(
    db: Path = DB_OPTION,
    parallel: int | None = PARALLEL_OPTION,
    engine: Path = ENGINE_OPTION,
) -> None:
    """Run the demo sweep into the database and print its summary (and the report's path).

    The demo is experiments/demo.toml: pages twitter and youtube, h1s vs h2, RTT 20, 100 and 200 ms at
    10 Mbit/s, 3 repetitions (36 loads).
    """
    path = experiments_dir() / "demo.toml"
    if not path.is_file():
        raise UsageError(f"demo: {path} not found; wirelab runs from its repository checkout (make setup)")
    plan = spec_mod.load(path)
    summary = _run(plan, db, parallel, True, engine)
    out.print()
    _print_sweep(db, plan.name)
    summary.report = write_report(db, plan.name)
    out.print(f"report: {summary.report}", style="bold", soft_wrap=True)
    if not summary.ok:
        raise typer.Exit(1)


@app.command()
def report(
    sweeps: list[str] = typer.Argument(
        None, help="Sweeps to include (default: every sweep in the database)."
    ),
    db: Path = DB_OPTION,
    out_dir: Path = typer.Option(
        Path("wirelab-report"),
        "--out",
        "-o",
        help="Directory for index.html and figures/: an existing directory (its index.html and figures/ "
        "are replaced) or a new one in an existing directory.",
    ),
    probes: list[str] = typer.Option(
        None,
        "--probe",
        help="Probe run to include (repeatable; see wirelab probe). Default: with no SWEEPS, all.",
    ),
    metric: str | None = typer.Option(
        None,
        "--metric",
        help=f"The metric of every comparison figure and table in place of ToW and PLT: "
        f"{', '.join(m.column for m in _METRICS)} (LCP and Speed Index: Chromium loads; a sweep without "
        "it is one line, exit 2). Default: ToW for the gains and CDFs, PLT for the ratios, as the studies.",
    ),
) -> None:
    """Write the HTML report: conclusions, figures, tables and every load's waterfall (DIR/index.html).

    A load test (wirelab loadtest) gets study N's figures: pages/s, hits/s, page time with the SLA,
    errors and the server's CPU, memory and busy workers vs VUs, every protocol on shared axes, and its
    capacity table. Probe runs get a section each: the share of sites announcing vs serving each
    protocol, and one row per site. Naming sweeps or --probe runs includes only those; naming neither
    includes everything. The page is self-contained (figures and script embedded) and opens from the
    file system.
    """
    from wirelab.report import write_report as build

    if not db.exists():
        raise UsageError(f"--db: {db} does not exist; run a sweep first (wirelab run SPEC)")
    if metric is not None:
        _metric_by_name(metric)
    path = build(db, sweeps or None, out_dir, probe_runs=probes or None, metric=metric)
    out.print(f"report: {path}", style="bold", soft_wrap=True)


@app.command()
def explain(
    sweep: str = typer.Argument(..., help="Sweep name."),
    config: str | None = typer.Option(
        None, "--config", help="One configuration: its trial id (wirelab results show lists them)."
    ),
    baseline: str | None = typer.Option(
        None, "--baseline", help="The protocol the others are compared with (default: the sweep's first)."
    ),
    metric: str | None = typer.Option(
        None,
        "--metric",
        help=f"Also compare this metric over the same loads and show how much of its difference the "
        f"wire accounts for: {', '.join(m.column for m in _METRICS)} (LCP and Speed Index: Chromium loads).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the table as JSON records instead."),
    db: Path = DB_OPTION,
) -> None:
    """Why a protocol wins: per configuration, its difference in time on the wire against the baseline
    split into the mechanisms that made it — setup, queueing, server, transfer, gateway, window,
    recovery, head-of-line blocking, compute, DNS — signed contributions that sum to the difference
    (docs/why.md), and a sentence per protocol naming the mechanism that decides and where along the
    sweep's axis that changes. A sweep without two protocols of successful loads is one line, exit 2.
    """
    from wirelab.analysis import why
    from wirelab.analysis.sweep import load_sweep

    if metric is not None:
        _metric_by_name(metric)
    with _open(db) as results:
        data = load_sweep(results, sweep)
    frame = why.explain(data, baseline=baseline, config=config, metric=metric)
    if as_json:
        out.print_json(frame.to_json(orient="records", force_ascii=False))
        return
    labels = {p.key: p.label for p in _facts.why_parts()}
    keys = why.part_keys()
    chosen = next((m for m in _METRICS if m.column == metric), None)
    for proto, rows in frame.groupby("protocol", sort=False):
        base = str(rows["baseline"].iloc[0])
        table = Table(
            "configuration",
            "loads",
            f"{base} ms",
            f"{proto} ms",
            "difference",
            "contributions (largest first)",
            title=f"{shown(sweep)}: {proto} against {base}, time on the wire (tow_first_packet_ms, means)",
        )
        if chosen is not None:
            for head in (
                f"{base} {chosen.short}",
                f"{proto} {chosen.short}",
                f"{chosen.short} diff.",
                "outside wire",
            ):
                table.add_column(head)
        for _, r in rows.iterrows():
            order = sorted(keys, key=lambda k: -abs(float(r[k])))
            diff = float(r["difference_ms"])
            shown_parts = [
                f"{labels[k]} {why.format_ms(float(r[k]), True)}"
                for k in order[:4]
                if abs(float(r[k])) >= max(1.0, 0.05 * abs(diff))
            ]
            table.add_row(
                shown(str(r.get("label") or r["trial_id"])),
                f"{int(r['loads'])}/{int(r['baseline_loads'])}",
                f"{float(r['baseline_' + why.METRIC]):.0f}",
                f"{float(r[why.METRIC]):.0f}",
                why.format_ms(diff, True),
                ", ".join(shown_parts) or "—",
                *(
                    [
                        f"{float(r['baseline_metric_ms']):.0f}",
                        f"{float(r['metric_ms']):.0f}",
                        why.format_ms(float(r["metric_difference_ms"]), True),
                        why.format_ms(float(r["outside_wire_ms"]), True),
                    ]
                    if chosen is not None
                    else []
                ),
            )
        out.print(table)
    for sentence in [*why.metric_sentences(frame), *why.sentences(frame, data)]:
        out.print(sentence, soft_wrap=True)


@app.command()
def reproduce(
    name: str = typer.Argument(..., help="Experiment (see `wirelab reproduce ls`), or ls to list them."),
    quick: bool = typer.Option(
        False,
        "--quick",
        help="The quick variant: a few points, 3 repetitions (a load test: a ramp of minutes).",
    ),
    db: Path = DB_OPTION,
    out_dir: Path = typer.Option(
        None,
        "--out",
        "-o",
        help="Report directory: an existing one (its report is replaced) or a new one in an existing "
        "directory (default: wirelab-report/<sweep>).",
    ),
    parallel: int | None = PARALLEL_OPTION,
    engine: Path = ENGINE_OPTION,
    cluster: str = CLUSTER_OPTION,
    retries: int | None = RETRIES_OPTION,
    artifacts: str | None = ARTIFACTS_OPTION,
    wait_workers: float | None = WAIT_WORKERS_OPTION,
) -> None:
    """Reproduce a figure of the studies: run its experiment (resumably) and write its report.

    [bold]wirelab reproduce ls[/] lists the experiments (docs/reproducing.md).

    NAME runs the full variant (the study's grid and repetitions); NAME --quick the quick one.
    """
    from wirelab import _reproduce as rep

    if name == "ls":
        table = Table(title="experiments (docs/reproducing.md); durations are estimates at -j 1")
        table.add_column("experiment", no_wrap=True)
        table.add_column("study")
        table.add_column("quick", no_wrap=True)
        table.add_column("full", no_wrap=True)
        # Below ~110 columns the first four leave no room for the description: leave it out
        # rather than fold it one character per line.
        wide = out.width >= 110
        if wide:
            table.add_column("reproduces")
        for e in rep.catalog():
            q, f = e.plan(True), e.plan(False)
            row = [
                e.name,
                e.study,
                f"{_size(q)} ≈ {rep.format_duration(rep.estimate_seconds(q))}",
                f"{_size(f)} ≈ {rep.format_duration(rep.estimate_seconds(f))}",
            ]
            table.add_row(*row, *([e.reproduces] if wide else []))
        out.print(table)
        if not wide:
            out.print("(a terminal of 110 columns or more shows what each reproduces)", style="dim")
        out.print("Run one with: wirelab reproduce NAME [--quick]  (docs/reproducing.md)", style="dim")
        return
    plan = rep.experiment(name).plan(quick)
    check_output_dir("--out", out_dir or _default_report_dir(plan.name), parents=out_dir is None)
    if isinstance(plan, spec_mod.Plan):
        ok = _run(
            plan,
            db,
            parallel,
            True,
            engine,
            cluster,
            retries=retries,
            artifacts=artifacts,
            wait_workers=wait_workers,
        ).ok
    else:  # a load test: its runs go one at a time, on this machine
        if cluster is not None:
            raise UsageError(f"--cluster: {name} is a load test; its runs go one at a time on this machine")
        if parallel is not None:
            raise UsageError(f"--parallel: {name} is a load test; its runs go one at a time")
        ok = _loadtest(plan, db, True, _engine(engine)).ok
    report_path = write_report_for(db, plan.name, out_dir)
    out.print(f"report: {report_path}", style="bold", soft_wrap=True)
    if not ok:
        raise typer.Exit(1)


def _size(plan: Any) -> str:
    """``18 loads`` (a trial sweep) or ``3 runs`` (a load test)."""
    return f"{plan.loads} loads" if isinstance(plan, spec_mod.Plan) else f"{len(plan.runs)} runs"


def _default_report_dir(sweep: str) -> Path:
    return Path("wirelab-report") / sweep


def write_report_for(db: Path, sweep: str, out_dir: Path | None) -> Path:
    """The report of one sweep, in ``out_dir`` or ``wirelab-report/<sweep>`` (made whole)."""
    from wirelab.report import write_report as build

    if out_dir is None:
        out_dir = _default_report_dir(sweep)
        out_dir.parent.mkdir(parents=True, exist_ok=True)
    return build(db, [sweep], out_dir)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def shell(
    ctx: typer.Context,
    engine: Path = ENGINE_OPTION,
) -> None:
    """Run a command behind an emulated link (wraps wirelab-engine shell).

    Every argument is passed on to the engine verbatim (put --engine PATH first if needed), e.g.
    [bold]wirelab shell --net rtt=100ms,bw=10mbit -- curl http://$WIRELAB_SERVER_ADDRS/[/]
    """
    argv = _engine(engine).shell_argv(list(ctx.args))
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(argv[0], argv)


# ------------------------------------------------------------------------------------------------
# probe

#: The engine's probe defaults, quoted in the options' help (the engine applies them).
_PROBE_DEFAULTS = _facts.probe_defaults()


@app.command()
def probe(
    sites: list[str] = typer.Argument(
        None, help="Sites: host names or http(s):// URLs (or --list FILE).", show_default=False
    ),
    list_file: Path | None = typer.Option(None, "--list", help="A file of sites, one a line (# comments)."),
    allow_internet: bool = typer.Option(
        False,
        "--allow-internet",
        help="Allow live sites (public addresses only; see README: what a probe sends).",
    ),
    local: bool = typer.Option(
        False, "--local", help="Probe the local internet (wirelab-engine sites; root); no SITES: all of it."
    ),
    concurrency: int | None = typer.Option(
        None,
        "--concurrency",
        help=f"Sites probed at once, 1–{_PROBE_DEFAULTS['concurrency_max']} "
        f"(default {_PROBE_DEFAULTS['concurrency']}).",
    ),
    rate: str | None = typer.Option(
        None,
        "--rate",
        help=f"Connections per host, N/s, N/min or N/h, at most {_PROBE_DEFAULTS['rate_max_per_s']}/s "
        f"(default {_PROBE_DEFAULTS['rate']}).",
    ),
    timeout: str | None = typer.Option(
        None,
        "--timeout",
        help=f"Bound on each step, e.g. 5s, {_PROBE_DEFAULTS['timeout_range']} "
        f"(default {_PROBE_DEFAULTS['timeout']}).",
    ),
    max_sites: int | None = typer.Option(
        None,
        "--max-sites",
        help=f"Most sites accepted, 1–{_PROBE_DEFAULTS['max_sites_max']} "
        f"(default {_PROBE_DEFAULTS['max_sites']}).",
    ),
    max_duration: str | None = typer.Option(
        None,
        "--max-duration",
        help=f"Bound on the run, e.g. 30m, {_PROBE_DEFAULTS['max_duration_range']} "
        f"(default {_PROBE_DEFAULTS['max_duration']}).",
    ),
    dns: str | None = typer.Option(None, "--dns", help="Resolver IP[:PORT] (default: /etc/resolv.conf)."),
    name: str | None = typer.Option(None, "--name", help="Name of the probe run (default probe-<UTC time>)."),
    export: str | None = typer.Option(
        None, "--export", help="csv or parquet: also write the run's per-site table (see --out)."
    ),
    out_path: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="With --export: the export file, in an existing directory; an existing file is replaced "
        "(default <run>-probes.<format>).",
    ),
    run_name: str | None = typer.Option(
        None, "--run", help="With --export and no SITES: export this stored probe run instead of probing."
    ),
    db: Path = DB_OPTION,
    engine: Path = ENGINE_OPTION,
) -> None:
    """Find out which protocols sites announce and which they serve (study E's live crawl).

    Per site: DNS (A, AAAA, HTTPS records), TLS offering h2 and http/1.1, only http/1.1 and only
    spdy/3.1, HTTP/1.1 and the h2c upgrade on port 80, and QUIC + HTTP/3 — one GET of the site's URL per
    protocol, response headers only, paced per host. Results go to the database (probe runs; `wirelab
    report` has a section for them). docs/probe.md says exactly what is sent.

    Nothing outside this machine is contacted without --allow-internet: without it only the run's own
    namespaces (--local, or inside wirelab-engine sites/shell) are probed, and anything else is refused
    with one line and exit 2 before a packet is sent to it.
    """
    from wirelab import _probing as probing

    if export is not None and export not in probing.EXPORT_FORMATS:
        raise UsageError(f'--export: "{export}" is not a format; use csv or parquet')
    if out_path is not None:
        if export is None:
            raise UsageError("--out: the export file; give it with --export csv|parquet")
        check_output_file("--out", out_path)
    if run_name is not None:
        if sites or list_file is not None or local:
            raise UsageError("--run: exports a stored run; give it without SITES, --list or --local")
        probing_knobs = {
            "--allow-internet": allow_internet,
            "--concurrency": concurrency is not None,
            "--rate": rate is not None,
            "--timeout": timeout is not None,
            "--max-sites": max_sites is not None,
            "--max-duration": max_duration is not None,
            "--dns": dns is not None,
            "--name": name is not None,
        }
        for option, given in probing_knobs.items():
            if given:
                raise UsageError(
                    f"{option}: a probing option; --run exports a stored run, which probes nothing"
                )
        if export is None:
            raise UsageError("--run: needs --export csv|parquet")
        if not db.exists():
            raise UsageError(f"--db: {db} does not exist; probe some sites first (wirelab probe SITES)")
        path, rows, cols = probing.export_probes(db, run_name, export, out_path)
        out.print(f"wrote {rows} rows × {cols} columns to {path}", soft_wrap=True)
        return
    done: list[dict[str, Any]] = []
    with err.status("probing…") as status:

        def progress(record: dict[str, Any]) -> None:
            done.append(record)
            status.update(f"probing… {len(done)} site(s) done, last {record['host']}")

        run = probing.probe(
            sites or [],
            db=db,
            name=name,
            local=local,
            engine=_engine(engine),
            on_record=progress,
            list_file=list_file,
            allow_internet=allow_internet,
            concurrency=concurrency,
            rate=rate,
            timeout=timeout,
            max_sites=max_sites,
            max_duration=max_duration,
            dns=dns,
        )
    _print_probe_run(db, run.name)
    if export is not None:
        path, rows, cols = probing.export_probes(db, run.name, export, out_path)
        out.print(f"wrote {rows} rows × {cols} columns to {path}", soft_wrap=True)


def _print_probe_run(db: Path, run: str) -> None:
    """Per protocol the share of sites announcing and serving it; then one row per site."""
    import pandas as pd

    from wirelab.analysis.probes import probe_shares

    with Results(db) as results:
        protocols = results.probe_protocols(run)
        sites = results.probes(run)
    shares = probe_shares(protocols)
    contacted = int(shares["sites"].max()) if len(shares) else 0
    table = Table(title=f"{shown(run)}: {len(sites)} sites, {contacted} contacted", title_justify="left")
    for col in ("protocol", "announced", "served", "announced, not served", "served, not announced"):
        table.add_column(col, justify="left" if col == "protocol" else "right")

    def share(count: Any, pct: Any) -> str:
        if pd.isna(count):
            return "—"
        return f"{int(count)}" if pct is None or pd.isna(pct) else f"{int(count)} ({pct:.0f} %)"

    def number(count: Any) -> str:
        return "—" if pd.isna(count) else str(int(count))

    for row in shares.to_dict("records"):
        table.add_row(
            shown(row["protocol"]),
            share(row["announced"], row["announced_pct"]),
            share(row["served"], row["served_pct"]),
            number(row["announced_not_served"]),
            number(row["served_not_announced"]),
        )
    out.print(table)
    per_site = Table(title="per site: ✓ served, A announced only, · neither", title_justify="left")
    per_site.add_column("site", overflow="fold", min_width=24)
    per_site.add_column("addr")
    for p in PROBE_PROTOCOLS:
        per_site.add_column(p, justify="center")
    per_site.add_column("note", overflow="fold")
    for s in sites.to_dict("records"):
        cells = []
        for p in PROBE_PROTOCOLS:
            served, announced = s[f"{p}_served"], s[f"{p}_announced"]
            cells.append("✓" if served else ("A" if announced else "·"))
        note = shown(s["refused"] or s["error"] or "")
        addr = shown(s["addr"]) if s["addr"] else "—"
        per_site.add_row(shown(s["host"]), addr, *(cells if s["addr"] else ["" for _ in cells]), note)
    out.print(per_site)
    out.print(f"stored as probe run {shown(run)} in {shown(db)}", style="dim", soft_wrap=True)


# ------------------------------------------------------------------------------------------------
# cluster


@app.command()
def worker(
    scheduler: str = typer.Option(
        ..., "--scheduler", help="The Dask scheduler's address, e.g. tcp://HOST:8786.", show_default=False
    ),
    slots: int = typer.Option(
        None,
        "--slots",
        callback=SLOTS.callback,
        help=SLOTS.help("Trials this machine runs at once (the resource trial=N); default one per two cores"),
        show_default=False,
    ),
    name: str = typer.Option(
        None,
        "--name",
        help="The worker's name, unique among the scheduler's workers (a taken one is refused); default: "
        "the host name and this process's id.",
    ),
    calibrate: bool = typer.Option(
        True,
        "--calibrate/--no-calibrate",
        help="Measure the emulator with bench link --quick (about 30 s) before serving; "
        "kept with every trial.",
    ),
    keep_dir: Path = typer.Option(
        Path("wirelab-worker.d"), "--keep-dir", help="Where trial directories stay with --artifacts remote."
    ),
    engine: Path = ENGINE_OPTION,
) -> None:
    """Serve trials to a Dask scheduler (as root: it runs the local engine) until Ctrl-C or SIGTERM.

    Checks the engine (refuses to start when it is missing or not runnable), describes this machine (host,
    CPU model, cores, kernel, engine version and git sha, a bench link --quick calibration) once, then runs
    the trials clients submit, at most --slots at once. Ctrl-C ends the running trials cleanly.
    """
    from wirelab._cluster import serve_worker

    serve_worker(
        scheduler,
        slots=slots,
        engine=engine,
        name=name,
        calibrate=calibrate,
        keep_dir=keep_dir,
        ready=lambda line: out.print(line, style="bold", soft_wrap=True, markup=False),
    )


@cluster_app.command("up")
def cluster_up(
    host: str = typer.Option(
        "127.0.0.1",
        "--host",
        help="Interface the scheduler listens on; only a trusted network's (docs/distributed.md, Security).",
    ),
    port: int = typer.Option(
        8786, "--port", callback=PORT.callback, help=PORT.help("The scheduler's port, 0: any free one.")
    ),
    workers: int = typer.Option(
        0,
        "--workers",
        callback=WORKERS.callback,
        help=WORKERS.help("Also start N wirelab workers on this machine."),
    ),
    slots: int | None = typer.Option(
        None,
        "--slots",
        callback=SLOTS.callback,
        help=SLOTS.help("Only with --workers: trial slots of each local worker; default 1"),
        show_default=False,
    ),
    calibrate: bool | None = typer.Option(
        None,
        "--calibrate/--no-calibrate",
        help="Only with --workers: calibrate the local workers (bench link --quick; they do it at once on "
        "one machine); default no.",
        show_default=False,
    ),
    engine: Path = ENGINE_OPTION,
) -> None:
    """Start a Dask scheduler here (and optionally local workers), print its address, serve until Ctrl-C."""
    import signal
    import socket
    import threading

    from wirelab._cluster import local_cluster

    only_with("--slots", slots is not None, "--workers N", workers > 0)
    only_with("--calibrate", bool(calibrate), "--workers N", workers > 0)
    try:  # a port in use or an address not ours: one line before Dask tries
        with socket.create_server((host, port)):
            pass
    except OSError as e:
        raise UsageError(f"--port: cannot listen on {host}:{port} ({e.strerror or e})") from None
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with local_cluster(
        workers,
        slots=slots or 1,
        engine=engine,
        calibrate=bool(calibrate),
        host=host,
        port=port,
        keep_dir="wirelab-worker.d",
    ) as c:
        out.print(f"scheduler {c.address}" + (f" with workers {', '.join(c.names)}" if workers else ""))
        out.print(f"run on it: wirelab run SPEC --cluster {c.address}", style="dim", soft_wrap=True)
        while not stop.wait(1.0):
            pass


# ------------------------------------------------------------------------------------------------
# pages, profiles


@pages_app.command("ls")
def pages_ls(
    as_json: bool = typer.Option(False, "--json", help="Print the engine's JSON."),
    corpus: str | None = typer.Option(
        None, "--corpus", help="List a generated corpus: web200, mobile200 or gen:PROFILE:SEED:COUNT."
    ),
    figure: Path | None = typer.Option(
        None,
        "--figure",
        help="With --corpus: write its characteristics figure (PNG and SVG) into this directory.",
    ),
    engine: Path = ENGINE_OPTION,
) -> None:
    """List the engine's built-in pages, or a generated corpus's pages with their characteristics."""
    if corpus is not None:
        _corpus_listing(_engine(engine).pages_corpus("ls", ["--corpus", corpus]), as_json, figure)
        return
    if figure is not None:
        raise UsageError("--figure: draws a corpus's characteristics; give --corpus too")
    pages = _engine(engine).pages_ls()
    if as_json:
        out.print_json(json.dumps(pages))
        return
    table = Table(
        "page", "objects", "size", "origins", "description", title="pages (wirelab-engine pages ls)"
    )
    for p in pages:
        size = p.get("total_bytes")
        table.add_row(
            shown(p["name"]),
            str(p.get("objects", "")),
            f"{size / 1000:,.1f} kB" if isinstance(size, int | float) else "",
            str(p.get("origins", "")),
            shown(p.get("description", "")),
        )
    out.print(table)


def _corpus_listing(listing: dict[str, Any], as_json: bool, figure: Path | None) -> None:
    """Print a generated corpus (``pages ls --corpus``, ``pages generate``) and draw its figure."""
    if as_json:
        out.print_json(json.dumps(listing))
    else:
        table = Table(
            "page",
            "objects",
            "size",
            "object p10 / p50 / p90",
            "domains",
            "3rd-party",
            "depth",
            "compute",
            title=f"{listing['corpus']}: {listing['count']} pages like {listing['profile']} "
            f"(seed {listing['seed']})",
        )
        for p in listing["pages"]:
            table.add_row(
                shown(p["name"]),
                str(p["objects"]),
                f"{p['total_bytes'] / 1000:,.0f} kB",
                f"{p['object_bytes_p10'] / 1000:,.1f} / {p['object_bytes_p50'] / 1000:,.1f} / "
                f"{p['object_bytes_p90'] / 1000:,.1f} kB",
                str(p["domains"]),
                f"{p['third_party_share'] * 100:.0f} %",
                str(p["depth"]),
                f"{p['compute_ms']:,.0f} ms",
            )
        out.print(table)
        summary = listing["summary"]
        out.print(
            "p10 / median / p90 over the pages: "
            + "; ".join(
                f"{name} {summary[key]['p10']:{fmt}} / {summary[key]['p50']:{fmt}} / "
                f"{summary[key]['p90']:{fmt}}"
                for key, name, fmt in (
                    ("objects", "objects", ",.0f"),
                    ("total_bytes", "bytes", ",.0f"),
                    ("domains", "domains", ",.0f"),
                )
            ),
            highlight=False,
        )
        for path in listing.get("written") or []:
            out.print(f"wrote {path}", highlight=False)
    if figure is not None:
        from wirelab._figures.corpus import characteristics_figure
        from wirelab._figures.rendering import render, slug

        rendered = render(characteristics_figure(listing), slug(f"corpus-{listing['corpus']}"))
        for path in rendered.write(figure):
            out.print(f"wrote {path}", highlight=False)


@pages_app.command("generate")
def pages_generate(
    like: str = typer.Option(..., "--like", help="Profile of published figures: httparchive-2024-desktop, …"),
    count: int = typer.Option(..., "--count", help="Pages to generate."),
    seed: int = typer.Option(1, "--seed", help="Seed: the same seed gives the same pages, byte for byte."),
    out_dir: Path | None = typer.Option(None, "--out", help="Write each page as a page JSON file here."),
    figure: Path | None = typer.Option(
        None, "--figure", help="Write the corpus's characteristics figure here."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the engine's JSON."),
    engine: Path = ENGINE_OPTION,
) -> None:
    """Generate COUNT pages whose distributions follow a profile of published web figures (docs/pages.md).

    A generated page needs no file: gen:PROFILE:SEED:COUNT:INDEX (or web200:17) names it in a spec."""
    args = ["--like", like, "--count", str(count), "--seed", str(seed)]
    if out_dir is not None:
        args += ["--out", str(out_dir)]
    _corpus_listing(_engine(engine).pages_corpus("generate", args), as_json, figure)


@pages_app.command("profiles")
def pages_profiles(
    profile: str | None = typer.Argument(None, help="One profile (default: all)."),
    as_json: bool = typer.Option(False, "--json", help="Print the engine's JSON."),
    engine: Path = ENGINE_OPTION,
) -> None:
    """Each profile's published figures with their sources, beside the generated corpus's figures."""
    reports = _engine(engine).pages_corpus("profiles", [profile] if profile else [])
    if as_json:
        out.print_json(json.dumps(reports))
        return
    for r in reports:
        table = Table(
            "metric",
            "statistic",
            "published",
            "generated",
            "deviation",
            "source",
            title=f"{r['profile']} (corpus {r['corpus']})",
        )
        for row in r["rows"]:
            unit = " KB" if row["unit"] == "KB" else ""
            table.add_row(
                row["metric"],
                row["stat"],
                f"{row['published']:,.6g}{unit}",
                f"{row['generated']:,.6g}{unit}",
                f"{row['deviation'] * 100:+.1f} %",
                shown(row["source"]),
            )
        out.print(table)
        for key, text in sorted(r["sources"].items()):
            out.print(f"  {key}: {shown(text)}", highlight=False, soft_wrap=True)


@pages_app.command("import")
def pages_import(
    directory: Path = typer.Argument(
        ..., help="A directory of HAR files (*.har) and mahimahi recording folders."
    ),
    out_dir: Path = typer.Option(Path("pages"), "--out", help="Write one page JSON per imported page here."),
    prefix: str = typer.Option("", "--prefix", help="Prefix of the pages' names."),
    as_json: bool = typer.Option(False, "--json", help="Print the engine's JSON."),
    engine: Path = ENGINE_OPTION,
) -> None:
    """Bring your own corpus in: every HAR file and mahimahi recording folder directly in DIRECTORY becomes
    a page; anything else is skipped and named with its reason. Fails (exit 2) when no page was imported."""
    summary = _engine(engine).pages_corpus(
        "import", [str(directory), "--out", str(out_dir), "--prefix", prefix]
    )
    if as_json:
        out.print_json(json.dumps(summary))
        return
    for im in summary["imported"]:
        extra = (
            f", {im['skipped_records']} records skipped ({shown(im['first_skipped'])})"
            if im.get("skipped_records")
            else ""
        )
        out.print(
            f"imported {shown(im['entry'])} ({im['kind']}) → {shown(im['file'])}: {im['objects']} objects, "
            f"{im['total_bytes'] / 1000:,.1f} kB, {im['activities']} activities{extra}",
            highlight=False,
        )
    for sk in summary["skipped"]:
        out.print(f"skipped {shown(sk['entry'])}: {shown(sk['reason'])}", highlight=False)
    out.print(f"{len(summary['imported'])} imported, {len(summary['skipped'])} skipped", highlight=False)


def _bring_in(engine: Path | None, sub: str, args: list[str], out_path: Path) -> None:
    report = _engine(engine).pages_bring_in(sub, [*args, "--out", str(out_path)])
    for line in report.splitlines():
        out.print(line.removeprefix("wirelab-engine: "), highlight=False)
    out.print(f"wrote {out_path}")


@pages_app.command("record")
def pages_record(
    target: str = typer.Argument(..., help="URL of a lab page, a saved site DIR, or a page NAME/FILE."),
    out_path: Path = typer.Option(..., "--out", help="Write the page JSON (with its recorded graph) here."),
    proto: str = typer.Option("h2", "--proto", help="Protocol of the recording load: h1, h1s, h2 or h3."),
    seed: int = typer.Option(1, "--seed", help="Seed of a corpus or synthetic page."),
    name: str | None = typer.Option(None, "--name", help="Name of the page (default: from the target)."),
    resolve: str | None = typer.Option(None, "--resolve", help="URL targets: NAME=IP,… for Chromium."),
    spki: str | None = typer.Option(None, "--spki", help="URL targets: accepted certificate SPKI hashes."),
    cert: Path | None = typer.Option(None, "--cert", help="URL targets: accept these PEM certificates."),
    har: Path | None = typer.Option(None, "--har", help="Also write the recording load's HAR here."),
    engine: Path = ENGINE_OPTION,
) -> None:
    """Record a page's dependency graph with Chromium (devtools.timeline trace) into a page JSON."""
    args = [target, "--proto", proto, "--seed", str(seed)]
    options = (("--name", name), ("--resolve", resolve), ("--spki", spki), ("--cert", cert), ("--har", har))
    for flag, value in options:
        if value is not None:
            args += [flag, str(value)]
    _bring_in(engine, "record", args, out_path)


@pages_app.command("import-har")
def pages_import_har(
    har_file: Path = typer.Argument(..., help="A HAR file saved by a browser's developer tools."),
    out_path: Path = typer.Option(..., "--out", help="Write the page JSON here."),
    name: str | None = typer.Option(None, "--name", help="Name of the page."),
    engine: Path = ENGINE_OPTION,
) -> None:
    """Build a page model (objects, sizes, origins, initiator graph) from a HAR file."""
    args = [str(har_file)] + (["--name", name] if name else [])
    _bring_in(engine, "import-har", args, out_path)


@pages_app.command("mirror")
def pages_mirror(
    directory: Path = typer.Argument(..., help="A saved site directory (HTML, CSS, JS, images)."),
    out_path: Path = typer.Option(..., "--out", help="Write the page JSON here."),
    name: str | None = typer.Option(None, "--name", help="Name of the page (default: the directory's)."),
    engine: Path = ENGINE_OPTION,
) -> None:
    """Make a page model whose objects are a saved site's files, served as they are."""
    args = [str(directory)] + (["--name", name] if name else [])
    _bring_in(engine, "mirror", args, out_path)


@pages_app.command("show")
def pages_show(
    name: str = typer.Argument(..., help="Page name, synthetic:COUNTxSIZE or a page JSON file."),
    as_json: bool = typer.Option(False, "--json", help="Print the engine's JSON."),
    engine: Path = ENGINE_OPTION,
) -> None:
    """Show one page: its objects, sizes and origins."""
    page = _engine(engine).pages_show(name)
    if as_json:
        out.print_json(json.dumps(page))
        return
    objects = page.get("objects") or []
    sizes = [o.get("size") for o in objects if isinstance(o.get("size"), int | float)]
    out.print(f"[bold]{shown(page.get('name', name))}[/]: {shown(page.get('description', ''))}")
    out.print(
        f"{len(objects)} objects, {sum(sizes) / 1000:,.1f} kB"
        + (f" (mean {sum(sizes) / len(sizes) / 1000:,.2f} kB)" if sizes else "")
        + (f", {len(page['origins'])} origin(s)" if isinstance(page.get("origins"), list) else "")
    )
    table = Table("#", "path", "origin", "type", "size", "content-type")
    for i, o in enumerate(objects):
        size = o.get("size")
        table.add_row(
            str(i),
            shown(o.get("path", o.get("url", ""))),
            shown(o.get("origin", "")),
            shown(o.get("type", "")),
            f"{size:,}" if isinstance(size, int) else "",
            shown(o.get("content_type", "")),
        )
    out.print(table)


def _resolved_summary(resolved: dict[str, Any]) -> tuple[str, str, str, str]:
    up, down = resolved["up"], resolved["down"]
    rtt = (up["delay_ns"] + down["delay_ns"]) / 1e6
    rate = lambda d: netprofile.format_rate(d["rate_bps"]) if not d["trace"] else f"trace {d['trace']}"  # noqa: E731
    loss = lambda d: {"none": "0"}.get(d["loss"]["model"], f"{d['loss'].get('p', 0) * 100:g}%")  # noqa: E731
    losses = loss(down) if loss(down) == loss(up) else f"{loss(down)} down, {loss(up)} up"
    return f"{rtt:g} ms", rate(down), rate(up), losses


@profiles_app.command("ls")
def profiles_ls() -> None:
    """List the network presets with what they expand to."""
    table = Table("preset", "rtt", "down", "up", "loss", "expands to", "source", title="network presets")
    for name, (expansion, source) in netprofile.PRESETS.items():
        table.add_row(name, *_resolved_summary(netprofile.parse(name)), expansion or "—", source)
    out.print(table)
    out.print(
        "Combine presets and keys left to right, e.g. cable,rtt=50ms (docs/profile-grammar.md).", style="dim"
    )


@profiles_app.command("show")
def profiles_show(profile: str = typer.Argument(..., help="A profile string, e.g. 'dsl,loss=1%'.")) -> None:
    """Resolve a profile string and print the resolved form the engine receives."""
    try:
        resolved = netprofile.parse(profile)
    except ProfileError as e:
        raise UsageError(f"profile: {e}") from None
    out.print_json(json.dumps(resolved))


# ------------------------------------------------------------------------------------------------
# results


def _open(db: Path) -> Results:
    if not db.exists():
        raise UsageError(f"--db: {db} does not exist; run a sweep first (wirelab run SPEC)")
    return Results(db)


@results_app.command("ls")
def results_ls(db: Path = DB_OPTION) -> None:
    """List the sweeps in the database."""
    with _open(db) as results:
        sweeps = results.sweeps()
        probe_runs = results.probe_runs()
    table = Table("sweep", "trials", "loads", "failed", "fidelity ⚠", "axes", "updated", title=shown(db))
    for s in sweeps.to_dict("records"):
        load_test = s["kind"] == "loadtest"  # its trials are its runs; it has no page loads
        table.add_row(
            shown(s["sweep"]) + (" (load test)" if load_test else ""),
            f"{int(s['complete_trials'] or 0)}/{s['planned_trials']}" + (" runs" if load_test else ""),
            "—" if load_test else f"{int(s['loads'])}/{s['planned_loads']}",
            str(int(s["failed_trials"] or 0)),
            str(int(s["fidelity_warnings"] or 0)),
            shown(", ".join(s["axes"])) or "—",
            shown(s["updated_at"]),
        )
    out.print(table)
    if len(probe_runs):
        runs = Table(
            "probe run", "status", "where", "sites", "refused", "errors", "started", title="probe runs"
        )
        for r in probe_runs.to_dict("records"):
            where = "local" if r["local"] else ("live" if r["allow_internet"] else "lab")
            runs.add_row(
                shown(r["run"]),
                shown(r["status"]),
                where,
                str(r["sites"]),
                str(r["refused"]),
                str(r["errors"]),
                shown(r["started_at"]),
            )
        out.print(runs)


@results_app.command("show")
def results_show(sweep: str = typer.Argument(..., help="Sweep name."), db: Path = DB_OPTION) -> None:
    """Show a sweep: per configuration, the median ToW per protocol and the gain over the first (a load
    test: per run, its outcomes)."""
    with _open(db) as results:
        kind = results.sweep_kind(sweep)
    if kind == "loadtest":
        _print_loadtest_sweep(db, sweep)
    else:
        _print_sweep(db, sweep)


def _print_loadtest_sweep(db: Path, sweep: str) -> None:
    """A load test's description, completeness and per-run outcomes (``results show``)."""
    with _open(db) as results:
        info = results.sweeps().set_index("sweep").loc[sweep]
        runs = results.loadtests(sweep)
    out.print(f"[bold]{shown(sweep)}[/] (load test): {shown(info['description'] or '')}")
    out.print(
        f"{int(info['complete_trials'] or 0)}/{info['planned_trials']} runs complete, "
        f"spec hash {info['spec_hash']}"
    )
    wide = out.width >= 110  # below that the run id and the interval count give their room
    table = Table()
    if wide:
        table.add_column("run", no_wrap=True)
    table.add_column("configuration", overflow="fold", min_width=12)
    for col in (
        "status",
        *(("intervals",) if wide else ()),
        "pages/s max",
        "1st error",
        "SLA violated",
        "CPU max",
    ):
        table.add_column(col, justify="left" if col == "status" else "right", no_wrap=True)
    for r in runs.to_dict("records"):
        label = " ".join([r["protocol"], *(f"{a}={show_value(r[a])}" for a in info["axes"] if a in r)])
        cpu = r["server_cpu_util_max"]
        table.add_row(
            *((r["loadtest_id"],) if wide else ()),
            shown(label),
            r["status"] + ("" if r["thresholds_passed"] in (True, None) else " ✗"),
            *((str(int(r["intervals"])),) if wide else ()),
            _num(r["max_pages_per_s"]),
            _vus(r["vus_at_first_error"]),
            _vus(r["vus_at_first_sla_violation"]),
            "—" if cpu is None or cpu != cpu else f"{cpu:.2f}",
        )
    out.print(table)
    if (runs["thresholds_passed"] == False).any():  # noqa: E712 - a column of booleans and None
        out.print("✗: a threshold failed (its run is complete).", style="dim")
    out.print(f"wirelab report {sweep} draws the runs.", style="dim")


def _print_sweep(db: Path, sweep: str) -> None:
    """The sweep's description, completeness and per-configuration ToW table (results show, demo)."""
    from wirelab._summary import protocol_table

    with _open(db) as results:
        info = (
            results.sweeps().set_index("sweep").loc[sweep]
            if sweep in set(results.sweeps()["sweep"])
            else None
        )
        trials = results.trials(sweep)
        loads = results.loads(sweep)
    if info is None:  # pragma: no cover - trials() already raised for an unknown sweep
        raise StoreError(f"sweep: {sweep!r} is not in {db}")
    out.print(f"[bold]{shown(sweep)}[/]: {shown(info['description'] or '')}")
    out.print(
        f"{int(info['complete_trials'] or 0)}/{info['planned_trials']} trials complete, "
        f"{int(info['loads'])}/{info['planned_loads']} loads, spec hash {info['spec_hash']}"
    )
    axes = list(info["axes"])
    protocols = list(dict.fromkeys(p for spec in trials["spec"] for p in spec["protocols"]))
    # The configuration folds onto several lines rather than being cut: in 80 columns it is the
    # column that gives way, and the one a reader needs whole.
    table = Table()
    table.add_column("trial", no_wrap=True)
    table.add_column("configuration", overflow="fold", min_width=12)
    table.add_column("status", min_width=8)
    wide = out.width >= 100  # below that the timer column gives its room to the figures
    if wide:
        table.add_column("lateness p99", min_width=5)
    for p in protocols:
        table.add_column(f"{p} ToW med ms", justify="right", min_width=7, max_width=9)
    for p in protocols[1:]:
        table.add_column(f"{p} vs {protocols[0]}", justify="right", min_width=7, max_width=9)
    for t in trials.to_dict("records"):
        mine = loads[loads["trial_id"] == t["trial_id"]]
        stats = protocol_table(mine, t["spec"]["protocols"]).set_index("protocol") if len(mine) else None
        label = " ".join(f"{a}={show_value(t[a])}" for a in axes) or f"page={t['spec']['page']}"
        cells = []
        for p in protocols:
            cells.append(_ms(stats.loc[p, "tow_median_ms"]) if stats is not None and p in stats.index else "")
        for p in protocols[1:]:
            cells.append(_pct(stats.loc[p, "tow_gain_pct"]) if stats is not None and p in stats.index else "")
        status = t["status"] + (" ⚠" if t["fidelity_flags"] else "")
        lateness = "" if t["lateness_p99_us"] != t["lateness_p99_us"] else f"{t['lateness_p99_us']:,.0f} µs"
        table.add_row(
            shown(t["trial_id"][:8]), shown(label), shown(status), *([lateness] if wide else []), *cells
        )
    out.print(table)


@results_app.command("export")
def results_export(
    sweep: str = typer.Argument(..., help="Sweep name."),
    fmt: str = typer.Option(..., "--format", "-f", help="csv or parquet."),
    out_path: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="Output file, in an existing directory; an existing file is replaced "
        "(default: <sweep>-<table>.<format>).",
    ),
    table: str | None = typer.Option(
        None,
        "--table",
        help="loads, trials or objects; a load test's: loadtests, load_intervals or server_samples "
        "(default: loads, a load test's loadtests).",
        show_default=False,
    ),
    db: Path = DB_OPTION,
) -> None:
    """Export a sweep's loads (or trials, objects; a load test's runs, intervals, server samples) to CSV
    or Parquet."""
    tables = ("loads", "trials", "objects", "loadtests", "load_intervals", "server_samples")
    if fmt not in ("csv", "parquet"):
        raise UsageError(f'--format: "{fmt}" is not a format; use csv or parquet')
    if table is not None and table not in tables:
        raise UsageError(f'--table: "{table}" is not a table; use {", ".join(tables[:-1])} or {tables[-1]}')
    if out_path is not None:
        check_output_file("--out", out_path)
    with _open(db) as results:
        if table is None:
            table = "loadtests" if results.sweep_kind(sweep) == "loadtest" else "loads"
        if out_path is None:
            check_output_file("--out", Path(f"{sweep}-{table}.{fmt}"))
        df = getattr(results, table)(sweep)
    for col in df.columns:
        if df[col].map(lambda v: isinstance(v, dict | list)).any():
            df[col] = df[col].map(lambda v: json.dumps(v) if isinstance(v, dict | list) else v)
    target = out_path or Path(f"{sweep}-{table}.{fmt}")
    if fmt == "csv":
        df.to_csv(target, index=False)
    else:
        df.to_parquet(target, index=False)
    out.print(f"wrote {len(df)} rows × {len(df.columns)} columns to {target}", soft_wrap=True)


@results_app.command("check")
def results_check(
    sweep: str = typer.Argument(..., help="Sweep name."),
    engine: Path = ENGINE_OPTION,
    db: Path = DB_OPTION,
) -> None:
    r"""Check a stored sweep's budgets — its spec's \[sweep] thresholds — on its loads again: a line per
    failed check (the threshold, the configuration, both sides' values), exit 1 if any failed
    (docs/spec.md). A sweep without thresholds is one line, exit 2."""
    with _open(db) as results:
        spec_json, _ = results.sweep_spec(sweep)
    if not (spec_json.get("sweep") or {}).get("thresholds"):
        raise UsageError(f"{shown(sweep)}: its spec has no [sweep] thresholds to check")
    _check_budgets(db, sweep, engine)


@results_app.command("waterfall")
def results_waterfall(
    sweep: str = typer.Argument(..., help="Sweep name."),
    trial: str = typer.Argument(..., help="Trial id (the report's trial drill-down and its tables name it)."),
    load: int | None = typer.Argument(
        None,
        help="Load index within the trial (default: the median-PLT load of --protocol).",
        show_default=False,
    ),
    protocol: str | None = typer.Option(
        None,
        "--protocol",
        help="Without LOAD: draw this protocol's median-PLT load (default: the trial's first).",
    ),
    out_path: Path | None = typer.Option(
        None, "--out", "-o", help="Also write the figure here (.svg, .png or .pdf), as the report draws it."
    ),
    db: Path = DB_OPTION,
) -> None:
    """Draw one stored load's waterfall (every load of a sweep, not only those the report embeds)."""
    suffixes = (".svg", ".png", ".pdf")
    if out_path is not None:
        if out_path.suffix.lower() not in suffixes:
            raise UsageError(
                f"--out {shown(str(out_path))}: not a figure file; use a name ending in .svg, .png or .pdf"
            )
        check_output_file("--out", out_path)
    if load is not None and load < 0:
        raise UsageError(f"LOAD: {load} is not a load index; use 0 or more")
    with _open(db) as results:
        loads = results.loads(sweep, repeats=True)
        mine = loads[loads["trial_id"] == trial]
        if mine.empty:
            known = list(dict.fromkeys(loads["trial_id"]))
            raise UsageError(
                f'TRIAL: "{shown(trial)}" is not a trial of sweep {shown(sweep)} with stored loads; '
                + (
                    f"its trials: {cut(', '.join(known[:5]) + (', …' if len(known) > 5 else ''))}"
                    if known
                    else "it has none"
                )
            )
        if load is None:
            protocols = list(dict.fromkeys(mine.sort_values("load_index")["protocol"]))
            proto = protocol if protocol is not None else protocols[0]
            if proto not in protocols:
                raise UsageError(
                    f'--protocol: "{shown(proto)}" was not loaded in trial {trial}; '
                    f"use {', '.join(protocols)}"
                )
            median = median_plt_load(mine[mine["protocol"] == proto])
            if median is None:
                raise UsageError(
                    f"--protocol: every {proto} load of trial {trial} failed; name a LOAD to see one"
                )
            row = median
            chosen = "median-PLT load"
        else:
            if protocol is not None:
                raise UsageError("--protocol: give it only without LOAD (it picks the median-PLT load)")
            hit = mine[mine["load_index"] == load]
            if hit.empty:
                raise UsageError(
                    f"LOAD: {load} is not a load of trial {trial}; use 0–{int(mine['load_index'].max())}"
                )
            row = hit.iloc[0]
            chosen = "load"
        objects = results.objects(sweep, trial_id=trial, load_index=int(row["load_index"])).to_dict("records")
    if not objects:
        raise UsageError(f"LOAD: load {int(row['load_index'])} of trial {trial} has no stored objects")
    plt = row["plt_ms"]
    title = (
        f"{row['protocol']} repetition {int(row['repetition'])}, {chosen} {int(row['load_index'])}"
        + (f" (PLT {plt:,.0f} ms" if plt == plt else " (no PLT")
        + f", {int(row['connections'])} connection(s))"
        + (f", error: {row['error']}" if isinstance(row["error"], str) else "")
    )
    out.print(waterfall(objects, width=max(20, min(80, out.width - 60)), title=shown(title)))
    if out_path is not None:
        from wirelab._figures.plots import waterfall_figure  # matplotlib only when a figure is asked for

        fig = waterfall_figure(objects, title=f"{trial}: {title}")
        fig.savefig(out_path)
        out.print(f"wrote {out_path}", soft_wrap=True)


# ------------------------------------------------------------------------------------------------
# spec


@spec_app.command("schema")
def spec_schema() -> None:
    """Print the JSON Schema of experiment specs."""
    typer.echo(json.dumps(spec_mod.experiment_json_schema(), indent=2))


@spec_app.command("check")
def spec_check(
    spec: Path = typer.Argument(..., help="Experiment spec or load-test spec (TOML)."),
    as_json: bool = typer.Option(False, "--json", help="Print the expanded specs as JSON."),
    engine: Path = ENGINE_OPTION,
    allow_internet: bool = ALLOW_INTERNET_OPTION,
) -> None:
    """Check a spec exactly as wirelab run (or wirelab loadtest) does before it creates anything — its
    fields, then the engine's check of every distinct trial spec (page files, traces, server and client
    knobs) — and list its trials (ids, configurations) without running anything.

    Exit status 0: run would accept it; 2: the one line run would print.
    """
    checked = api.check(spec, engine=_engine(engine), allow_internet=allow_internet)
    plan = checked.plan
    if as_json:
        specs = (
            [t.spec for t in plan.trials] if isinstance(plan, spec_mod.Plan) else [r.spec for r in plan.runs]
        )
        typer.echo(json.dumps(specs, indent=1))
        return
    if not isinstance(plan, spec_mod.Plan):
        out.print(
            f"[bold]{shown(plan.name)}[/] (load test): {len(plan.runs)} runs, spec hash {plan.spec_hash}"
            + (f" — axes: {shown(', '.join(plan.axes))}" if plan.axes else "")
        )
        table = Table("#", "run", "configuration", "network")
        for r in plan.runs:
            table.add_row(str(r.index), r.id, shown(r.label), shown(r.spec.get("network", "")))
        out.print(table)
        what = "loadtest --check of every run"
    else:
        out.print(
            f"[bold]{shown(plan.name)}[/]: {len(plan.trials)} trials, {plan.loads} loads, "
            f"spec hash {plan.spec_hash}" + (f" — axes: {shown(', '.join(plan.axes))}" if plan.axes else "")
        )
        table = Table("#", "trial", "configuration", "network", "loads")
        for t in plan.trials:
            table.add_row(str(t.index), t.id, shown(t.label), shown(t.spec["network"]), str(t.loads))
        out.print(table)
        what = f"trial --check of its {checked.checked} distinct trial spec(s)"
    command = "wirelab loadtest" if checked.kind == "loadtest" else "wirelab run"
    out.print(
        f"checked as {command} checks it before it creates anything: the spec's fields, then the engine's "
        f"{what} ({shown(checked.engine)})",
        style="dim",
        soft_wrap=True,
    )


# ------------------------------------------------------------------------------------------------


def _shell_raw(args: list[str]) -> None:
    """``wirelab shell ARGS…`` with ARGS passed on verbatim (the parser would swallow the ``--``)."""
    engine: Path | None = None
    if args[:1] == ["--engine"] and len(args) >= 2:
        engine, args = Path(args[1]), args[2:]
    elif args[:1] and args[0].startswith("--engine="):
        engine, args = Path(args[0].split("=", 1)[1]), args[1:]
    argv = _engine(engine).shell_argv(args)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(argv[0], argv)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``wirelab`` script: one line per error, exit codes 0/1/2/130."""
    args = list(sys.argv[1:] if argv is None else argv)

    def shell_first() -> None:
        if args[:1] == ["shell"] and not {"--help", "-h"} & set(args[1:2]) and len(args) > 1:
            _shell_raw(args[1:])

    return run_command(typer.main.get_command(app), args, "wirelab", shell_first)


if __name__ == "__main__":
    sys.exit(main())
