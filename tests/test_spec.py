"""Experiment specs: golden expansions, ids, and one-line errors that name path, value and what is allowed."""

import json
import os
from pathlib import Path

import pytest

from wirelab import _contract as contract
from wirelab import spec
from wirelab.errors import ContractError, SpecError, UsageError

ROOT = Path(__file__).parent.parent
GOLDEN = Path(__file__).parent / "golden" / "spec"
CASES = sorted(GOLDEN.glob("*.toml")) + [ROOT / "experiments" / "demo.toml"]
UPDATE = os.environ.get("WIRELAB_UPDATE_GOLDEN") == "1"


def _golden_path(toml: Path) -> Path:
    return GOLDEN / (toml.stem + ".json")


def _as_golden(plan: spec.Plan) -> dict:
    return {
        "name": plan.name,
        "spec_hash": plan.spec_hash,
        "loads": plan.loads,
        "trials": [{"id": t.id, "params": t.params, "spec": t.spec} for t in plan.trials],
    }


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_golden_expansion(path):
    got = _as_golden(spec.load(path))
    golden = _golden_path(path)
    if UPDATE:
        golden.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n")
    assert got == json.loads(golden.read_text())


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_every_expanded_trial_is_a_valid_trial_spec(path):
    for trial in spec.load(path).trials:
        contract.validate("trial-spec", trial.spec)
        assert trial.spec["trial_id"] == trial.id == spec.config_id(trial.spec)


def test_elkhatib_rtt_range_includes_both_ends():
    plan = spec.load(GOLDEN / "elkhatib-rtt.toml")
    rtts = [t.params["network.rtt"] for t in plan.trials]
    assert rtts == [f"{ms}ms" for ms in range(10, 491, 40)]
    assert plan.trials[0].spec["network"] == "rtt=10ms,bw=1mbit,queue=256"


def test_zip_moves_together_and_product_multiplies():
    plan = spec.load(GOLDEN / "zip-product.toml")
    assert len(plan.trials) == 6
    pairs = {(t.params["network.rtt"], t.params["network.bw"]) for t in plan.trials}
    assert pairs == {("20ms", "10mbit"), ("100ms", "1mbit"), ("200ms", "1mbit")}
    assert plan.trials[0].spec["network"] == "elkhatib-default,rtt=20ms,bw=10mbit"


def test_geometric_range_and_nested_tables():
    plan = spec.load(GOLDEN / "geometric-and-nested.toml")
    bws = list(dict.fromkeys(t.params["network.bw"] for t in plan.trials))
    assert bws == ["64kbit", "128kbit", "256kbit", "512kbit"]
    assert {t.params["server.max_concurrent_streams"] for t in plan.trials} == {1, 51, 101}
    assert len(plan.trials) == 4 * 3 * 2


def test_table_network_is_order_independent():
    a = spec.loads('[sweep]\nname="a"\n[base]\npage="x"\nnetwork={rtt="100ms", delay_up="10ms"}\n')
    b = spec.loads('[sweep]\nname="a"\n[base]\npage="x"\nnetwork={delay_up="10ms", rtt="100ms"}\n')
    assert a.trials[0].spec["network"] == b.trials[0].spec["network"] == "rtt=100ms,delay_up=10ms"
    assert a.spec_hash == b.spec_hash


def test_equivalent_profiles_have_the_same_id():
    a = spec.resolve_trial({"page": "twitter", "network": "rtt=150ms,bw=1mbit"})
    b = spec.resolve_trial({"page": "twitter", "network": "bw=1000kbit,rtt=0.15s"})
    c = spec.resolve_trial({"page": "twitter", "network": "bw=1mbit,rtt=151ms"})
    assert a["trial_id"] == b["trial_id"] != c["trial_id"]


def test_id_ignores_given_trial_id_but_not_any_knob():
    a = spec.resolve_trial({"page": "twitter"})
    b = spec.resolve_trial({"page": "twitter", "trial_id": "mine"})
    c = spec.resolve_trial({"page": "twitter", "server": {"keep_alive": False}})
    assert a["trial_id"] == b["trial_id"] != c["trial_id"]


