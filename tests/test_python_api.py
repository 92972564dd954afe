"""The Python API: the runnable example of docs/python-api.md (with the double), and the public surface."""

import doctest
import importlib
import pkgutil
from pathlib import Path

import wirelab

ROOT = Path(__file__).resolve().parent.parent


def test_docs_python_api_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = doctest.testfile(
        str(ROOT / "docs" / "python-api.md"), module_relative=False, optionflags=doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted >= 10
    assert result.failed == 0
    assert (tmp_path / "example.db").exists()


def test_netprofile_doctest():
    from wirelab import _netprofile as netprofile

    result = doctest.testmod(netprofile)
    assert result.attempted > 0 and result.failed == 0


EXPECTED_PUBLIC = {
    "__version__",
    "run",
    "check",
    "SpecCheck",
    "open",
    "load",
    "plan",
    "probe",
    "ProbeRun",
    "loadtest",
    "plan_loadtest",
    "predict",
    "Prediction",
    "LoadPlan",
    "PlannedLoadtest",
    "LoadObserver",
    "LoadtestOutcome",
    "LoadtestSummary",
    "LoadResult",
    "Results",
    "RunSummary",
    "TrialOutcome",
    "Observer",
    "Plan",
    "PlannedTrial",
    "ExperimentSpec",
    "TrialSpec",
    "Engine",
    "SubprocessEngine",
    "WirelabError",
    "UsageError",
    "SpecError",
    "ProfileError",
    "SweepConflictError",
    "EngineError",
    "EngineNotFoundError",
    "TrialFailedError",
    "ContractError",
    "StoreError",
    "SchemaVersionError",
    "Interrupted",
    "NoResultsError",
    "DatabaseError",
}


def test_public_surface_is_deliberate():
    assert set(wirelab.__all__) == EXPECTED_PUBLIC
    assert sorted(wirelab.__all__) == wirelab.__all__
    for name in wirelab.__all__:
        assert getattr(wirelab, name) is not None, name
    assert set(dir(wirelab)) == EXPECTED_PUBLIC


def test_every_module_all_names_exist():
    for info in pkgutil.iter_modules(wirelab.__path__, "wirelab."):
        module = importlib.import_module(info.name)
        if info.name.split(".")[-1].startswith("_"):
            continue
        exported = getattr(module, "__all__", None)
        assert exported is not None, f"{info.name} has no __all__"
        for name in exported:
            assert hasattr(module, name), f"{info.name}.__all__ names {name}, which does not exist"


def test_errors_form_one_hierarchy():
    from wirelab import errors

    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, errors.WirelabError), name
        assert name in (errors.__doc__ or ""), f"{name} is missing from the drawing in wirelab.errors"
    assert errors.UsageError.exit_code == 2 and errors.ProfileError.exit_code == 2
    assert errors.Interrupted.exit_code == 130 and errors.EngineError.exit_code == 1


#: Public modules and packages; everything else under wirelab is private (``wirelab._*``), and so are
#: the analysis package's modules' underscored helpers.
PUBLIC_MODULES = {
    "wirelab",
    "wirelab.analysis",
    "wirelab.errors",
    "wirelab.report",
    "wirelab.spec",
    "wirelab.testing",
}
#: Modules others are changing at the time of writing, to be made private once those changes are
#: merged (the runner's and CLI's error handling, the store's integrity): listed so that this set only
#: shrinks.
NOT_YET_PRIVATE = {"wirelab.cli", "wirelab.runner", "wirelab.store"}


def test_implementation_modules_are_private():
    names = {info.name for info in pkgutil.walk_packages(wirelab.__path__, "wirelab.")} | {"wirelab"}
    public = {n for n in names if not any(part.startswith("_") for part in n.split("."))}
    analysis = {n for n in public if n.startswith("wirelab.analysis.")}  # the analysis package's own modules
    assert public - analysis == PUBLIC_MODULES | NOT_YET_PRIVATE


def test_public_packages_export_what_they_list():
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        assert module.__all__ and len(set(module.__all__)) == len(module.__all__), name
        for attr in module.__all__:
            assert hasattr(module, attr), f"{name}.{attr}"
    import wirelab.report

    assert set(wirelab.report.__all__) == {"write_report", "waterfall_from_har"}


def test_every_error_is_public():
    import wirelab.errors as errors

    classes = {n for n, v in vars(errors).items() if isinstance(v, type) and issubclass(v, Exception)}
    assert classes == set(errors.__all__)
    assert classes <= set(wirelab.__all__)
