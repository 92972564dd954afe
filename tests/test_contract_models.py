"""The trial spec has one definition, the contract's JSON Schema: the pydantic models are generated from
it, and the control plane reports the same field and words for a bad spec as the engine does."""

import json
from pathlib import Path

import pytest

from wirelab import _codegen, spec
from wirelab import _contract as contract
from wirelab.errors import SpecError

ROOT = Path(__file__).parent.parent
CASES = json.loads((ROOT / "testdata" / "trial_spec_errors.json").read_text())["cases"]


def test_generated_models_are_current():
    """wirelab/_contract_models.py is what `python -m wirelab._codegen` writes from the schema today."""
    assert _codegen.OUTPUT.read_text() == _codegen.generate(), (
        "the trial-spec schema changed: run `python -m wirelab._codegen`"
    )


def test_contract_schemas_are_json_schema():
    """Every shipped contract schema, and the trial spec's root with its fields accepted as they are
    (what problem() checks first), is valid against its meta-schema — checked here once, not each
    time a process first validates a spec."""
    import jsonschema

    for name in contract.SCHEMA_NAMES:
        schema = contract.load_schema(name)
        jsonschema.validators.validator_for(schema).check_schema(schema)
    split = contract._fields("trial-spec")
    assert split is not None
    jsonschema.validators.validator_for(split[0].schema).check_schema(split[0].schema)


def test_a_schema_change_reaches_the_models():
    """A range changed in the schema alone is a range of the generated model (nothing else to edit)."""
    schema = contract.load_schema("trial-spec")
    changed = json.loads(json.dumps(schema))
    changed["$defs"]["fields"]["properties"]["repetitions"]["maximum"] = 77
    assert "ge=1, le=77" in _codegen.generate(changed)
    assert "ge=1, le=10000" in _codegen.generate(schema)


@pytest.mark.parametrize("case", CASES, ids=[c["field"] for c in CASES])
def test_same_field_words_and_line_as_the_engine(case):
    found = contract.problem("trial-spec", case["spec"])
    assert found is not None
    assert found.field == case["field"]
    assert found.allowed == case["allowed"]
    if "value" in case:
        assert found.value == case["value"]
    assert found.message() == case["message"]


def test_implementation_tables():
    """Only the chosen implementation's table is kept, filled with its defaults; a builtin trial has none,
    so its id is what it was before the tables existed."""
    apache = spec.resolve_trial(
        {"page": "twitter", "server": {"impl": "apache", "nginx": {"worker_processes": 2}}}
    )
    assert apache["server"]["apache"]["mpm"] == "event" and "nginx" not in apache["server"]
    builtin = spec.resolve_trial({"page": "twitter", "server": {"apache": {"mpm": "worker"}}})
    assert not {"apache", "nginx", "h2o", "caddy", "config"} & set(builtin["server"])
    assert builtin["trial_id"] == spec.resolve_trial({"page": "twitter"})["trial_id"]
    contract.validate("trial-spec", apache)


def test_each_implementation_alone_runs_with_the_defaults():
    """``server = { impl = X }`` and nothing else: a common knob X cannot set defaults to the value that
    stands for its own behaviour (the schema's ``x-cannot-set``, as the engine reads it), in a trial and
    in a load test alike; a value given is kept (the engine refuses one X cannot set)."""
    from wirelab._contract_models import ServerConfig
    from wirelab._loadplan import _server

    impls = ServerConfig.model_fields["impl"].annotation.__args__
    assert (
        set(ServerConfig.CANNOT_SET) <= set(impls)
        and ServerConfig.CANNOT_SET["caddy"]["max_concurrent_streams"] == 0
    )
    for impl in impls:
        server = spec.resolve_trial({"page": "twitter", "server": {"impl": impl}})["server"]
        own = ServerConfig.CANNOT_SET.get(impl, {})
        assert server["max_concurrent_streams"] == own.get("max_concurrent_streams", 100), impl
        assert all(server[k] == v for k, v in own.items()), (impl, server)
        assert _server({"impl": impl}) == server
    kept = spec.resolve_trial({"page": "twitter", "server": {"impl": "caddy", "max_concurrent_streams": 7}})
    assert kept["server"]["max_concurrent_streams"] == 7
    grid = spec.loads('[sweep]\nname = "s"\n[base]\npage = "p"\n[grid]\n"server.impl" = ["nginx", "caddy"]\n')
    assert [t.spec["server"]["max_concurrent_streams"] for t in grid.trials] == [100, 0]


def test_grid_over_implementations_and_their_knobs():
    """An implementation's knob varies with a zip group; crossed with other implementations it would give
    the same trial twice (the table applies only to its implementation), which is refused."""
    plan = spec.loads(
        '[sweep]\nname = "s"\n[base]\npage = "twitter"\n[base.server.apache]\nmpm = "worker"\n'
        '[[grid.zip]]\n"server.impl" = ["builtin", "apache", "apache", "nginx"]\n'
        '"server.apache.threads_per_child" = [0, 25, 50, 0]\n'
    )
    specs = [t.spec["server"] for t in plan.trials]
    assert [s["impl"] for s in specs] == ["builtin", "apache", "apache", "nginx"]
    assert [s["apache"]["threads_per_child"] for s in specs if s["impl"] == "apache"] == [25, 50]
    assert all(s["apache"]["mpm"] == "worker" for s in specs if s["impl"] == "apache")
    with pytest.raises(SpecError, match="are the same trial"):
        spec.loads(
            '[sweep]\nname = "s"\n[base]\npage = "p"\n[grid]\n"server.impl" = ["builtin", "apache"]\n'
            '"server.apache.threads_per_child" = [25, 50]\n'
        )
    with pytest.raises(SpecError, match=r'^grid\.server\.apache\.mpm\[0\]: "evnt"'):
        spec.loads('[sweep]\nname = "s"\n[base]\npage = "p"\n[grid]\n"server.apache.mpm" = ["evnt"]\n')


def test_schema_words_for_a_grid_value_the_model_cannot_check():
    with pytest.raises(SpecError) as info:
        spec.loads('[sweep]\nname = "s"\n[base]\npage = "p"\n[grid]\n"server.write_chunk_bytes" = [0, 100]\n')
    assert str(info.value) == (
        "grid.server.write_chunk_bytes[1]: got 100; "
        "must be 0 (the implementation's own) or an integer 256–1048576"
    )