def test_spec_hash_ignores_description_and_axis_order():
    a = spec.loads('[sweep]\nname="a"\ndescription="x"\n[base]\npage="p"\n[grid]\nshards=[1,2]\nseed=[1,2]\n')
    b = spec.loads('[sweep]\nname="a"\n[base]\npage="p"\n[grid]\nseed=[1,2]\nshards=[1,2]\n')
    c = spec.loads('[sweep]\nname="a"\n[base]\npage="p"\n[grid]\nseed=[1,2]\nshards=[1,3]\n')
    assert a.spec_hash == b.spec_hash != c.spec_hash


def test_numeric_params():
    got = spec.numeric_params(
        {
            "network.rtt": "1.5s",
            "network.bw": "512kbit",
            "network.loss": "0.5%",
            "network.queue": "64kB",
            "page": "twitter",
            "network.bw_up": "unlimited",
            "network.loss_down": "ge:1%:30%",
            "network.queue_up": "fq_codel:2000",
        }
    )
    assert got == {
        "network.rtt_ms": 1500.0,
        "network.bw_mbit": 0.512,
        "network.loss_pct": 0.5,
        "network.queue_packets": 0.0,
        "network.queue_bytes": 64000.0,
        "network.bw_up_mbit": None,
        "network.loss_down_pct": None,
        "network.queue_up_packets": None,  # a discipline is a category, not a size
        "network.queue_up_bytes": None,
    }


def test_experiment_schema_is_json_schema_and_lists_grid_paths():
    import jsonschema

    schema = spec.experiment_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert "network.rtt" in schema["properties"]["grid"]["propertyNames"]["enum"]
    assert set(schema["$defs"]["BaseTrial"]["properties"]) >= {"page", "network", "protocols", "server"}


def test_trial_models_are_the_contract_schemas():
    """The models are generated from the schema (tests/test_contract_models.py keeps the file current):
    the same fields, in the schema's order, with the same defaults."""
    schema = contract.load_schema("trial-spec")["$defs"]["fields"]["properties"]
    assert list(schema) == list(spec.TRIAL_FIELDS)
    assert set(schema) == set(spec.TrialSpec.model_fields)
    models = {"server": spec.ServerConfig, "client": spec.ClientConfig, "capture": spec.CaptureConfig}
    for name, model in models.items():
        assert set(schema[name]["properties"]) == set(model.model_fields), name
        for field, info in model.model_fields.items():
            if "default" in schema[name]["properties"][field]:
                assert schema[name]["properties"][field]["default"] == info.default, f"{name}.{field}"


