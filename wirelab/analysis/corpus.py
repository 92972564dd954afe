"""Sweeps over a corpus (docs/pages.md, "Generated corpora"): study W's real-page statistics.

A corpus sweep has a page axis whose values are a corpus's pages (``web200:17``); every other axis
combination is a *configuration* and each page a sample of it:

- :func:`page_ratios` — per page and configuration, W's s = median PLT of a protocol / median PLT of
  the baseline and its class;
- :func:`win_shares` — per configuration, the share of pages each protocol wins (lowest median PLT),
  with a Wilson 95 % interval;
- :func:`page_features` — each page's characteristics as the loads measured them (W's object count,
  page size and object-size spread, plus objects per type and origins), the decision tree's factors.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from wirelab import _corpus
from wirelab.analysis.compare import ratio_classes
from wirelab.analysis.stats import ok_loads

__all__ = ["FEATURES", "config_columns", "corpus_pages", "page_features", "page_ratios", "win_shares"]

#: The page features the decision tree may split on (column → display name, unit).
FEATURES: dict[str, tuple[str, str]] = {
    "page_objects": ("objects", ""),
    "page_kb": ("page size", "kB"),
    "object_kb_p50": ("median object size", "kB"),
    "object_size_spread": ("object-size spread (p90/p10)", "×"),
    "js_objects": ("scripts", ""),
    "css_objects": ("stylesheets", ""),
    "image_objects": ("images", ""),
    "origins": ("origins", ""),
}


def corpus_pages(pages: Sequence[str]) -> dict[str, str]:
    """page → its corpus, for the pages of ``pages`` that belong to a generated corpus."""
    out = {}
    for p in pages:
        found = _corpus.corpus_of(p)
        if found:
            out[p] = found[0]
    return out


def config_columns(axis_columns: Sequence[str]) -> list[str]:
    """The columns that make a configuration: every axis but the page."""
    return [c for c in axis_columns if c != "page"]


def page_ratios(
    loads: pd.DataFrame,
    configs: pd.DataFrame,
    baseline: str,
    protocols: Sequence[str],
    metric: str = "plt_ms",
) -> pd.DataFrame:
    """One row per trial (page × configuration) and compared protocol: ``s`` (of ``metric``'s medians:
    PLT, or the report's ``--metric``), ``cls`` and the configuration's columns."""
    ok = ok_loads(loads)
    ok = ok[ok[metric].notna()] if metric in ok else ok.iloc[0:0]
    frames = [ratio_classes(ok, ["trial_id"], baseline, p, metric) for p in protocols if p != baseline]
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    return out.merge(configs, on="trial_id", how="left")


def win_shares(
    loads: pd.DataFrame,
    configs: pd.DataFrame,
    by: Sequence[str],
    protocols: Sequence[str],
    metric: str = "plt_ms",
) -> pd.DataFrame:
    """Per configuration (``by``) and protocol: ``pages``, ``wins`` (pages where its median PLT — or
    ``metric`` — is the lowest of ``protocols``; a page where some protocol has no value is left out),
    ``share`` and its Wilson 95 % interval ``ci_low``/``ci_high``."""
    ok = ok_loads(loads)
    med = ok.groupby(["trial_id", "protocol"])[metric].median().unstack("protocol")
    med = med[[p for p in protocols if p in med.columns]].dropna()
    if med.empty:
        return pd.DataFrame(columns=[*by, "protocol", "pages", "wins", "share", "ci_low", "ci_high"])
    winner = med.idxmin(axis=1).rename("winner").reset_index()
    frame = winner.merge(configs, on="trial_id", how="left")
    rows = []
    groups = frame.groupby(list(by), sort=False, dropna=False) if by else [((), frame)]
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        n = len(group)
        for p in protocols:
            k = int((group["winner"] == p).sum())
            ci = sps.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
            rows.append(
                {
                    **dict(zip(by, key, strict=True)),
                    "protocol": p,
                    "pages": n,
                    "wins": k,
                    "share": k / n,
                    "ci_low": float(ci.low),
                    "ci_high": float(ci.high),
                }
            )
    return pd.DataFrame(rows)


def page_features(loads: pd.DataFrame, objects: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Per trial, the page as the baseline protocol's first successful load saw it (:data:`FEATURES`)."""
    ok = ok_loads(loads)
    first = ok[ok["protocol"] == baseline].sort_values("load_index").drop_duplicates("trial_id")
    rows = []
    by_load = (
        {k: g for k, g in objects.groupby(["trial_id", "load_index"], sort=False)} if len(objects) else {}
    )
    for r in first.to_dict("records"):
        row = {
            "trial_id": r["trial_id"],
            "page_objects": float(r["objects"]),
            "page_kb": float(r["body_bytes"]) / 1000,
        }
        objs = by_load.get((r["trial_id"], int(r["load_index"])))
        if objs is not None and len(objs):
            sizes = objs["size_bytes"].dropna().astype(float).to_numpy()
            if len(sizes):
                p10, p50, p90 = np.percentile(sizes, [10, 50, 90])
                row["object_kb_p50"] = p50 / 1000
                row["object_size_spread"] = p90 / max(p10, 1.0)
            mime = objs["mime_type"].fillna("").str.lower()
            row["js_objects"] = float(mime.str.contains("javascript").sum())
            row["css_objects"] = float(mime.str.startswith("text/css").sum())
            row["image_objects"] = float(mime.str.startswith("image/").sum())
            row["origins"] = float(objs["origin"].nunique())
        rows.append(row)
    return pd.DataFrame(rows, columns=["trial_id", *FEATURES])
