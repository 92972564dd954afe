"""Load-test specs (`wirelab loadtest SPEC.toml`): the loadtest spec's one definition is the contract's
JSON Schema (schemas/loadtest-spec.schema.json); the control plane reports the same field and words for
a bad spec as the engine, fills the same defaults, and plans grid points × protocols."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wirelab import contract

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
    assert filled["client"]["max_connections_per_origin"] == (
        trial["client"]["properties"]["max_connections_per_origin"]["default"]
    )
    own = contract.load_schema("loadtest-spec")["properties"]
    assert filled["think"]["mean_s"] == own["think"]["properties"]["mean_s"]["default"]
    assert filled["sla"] == {k: v["default"] for k, v in own["sla"]["properties"].items()}
    assert spec["server"] == {"impl": "apache"}  # a copy: the input is left alone
