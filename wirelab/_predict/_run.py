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

#: Configurations per batch: wide enough that NumPy's per-call cost is spread, narrow enough that
#: padding a short page to a long one's steps wastes little (batches group similar step counts).
BATCH = 1024


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
    order = np.lexsort((steps, np.ceil(np.log2(slots + 1))))
    plt = np.empty(len(configs))
    tow = np.empty(len(configs))
    parts = np.empty((len(configs), 0)) if not explain else None
    chunks = []
    for start in range(0, len(order), BATCH):
        idx = order[start : start + BATCH]
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
