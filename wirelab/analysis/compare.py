"""Comparing a protocol with a baseline, per configuration.

- **Gain** (study E): the % reduction in Time on Wire of protocol x over the baseline,
  ``(mean ToW_base − mean ToW_x) / mean ToW_base × 100``: a ratio of the two protocols' *means* over
  the configuration's loads without error, not a mean of per-repetition gains (the loads of two
  protocols are interleaved, not paired, and a mean of ratios is pulled by its smallest
  denominators). Study E's "averaged over the repetitions" is read this way everywhere: the report,
  ``wirelab load`` and ``wirelab results show`` (``wirelab._summary.gain_pct`` calls :func:`gain_pct`).
  Positive = x is faster. Its 95 % interval is a BCa bootstrap (:mod:`wirelab.analysis.stats`):
  both protocols' repetitions resampled independently, the gain recomputed from the resampled means.
- **Ratio** (study W): ``s = PLT_x / PLT_base`` from the *medians*; class ``better`` when s < 0.9
  (x better), ``worse`` when s > 1.1 (baseline better), else ``equal``.
- **Significance**: two-sided Mann–Whitney U test of x's against the baseline's values; ``u`` is the
  statistic of x (``scipy.stats.mannwhitneyu(x, base)``), ``p_value`` its p-value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from wirelab.analysis.stats import CONFIDENCE, N_BOOT, _values, bootstrap_interval, ok_loads, rng_for

__all__ = [
    "BETTER",
    "EQUAL",
    "SIGNIFICANCE",
    "WORSE",
    "classify_ratio",
    "compare",
    "gain",
    "gain_ci",
    "gain_pct",
    "main_effects",
    "mann_whitney",
    "mann_whitney_test",
    "min_p_value",
    "ratio_classes",
]

BETTER, EQUAL, WORSE = "better", "equal", "worse"
RATIO_LOW, RATIO_HIGH = 0.9, 1.1
SIGNIFICANCE = 0.05


def gain_pct(base: Sequence[float] | np.ndarray, x: Sequence[float] | np.ndarray) -> float:
    """``(mean(base) − mean(x)) / mean(base) × 100``; NaN when either is empty or mean(base) ≤ 0."""
    b, v = _values(base), _values(x)
    if b.size == 0 or v.size == 0 or b.mean() <= 0:
        return float("nan")
    return float((b.mean() - v.mean()) / b.mean() * 100)


def _gain_statistic(base: np.ndarray, x: np.ndarray, axis: int = -1) -> np.ndarray:
    mb = base.mean(axis=axis)
    return (mb - x.mean(axis=axis)) / mb * 100


def gain_ci(
    base: Sequence[float] | np.ndarray,
    x: Sequence[float] | np.ndarray,
    *,
    n_boot: int = N_BOOT,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    key: object = (),
) -> tuple[float, float]:
    """BCa bootstrap interval of :func:`gain_pct`, resampling each protocol's repetitions
    independently (loads of different protocols are interleaved, not paired)."""
    b, v = _values(base), _values(x)
    if b.size and b.mean() <= 0:
        return (float("nan"), float("nan"))
    return bootstrap_interval(
        [b, v], _gain_statistic, rng=rng_for(seed, ("gain", key)), n_boot=n_boot, confidence=confidence
    )


def classify_ratio(s: float) -> str | None:
    """W's class of a ratio s = PLT_x / PLT_base: ``better`` (< 0.9), ``worse`` (> 1.1) or ``equal``."""
    if s is None or not np.isfinite(s):
        return None
    if s < RATIO_LOW:
        return BETTER
    if s > RATIO_HIGH:
        return WORSE
    return EQUAL


def mann_whitney_test(
    base: Sequence[float] | np.ndarray, x: Sequence[float] | np.ndarray
) -> tuple[float, float]:
    """(U of x, two-sided p). NaNs when a side is empty; p = 1 when every value is identical."""
    b, v = _values(base), _values(x)
    if b.size == 0 or v.size == 0:
        return (float("nan"), float("nan"))
    if np.unique(np.concatenate([b, v])).size == 1:
        return (float(b.size * v.size / 2), 1.0)
    from scipy import stats as sps  # here, not at import: `wirelab.analysis.live` (the CLI's) needs no scipy

    result = sps.mannwhitneyu(v, b, alternative="two-sided")
    return (float(result.statistic), float(result.pvalue))


def min_p_value(n_base: int, n_x: int) -> float:
    """The smallest two-sided p-value the exact Mann–Whitney test can give for these sample sizes
    (complete separation, no ties): 2 / C(n_base + n_x, n_base). With 3 loads per protocol it is 0.1, so
    no difference can be significant at 0.05 however large it is."""
    if n_base < 1 or n_x < 1:
        return 1.0
    return min(1.0, 2 / math.comb(n_base + n_x, n_base))


def _pairs(loads: pd.DataFrame, by: Sequence[str], baseline: str, protocol: str):
    ok = ok_loads(loads)
    by = list(by)
    groups = ok.groupby(by, sort=False, dropna=False) if by else [((), ok)]
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        base = group.loc[group["protocol"] == baseline]
        other = group.loc[group["protocol"] == protocol]
        yield dict(zip(by, key, strict=True)), key, base, other


