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
    from wirelab import netprofile

    result = doctest.testmod(netprofile)
    assert result.attempted > 0 and result.failed == 0


EXPECTED_PUBLIC = {
    "__version__",
    "run",
    "open",
    "load",
    "plan",
    "probe",
    "ProbeRun",
    "loadtest",
    "plan_loadtest",
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