BAD = [
    # (toml, expected start of the message, substrings that must also appear)
    (
        '[sweep]\nname="x"\n[base]\npage="p"\nnetwork="rtt=150"\n',
        'base.network.rtt: "150" has no unit',
        ["ms"],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\nnetwork={rtt="1e3ms"}\n',
        'base.network.rtt: "1e3ms"',
        ["exponent"],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\nnetwork={rttt="1ms"}\n',
        "base.network.rttt:",
        ["did you mean rtt"],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[base.server]\nmax_concurrent_streams=1001\n',
        "base.server.max_concurrent_streams: 1001 is out of range",
        ["≤ 1000"],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[base.server]\nmax_concurent_streams=5\n',
        "base.server.max_concurent_streams: is not a field",
        ["did you mean max_concurrent_streams"],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\nprotocols=["h1s","h4"]\n',
        'base.protocols[1]: "h4"',
        ["'h1'", "'h3'"],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\nprotocols=["h2","h2"]\n',
        'base.protocols[1]: got "h2"; listed twice (also at [0])',
        [],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\nrepetitions="5"\n',
        'base.repetitions: "5" has the wrong type',
        ["integer"],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[base.server]\nwrite_chunk_bytes=100\n',
        "base.server.write_chunk_bytes: got 100;",
        ["256"],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[base.server]\npush="some"\n',
        'base.server.push: "some"',
        ["dependency-level:N"],
    ),
    ('[sweep]\nname="Bad Name"\n[base]\npage="p"\n', 'sweep.name: "Bad Name"', ["lowercase letters"]),
    ('[base]\npage="p"\n', "sweep: is missing", []),
    ('[sweep]\nname="x"\n[base]\npage="p"\n[extra]\n', "extra: is not a field", ["sweep, base, grid"]),
    ('[sweep]\nname="x"\n', "base.page: is missing", ["grid axis"]),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[grid]\n"network.rtt"=["10ms","10fortnights"]\n',
        'grid.network.rtt[1]: "10fortnights" has an unknown unit',
        ["us, ms or s"],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[grid]\nnetwork.rtt={from="10ms",to="5ms",step="1ms"}\n',
        'grid.network.rtt.to: "5ms" is below from',
        [],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[grid]\nnetwork.rtt={from="10ms",to="50ms",step="0ms"}\n',
        'grid.network.rtt.step: "0ms" must be > 0',
        [],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[grid]\nnetwork.rtt={from=10,to=50,step=10}\n',
        "grid.network.rtt.from: 10 needs a unit",
        ['"40ms"'],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[grid]\nnetwork.rtt={from="1ms",to="5ms"}\n',
        "grid.network.rtt: a range needs exactly one of step or factor",
        [],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[grid]\npage={from=1,to=5,step=1}\n',
        "grid.page: a range needs a numeric or unit-bearing field",
        ["list the values"],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[grid]\nnetwork.rttt=["1ms"]\n',
        "grid.network.rttt: 'network.rttt' is not",
        ["did you mean network.rtt"],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[grid]\nshards=[1, 65]\n',
        "grid.shards[1]: 65 is out of range",
        ["≤ 64"],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[grid]\nshards=4\n',
        "grid.shards: 4 is not a list of values",
        ["shards = [a, b"],
    ),
    ('[sweep]\nname="x"\n[base]\npage="p"\n[grid]\nshards=[]\n', "grid.shards: is an empty list", []),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[grid]\nprotocols=["h1s","h2"]\n',
        'grid.protocols[0]: "h1s" is not a list of protocols',
        ['[["h1s", "h2"]'],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[grid]\ntrial_id=["a"]\n',
        "grid.trial_id: trial_id is set by wirelab",
        [],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[[grid.zip]]\n"network.rtt"=["1ms","2ms"]\nshards=[1]\n',
        "grid.zip[0]: axes have different lengths (network.rtt: 2, shards: 1)",
        [],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[grid]\nshards=[1]\n[[grid.zip]]\nshards=[2]\n',
        "grid.zip[0].shards: shards is already an axis (grid.shards)",
        [],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[grid]\n"network"=["cable","cabel"]\n',
        'grid.network[1].cabel: "cabel"',
        ["did you mean cable"],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[grid]\nseed=[1, 1]\n',
        "grid: configurations 0 (seed=1) and 1 (seed=1)",
        ["same trial"],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[grid]\n"network.preset"=["cable","fibre"]\n',
        'grid.network.preset[1]: "fibre" is not a known preset',
        ["presets are"],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[grid]\n"network.loss"={from="0%",to="1%",step="ge:1%:2%"}\n',
        "grid.network.loss.step",
        ["Gilbert"],
    ),
    ('[sweep]\nname="x"\n[base\n', "spec: TOML syntax error", []),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\nshards=0\n',
        "base.shards: 0 (one origin per top-level-domain group or per domain) needs shard_mode tld or domain",
        ["with shard_mode round-robin shards must be 1–64", '(shard_mode is "round-robin", the default)'],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[[grid.zip]]\nshards=[1, 0]\n'
        'shard_mode=["tld", "round-robin"]\n',
        "grid.zip[0].shards[1]: 0 (one origin per top-level-domain group or per domain) needs shard_mode",
        ["at grid.zip[0].shard_mode[1]"],
    ),
    (
        '[sweep]\nname="x"\n[base]\npage="p"\n[grid]\nshard_mode=["tld", "domains"]\n',
        'grid.shard_mode[1]: "domains" is not allowed',
        ["'round-robin', 'tld' or 'domain'"],
    ),
    ('[sweep]\nname="x"\n[base]\npage="p"\nshards=-1\n', "base.shards: -1 is out of range", ["≥ 0"]),
    (
        '[sweep]\nname="x"\nrepeat_on_each_worker=101\n[base]\npage="p"\n',
        "sweep.repeat_on_each_worker: 101 is out of range",
        ["≤ 100"],
    ),
    (
        '[sweep]\nname="x"\nrepeat_on_each_worker=1.5\n[base]\npage="p"\n',
        "sweep.repeat_on_each_worker: 1.5",
        ["integer"],
    ),
]


@pytest.mark.parametrize(("text", "start", "also"), BAD, ids=[b[1][:50] for b in BAD])
def test_bad_specs_give_one_line_naming_path_value_and_allowed(text, start, also):
    with pytest.raises(SpecError) as info:
        spec.loads(text)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(start), message
    for s in also:
        assert s in message, message
    assert isinstance(info.value, UsageError) and info.value.exit_code == 2


