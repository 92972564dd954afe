"""The HTML report: ``wirelab report [--db DB] [SWEEP…] --out DIR`` → ``DIR/index.html``.

The page is self-contained: figures are embedded as SVG data URIs (also written as PNG and SVG to
``DIR/figures/<sweep>/``), styles and the one script are inline, and a Content-Security-Policy allows
no network access and only the report's own script (by nonce). Every string that comes from a spec,
a page or a HAR is escaped by Jinja2's autoescaping, and waterfall data is embedded as JSON with
``<``, ``>`` and ``&`` escaped and drawn by the script through ``textContent`` only.

:func:`write_report` is also the hook that ``wirelab demo`` and ``wirelab reproduce`` call;
:func:`waterfall_from_har` draws the waterfall of any stored HAR as the report does
(``waterfall_from_har(wirelab.open(DB).har(SWEEP, TRIAL, LOAD))``).
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from wirelab import __version__, _facts
from wirelab._figures.plots import waterfall_from_har
from wirelab._registry import PHASE_ORDER, PHASE_STYLES, part_colour, protocol_style
from wirelab._terminal import controls_escaped
from wirelab._userpath import check_output_dir
from wirelab.analysis import metrics as page_metrics
from wirelab.analysis.metrics import Metric
from wirelab.analysis.sweep import load_sweep
from wirelab.errors import UsageError
from wirelab.report._build import CI_TEXT, SweepSection, build_sweep
from wirelab.report._corpus import add_corpus_section
from wirelab.report._probes import ProbeSection, build_probe_section
from wirelab.store import DATA_FILE_MODE, Results, fix_modes

__all__ = ["waterfall_from_har", "write_report"]

TEMPLATES = Path(__file__).resolve().parent / "templates"


def _json_for_script(value: Any) -> Markup:
    """JSON that cannot end its <script> element or open a comment: <, >, & as \\u escapes."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return Markup(text)  # noqa: S704 - escaped above for a script-data context


def _no_controls(value: Any) -> Any:
    """Every template value with its control characters (C0 but tab and line breaks, DEL, C1) and
    bidirectional overrides shown escaped (``\\x1b``, ``\\u202e``), a Markup staying Markup: a sweep's
    description, a page name or a probed site's header cannot put raw control bytes in the page."""
    if isinstance(value, Markup):
        return Markup(controls_escaped(str(value), keep_whitespace=True))  # noqa: S704 - only escapes added
    if isinstance(value, str):
        return controls_escaped(value, keep_whitespace=True)
    return value


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        finalize=_no_controls,
        autoescape=True,  # every template variable is HTML-escaped unless it is Markup
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["proto_label"] = lambda p: protocol_style(p).label
    return env


def _build_sections(
    results: Results,
    sweeps: Sequence[str],
    out_dir: Path,
    *,
    waterfall_budget: int | None = None,
    metric: Metric | None = None,
) -> list[SweepSection]:
    """Analyse each sweep and write its figures under ``out_dir/figures/<sweep>/`` (a load test's with
    :mod:`wirelab.report._capacity`)."""
    sections = []
    for name in sweeps:
        if results.sweep_kind(name) == "loadtest":
            from wirelab.analysis.capacity import load_capacity
            from wirelab.report._capacity import build_capacity

            sections.append(build_capacity(load_capacity(results, name), out_dir / "figures" / name))
            continue
        data = load_sweep(results, name)
        kwargs: dict[str, Any] = {} if waterfall_budget is None else {"waterfall_budget": waterfall_budget}
        sections.append(build_sweep(data, out_dir / "figures" / name, metric=metric, **kwargs))
        add_corpus_section(sections[-1], data, out_dir / "figures" / name, metric)
    return sections


