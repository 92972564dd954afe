"""Validation as a benchmark: fit on part of a labelled set, score the rest, model beside baseline.

``score_shipped`` scores the labelled set the package ships with the constants it ships (fitted on
the other part of the same set by ``scripts/predict_fixture.py``); ``fit_and_score`` fits both the
model and the Lantern-style baseline on a database's fitting part first. The scores (``_fit.Scores``)
and the held-out error distribution (which gives ``wirelab predict``'s intervals) go into a
constants file's provenance.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from wirelab._predict import _constants, _labels
from wirelab._predict._constants import Constants
from wirelab._predict._fit import Scores, Target, fit, score, split, targets
from wirelab._predict._run import predict_configs
from wirelab.errors import UsageError

__all__ = ["METRICS", "Validation", "fit_and_score", "score_shipped", "trial_seconds", "write_constants"]


def _pct(v: Any) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v * 100:.1f} %"


def _rho(v: Any) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"


#: (key in Scores, label, target, format): what `validate` prints, in order.
METRICS: tuple[tuple[str, str, str, Callable[[Any], str]], ...] = (
    ("median_abs_error", "median |PLT error|", "≤ 10 %", _pct),
    ("p90_abs_error", "p90 |PLT error|", "≤ 25 %", _pct),
    ("spearman", "Spearman ρ (PLT)", "≥ 0.95", _rho),
    ("sign_right", "sign of the gain right (significant pairs)", "≥ 90 %", _pct),
    (
        "significant",
        "significant pairs (emulated 95 % interval excludes 0)",
        "",
        lambda v: "—" if v is None else str(v),
    ),
)


@dataclasses.dataclass
class Validation:
    """A fit (or the shipped constants) and its scores on held-out configurations."""

    source: str
    model: Constants
    baseline: Constants
    model_scores: Scores
    baseline_scores: Scores
    fitting: int  #: configurations fitted on
    heldout: int
    loads: int
    holdout: float
    seed: int
    fit_info: dict[str, Any]
    error_quantiles: dict[str, list[float]]
    noise: dict[str, float]
    sweeps: list[str]

    def summary(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "heldout_configurations": self.heldout,
            "fitting_configurations": self.fitting,
            "holdout": self.holdout,
            "seed": self.seed,
            "model": self.model_scores.row(),
            "baseline": self.baseline_scores.row(),
            "label_noise": self.noise,
            "error_quantiles": self.error_quantiles,
            "fit": self.fit_info,
        }


def _noise(tgts: Sequence[Target]) -> dict[str, float]:
    """Each load's PLT against its configuration's median: the labels' own spread."""
    devs = [
        abs(x - np.median(t.plt_ms)) / np.median(t.plt_ms)
        for t in tgts
        if len(t.plt_ms) > 1
        for x in t.plt_ms
    ]
    return {"median": float(np.median(devs)), "p90": float(np.quantile(devs, 0.9))} if devs else {}


def _quantiles(tgts: Sequence[Target], plt: np.ndarray) -> dict[str, list[float]]:
    """The held-out errors' 2.5 % and 97.5 % quantiles: PLT as a log ratio, gains in percentage points."""
    obs = np.array([t.median_s for t in tgts])
    ratio = np.log(plt / obs)
    gains = []
    by: dict[str, dict[str, tuple[float, float]]] = {}
    for t, pr in zip(tgts, plt, strict=True):
        by.setdefault(t.label.trial_id, {})[t.config.protocol] = (t.median_s, float(pr))
    for lab_id, per in by.items():
        protos = [
            p for p in next(t.label.spec["protocols"] for t in tgts if t.label.trial_id == lab_id) if p in per
        ]
        if len(protos) < 2:
            continue
        (ob, pb) = per[protos[0]]
        for p in protos[1:]:
            o, pr = per[p]
            gains.append(((pb - pr) / pb - (ob - o) / ob) * 100)
    out = {"plt_log_ratio": [float(np.quantile(ratio, 0.025)), float(np.quantile(ratio, 0.975))]}
    if gains:
        out["gain_pp"] = [float(np.quantile(gains, 0.025)), float(np.quantile(gains, 0.975))]
    return out


def _score_both(
    held: Sequence[Target], model: Constants, baseline: Constants, engine: Any = None
) -> tuple[Scores, Scores, np.ndarray]:
    configs = [t.config for t in held]
    pm = predict_configs(configs, model, engine=engine).plt
    pb = predict_configs(configs, baseline, baseline=True, engine=engine).plt
    return score(held, pm), score(held, pb), pm


def score_shipped(*, holdout: float = 0.3, seed: int = 1, engine: Any = None) -> Validation:
    """The shipped labels' held-out part, scored with the shipped constants."""
    cfile = _constants.load()
    labels = _labels.read_fixture()
    fitted = cfile.provenance.get("split", {})
    if fitted and (fitted.get("holdout") != holdout or fitted.get("seed") != seed):
        raise UsageError(
            f"--holdout/--seed: the shipped constants were fitted with holdout {fitted.get('holdout')} "
            f"and seed "
            f"{fitted.get('seed')}; scoring another split would score configurations they were fitted on "
            "(give a DB to fit again)"
        )
    fit_part, held_part = split(labels, holdout, seed)
    held = targets(held_part)
    ms, bs, pm = _score_both(held, cfile.constants, cfile.baseline, engine)
    return Validation(
        source=f"shipped labels ({_labels.FIXTURE}), shipped constants",
        model=cfile.constants,
        baseline=cfile.baseline,
        model_scores=ms,
        baseline_scores=bs,
        fitting=len(fit_part),
        heldout=len(held_part),
        loads=sum(len(t.plt_ms) for t in held),
        holdout=holdout,
        seed=seed,
        fit_info=cfile.provenance.get("fit", {}),
        error_quantiles=_quantiles(held, pm),
        noise=_noise(held),
        sweeps=[],
    )