def test_shard_modes_and_one_origin_per_group():
    """shard_mode takes round-robin, tld and domain; shards = 0 (one origin per top-level-domain group or
    per domain) only with tld or domain, in a spec as in the contract's schema."""
    assert spec.SHARD_MODES == ("round-robin", "tld", "domain")
    schema = contract.load_schema("trial-spec")["$defs"]["fields"]
    assert tuple(schema["properties"]["shard_mode"]["enum"]) == spec.SHARD_MODES
    assert schema["properties"]["shards"]["minimum"] == 0
    assert schema["properties"]["shards"]["maximum"] == spec.MAX_SHARDS
    plan = spec.load(GOLDEN / "sharding-zip.toml")
    assert [(t.spec["shards"], t.spec["shard_mode"]) for t in plan.trials] == [
        (1, "round-robin"),
        (0, "tld"),
        (0, "domain"),
    ]
    for mode in ("tld", "domain"):
        trial = spec.resolve_trial({"page": "nytimes", "shards": 0, "shard_mode": mode})
        contract.validate("trial-spec", trial)
        assert trial["shards"] == 0
    with pytest.raises(SpecError, match=r"^load\.shards: 0 \(one origin per top-level-domain group"):
        spec.resolve_trial({"page": "nytimes", "shards": 0}, path="load")
    for bad in ({"shards": 0}, {"shards": 0, "shard_mode": "round-robin"}, {"shard_mode": "domains"}):
        with pytest.raises(ContractError):
            contract.validate("trial-spec", {"page": "nytimes", **bad})


def test_missing_file():
    with pytest.raises(SpecError, match="does not exist"):
        spec.load("/nonexistent/spec.toml")


def test_grid_over_an_unconstrained_literal_field():
    """client.priority and server.push have no pydantic constraints besides their type: still axes."""
    plan = spec.loads(
        '[sweep]\nname = "p"\n[base]\npage = "twitter"\n[grid]\n'
        '"client.priority" = ["none", "chrome", "dependency"]\n"server.push" = ["none", "all"]\n'
    )
    assert sorted({(t.spec["client"]["priority"], t.spec["server"]["push"]) for t in plan.trials}) == sorted(
        (p, s) for p in ("none", "chrome", "dependency") for s in ("none", "all")
    )
    with pytest.raises(SpecError, match="grid"):
        spec.loads('[sweep]\nname = "p"\n[base]\npage = "twitter"\n[grid]\n"client.priority" = ["urgent"]\n')


#: The spec's private modules, one job each, in the order they may import one another: a module imports
#: only those before it (models know no messages; messages know no grid; hashing needs nothing).
SPEC_JOBS = ("_spec_models", "_spec_hash", "_spec_errors", "_spec_trial", "_spec_grid")


def test_spec_is_a_facade_over_one_module_per_job():
    import ast
    import importlib

    for name in spec.__all__:
        obj = getattr(spec, name)
        home = getattr(obj, "__module__", None)
        if callable(obj) and home is not None and home.startswith("wirelab._spec"):
            assert getattr(importlib.import_module(home), name) is obj, name
    # what the facade's importers use (the package, the CLI, the analysis, the tests) is still there
    for name in ("Plan", "PlannedTrial", "ExperimentSpec", "TrialSpec", "BaseTrial", "PROTOCOLS", "load"):
        assert name in spec.__all__, name
    for i, job in enumerate(SPEC_JOBS):
        tree = ast.parse((ROOT / "wirelab" / f"{job}.py").read_text())
        imported = {
            n.module.split(".")[1]
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("wirelab._spec")
        }
        assert imported <= set(SPEC_JOBS[:i]), f"{job} imports {imported - set(SPEC_JOBS[:i])}"