def _render_html(
    sections: Sequence[SweepSection],
    *,
    db: str,
    title: str = "wirelab report",
    probes: Sequence[ProbeSection] = (),
) -> str:
    """The report page for ``sections`` (sweeps) and ``probes`` (probe runs)."""
    env = _environment()
    waterfalls: dict[str, Any] = {}
    for s in sections:
        waterfalls.update(s.waterfalls)
    data = {
        "phases": [[p, PHASE_STYLES[p].label, PHASE_STYLES[p].colour] for p in PHASE_ORDER],
        # the decomposition's parts (a waterfall's "why" band indexes them): key, label, colour
        "parts": [[p.key, p.label, part_colour(p.key)] for p in _facts.why_parts()],
        "waterfalls": waterfalls,
    }
    return env.get_template("report.html.j2").render(
        title=title,
        sweeps=sections,
        probes=probes,
        db=db,
        version=__version__,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        nonce=secrets.token_urlsafe(18),
        css=Markup((TEMPLATES / "report.css").read_text()),  # noqa: S704 - our own file
        js=Markup((TEMPLATES / "report.js").read_text()),  # noqa: S704 - our own file
        data_json=_json_for_script(data),
        ci_text=CI_TEXT,
    )


def write_report(
    db: str | os.PathLike[str],
    sweeps: Sequence[str] | None = None,
    out_dir: str | os.PathLike[str] = "wirelab-report",
    *,
    title: str | None = None,
    waterfall_budget: int | None = None,
    probe_runs: Sequence[str] | None = None,
    metric: str | None = None,
) -> Path:
    """Write ``out_dir/index.html`` (and ``out_dir/figures/``) for ``sweeps`` and ``probe_runs`` of
    ``db``; returns the path of ``index.html``. Naming neither includes every sweep and every probe
    run; naming one includes only what is named.

    ``metric`` (``lcp_ms``, ``speed_index_ms``, ``tow_ms`` or ``plt_ms``:
    :data:`wirelab.analysis.metrics.METRICS`) takes the place of ToW and PLT in every sweep's
    comparison figures and tables; a page sweep none of whose loads has it (LCP of the engine's loader)
    is one line, before anything is written. Load tests keep their own figures."""
    chosen = page_metrics.by_name(metric) if metric is not None else None
    db_path = Path(db)
    if not db_path.exists():
        raise UsageError(f"--db: {db_path} does not exist; run a sweep first (wirelab run SPEC)")
    out = Path(out_dir)
    check_output_dir("--out", out)  # before any analysis: an existing directory or a new one
    everything = not sweeps and probe_runs is None
    with Results(db_path) as results:
        known = list(results.sweeps()["sweep"])
        names = list(sweeps) if sweeps else (known if everything else [])
        for name in names:
            if name not in known:
                raise UsageError(f"sweep: {name!r} is not in {db_path}; sweeps: {', '.join(known) or 'none'}")
        known_runs = list(results.probe_runs()["run"])
        runs = list(probe_runs) if probe_runs is not None else (known_runs if everything else [])
        for run in runs:
            if run not in known_runs:
                listed = ", ".join(known_runs) or "none"
                raise UsageError(f"--probe: {run!r} is not a probe run in {db_path}; runs: {listed}")
        if chosen is not None:
            for name in names:
                if results.sweep_kind(name) != "loadtest":
                    page_metrics.require(chosen, results.loads(name), f"sweep {name}")
        out.mkdir(parents=True, exist_ok=True)
        sections = _build_sections(results, names, out, waterfall_budget=waterfall_budget, metric=chosen)
        probe_sections = [build_probe_section(results, run, out) for run in runs]
    if title is None:
        title = f"wirelab report: {', '.join(names)}" if 0 < len(names) <= 3 else "wirelab report"
    html = _render_html(sections, db=str(db_path), title=title, probes=probe_sections)
    index = out / "index.html"
    tmp = out / "index.html.tmp"
    tmp.write_text(html)
    # What the report writes gets the results' fixed modes, whatever the umask; nothing else in out_dir.
    tmp.chmod(DATA_FILE_MODE)
    if (out / "figures").is_dir():
        fix_modes(out / "figures")
    tmp.replace(index)
    return index
