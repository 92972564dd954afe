"""Statistics of stored loads: what the studies compute, as functions of pandas DataFrames.

::

    import wirelab
    from wirelab import analysis
    sweep = analysis.load_sweep(wirelab.open("wirelab.db"), "elkhatib-rtt")
    table = sweep.with_config(analysis.compare(sweep.loads, ["trial_id"], sweep.baseline, sweep.compared))
    table[["network.rtt_ms", "page", "gain_pct", "ci_low", "ci_high", "p_value", "s", "cls"]]

Modules: :mod:`~wirelab.analysis.stats` (describe, bootstrap CIs, ECDF), :mod:`~wirelab.analysis.compare`
(E's gain, W's ratio classes, Mann–Whitney), :mod:`~wirelab.analysis.phases` (HAR phase shares),
:mod:`~wirelab.analysis.gateway` (retransmissions, drops, the gateway's delay), :mod:`~wirelab.analysis.tree`
(W's decision tree), :mod:`~wirelab.analysis.multiplex` (E's streams-needed regression),
:mod:`~wirelab.analysis.sweep` (a sweep's data and axes), :mod:`~wirelab.analysis.probes` (protocols
announced vs served by probed sites), :mod:`~wirelab.analysis.live` (live pages: ToW and E's gain per
site), :mod:`~wirelab.analysis.why` (why a protocol wins: a ToW difference split into mechanisms,
``docs/why.md``), :mod:`~wirelab.analysis.conclusions` (sentences).
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from wirelab import _lazy

if TYPE_CHECKING:
    from wirelab.analysis.compare import (
        BETTER,
        EQUAL,
        SIGNIFICANCE,
        WORSE,
        classify_ratio,
        compare,
        gain,
        gain_ci,
        gain_pct,
        main_effects,
        mann_whitney,
        mann_whitney_test,
        min_p_value,
        ratio_classes,
    )
    from wirelab.analysis.gateway import gateway_effects, queue_delay_bound_ms, rtt_inflation
    from wirelab.analysis.live import is_live, site_gains, site_of, site_tow
    from wirelab.analysis.multiplex import MultiplexFit, fit_m_vs_r, streams_needed
    from wirelab.analysis.phases import phase_ms, phase_shares
    from wirelab.analysis.probes import ANNOUNCEMENTS, gaps, probe_shares
    from wirelab.analysis.stats import BOOTSTRAP_METHOD, N_BOOT, bootstrap_ci, describe, ecdf
    from wirelab.analysis.sweep import Axis, SweepData, load_sweep, parse_synthetic
    from wirelab.analysis.tree import LABEL_THRESHOLD, TreeNode, TreeResult, fit_tree
    from wirelab.analysis.why import explain

# Each name is imported from its module when first used (PEP 562): `import wirelab.analysis.live`
# (the CLI's) no longer loads scipy and scikit-learn (~2.6 s of CPU per process) through this file.
_WHERE = {
    "ANNOUNCEMENTS": "probes",
    "Axis": "sweep",
    "BETTER": "compare",
    "BOOTSTRAP_METHOD": "stats",
    "EQUAL": "compare",
    "LABEL_THRESHOLD": "tree",
    "MultiplexFit": "multiplex",
    "N_BOOT": "stats",
    "SIGNIFICANCE": "compare",
    "SweepData": "sweep",
    "TreeNode": "tree",
    "TreeResult": "tree",
    "WORSE": "compare",
    "bootstrap_ci": "stats",
    "classify_ratio": "compare",
    "compare": "compare",
    "describe": "stats",
    "ecdf": "stats",
    "explain": "why",
    "fit_m_vs_r": "multiplex",
    "fit_tree": "tree",
    "gain": "compare",
    "gain_ci": "compare",
    "gain_pct": "compare",
    "gaps": "probes",
    "gateway_effects": "gateway",
    "is_live": "live",
    "load_sweep": "sweep",
    "main_effects": "compare",
    "mann_whitney": "compare",
    "mann_whitney_test": "compare",
    "min_p_value": "compare",
    "parse_synthetic": "sweep",
    "phase_ms": "phases",
    "phase_shares": "phases",
    "probe_shares": "probes",
    "queue_delay_bound_ms": "gateway",
    "ratio_classes": "compare",
    "rtt_inflation": "gateway",
    "site_gains": "live",
    "site_of": "live",
    "site_tow": "live",
    "streams_needed": "multiplex",
}


__getattr__ = _lazy.getter(globals(), {name: f"{__name__}.{module}" for name, module in _WHERE.items()})


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """``analysis.compare`` stays the function (as when this file imported it eagerly): the import
    system's binding of the submodule ``wirelab.analysis.compare`` to the package is not kept."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _WHERE and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


__all__ = [
    "ANNOUNCEMENTS",
    "BETTER",
    "BOOTSTRAP_METHOD",
    "EQUAL",
    "LABEL_THRESHOLD",
    "N_BOOT",
    "SIGNIFICANCE",
    "WORSE",
    "Axis",
    "MultiplexFit",
    "SweepData",
    "TreeNode",
    "TreeResult",
    "bootstrap_ci",
    "classify_ratio",
    "compare",
    "describe",
    "ecdf",
    "explain",
    "fit_m_vs_r",
    "fit_tree",
    "gain",
    "gain_ci",
    "gain_pct",
    "gaps",
    "gateway_effects",
    "is_live",
    "load_sweep",
    "main_effects",
    "mann_whitney",
    "mann_whitney_test",
    "min_p_value",
    "parse_synthetic",
    "phase_ms",
    "phase_shares",
    "probe_shares",
    "queue_delay_bound_ms",
    "ratio_classes",
    "rtt_inflation",
    "site_gains",
    "site_of",
    "site_tow",
    "streams_needed",
]
