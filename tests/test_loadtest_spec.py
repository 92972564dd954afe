"""Load-test specs (`wirelab loadtest SPEC.toml`): the loadtest spec's one definition is the contract's
JSON Schema (schemas/loadtest-spec.schema.json); the control plane reports the same field and words for
a bad spec as the engine, fills the same defaults, and plans grid points × protocols."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wirelab import _contract as contract

ROOT = Path(__file__).resolve().parent.parent
CASES = json.loads((ROOT / "testdata" / "loadtest_spec_errors.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["field"] for c in CASES])
def test_same_field_and_words_as_the_engine(case):
    found = contract.problem("loadtest-spec", case["spec"])
    assert found is not None
    assert found.field == case["field"]
    assert found.allowed == case["allowed"]
    if "value" in case:
        assert found.value == case["value"]


def test_defaults_follow_references_into_the_trial_spec():
    """The lab's fields are the trial spec's (urn:…trial-spec…#/…): their defaults come from there."""
    spec = {"protocol": "h2", "page": "neoload50", "server": {"impl": "apache"}, "scenario": {"stages": []}}
    filled = contract.apply_defaults("loadtest-spec", spec)
    trial = contract.load_schema("trial-spec")["$defs"]["fields"]["properties"]
    server_defaults = {k: v["default"] for k, v in trial["server"]["properties"].items() if "default" in v}
    assert filled["server"] == {**server_defaults, "impl": "apache"}
    assert (
        filled["client"]["max_connections_per_origin"]
        == (trial["client"]["properties"]["max_connections_per_origin"]["default"])
    )
    own = contract.load_schema("loadtest-spec")["properties"]
    assert filled["think"]["mean_s"] == own["think"]["properties"]["mean_s"]["default"]
    assert filled["sla"] == {k: v["default"] for k, v in own["sla"]["properties"].items()}
    assert spec["server"] == {"impl": "apache"}  # a copy: the input is left alone


# --- the load-test spec: [sweep], [load], [grid] → runs -------------------------------------------

from wirelab import _loadplan as loadplan  # noqa: E402
from wirelab.errors import SpecError  # noqa: E402

SPEC = """
[sweep]
name = "cap"
[load]
page = "neoload50"
protocols = ["h1s", "h2"]
network = { preset = "neoload" }
server = { impl = "apache", apache = { mpm = "worker" } }
scenario = { stages = [{ duration_s = 20, target = 10 }] }
"""


def test_runs_are_grid_points_times_protocols_in_running_order():
    plan = loadplan.loads(SPEC + '[grid]\n"server.apache.threads_per_child" = [25, 50]\n')
    assert [(r.point, r.protocol) for r in plan.runs] == [(0, "h1s"), (0, "h2"), (1, "h1s"), (1, "h2")]
    assert [r.params for r in plan.runs[::2]] == [
        {"server.apache.threads_per_child": 25},
        {"server.apache.threads_per_child": 50},
    ]
    assert plan.axes == ["server.apache.threads_per_child"] and plan.protocols == ["h1s", "h2"]
    for run in plan.runs:
        assert run.spec["protocol"] == run.protocol and run.spec["loadtest_id"] == run.id
        assert "protocols" not in run.spec
        contract.validate("loadtest-spec", run.spec)
        assert run.resolved["think"]["mean_s"] == 5  # the schema's default
        assert run.planned_s == 20
    # the server table is the trial's: its defaults filled, only the implementation's table kept
    assert plan.runs[0].spec["server"]["apache"]["threads_per_child"] == 25
    assert plan.runs[0].spec["network"] == "neoload"
    assert len({r.id for r in plan.runs}) == 4


def test_ids_are_stable_and_ignore_written_defaults():
    a = loadplan.loads(SPEC)
    b = loadplan.loads(
        SPEC.replace('mpm = "worker"', 'mpm = "worker", start_servers = 0') + "interval_s = 10.0\n"
    )
    assert [r.id for r in a.runs] == [r.id for r in b.runs] and a.spec_hash == b.spec_hash
    c = loadplan.loads(SPEC + "interval_s = 30\n")
    assert {r.id for r in c.runs}.isdisjoint(r.id for r in a.runs)


def test_ids_stored_before_max_rps_are_kept():
    # ids computed on main before limits.max_rps existed: a stored sweep resumes without running again
    spec = {
        "page": "neoload50",
        "protocol": "h2",
        "scenario": {"start": 1, "stages": [{"duration_s": 10, "target": 2}]},
    }
    assert loadplan.loadtest_id(spec) == "lda361c25a8eb55e"
    assert loadplan.loadtest_id({**spec, "limits": {"max_vus": 50}}) == "l072fe0ac38ad885"
    assert loadplan.loadtest_id({**spec, "limits": {"max_rps": 0}}) == "lda361c25a8eb55e"
    assert loadplan.loadtest_id({**spec, "limits": {"max_rps": 400}}) != "lda361c25a8eb55e"


def test_network_table_and_grid_keys_make_one_profile():
    plan = loadplan.loads(
        SPEC.replace('{ preset = "neoload" }', '{ preset = "neoload", loss = "0%" }')
        + '[grid]\n"network.rtt" = ["20ms", "100ms"]\n'
    )
    assert [r.spec["network"] for r in plan.runs[::2]] == [
        "neoload,loss=0%,rtt=20ms",
        "neoload,loss=0%,rtt=100ms",
    ]


def test_protocols_may_be_an_axis_and_ranges_use_the_schemas_types():
    plan = loadplan.loads(
        SPEC.replace('protocols = ["h1s", "h2"]\n', "")
        + '[grid]\nprotocols = [["h1"], ["h1s", "h2"]]\n"think.mean_s" = { from = 1, to = 2, step = 0.5 }\n'
    )
    assert [r.protocol for r in plan.runs] == ["h1"] * 3 + ["h1s", "h2"] * 3
    assert [r.spec["think"]["mean_s"] for r in plan.runs[:3]] == [1.0, 1.5, 2.0]
    with pytest.raises(SpecError, match=r"^grid\.limits\.max_vus\.from: 0\.5 is not an integer"):
        loadplan.loads(SPEC + '[grid]\n"limits.max_vus" = { from = 0.5, to = 2, step = 1 }\n')
    with pytest.raises(SpecError, match="a range needs a numeric or unit-bearing field, and sla.statistic"):
        loadplan.loads(SPEC + '[grid]\n"sla.statistic" = { from = 1, to = 2, step = 1 }\n')


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("think = { mean_s = -1 }\n", "load.think.mean_s: got -1; must be a number 0–3600"),
        (
            '[grid]\n"think.mean_s" = [1, -2]\n',
            "grid.think.mean_s[1]: got -2; must be a number 0–3600",
        ),
        (
            '[grid]\n"server.apache.mpm" = ["worker", "evnt"]\n',
            'grid.server.apache.mpm[1]: got "evnt"; did you mean event? must be event, worker or prefork',
        ),
        (
            '[grid]\n"scenario.stages" = [[{ duration_s = 20, target = 10 }],'
            " [{ duration_s = 0, target = 1 }]]\n",
            "grid.scenario.stages[1][0].duration_s: got 0; must be a number > 0 and ≤ 604800",
        ),
        (
            '[grid]\n"scenario.model" = ["closed", "open"]\n',
            "load.scenario.stages[0].target: got 10; closed model only (open: rate)",
        ),
        ('[grid]\nprotocol = ["h1"]\n', "grid.protocol: protocol is set by wirelab from protocols"),
        (
            '[grid]\nprotocols = [["h1"], ["h2", "h2"]]\n',
            r'grid.protocols[1][1]: got "h2"; listed twice',
        ),
        (
            '[grid]\n"think.mean" = [1]\n',
            "grid.think.mean: 'think.mean' is not a field of load; did you mean think.mean_s?",
        ),
        ('[grid]\n"network.rtt" = ["10ms", "10"]\n', 'grid.network.rtt[1]: "10" has no unit'),
        (
            '[grid]\n"think.mean_s" = [1, 1.0]\n',
            "grid: runs 0 (h1s think.mean_s=1) and 2 (h1s think.mean_s=1.0) are the same",
        ),
        (
            'protocol = "h2"\n',
            "load.protocol: is set by wirelab from protocols (each protocol runs in turn); leave it out",
        ),
        ('loadtest_id = "x"\n', "load.loadtest_id: is set by wirelab"),
        ('netwrk = "x"\n', "load.netwrk: unknown field; did you mean network?"),
        ("think = { mean_s = inf }\n", "load.think.mean_s: inf is not allowed; use a finite number"),
        (
            'thresholds = ["pages_per_s"]\n',
            'load.thresholds[0]: got "pages_per_s"; must be METRIC OP NUMBER',
        ),
    ],
)
def test_bad_values_are_named_where_they_are_written(extra, message):
    text = SPEC.replace("[load]\n", "[load]\n" + extra) if not extra.startswith("[grid]") else SPEC + extra
    with pytest.raises(SpecError) as info:
        loadplan.loads(text)
    assert str(info.value).startswith(message), str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[sweep]\nname = "x"\n[base]\npage = "twitter"\n', "base: is not a table of a load-test spec"),
        ('[sweep]\nname = "x"\n', "load: is missing; a load-test spec has [sweep] and [load]"),
        (
            '[sweep]\nname = "x"\n[load]\nprotocols = ["h2"]\n'
            "scenario = { stages = [{ duration_s = 1, target = 1 }] }\n",
            "load.page: required: the page the server under test serves",
        ),
        ('[sweep]\nname = "x"\n[load]\npage = "p"\n', "load.protocols: is missing"),
        ('[sweep]\nname = "x"\n[load]\npage = "p"\nprotocols = []\n', "load.protocols: got []"),
        (
            '[sweep]\nname = "x"\n[load]\npage = "p"\nprotocols = ["h2", "h4"]\n',
            'load.protocols[1]: got "h4"; did you mean h1? must be h1, h1s, h2, h2c, h3 or spdy3',
        ),
        ('[sweep]\nname = "x"\n[load]\npage = "p"\nprotocols = ["h2"]\n', "load.scenario: required"),
        ('[sweep]\nname = "Bad Name"\n[load]\n', 'sweep.name: "Bad Name" is not allowed'),
        ("[sweep\n", "spec: TOML syntax error"),
    ],
)
def test_bad_tables(text, message):
    with pytest.raises(SpecError) as info:
        loadplan.loads(text)
    assert str(info.value).startswith(message), str(info.value)


