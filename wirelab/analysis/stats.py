"""Descriptive statistics with seeded bootstrap confidence intervals.

Every interval here is a **percentile bootstrap** 95 % interval (:data:`BOOTSTRAP_METHOD`): the
repetitions of a group are resampled with replacement :data:`N_BOOT` times, the statistic is computed
on each resample, and the 2.5th and 97.5th percentiles of those values are the interval. The random
generator is seeded from ``seed`` and the group's key, so a report is identical every time it is
built and adding a configuration does not change the intervals of the others.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "BOOTSTRAP_METHOD",
    "CONFIDENCE",
    "N_BOOT",
    "bootstrap_ci",
    "describe",
    "ecdf",
    "ok_loads",
    "rng_for",
]

BOOTSTRAP_METHOD = "percentile"
N_BOOT = 2000
CONFIDENCE = 0.95

_STATISTICS: dict[str, Callable[..., np.ndarray]] = {"mean": np.mean, "median": np.median}


def rng_for(seed: int, key: Hashable) -> np.random.Generator:
    """A generator seeded by ``seed`` and a stable hash of ``key`` (not Python's salted ``hash``)."""
    return np.random.default_rng([int(seed), zlib.crc32(repr(key).encode())])


def _values(values: Any) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    return arr[~np.isnan(arr)]


def bootstrap_ci(
    values: Sequence[float] | np.ndarray | pd.Series,
    statistic: str = "mean",
    *,
    n_boot: int = N_BOOT,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    key: Hashable = (),
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic`` (``mean`` or ``median``) of ``values``.

    NaNs are ignored; no values gives ``(nan, nan)`` and one value ``(v, v)``."""
    arr = _values(values)
    if arr.size == 0:
        return (float("nan"), float("nan"))
    if arr.size == 1:
        return (float(arr[0]), float(arr[0]))
    func = _STATISTICS[statistic]
    rng = rng_for(seed, key)
    resampled = func(arr[rng.integers(0, arr.size, size=(n_boot, arr.size))], axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(resampled, [alpha, 1 - alpha])
    return (float(low), float(high))


def ok_loads(loads: pd.DataFrame) -> pd.DataFrame:
    """The loads without an error (statistics use only these; errors are counted separately)."""
    if "error" not in loads:
        return loads
    return loads[loads["error"].isna()]


def _group_key(by: Sequence[str], key: Any) -> tuple[Any, ...]:
    return key if isinstance(key, tuple) else (key,) if len(by) else ()


def describe(
    loads: pd.DataFrame,
    by: Sequence[str],
    metric: str = "tow_ms",
    *,
    seed: int = 0,
    n_boot: int = N_BOOT,
) -> pd.DataFrame:
    """One row per group of ``by`` (e.g. ``["trial_id", "protocol"]``): ``n`` (loads without error),
    ``errors``, ``mean``, ``median``, ``std``, ``min``, ``max`` of ``metric`` and the bootstrap interval
    of the mean (``ci_low``, ``ci_high``) and of the median (``median_ci_low``, ``median_ci_high``)."""
    rows = []
    by = list(by)
    for key, group in loads.groupby(by, sort=False, dropna=False) if by else [((), loads)]:
        key = _group_key(by, key)
        ok = ok_loads(group)
        values = _values(ok[metric])
        lo, hi = bootstrap_ci(values, "mean", seed=seed, key=(metric, "mean", *key), n_boot=n_boot)
        mlo, mhi = bootstrap_ci(values, "median", seed=seed, key=(metric, "median", *key), n_boot=n_boot)
        rows.append(
            {
                **dict(zip(by, key, strict=True)),
                "n": int(values.size),
                "errors": int(len(group) - len(ok)),
                "mean": float(values.mean()) if values.size else float("nan"),
                "median": float(np.median(values)) if values.size else float("nan"),
                "std": float(values.std(ddof=1)) if values.size > 1 else float("nan"),
                "min": float(values.min()) if values.size else float("nan"),
                "max": float(values.max()) if values.size else float("nan"),
                "ci_low": lo,
                "ci_high": hi,
                "median_ci_low": mlo,
                "median_ci_high": mhi,
            }
        )
    columns = [*by, "n", "errors", "mean", "median", "std", "min", "max", "ci_low", "ci_high"]
    return pd.DataFrame(rows, columns=[*columns, "median_ci_low", "median_ci_high"])


def ecdf(values: Sequence[float] | np.ndarray | pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Empirical CDF: sorted values and the fraction of values ≤ each (NaNs dropped)."""
    arr = np.sort(_values(values))
    return arr, np.arange(1, arr.size + 1) / arr.size if arr.size else np.array([])
