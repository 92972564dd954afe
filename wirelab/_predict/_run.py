"""Predict many configurations: page facts fetched once, plans padded into batches of similar size."""

from __future__ import annotations

from typing import Any

import numpy as np

from wirelab._predict import _pages
from wirelab._predict._config import Config
from wirelab._predict._constants import Constants
from wirelab._predict._plan import batch, plan_of
from wirelab._predict._sim import Result, simulate

__all__ = ["predict_configs"]

#: Configurations per batch: wide enough that NumPy's per-call cost is spread (a step costs 2.7–3.1×
#: as much at 4,096 configurations as at 1,024: ``scripts/bench_predict.py --per-step``), narrow
#: enough that padding a short page to a long one's steps wastes little (batches group similar step
#: counts) and a replay's parts (steps × configurations × parts) stay tens of MB.
BATCH = 4096


def predict_configs(
    configs: list[Config],
    constants: Constants,
    *,
    baseline: bool = False,
    explain: bool = False,
    engine: Any = None,
) -> Result:
    """PLT, ToW (s) and with ``explain`` the parts, per configuration, in order."""
    _pages.prefetch([c.page for c in configs], engine)
    facts = _pages.known([c.page for c in configs])
    # batches of similar width (connection slots) and length (steps): padding costs little
    plans = [plan_of(f, c.mode) for c, f in zip(configs, facts, strict=True)]
    slots = np.array([1 if c.multiplexed else c.max_conns for c in configs]) * np.array(
        [p.origins for p in plans]
    )
    steps = np.array([p.steps for p in plans])
    width = np.ceil(np.log2(slots + 1))
    order = np.lexsort((steps, width))
    plt = np.empty(len(configs))
    tow = np.empty(len(configs))
    parts = np.empty((len(configs), 0)) if not explain else None
    chunks = []
    # a batch holds one width class (a batch of h2 and h1s configurations would pay HTTP/1.x's pool
    # selection and six slots for all), at most BATCH configurations
    classes = np.flatnonzero(np.diff(width[order])) + 1
    bounds = [
        (lo + off, min(lo + off + BATCH, hi))
        for lo, hi in zip(np.r_[0, classes], np.r_[classes, len(order)], strict=True)
        for off in range(0, hi - lo, BATCH)
    ]
    # within a batch, configurations of one transport and pool kind side by side (their responses
    # are the same packets: the simulation's per-size terms are computed once per run of them); the
    # order of a batch's columns changes no result, its composition is as above
    kinds = np.array([2 * (c.transport == "quic") + c.multiplexed for c in configs])
    for start, stop in bounds:
        idx = order[start:stop]
        idx = idx[np.argsort(kinds[idx], kind="stable")]
        r = simulate(
            batch([configs[i] for i in idx], [facts[i] for i in idx]),
            constants,
            baseline=baseline,
            explain=explain,
        )
        plt[idx], tow[idx] = r.plt, r.tow
        chunks.append((idx, r.parts))
    if explain:
        width = next(p.shape[1] for _, p in chunks if p is not None)
        parts = np.empty((len(configs), width))
        for idx, p in chunks:
            assert p is not None
            parts[idx] = p
    return Result(plt=plt, tow=tow, parts=parts if explain else None)