def test_is_loadtest(tmp_path):
    (tmp_path / "l.toml").write_text(SPEC)
    (tmp_path / "t.toml").write_text('[sweep]\nname = "x"\n[base]\npage = "twitter"\n')
    assert loadplan.is_loadtest(tmp_path / "l.toml") and not loadplan.is_loadtest(tmp_path / "t.toml")
    assert not loadplan.is_loadtest(tmp_path / "missing.toml")


_TARGET_TOML = """
[sweep]
name = "staging"
[load]
protocols = ["h2"]
network = { preset = "neoload" }
scenario = { stages = [{ duration_s = 60, target = 10 }] }
[load.target]
url = "https://staging.example.com/"
resolve = { "staging.example.com" = "10.20.0.5" }
"""


def test_target_without_page_and_the_flag_only_from_the_command_line():
    from wirelab import _loadplan as loadplan
    from wirelab.errors import SpecError

    plain = loadplan.loads(_TARGET_TOML)
    flagged = loadplan.loads(_TARGET_TOML, allow_internet=True)
    assert plain.runs[0].spec["target"]["url"] == "https://staging.example.com/"
    assert "allow_internet" not in plain.runs[0].spec
    assert flagged.runs[0].spec["allow_internet"] is True
    assert plain.runs[0].id == flagged.runs[0].id  # the flag is the command line's, not the test's
    with pytest.raises(SpecError, match=r"load.allow_internet: is set only by --allow-internet"):
        loadplan.loads(_TARGET_TOML.replace("[load.target]", "allow_internet = true\n[load.target]"))
    with pytest.raises(SpecError, match=r"load.page"):
        loadplan.loads(
            _TARGET_TOML.replace('url = "https://staging.example.com/"\n', "")
            .replace("[load.target]\n", "")
            .replace('resolve = { "staging.example.com" = "10.20.0.5" }\n', "")
        )


def test_report_says_when_the_server_side_was_not_measured():
    import pandas as pd

    from wirelab.report._capacity import target_notes

    runs = pd.DataFrame(
        {
            "spec": [
                {"target": {"url": "https://a.example/"}},
                {
                    "target": {
                        "url": "https://b.example/",
                        "status_url": "https://b.example/server-status?auto",
                    }
                },
                {"page": "neoload50"},
            ]
        }
    )
    notes = target_notes(runs)
    assert len(notes) == 2
    assert "https://a.example/: the server side was not measured" in notes[0]
    assert "measured only through its status page https://b.example/server-status?auto (apache)" in notes[1]
