"""The report's corpus section (docs/pages.md, "Generated corpora"; study W's real pages): for a sweep
whose page axis is a corpus's pages, per configuration (every other axis) the CDF over pages of the
PLT ratio, the share of pages each protocol wins with its 95 % interval, and the decision tree over
page features; a table of every page with its ratios and where its waterfalls are.

:func:`add_corpus_section` extends a sweep's :class:`~wirelab.report._build.SweepSection` in place.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from wirelab._figures import plots
from wirelab._figures.rendering import new_figure, render, slug
from wirelab._registry import CLASS_STYLES, protocol_style
from wirelab.analysis import conclusions as say
from wirelab.analysis import corpus as corp
from wirelab.analysis import metrics as page_metrics
from wirelab.analysis.sweep import SweepData
from wirelab.analysis.tree import fit_tree
from wirelab.errors import UsageError
from wirelab.report._build import Cell, FigureBlock, Finding, SweepSection, TableBlock

__all__ = ["MAX_CDF_FIGURES", "add_corpus_section", "is_corpus_sweep"]

#: At most this many per-configuration CDF figures (the win-share table covers every configuration).
MAX_CDF_FIGURES = 12


def is_corpus_sweep(sd: SweepData) -> bool:
    """A sweep over a corpus: the page varies, and every page belongs to a generated corpus."""
    if sd.axis("page") is None or sd.configs.empty:
        return False
    pages = list(dict.fromkeys(sd.configs["page"]))
    return len(pages) >= 2 and len(corp.corpus_pages(pages)) == len(pages)


def _label(sd: SweepData, row: dict[str, Any], cols: list[str]) -> str:
    if not cols:
        return "all pages"
    parts = []
    for c in cols:
        axis = next((a for a in sd.axes if a.column == c), None)
        if axis is None:
            parts.append(f"{c} {row[c]}")
        elif axis.numeric:
            parts.append(f"{axis.name} {axis.format(row[c])}")
        else:
            parts.append(str(row[c]))
    return ", ".join(parts)


def _win_figure(shares: pd.DataFrame, labels: list[str], protocols: list[str]) -> Any:
    fig, ax = new_figure(max(5.6, 1.1 * len(labels) + 2.5), 3.2)
    width = 0.8 / max(1, len(protocols))
    x = np.arange(len(labels))
    for k, p in enumerate(protocols):
        rows = shares[shares["protocol"] == p].set_index("config")
        share = [float(rows.loc[lbl, "share"]) * 100 if lbl in rows.index else np.nan for lbl in labels]
        low = [float(rows.loc[lbl, "ci_low"]) * 100 if lbl in rows.index else np.nan for lbl in labels]
        high = [float(rows.loc[lbl, "ci_high"]) * 100 if lbl in rows.index else np.nan for lbl in labels]
        err = np.array([np.subtract(share, low), np.subtract(high, share)])
        st = protocol_style(p)
        ax.bar(
            x + (k - (len(protocols) - 1) / 2) * width,
            share,
            width,
            yerr=err,
            capsize=2,
            color=st.colour,
            label=st.label,
            error_kw={"elinewidth": 0.8, "ecolor": "#444444"},
        )
    ax.set_xticks(
        x,
        [plots._mpl_text(lbl) for lbl in labels],
        rotation=20 if len(labels) > 3 else 0,
        ha="right" if len(labels) > 3 else "center",
    )
    ax.set_ylabel("pages won (%)")
    ax.set_ylim(0, 125)
    ax.set_yticks(range(0, 101, 20))
    ax.legend(loc="upper center", ncols=min(4, len(protocols)))
    return fig


def add_corpus_section(
    section: SweepSection, sd: SweepData, figures_dir: Path, metric: page_metrics.Metric | None = None
) -> None:
    """Add the corpus figures, tables and findings to ``section`` (a no-op for other sweeps). ``metric``
    (the report's ``--metric``) takes PLT's place in the ratios, the wins and the tree."""
    if not is_corpus_sweep(sd) or sd.loads.empty:
        return
    m = metric or page_metrics.DEFAULT_RATIO
    short = m.short
    cols = corp.config_columns([a.column for a in sd.axes])
    corpora = sorted(set(corp.corpus_pages(list(sd.configs["page"])).values()))
    ratios = corp.page_ratios(sd.loads, sd.configs, sd.baseline, sd.protocols, m.column)
    if ratios.empty:
        return
    ratios["config"] = [_label(sd, r, cols) for r in ratios.to_dict("records")]
    configs = sd.configs.copy()
    configs["config"] = [_label(sd, r, cols) for r in configs.to_dict("records")]
    shares = corp.win_shares(sd.loads, configs, ["config"], sd.protocols, m.column)
    labels = list(dict.fromkeys(configs["config"]))
    base = protocol_style(sd.baseline).label
    figures_dir.mkdir(parents=True, exist_ok=True)

    def add(kind: str, title: str, caption: str, fig: Any, config: dict[str, str]) -> None:
        name = slug(f"corpus-{kind}-{title}")
        rendered = render(fig, name)
        rendered.write(figures_dir)
        section.figures.append(FigureBlock(f"fig-{sd.name}-{name}", title, caption, config, rendered, kind))

    corpus_text = ", ".join(corpora)
    pages_n = configs["page"].nunique()
    add(
        "wins",
        "Share of pages each protocol wins",
        f"Per configuration, the share of the {pages_n} pages of {corpus_text} on which each protocol has "
        f"the lowest median {short}, with its 95 % Wilson interval (pages are the samples)"
        + (f"; a page where some protocol has no {short} is left out." if metric else "."),
        _win_figure(shares, labels, sd.protocols),
        {"corpus": corpus_text, "pages": str(pages_n)},
    )
    for lbl in labels[:MAX_CDF_FIGURES]:
        mine = ratios[ratios["config"] == lbl].dropna(subset=["s"])
        if mine.empty:
            continue
        add(
            "ratio-cdf",
            f"{short} ratio over pages — {lbl}",
            f"CDF over the pages of {corpus_text} of study W's s = median {short} of each protocol / "
            f"median {short} of {base}; shaded: s < 0.9 (faster) and s > 1.1 (slower).",
            plots.ratio_cdf_figure(mine, baseline=sd.baseline, metric=short, unit="pages"),
            {"configuration": lbl},
        )
    if len(labels) > MAX_CDF_FIGURES:
        section.notes.append(
            f"The {short}-ratio CDFs are drawn for the first {MAX_CDF_FIGURES} of {len(labels)} "
            "configurations; the table “Pages won” covers every one."
        )

    rows = []
    for r in shares.to_dict("records"):
        mine = ratios[(ratios["config"] == r["config"]) & (ratios["protocol"] == r["protocol"])]
        s = mine["s"].dropna()
        rows.append(
            [
                Cell(r["config"]),
                Cell(protocol_style(r["protocol"]).label, f"proto-{r['protocol']}"),
                Cell(str(r["pages"]), "num"),
                Cell(f"{r['share'] * 100:.0f} %", "num"),
                Cell(f"{r['ci_low'] * 100:.0f}–{r['ci_high'] * 100:.0f} %", "num"),
                Cell(f"{s.median():.2f}" if len(s) else "—", "num"),
                Cell(f"{(s < 0.9).mean() * 100:.0f} %" if len(s) else "—", "num"),
                Cell(f"{(s > 1.1).mean() * 100:.0f} %" if len(s) else "—", "num"),
            ]
        )
    section.tables.append(
        TableBlock(
            f"tab-{sd.name}-corpus-wins",
            "Pages won",
            f"Per configuration and protocol: pages won (lowest median {short}) with the 95 % Wilson "
            f"interval; the median over pages of s = {short} / {short} of {base} and the shares of pages "
            "with s < 0.9 and s > 1.1.",
            ["configuration", "protocol", "pages", "won", "95 % CI", "median s", "s < 0.9", "s > 1.1"],
            rows,
            open=True,
        )
    )
    sentences = []
    for lbl in labels:
        mine = shares[shares["config"] == lbl].sort_values("share", ascending=False)
        if mine.empty:
            continue
        top = mine.iloc[0]
        sentences.append(
            f"{lbl}: {protocol_style(top['protocol']).label} has the lowest median {short} on "
            f"{top['share'] * 100:.0f} % of {int(top['pages'])} pages (95 % CI {top['ci_low'] * 100:.0f}–"
            f"{top['ci_high'] * 100:.0f} %)."
        )
    section.findings.append(Finding(f"Pages won ({corpus_text})", sentences))

    # The decision tree over page features (and the configuration's numeric axes).
    features = corp.page_features(sd.loads, sd.objects, sd.baseline)
    data = ratios.merge(features, on="trial_id", how="left")
    names = {c: n for c, (n, _u) in corp.FEATURES.items()}
    units = {c: "{:g} " + u if u else "{:g}" for c, (_n, u) in corp.FEATURES.items()}
    factors = [c for c in corp.FEATURES if c in data and data[c].notna().any()]
    for a in sd.numeric_axes:
        if a.column in data and a.param != "page":
            factors.append(a.column)
            names[a.column] = a.name
            units[a.column] = "{:g} " + a.unit if a.unit else "{:g}"
    for proto in sd.compared:
        mine = data[data["protocol"] == proto]
        x, b = protocol_style(proto).label, base
        class_names = {k: v[0].format(x=x, base=b) for k, v in CLASS_STYLES.items()}
        try:
            tree = fit_tree(mine, factors)
        except UsageError:
            continue
        section.findings.append(
            Finding(
                f"What separates the pages {x} wins from those it loses",
                say.tree_sentences(tree, names, class_names),
            )
        )
        if tree.root.is_leaf:
            continue
        add(
            "page-tree",
            f"Page features that decide {x} vs {b}",
            "Study W's decision tree over the pages' characteristics (as the loads measured them) and the "
            f"configuration's numeric axes; classes from s = median {short} ratio (< 0.9, > 1.1, else "
            f"equal); coloured nodes: majority class likelihood > {tree.threshold:.2f}.",
            functools.partial(plots.tree_figure, tree, names=names, class_names=class_names, formats=units)(),
            {"factors": ", ".join(names[f] for f in tree.features)},
        )

    # Every page: its characteristics, its ratios, and where its waterfalls are.
    wide = ratios.pivot_table(index="trial_id", columns="protocol", values="s", aggfunc="first")
    page_rows = []
    for r in configs.merge(features, on="trial_id", how="left").to_dict("records"):
        cells = [Cell(str(r["page"])), Cell(r["config"])]
        cells.append(
            Cell(f"{r['page_objects']:.0f}" if r.get("page_objects") == r.get("page_objects") else "—", "num")
        )
        cells.append(Cell(f"{r['page_kb']:,.0f}" if r.get("page_kb") == r.get("page_kb") else "—", "num"))
        for p in sd.compared:
            v = wide.loc[r["trial_id"], p] if r["trial_id"] in wide.index and p in wide.columns else np.nan
            cells.append(Cell(f"{v:.2f}" if v == v else "—", "num"))
        cells.append(
            Cell(r["trial_id"], "muted", "open this trial under “Every load” for its loads and waterfalls")
        )
        page_rows.append(cells)
    section.tables.append(
        TableBlock(
            f"tab-{sd.name}-corpus-pages",
            "Every page",
            "Each page in each configuration: objects and size as loaded, s per protocol, and its trial: "
            "under "
            "“Every load” its loads and the waterfall of each protocol's median load; any load's waterfall, "
            "embedded or not: wirelab results waterfall SWEEP TRIAL [LOAD | --protocol P] [-o FILE.svg].",
            [
                "page",
                "configuration",
                "objects",
                "kB",
                *(f"s {protocol_style(p).label}" for p in sd.compared),
                "trial",
            ],
            page_rows,
        )
    )
