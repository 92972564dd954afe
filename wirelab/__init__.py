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

from wirelab import _lazy

# Public names → the (private) module defining them. Imported on first use, so that importing the
# profile grammar or the engine's test stand-in does not pay for pandas and the rest.
_EXPORTS = {
    "LoadResult": "wirelab._api",
    "SpecCheck": "wirelab._api",
    "check": "wirelab._api",
    "load": "wirelab._api",
    "loadtest": "wirelab._api",
    "open": "wirelab._api",
    "plan": "wirelab._api",
    "plan_loadtest": "wirelab._api",
    "Prediction": "wirelab._predict._api",
    "predict": "wirelab._predict._api",
    "LoadPlan": "wirelab._loadplan",
    "PlannedLoadtest": "wirelab._loadplan",
    "LoadObserver": "wirelab._loadrunner",
    "LoadtestOutcome": "wirelab._loadrunner",
    "LoadtestSummary": "wirelab._loadrunner",
    "run": "wirelab._api",
    "Engine": "wirelab._engine",
    "SubprocessEngine": "wirelab._engine",
    "ContractError": "wirelab.errors",
    "DatabaseError": "wirelab.errors",
    "EngineError": "wirelab.errors",
    "EngineNotFoundError": "wirelab.errors",
    "Interrupted": "wirelab.errors",
    "NoResultsError": "wirelab.errors",
    "ProfileError": "wirelab.errors",
    "SchemaVersionError": "wirelab.errors",
    "SpecError": "wirelab.errors",
    "StoreError": "wirelab.errors",
    "SweepConflictError": "wirelab.errors",
    "TrialFailedError": "wirelab.errors",
    "UsageError": "wirelab.errors",
    "WirelabError": "wirelab.errors",
    "ProbeRun": "wirelab._probing",
    "probe": "wirelab._probing",
    "Observer": "wirelab.runner",
    "RunSummary": "wirelab.runner",
    "TrialOutcome": "wirelab.runner",
    "ExperimentSpec": "wirelab.spec",
    "Plan": "wirelab.spec",
    "PlannedTrial": "wirelab.spec",
    "TrialSpec": "wirelab.spec",
    "Results": "wirelab.store",
}


__getattr__ = _lazy.getter(globals(), _EXPORTS)


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "ContractError",
    "DatabaseError",
    "Engine",
    "EngineError",
    "EngineNotFoundError",
    "ExperimentSpec",
    "Interrupted",
    "LoadObserver",
    "LoadPlan",
    "LoadResult",
    "LoadtestOutcome",
    "LoadtestSummary",
    "NoResultsError",
    "Observer",
    "Plan",
    "PlannedLoadtest",
    "PlannedTrial",
    "Prediction",
    "ProbeRun",
    "ProfileError",
    "Results",
    "RunSummary",
    "SchemaVersionError",
    "SpecCheck",
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
    "check",
    "load",
    "loadtest",
    "open",
    "plan",
    "plan_loadtest",
    "predict",
    "probe",
    "run",
]