def fit_and_score(
    *,
    db: Path | None = None,
    labels: Sequence[_labels.Label] | None = None,
    sweeps: Sequence[str] = (),
    holdout: float = 0.3,
    seed: int = 1,
    max_evals: int = 400,
    start: _constants.ConstantsFile | None = None,
    names: Sequence[str] | None = None,
    fit_baseline: bool = True,
    progress: Callable[[str, int, float], None] | None = None,
    engine: Any = None,
) -> Validation:
    """Fit model and baseline on the labels' fitting part, score both on the held-out part (with
    ``holdout`` 0, score on what they were fitted on, and say so). ``names``: fit only these
    constants (the rest stay at ``start``'s); ``fit_baseline`` False keeps ``start``'s baseline
    (when a change of the model leaves the baseline's view untouched)."""
    if labels is None:
        assert db is not None
        labels = _labels.from_db(db, sweeps or None)
    start = start or _constants.load()
    fit_part, held_part = split(labels, holdout, seed) if holdout > 0 else (list(labels), list(labels))
    train = targets(fit_part)
    if not train:
        raise UsageError(f"DB: {db}: no configuration with successful loads to fit on")
    held = targets(held_part)
    model, info_m = fit(
        train,
        start.constants,
        names=names,
        max_evals=max_evals,
        engine=engine,
        progress=(lambda n, loss: progress("model", n, loss)) if progress else None,
    )
    if fit_baseline:
        baseline, info_b = fit(
            train,
            start.baseline,
            baseline=True,
            max_evals=max_evals,
            engine=engine,
            progress=(lambda n, loss: progress("baseline", n, loss)) if progress else None,
        )
    else:
        baseline, info_b = (
            start.baseline,
            dict(start.provenance.get("fit", {}).get("baseline", {}), kept=True),
        )
    info_m["constants"] = list(names or _constants.FITTED)
    ms, bs, pm = _score_both(held, model, baseline, engine)
    where = str(db) if db is not None else "labels"
    return Validation(
        source=f"{where}, {'held out' if holdout > 0 else 'the configurations fitted on (no hold-out)'}",
        model=model,
        baseline=baseline,
        model_scores=ms,
        baseline_scores=bs,
        fitting=len(fit_part),
        heldout=len(held_part),
        loads=sum(len(t.plt_ms) for t in train),
        holdout=holdout,
        seed=seed,
        fit_info={"model": info_m, "baseline": info_b},
        error_quantiles=_quantiles(held, pm),
        noise=_noise(held),
        sweeps=list(sweeps),
    )


def write_constants(
    v: Validation, path: str | Path, *, labels_sha256: str | None = None, db: str | None = None
) -> None:
    """A constants file: the fitted values (only those that differ from the defaults) and provenance."""
    from wirelab import __version__

    defaults = Constants()

    def changed(k: Constants) -> dict[str, float]:
        return {n: v_ for n, v_ in k.to_dict().items() if v_ != getattr(defaults, n)}

    provenance = {
        "fitted_at": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "wirelab": __version__,
        "git_sha": _git_sha(),
        "source": db or v.source,
        "labels_sha256": labels_sha256,
        "configurations": v.fitting,
        "loads": v.loads,
        "split": {"holdout": v.holdout, "seed": v.seed},
        "fit": v.fit_info,
        "heldout": {
            "configurations": v.heldout,
            "model": v.model_scores.row(),
            "baseline": v.baseline_scores.row(),
            "error_quantiles": v.error_quantiles,
        },
    }
    text = json.dumps(
        {"model": changed(v.model), "baseline": changed(v.baseline), "provenance": provenance}, indent=1
    )
    Path(path).write_text(text + "\n")


def _git_sha() -> str | None:
    import subprocess

    from wirelab._paths import REPO_ROOT

    try:
        done = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
        )
    except OSError:
        return None
    return done.stdout.strip() or None


def file_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def trial_seconds(spec: Mapping[str, Any], pred: Any) -> float:
    """Predicted wall time of one trial: the lab's start and stop, then every load (its predicted
    PLT, the loader's start-up, the gap) — the overheads are ``wirelab reproduce``'s."""
    from wirelab._reproduce import CHROMIUM_OVERHEAD_S, LOAD_OVERHEAD_S, TRIAL_OVERHEAD_S

    per_load = LOAD_OVERHEAD_S + (
        CHROMIUM_OVERHEAD_S if spec.get("client", {}).get("impl") == "chromium" else 0
    )
    gap = spec.get("gap_ms", 0) / 1000
    rounds = sum(p.plt_ms / 1000 + per_load + gap for p in pred.protocols)
    return TRIAL_OVERHEAD_S + spec.get("repetitions", 5) * rounds
