"""HAR phase breakdown (study E): the share of a load's request time spent in each phase.

A load record's ``phases_ms`` are the HAR timings summed over the load's objects (HAR semantics:
``connect`` *includes* ``ssl``). Here ``connect`` is the TCP part alone (``connect − ssl``, never
below 0), so the phases add up and each is counted once. The share of phase k in a group is
``mean(k) / Σ_j mean(j)`` over the group's loads without error; a phase that is zero in every load
of the data (e.g. ``ssl`` when no protocol uses TLS, ``blocked`` when no load waited) is left out.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from wirelab._registry import PHASE_ORDER
from wirelab.analysis.stats import ok_loads

__all__ = ["phase_ms", "phase_shares"]


def phase_ms(loads: pd.DataFrame) -> pd.DataFrame:
    """Per load, the phases as separate, additive columns (``connect`` without ``ssl``)."""
    out = pd.DataFrame(index=loads.index)
    for phase in PHASE_ORDER:
        col = f"{phase}_ms"
        out[phase] = loads[col].astype(float).fillna(0.0).clip(lower=0) if col in loads else 0.0
    if "ssl" in out and "connect" in out:
        out["connect"] = (out["connect"] - out["ssl"]).clip(lower=0)
    return out


def phase_shares(loads: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """One row per group of ``by``: ``n``, ``total_ms`` (mean summed phase time per load) and one share
    column per phase present (fractions that sum to 1), in :data:`~wirelab._registry.PHASE_ORDER`."""
    ok = ok_loads(loads)
    phases = phase_ms(ok)
    present = [p for p in PHASE_ORDER if (phases[p] > 0).any()]
    frame = pd.concat([ok[list(by)], phases[present]], axis=1)
    by = list(by)
    grouped = frame.groupby(by, sort=False, dropna=False) if by else None
    means = grouped[present].mean() if grouped is not None else frame[present].mean().to_frame().T
    counts = grouped.size() if grouped is not None else pd.Series([len(frame)])
    total = means.sum(axis=1)
    shares = means.div(total.where(total > 0), axis=0)
    out = shares.reset_index() if by else shares.reset_index(drop=True)
    out.insert(len(by), "n", counts.to_numpy())
    out.insert(len(by) + 1, "total_ms", total.to_numpy())
    return out
