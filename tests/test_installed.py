"""wirelab works as an installed package, away from its repository: the contract's schemas, the
engine's facts and the recordings wirelab.testing replays (trials and load tests) all ship inside the
wheel."""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PROGRAM = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    import wirelab
    from wirelab import analysis
    from wirelab.testing import FixtureEngine

    site = Path(sys.argv[1]).resolve()
    assert Path(wirelab.__file__).resolve().is_relative_to(site), wirelab.__file__
    spec = '''
    [sweep]
    name = "installed"
    [base]
    page = "twitter"
    protocols = ["h1s", "h2"]
    repetitions = 2
    network = "rtt=100ms,bw=10mbit"
    '''
    summary = wirelab.run(spec, db="installed.db", engine=FixtureEngine())
    assert summary.ok and summary.complete_trials == 1, summary
    with wirelab.open("installed.db") as results:
        sweep = analysis.load_sweep(results, "installed")
    assert len(sweep.loads) == 4, sweep.loads
    load_spec = '''
    [sweep]
    name = "installed-load"
    [load]
    page = "neoload50"
    protocols = ["h1s", "h2"]
    scenario = { stages = [{ duration_s = 8, target = 10 }] }
    interval_s = 2
    '''
    load_summary = wirelab.loadtest(load_spec, db="installed.db", engine=FixtureEngine())
    assert load_summary.ok and len(load_summary.outcomes) == 2, load_summary
    with wirelab.open("installed.db") as results:
        assert len(results.load_intervals("installed-load")) > 0
    print("ok", wirelab.__file__)
    """
)
SHIPPED = (
    "_schemas/trial-spec.schema.json",
    "_schemas/loadtest-spec.schema.json",
    "_engine_facts.json",
    "_fixtures/trials/twitter/trial.json",
    "_fixtures/loadtests/builtin-h2/loadtest.json",
)


@pytest.mark.slow
def test_the_wheel_runs_a_sweep_with_the_fixture_engine(tmp_path):
    # Built from a copy of what the wheel is made of, so that the build leaves nothing in the checkout.
    src, dist, site = tmp_path / "src", tmp_path / "dist", tmp_path / "site"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in ("wirelab", "schemas"):
        shutil.copytree(ROOT / name, src / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    build = [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(src)]
    subprocess.run(build, check=True, cwd=tmp_path)
    (wheel,) = dist.glob("wirelab-*.whl")
    subprocess.run([*pip, "install", "--no-deps", "--target", str(site), str(wheel)], check=True)
    for name in SHIPPED:
        path = site / "wirelab" / name
        assert path.is_file() and not path.is_symlink(), name
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("WIRELAB_ENGINE", None)
    work = tmp_path / "elsewhere"
    work.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(site)], cwd=work, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("ok ")
