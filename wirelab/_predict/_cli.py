"""``wirelab predict``: the CLI over the model (docs/predict.md). Imported without the rest of the
CLI (``wirelab._main`` dispatches to it directly), so that it answers in well under a second."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table
from typer.core import TyperGroup

from wirelab.errors import UsageError

__all__ = ["app", "print_plan_prediction"]

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

_SUBCOMMANDS = ("fit", "validate")


class _PageOrCommand(TyperGroup):
    """``wirelab predict PAGE …`` runs the hidden ``page`` command; ``fit`` and ``validate`` are
    subcommands (a page cannot be called that: pages are corpus names, ``synthetic:…``, ``web200:17``
    or files — a file named ``fit`` is ``./fit``)."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["page", *args]
        return super().resolve_command(ctx, args)

    def format_usage(self, ctx: Any, formatter: Any) -> None:
        formatter.write_usage(ctx.command_path, "PAGE [OPTIONS] | fit DB | validate [DB]")


app = typer.Typer(
    cls=_PageOrCommand,
    help="Predict page loads before running them: PLT and ToW per protocol, the mechanism split, the "
    "gain with its interval (docs/predict.md). wirelab predict PAGE --net PROFILE --proto h1s,h2,h3; "
    "wirelab predict fit DB; wirelab predict validate [DB].",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)

CONSTANTS_OPTION = typer.Option(
    None, "--constants", help="Constants from `wirelab predict fit` (default: the ones the package ships)."
)
ENGINE_OPTION = typer.Option(
    None,
    "--engine",
    help="wirelab-engine binary, asked for the page's facts "
    "(default: $WIRELAB_ENGINE, bin/wirelab-engine, PATH).",
)


def _engine(path: Path | None) -> Any:
    from wirelab._engine import SubprocessEngine

    return SubprocessEngine(path)


def _protocols(proto: str) -> list[str]:
    protocols = [p.strip() for p in proto.split(",") if p.strip()]
    if not protocols:
        raise UsageError(f'--proto: "{proto}" lists no protocol; e.g. h1s,h2,h3')
    return protocols


def _ms(v: float | None) -> str:
    return "—" if v is None else f"{v:,.0f}"


@app.command("page", hidden=True)
def page_cmd(
    page: str = typer.Argument(..., help="corpus name, synthetic:NxS, web200:17, or a page JSON file"),
    net: str = typer.Option(
        "native", "--net", help="Network profile, e.g. rtt=100ms,bw=10mbit,loss=1% or a preset."
    ),
    proto: str = typer.Option(
        "h1s,h2,h3", "--proto", "-p", help="Protocols, the first is the baseline of gains."
    ),
    shards: int = typer.Option(
        1, "--shards", help="Spread the page over N origins (0: one per group, with --shard-mode)."
    ),
    shard_mode: str = typer.Option("round-robin", "--shard-mode", help="round-robin, tld or domain."),
    seed: int = typer.Option(1, "--seed", help="Page seed (corpus pages' sizes)."),
    server: str = typer.Option(
        "builtin", "--server", help="The server under test (builtin, apache, nginx, h2o, caddy)."
    ),
    max_streams: int | None = typer.Option(
        None, "--max-streams", help="h2/h3 concurrent streams (default 100)."
    ),
    tls: str = typer.Option("1.3", "--tls", help="TLS version for h1s/h2: 1.2 or 1.3."),
    keep_alive: bool = typer.Option(
        True, "--keep-alive/--no-keep-alive", help="HTTP/1.x persistent connections."
    ),
    mode: str = typer.Option(
        "flat", "--mode", help="Loader mode: flat, objects or replay (the page's dependency graph)."
    ),
    compute_scale: float = typer.Option(1.0, "--compute-scale", help="Replay: multiply computation times."),
    max_conns: int = typer.Option(6, "--max-conns", help="HTTP/1.x connections per origin."),
    dns: str = typer.Option("server", "--dns", help="server (lookups cross the path) or static."),
    client: str = typer.Option("engine", "--client", help="Loader: engine or chromium."),
    constants: Path | None = CONSTANTS_OPTION,
    engine: Path | None = ENGINE_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the prediction as JSON."),
) -> None:
    """Predict one page over several protocols through one network."""
    from wirelab._predict._api import predict

    server_fields: dict[str, Any] = {"impl": server, "tls_version": tls, "keep_alive": keep_alive}
    if max_streams is not None:
        server_fields["max_concurrent_streams"] = max_streams
    client_fields = {
        "impl": client,
        "mode": mode,
        "compute_scale": compute_scale,
        "max_connections_per_origin": max_conns,
        "dns": dns,
    }
    pred = predict(
        page,
        network=net,
        protocols=_protocols(proto),
        shards=shards,
        shard_mode=shard_mode,
        seed=seed,
        server=server_fields,
        client=client_fields,
        constants=constants,
        engine=_engine(engine),
    )
    if as_json:
        typer.echo(json.dumps(pred.to_dict(), indent=1))
        return
    _print_prediction(pred, f"{page} over {net}")


