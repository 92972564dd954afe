"""Fitting the model's few free constants to labelled loads, and scoring predictions against labels.

The fit minimises the mean absolute log ratio of predicted to measured median PLT (a robust,
scale-free loss: a 2× miss costs the same at 200 ms and at 20 s) over the constants of
:data:`._constants.FITTED`, within their ranges, by Nelder–Mead in a log/logit space (scipy). The
model and the Lantern-style baseline are fitted the same way, each its own constants.

The split into fitting and held-out configurations is by trial (all protocols of a configuration go
the same way), seeded, and by a hash of the trial id: the same label is on the same side whatever
else the set holds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from wirelab._predict import _constants
from wirelab._predict._config import Config, configs_of
from wirelab._predict._constants import Constants
from wirelab._predict._labels import Label
from wirelab._predict._run import predict_configs

__all__ = ["Scores", "Target", "fit", "score", "split", "targets"]


@dataclasses.dataclass(frozen=True)
class Target:
    """One (configuration, protocol) with what the emulator measured."""

    label: Label
    config: Config
    plt_ms: tuple[float, ...]

    @property
    def median_s(self) -> float:
        return float(np.median(self.plt_ms)) / 1000


def targets(labels: Sequence[Label], protocols: Sequence[str] | None = None) -> list[Target]:
    """Every (label, protocol) with at least one successful load."""
    out = []
    for lab in labels:
        for c in configs_of(
            lab.spec, [p for p in lab.spec.get("protocols", []) if protocols is None or p in protocols]
        ):
            plt = lab.plt_ms.get(c.protocol)
            if plt:
                out.append(Target(lab, c, tuple(plt)))
    return out


def split(labels: Sequence[Label], holdout: float, seed: int = 1) -> tuple[list[Label], list[Label]]:
    """(fitting, held out): each trial held out when its seeded hash falls below ``holdout``."""

    def u(lab: Label) -> float:
        h = hashlib.sha256(f"{seed}:{lab.trial_id}".encode()).digest()
        return int.from_bytes(h[:8], "big") / 2**64

    fit_part = [lab for lab in labels if u(lab) >= holdout]
    held = [lab for lab in labels if u(lab) < holdout]
    return fit_part, held


def _to_free(name: str, value: float) -> float:
    lo, hi = _constants.FITTED[name]
    x = min(max((value - lo) / (hi - lo), 0.02), 0.98)  # a start on a bound would never leave it
    return math.log(x / (1 - x))


def _from_free(name: str, z: float) -> float:
    lo, hi = _constants.FITTED[name]
    return lo + (hi - lo) / (1 + math.exp(-z))


#: Weight of the gains' error (log ratios of protocols within a configuration) beside the levels'.
GAIN_WEIGHT = 1.0


def _loss(pred: np.ndarray, obs: np.ndarray) -> float:
    return float(np.mean(np.abs(np.log(np.maximum(pred, 1e-6) / obs))))


def fit(
    tgts: Sequence[Target],
    start: Constants,
    *,
    baseline: bool = False,
    names: Sequence[str] | None = None,
    max_evals: int = 300,
    engine: Any = None,
    progress: Any = None,
) -> tuple[Constants, dict[str, Any]]:
    """Constants minimising the mean absolute log error of median PLT over ``tgts`` plus that of
    the protocols' PLT ratios within each configuration (the gains: a model right about levels can
    still get every comparison's sign wrong), and a summary."""
    from scipy.optimize import minimize

    names = list(names or _constants.FITTED)
    configs = [t.config for t in tgts]
    obs = np.array([t.median_s for t in tgts])
    evals = [0]
    groups: dict[str, list[int]] = {}
    for i, t in enumerate(tgts):
        groups.setdefault(t.label.trial_id, []).append(i)
    pairs_a, pairs_b = [], []
    for members in groups.values():
        for x, a in enumerate(members):
            for b in members[x + 1 :]:
                pairs_a.append(a)
                pairs_b.append(b)
    pa, pb = np.array(pairs_a, dtype=int), np.array(pairs_b, dtype=int)
    obs_ratio = np.log(obs[pb] / obs[pa])

    def loss_of(pred: np.ndarray) -> float:
        level = _loss(pred, obs)
        if not len(pa):
            return level
        ratio = np.log(np.maximum(pred[pb], 1e-6) / np.maximum(pred[pa], 1e-6))
        return level + GAIN_WEIGHT * float(np.mean(np.abs(ratio - obs_ratio)))

    lowest = [math.inf]

    def objective(z: np.ndarray) -> float:
        k = start.replace(**{n: _from_free(n, v) for n, v in zip(names, z, strict=True)})
        loss = loss_of(predict_configs(configs, k, baseline=baseline, engine=engine).plt)
        evals[0] += 1
        lowest[0] = min(lowest[0], loss)
        if progress is not None:
            progress(evals[0], lowest[0])
        return loss

    z0 = np.array([_to_free(n, getattr(start, n)) for n in names])
    before = objective(z0)
    simplex = np.vstack([z0, z0 + np.eye(len(z0))])  # one logit unit along each constant
    res = minimize(
        objective,
        z0,
        method="Nelder-Mead",
        options={"maxfev": max_evals, "xatol": 1e-3, "fatol": 1e-5, "initial_simplex": simplex},
    )
    best = start.replace(**{n: _from_free(n, v) for n, v in zip(names, res.x, strict=True)})
    return best, {
        "loss_before": round(before, 5),
        "loss_after": round(float(res.fun), 5),
        "evaluations": evals[0],
    }


