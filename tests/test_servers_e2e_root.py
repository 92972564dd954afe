"""`server = { impl = X }` and nothing else runs every server under test (root, about a minute): with the
real engine, ``wirelab.load`` (what ``wirelab load --server X`` calls) and ``wirelab run`` of a spec whose
grid names every implementation. A common knob an implementation cannot set defaults to its own behaviour
(``x-cannot-set`` in the contract's schema: Caddy's stream limit), so no implementation needs another
knob to run. Servers not installed here are skipped (``make setup`` installs them); skipped without root
and while the engine has no `trial` command."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import wirelab
from wirelab._contract_models import ServerConfig

pytestmark = [pytest.mark.root, pytest.mark.slow]

IMPLS = list(ServerConfig.model_fields["impl"].annotation.__args__)  # the contract's enum
PAGE = "synthetic:4x10kB"


@pytest.fixture
def engine_path(real_engine) -> Path:
    return real_engine("trial")


def _installed(engine: Path) -> list[str]:
    """The implementations installed here, as the engine's registry says (`servers ls --json`)."""
    out = subprocess.run([str(engine), "servers", "ls", "--json"], capture_output=True, text=True, check=True)
    return [s["name"] for s in json.loads(out.stdout) if s["installed"]]


@pytest.mark.parametrize("impl", IMPLS)
def test_load_with_the_impl_alone(impl, tmp_path, engine_path):
    if impl not in _installed(engine_path):
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
    impls = _installed(engine_path)
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