def _print_prediction(pred: Any, title: str) -> None:
    from wirelab._predict._vocab import PARTS

    first = pred.protocols[0].protocol
    table = Table(title=f"predicted: {title}", title_justify="left")
    for col in (
        "protocol",
        "PLT ms",
        "PLT 95 %",
        "ToW ms",
        f"PLT gain vs {first}",
        "gain 95 %",
        "baseline PLT ms",
    ):
        table.add_column(col, justify="left" if col == "protocol" else "right")
    for p in pred.protocols:
        lo_hi = p.plt_interval_ms
        g = p.gain_interval_pct
        table.add_row(
            p.protocol,
            _ms(p.plt_ms),
            f"{lo_hi[0]:,.0f}–{lo_hi[1]:,.0f}" if lo_hi else "—",
            _ms(p.tow_ms),
            "baseline" if p.protocol == first else f"{p.gain_pct:+.1f} %",
            f"{g[0]:+.1f} … {g[1]:+.1f}" if g else "—",
            _ms(p.baseline_plt_ms),
        )
    out.print(table)
    used = [k for k in PARTS if any(p.parts_ms.get(k, 0) >= 0.5 for p in pred.protocols)]
    parts = Table(
        title="where the time goes (ms on the critical path; docs/metrics.md's parts)", title_justify="left"
    )
    parts.add_column("protocol")
    for k in used:
        parts.add_column(k, justify="right")
    for p in pred.protocols:
        parts.add_row(p.protocol, *(_ms(p.parts_ms.get(k, 0)) for k in used))
    out.print(parts)
    for line in _sentences(pred):
        out.print(line, soft_wrap=True)
    fitted = pred.constants.get("fitted_at")
    where = (
        f"constants fitted {fitted} on {pred.constants.get('loads', '?')} loads"
        if fitted
        else "constants: unfitted defaults"
    )
    out.print(where, style="dim", soft_wrap=True)


def _sentences(pred: Any) -> list[str]:
    """Per protocol after the first: the gain and the part that decides it."""
    base = pred.protocols[0]
    lines = []
    for p in pred.protocols[1:]:
        diffs = {k: p.parts_ms.get(k, 0) - base.parts_ms.get(k, 0) for k in p.parts_ms}
        name, delta = max(diffs.items(), key=lambda kv: abs(kv[1]))
        faster = "faster" if p.plt_ms < base.plt_ms else "slower"
        lines.append(
            f"{p.protocol} is predicted {abs(p.gain_pct or 0):.1f} % {faster} than {base.protocol}; "
            f"the largest difference is {name} ({delta:+,.0f} ms)."
        )
    return lines


@app.command("fit")
def fit_cmd(
    db: Path = typer.Argument(..., help="A results database (wirelab run … --db FILE)."),
    out_path: Path = typer.Option(
        Path("predict-constants.json"), "--out", help="Where to write the constants."
    ),
    sweep: list[str] = typer.Option([], "--sweep", help="Only these sweeps (default: every trial sweep)."),
    holdout: float = typer.Option(
        0.0, "--holdout", min=0.0, max=0.9, help="Share of configurations kept out of the fit and scored."
    ),
    seed: int = typer.Option(1, "--seed", help="Seed of the held-out split."),
    max_evals: int = typer.Option(400, "--max-evals", help="Model evaluations per fit."),
    engine: Path | None = ENGINE_OPTION,
) -> None:
    """Fit the model's constants (and the baseline's) to a results database; write them with their
    provenance."""
    from wirelab._predict import _validate

    result = _fit(db, sweep, holdout, seed, max_evals, engine)
    _validate.write_constants(result, out_path)
    _print_scores(result)
    out.print(f"constants written to {out_path} (use them with --constants {out_path})", soft_wrap=True)