@dataclasses.dataclass(frozen=True)
class Scores:
    """How well predictions match the emulator on a set of configurations."""

    configurations: int
    median_abs_error: float  #: |predicted − measured| / measured median PLT, median over (config, protocol)
    p90_abs_error: float
    spearman: float  #: rank correlation of predicted and measured median PLT
    sign_right: float  #: share of significant comparisons whose sign the prediction gets right
    significant: int  #: comparisons whose emulated 95 % interval excludes zero

    def row(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _gain_interval(a: Sequence[float], b: Sequence[float], seed: int = 1) -> tuple[float, float]:
    """A 95 % bootstrap interval of median(b) − median(a) (seeded; resampling each side).

    The draws come from NumPy's legacy ``RandomState``, whose stream NumPy keeps frozen across
    versions (NEP 19); ``Generator`` streams may change between releases, and the sign score's
    significant pairs — and the test holding the 90 % target — must not move with a NumPy upgrade.
    (The two gave the same 134 significant held-out pairs when this was switched, session 40.)"""
    rs = np.random.RandomState(seed)
    aa, bb = np.asarray(a), np.asarray(b)
    draws = np.median(bb[rs.randint(0, len(bb), (2000, len(bb)))], axis=1) - np.median(
        aa[rs.randint(0, len(aa), (2000, len(aa)))], axis=1
    )
    return float(np.quantile(draws, 0.025)), float(np.quantile(draws, 0.975))


def score(tgts: Sequence[Target], plt: np.ndarray) -> Scores:
    """Score predicted PLT (s, per target) against the targets' medians."""
    from scipy.stats import spearmanr

    obs = np.array([t.median_s for t in tgts])
    err = np.abs(plt - obs) / obs
    by: dict[str, dict[str, tuple[Target, float]]] = {}
    for t, pr in zip(tgts, plt, strict=True):
        by.setdefault(t.label.trial_id, {})[t.config.protocol] = (t, float(pr))
    right = significant = 0
    for per in by.values():
        protos = sorted(per)
        for x in range(len(protos)):
            for y in range(x + 1, len(protos)):
                (ta, pa), (tb, pb) = per[protos[x]], per[protos[y]]
                if len(ta.plt_ms) < 2 or len(tb.plt_ms) < 2:
                    continue
                lo, hi = _gain_interval(ta.plt_ms, tb.plt_ms)
                if lo > 0 or hi < 0:
                    significant += 1
                    right += ((pb - pa) > 0) == (lo > 0)
    return Scores(
        configurations=len(by),
        median_abs_error=float(np.median(err)),
        p90_abs_error=float(np.quantile(err, 0.9)),
        spearman=float(spearmanr(plt, obs).statistic),
        sign_right=right / significant if significant else float("nan"),
        significant=significant,
    )