def gain(
    loads: pd.DataFrame,
    by: Sequence[str],
    baseline: str,
    protocol: str,
    metric: str = "tow_ms",
    *,
    seed: int = 0,
    n_boot: int = N_BOOT,
) -> pd.DataFrame:
    """Per group of ``by``: ``n_base``, ``n``, ``base_mean``, ``mean``, ``gain_pct``, ``ci_low`` and
    ``ci_high``."""
    rows = []
    for labels, key, base, other in _pairs(loads, by, baseline, protocol):
        b, v = base[metric].to_numpy(float), other[metric].to_numpy(float)
        lo, hi = gain_ci(b, v, seed=seed, key=(metric, baseline, protocol, *key), n_boot=n_boot)
        rows.append(
            {
                **labels,
                "baseline": baseline,
                "protocol": protocol,
                "n_base": int(b.size),
                "n": int(v.size),
                "base_mean": float(b.mean()) if b.size else float("nan"),
                "mean": float(v.mean()) if v.size else float("nan"),
                "gain_pct": gain_pct(b, v),
                "ci_low": lo,
                "ci_high": hi,
            }
        )
    cols = [*by, "baseline", "protocol", "n_base", "n", "base_mean", "mean", "gain_pct", "ci_low", "ci_high"]
    return pd.DataFrame(rows, columns=cols)


def mann_whitney(
    loads: pd.DataFrame, by: Sequence[str], baseline: str, protocol: str, metric: str = "tow_ms"
) -> pd.DataFrame:
    """Per group of ``by``: ``u`` (of ``protocol``) and the two-sided ``p_value``."""
    rows = []
    for labels, _key, base, other in _pairs(loads, by, baseline, protocol):
        u, p = mann_whitney_test(base[metric].to_numpy(float), other[metric].to_numpy(float))
        rows.append({**labels, "baseline": baseline, "protocol": protocol, "u": u, "p_value": p})
    return pd.DataFrame(rows, columns=[*by, "baseline", "protocol", "u", "p_value"])


def ratio_classes(
    loads: pd.DataFrame, by: Sequence[str], baseline: str, protocol: str, metric: str = "plt_ms"
) -> pd.DataFrame:
    """Per group of ``by``: ``base_median``, ``median``, ``s`` = median / base_median and its ``cls``."""
    rows = []
    for labels, _key, base, other in _pairs(loads, by, baseline, protocol):
        bm = float(base[metric].median()) if len(base) else float("nan")
        xm = float(other[metric].median()) if len(other) else float("nan")
        s = xm / bm if bm and np.isfinite(bm) and bm > 0 else float("nan")
        rows.append(
            {
                **labels,
                "baseline": baseline,
                "protocol": protocol,
                "base_median": bm,
                "median": xm,
                "s": s,
                "cls": classify_ratio(s),
            }
        )
    return pd.DataFrame(rows, columns=[*by, "baseline", "protocol", "base_median", "median", "s", "cls"])


def compare(
    loads: pd.DataFrame,
    by: Sequence[str],
    baseline: str,
    protocols: Sequence[str],
    *,
    gain_metric: str = "tow_ms",
    ratio_metric: str = "plt_ms",
    seed: int = 0,
    n_boot: int = N_BOOT,
) -> pd.DataFrame:
    """Everything above for each protocol of ``protocols`` (other than the baseline), one row per group
    and protocol: the gain columns, ``u``/``p_value`` (on ``gain_metric``), ``significant`` (p < 0.05)
    and W's ``s``/``cls`` (on ``ratio_metric``)."""
    by = list(by)
    frames = []
    for p in protocols:
        if p == baseline:
            continue
        g = gain(loads, by, baseline, p, gain_metric, seed=seed, n_boot=n_boot)
        m = mann_whitney(loads, by, baseline, p, gain_metric)
        r = ratio_classes(loads, by, baseline, p, ratio_metric)
        keys = [*by, "baseline", "protocol"]
        merged = g.merge(m, on=keys, how="left").merge(
            r.rename(columns={"median": "x_median"}), on=keys, how="left"
        )
        frames.append(merged)
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    out["significant"] = out["p_value"] < SIGNIFICANCE
    return out


def _level(value: Any) -> Any:
    """A factor's value as main_effects reports it: numbers as floats, categories as they are."""
    if isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool):
        return float(value)
    return value


def main_effects(
    comp: pd.DataFrame,
    factors: Sequence[str],
    *,
    value: str = "gain_pct",
    seed: int = 0,
    n_boot: int = N_BOOT,
) -> pd.DataFrame:
    """Main effects of a many-factor sweep: for each factor, each of its values and each protocol, the
    mean of ``value`` (default the gain) over the configurations at that value — the other factors
    averaged out — with a BCa bootstrap CI over those configurations. Columns: ``factor``,
    ``level`` (a float for a numeric factor, the value itself for a categorical one such as the
    sharding), ``protocol``, ``n`` (configurations), ``mean``, ``ci_low``, ``ci_high``."""
    rows = []
    for factor in factors:
        for (level, protocol), group in comp.groupby([factor, "protocol"], sort=True):
            values = _values(group[value])
            if values.size == 0:
                continue
            rng = rng_for(seed, ("main", factor, level, protocol))
            lo, hi = bootstrap_interval([values], np.mean, rng=rng, n_boot=n_boot)
            rows.append(
                {
                    "factor": factor,
                    "level": _level(level),
                    "protocol": protocol,
                    "n": int(values.size),
                    "mean": float(values.mean()),
                    "ci_low": float(lo),
                    "ci_high": float(hi),
                }
            )
    return pd.DataFrame(rows, columns=["factor", "level", "protocol", "n", "mean", "ci_low", "ci_high"])
