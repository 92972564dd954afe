"""wirelab — a laboratory for web protocols.

Load pages over HTTP/1.1, HTTP/2 and HTTP/3 through an emulated network, measure every load down to
the packet, and compare the protocols. The data plane is the Go binary ``wirelab-engine``; this
package is the control plane (specs, sweeps, results, analysis, reports)::

    import wirelab
    wirelab.run("experiments/demo.toml", db="wirelab.db", parallel=1)
    loads = wirelab.open("wirelab.db").loads(sweep="demo")
    loads.groupby(["page", "network.rtt_ms", "protocol"]).tow_ms.median()
"""

__version__ = "0.1.0.dev0"

from wirelab.api import LoadResult, load, open, plan, run  # noqa: E402
from wirelab.engine import Engine, SubprocessEngine  # noqa: E402
from wirelab.errors import (  # noqa: E402
    ContractError,
    EngineError,
    EngineNotFoundError,
    Interrupted,
    ProfileError,
    SchemaVersionError,
    SpecError,
    StoreError,
    SweepConflictError,
    TrialFailedError,
    UsageError,
    WirelabError,
)
from wirelab.runner import Observer, RunSummary, TrialOutcome  # noqa: E402
from wirelab.spec import ExperimentSpec, Plan, PlannedTrial, TrialSpec  # noqa: E402
from wirelab.store import Results  # noqa: E402

__all__ = [
    "ContractError",
    "Engine",
    "EngineError",
    "EngineNotFoundError",
    "ExperimentSpec",
    "Interrupted",
    "LoadResult",
    "Observer",
    "Plan",
    "PlannedTrial",
    "ProfileError",
    "Results",
    "RunSummary",
    "SchemaVersionError",
    "SpecError",
    "StoreError",
    "SubprocessEngine",
    "SweepConflictError",
    "TrialFailedError",
    "TrialOutcome",
    "TrialSpec",
    "UsageError",
    "WirelabError",
    "__version__",
    "load",
    "open",
    "plan",
    "run",
]