def test_a_lighthouse_preset_brings_its_device():
    """network = "lighthouse-mobile" (or a profile starting with it) gives Lighthouse's device — CPU
    × 4 and the mobile screen — where the trial sets neither; the table is the engine's (make facts)."""
    from wirelab import _facts

    mobile = _facts.presets()["lighthouse-mobile"].device
    assert mobile == {"cpu_slowdown": 4, "viewport": "412x823@1.75,mobile"}
    plan = spec.loads(
        '[sweep]\nname="lh"\n[base]\npage="twitter"\nclient={impl="chromium"}\n'
        '[grid]\nnetwork=["lighthouse-mobile", "lighthouse-desktop,loss=1%", "cable"]\n'
    )
    clients = {t.spec["network"]: t.spec["client"] for t in plan.trials}
    assert clients["lighthouse-mobile"]["cpu_slowdown"] == 4
    assert clients["lighthouse-mobile"]["viewport"] == "412x823@1.75,mobile"
    assert (
        clients["lighthouse-desktop,loss=1%"]["cpu_slowdown"],
        clients["lighthouse-desktop,loss=1%"]["viewport"],
    ) == (
        1,
        "1350x940",
    )
    # A network without a device keeps the defaults: the base's client table is not changed in place.
    assert (clients["cable"]["cpu_slowdown"], clients["cable"]["viewport"]) == (1, "1350x940")
    # What the trial sets wins, field by field.
    plan = spec.loads(
        '[sweep]\nname="lh"\n[base]\npage="twitter"\nnetwork="lighthouse-mobile"\n'
        'client={impl="chromium", cpu_slowdown=2}\n'
    )
    client = plan.trials[0].spec["client"]
    assert (client["cpu_slowdown"], client["viewport"]) == (2, "412x823@1.75,mobile")


def test_a_single_load_gets_the_preset_device_too():
    """wirelab load / wirelab.load resolve one trial without a plan: the device comes with it there too."""
    from wirelab._spec_trial import resolve_trial

    trial = resolve_trial({"page": "twitter", "network": "lighthouse-mobile", "client": {"impl": "chromium"}})
    assert (trial["client"]["cpu_slowdown"], trial["client"]["viewport"]) == (4, "412x823@1.75,mobile")


def test_field_by_field_check_never_passes_what_the_whole_schema_refuses():
    """problem() checks a trial field by field, each distinct value once (planning's speed); that path
    may only say valid when the whole schema does — otherwise the full check words the problem."""
    full = contract._validator("trial-spec")
    trial = spec.loads('[sweep]\nname = "x"\n[base]\npage = "synthetic:small"\n').trials[0].spec
    assert contract._valid_by_fields("trial-spec", trial) and full.is_valid(trial)
    broken = [
        {"shards": 0},
        {"shards": 0, "shard_mode": "round-robin"},
        {"shard_mode": "x"},
        {"repetitions": 0},
        {"extra": 1},
        {"server": {**trial["server"], "impl": "nope"}},
        {"client": {**trial["client"], "bogus": 1}},
        {"capture": None},
        {"network": 3},
        {"trial_id": "A B"},
        {"page": ""},
        {"protocols": []},
    ]
    for change in broken:
        bad = {**trial, **change}
        assert not full.is_valid(bad), change
        assert not contract._valid_by_fields("trial-spec", bad), change
        found = contract.problem("trial-spec", bad)
        assert found is not None, change
    missing = {k: v for k, v in trial.items() if k != "page"}
    assert contract.problem("trial-spec", missing) is not None
    # the same field values again (cached) keep their verdicts
    assert contract.problem("trial-spec", trial) is None
    assert contract.problem("trial-spec", {**trial, "shards": 0}) is not None


def test_server_knobs_added_later_keep_the_ids_stored_before_them():
    """server.nginx's keepalive_timeout_s, reuseport and open_file_cache came after nginx configurations
    were stored: at their defaults the ids are those computed before they existed (5189e60); set, they
    are part of the id; the caller's spec is left as it was."""
    plan = spec.load(GOLDEN / "server-tables.toml")
    before = ["c33695812a8db236", "ceca82e4fad49fa7", "c21591cdd6eb0231", "cebaecca0b3e4a9a"]
    assert [t.id for t in plan.trials] == before
    nginx = plan.trials[0].spec
    assert nginx["server"]["nginx"]["reuseport"] is False
    kept = json.dumps(nginx, sort_keys=True)
    assert spec.config_id(nginx) == before[0]
    assert json.dumps(nginx, sort_keys=True) == kept
    for key, value in (("reuseport", True), ("keepalive_timeout_s", 3600), ("open_file_cache", 1000)):
        changed = json.loads(kept)
        changed["server"]["nginx"][key] = value
        assert spec.config_id(changed) != before[0], key