@app.command("validate")
def validate_cmd(
    db: Path | None = typer.Argument(
        None, help="A results database; without it, the labelled set the package ships."
    ),
    holdout: float = typer.Option(
        0.3, "--holdout", min=0.05, max=0.9, help="Share of configurations held out and scored."
    ),
    seed: int = typer.Option(1, "--seed", help="Seed of the held-out split."),
    sweep: list[str] = typer.Option([], "--sweep", help="Only these sweeps of DB."),
    max_evals: int = typer.Option(400, "--max-evals", help="Model evaluations per fit (with DB)."),
    engine: Path | None = ENGINE_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the scores as JSON."),
) -> None:
    """Score the model against the emulator on held-out configurations, beside a Lantern-style baseline.

    Without DB: the shipped labelled set, scored with the shipped constants (fitted on the rest of it).
    With DB: both fitted on its other configurations first."""
    from wirelab._predict import _validate

    if db is None:
        result = _validate.score_shipped(holdout=holdout, seed=seed, engine=_engine(engine))
    else:
        result = _fit(db, sweep, holdout, seed, max_evals, engine)
    if as_json:
        typer.echo(json.dumps(result.summary(), indent=1))
        return
    _print_scores(result)


def _fit(db: Path, sweep: list[str], holdout: float, seed: int, max_evals: int, engine: Path | None) -> Any:
    """Fit on a results database and score the held-out part (``predict fit`` and ``predict validate DB``)."""
    from wirelab._predict import _validate

    return _validate.fit_and_score(
        db=db,
        sweeps=sweep,
        holdout=holdout,
        seed=seed,
        max_evals=max_evals,
        progress=_progress(),
        engine=_engine(engine),
    )


def _progress() -> Any:
    def show(stage: str, evals: int, loss: float) -> None:
        if sys.stderr.isatty():
            err.print(f"\r{stage}: {evals} evaluations, loss {loss:.4f}", end="", soft_wrap=True)

    return show


def _print_scores(result: Any) -> None:
    from wirelab._predict import _validate

    if sys.stderr.isatty():
        err.print()
    summary = result.summary()
    table = Table(
        title=f"held-out configurations: {summary['heldout_configurations']} ({summary['source']})",
        title_justify="left",
    )
    for col in ("metric", "model", "Lantern-style baseline", "target"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    for key, label, target, fmt in _validate.METRICS:
        m, b = summary["model"].get(key), summary["baseline"].get(key)
        table.add_row(label, fmt(m), fmt(b), target)
    out.print(table)
    noise = summary.get("label_noise")
    if noise:
        out.print(
            "the labels' own spread (each load against its configuration's median): "
            f"median {noise['median'] * 100:.1f} %, "
            f"p90 {noise['p90'] * 100:.1f} %",
            soft_wrap=True,
        )


def print_plan_prediction(
    plan: Any, console: Console | None = None, constants: Path | None = None, engine: Any = None
) -> float:
    """``wirelab run SPEC --predict``: each trial's predicted PLT and gains, the predicted wall time
    of each trial and of the grid. Returns the grid's predicted seconds."""
    from wirelab._predict._api import predict_specs
    from wirelab._predict._validate import trial_seconds

    console = console or out
    known = [t for t in plan.trials if not str(t.spec.get("page", "")).startswith("url:")]
    preds_known = predict_specs([t.spec for t in known], constants=constants, explain=False, engine=engine)
    by_id = {t.id: p for t, p in zip(known, preds_known, strict=True)}
    protos = plan.trials[0].spec["protocols"] if plan.trials else []
    table = Table(title=f"predicted: {plan.name} ({len(plan.trials)} trials)", title_justify="left")
    table.add_column("trial")
    table.add_column("parameters")
    for p in protos:
        table.add_column(f"{p} PLT ms", justify="right")
    for p in protos[1:]:
        table.add_column(f"{p} gain", justify="right")
    table.add_column("wall s", justify="right")
    total = 0.0
    for t in plan.trials:
        pred = by_id.get(t.id)
        if pred is None:
            table.add_row(
                t.id[:12], t.label, *(["—"] * (2 * len(t.spec["protocols"]))), "live page: not predicted"
            )
            continue
        secs = trial_seconds(t.spec, pred)
        total += secs
        cells = [t.id[:12], t.label]
        cells += [_ms(pred[p].plt_ms) for p in t.spec["protocols"]]
        cells += [f"{pred[p].gain_pct:+.1f} %" for p in t.spec["protocols"][1:]]
        cells.append(f"{secs:,.0f}")
        table.add_row(*cells)
    console.print(table)
    from wirelab._reproduce import format_duration

    console.print(
        f"predicted wall time of the grid at --parallel 1: {format_duration(total)}", soft_wrap=True
    )
    return total
