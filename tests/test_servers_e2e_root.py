"""`server = { impl = X }` and nothing else runs every server under test (root, about a minute): with the
real engine, ``wirelab.load`` (what ``wirelab load --server X`` calls) and ``wirelab run`` of a spec whose
grid names every implementation. A common knob an implementation cannot set defaults to its own behaviour
(``x-cannot-set`` in the contract's schema: Caddy's stream limit), so no implementation needs another
knob to run. Servers not installed here are skipped (``make setup`` installs them); skipped without root
and while the engine has no `trial` command."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import wirelab
from wirelab._contract_models import ServerConfig
from wirelab._engine import SubprocessEngine
from wirelab.errors import EngineNotFoundError

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.root, pytest.mark.slow]

IMPLS = list(ServerConfig.model_fields["impl"].annotation.__args__)  # the contract's enum
BINARIES = {
    "apache": "/usr/sbin/apache2",
    "nginx": "/usr/sbin/nginx",
    "h2o": "/usr/bin/h2o",
    "caddy": "/usr/bin/caddy",
}
PAGE = "synthetic:4x10kB"


@pytest.fixture
def engine_path() -> Path:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces)")
    candidate = os.environ.get("WIRELAB_E2E_ENGINE") or str(ROOT / "bin" / "wirelab-engine")
    try:
        engine = SubprocessEngine(candidate)
    except EngineNotFoundError as e:
        pytest.skip(f"no engine: {e}")
    if "trial" not in engine.commands():
        pytest.skip(f"{engine.path} has no `trial` command yet ({engine.version()})")
    return engine.path


def _installed() -> list[str]:
    return [impl for impl in IMPLS if impl not in BINARIES or Path(BINARIES[impl]).exists()]


@pytest.mark.parametrize("impl", IMPLS)
def test_load_with_the_impl_alone(impl, tmp_path, engine_path):
    if impl not in _installed():
        pytest.skip(f"{impl} is not installed (make setup)")
    result = wirelab.load(
        PAGE, repetitions=1, server={"impl": impl}, db=tmp_path / "w.db", engine=engine_path
    )
    assert len(result.loads) == 2 and result.loads["error"].isna().all(), result.loads["error"].tolist()
    trial = wirelab.open(tmp_path / "w.db").trials(result.sweep).iloc[0]
    server = trial["spec"]["server"]
    assert server["impl"] == impl and trial["provenance"]["engine"]["server"]["impl"] == impl
    for knob, own in ServerConfig.CANNOT_SET.get(impl, {}).items():
        assert server[knob] == own, (impl, knob, server)


def test_run_with_every_impl_alone(tmp_path, engine_path):
    impls = _installed()
    spec = tmp_path / "servers.toml"
    spec.write_text(
        f'[sweep]\nname = "servers"\n[base]\npage = "{PAGE}"\nprotocols = ["h1s", "h2"]\nrepetitions = 1\n'
        f'[grid]\n"server.impl" = {impls!r}\n'.replace("'", '"')
    )
    summary = wirelab.run(spec, db=tmp_path / "w.db", engine=engine_path)
    assert len(summary.completed) == len(impls), [(o.trial.params, o.error) for o in summary.failed]
    trials = wirelab.open(tmp_path / "w.db").trials("servers")
    assert sorted(trials["server.impl"]) == sorted(impls)
    assert (trials["load_errors"] == 0).all() and (trials["loads"] == 2).all()
    caddy = trials[trials["server.impl"] == "caddy"]
    for _, row in caddy.iterrows():
        assert row["spec"]["server"]["max_concurrent_streams"] == 0
        effective = row["provenance"]["engine"]["server"]["effective"]
        assert effective["max_concurrent_streams"] == {"h2": 250, "h3": 100}
