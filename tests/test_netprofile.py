"""The profile grammar against the golden cases shared with the engine (testdata/netprofile_golden.json)."""

import json
import math
from pathlib import Path

import pytest

from wirelab import _facts
from wirelab import _netprofile as netprofile
from wirelab.errors import ProfileError

GOLDEN = json.loads((Path(__file__).parent.parent / "testdata" / "netprofile_golden.json").read_text())


def _assert_same(got, want, where="resolved"):
    if isinstance(want, dict):
        assert isinstance(got, dict), where
        assert sorted(got) == sorted(want), f"{where}: keys {sorted(got)} != {sorted(want)}"
        for k in want:
            _assert_same(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, float) or isinstance(got, float):
        assert isinstance(got, int | float) and not isinstance(got, bool), where
        assert math.isclose(got, want, rel_tol=0, abs_tol=1e-12), f"{where}: {got} != {want}"
    else:
        assert type(got) is type(want), f"{where}: {got!r} is {type(got).__name__}, want {want!r}"
        assert got == want, f"{where}: {got!r} != {want!r}"


@pytest.mark.parametrize("case", GOLDEN["ok"], ids=[c["input"] or "<empty>" for c in GOLDEN["ok"]])
def test_golden_ok(case):
    _assert_same(netprofile.parse(case["input"]), case["resolved"])


def test_resolved_forms_follow_the_trial_spec_schema():
    """Every golden resolved form (each discipline's defaults and automatic values among them) is valid
    as the trial spec's network_resolved."""
    import jsonschema

    from wirelab._contract import load_schema

    schema = load_schema("trial-spec")
    check = jsonschema.Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/network_resolved"})
    names = list(_facts.disciplines())
    cases = [c["resolved"] for c in GOLDEN["ok"]]
    cases += [netprofile.parse(f"bw=10mbit,queue={n}") for n in names]
    for resolved in cases:
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in check.iter_errors(resolved)]
        assert not errors, resolved


@pytest.mark.parametrize("case", GOLDEN["errors"], ids=[c["input"] for c in GOLDEN["errors"]])
def test_golden_errors(case):
    """Every error is the engine's, word for word: the golden message is the one link/profile prints."""
    with pytest.raises(ProfileError) as info:
        netprofile.parse(case["input"])
    assert str(info.value) == case["message"]
    assert info.value.field == case["field"]


@pytest.mark.parametrize("preset", list(_facts.presets().values()), ids=lambda p: p.name)
def test_presets_resolve_as_the_engine_resolves_them(preset):
    """Every preset is the engine's (wirelab/_engine_facts.json), and Python resolves it to the engine's
    resolved form."""
    assert netprofile.PRESETS[preset.name] == (preset.expansion, preset.about)
    _assert_same(netprofile.parse(preset.name), preset.resolved)


def test_keys_and_units_are_the_engines():
    assert set(netprofile.KEYS) == set(_facts.profile_keys())
    assert list(netprofile.PRESETS) == list(_facts.presets())
    assert netprofile.parse_queue("64KiB") == {"packets": 0, "bytes": 64 * 1024}
    for not_a_size in ("64KB", "64kb"):
        with pytest.raises(ProfileError):
            netprofile.parse_queue(not_a_size)


def test_error_is_prefixed_with_the_spec_path():
    with pytest.raises(ProfileError) as info:
        netprofile.parse("bw=1mbit,rtt=150", path="base.network")
    assert str(info.value).startswith('base.network.rtt: "150" has no unit;')
    assert info.value.field == "base.network.rtt"


def test_a_key_or_preset_a_spec_writes_alone_is_checked_as_in_a_profile():
    """A spec's table of keys and its network.preset axis get the grammar's own errors, at their path."""
    with pytest.raises(ProfileError) as info:
        netprofile.check_key("rttt", path="base.network", also=("preset",))
    assert str(info.value).startswith(
        'base.network.rttt: "rttt" is not a known key; did you mean rtt? keys are preset, rtt,'
    )
    with pytest.raises(ProfileError) as info:
        netprofile.check_preset("CABLE", path="grid.network.preset[1]")
    assert str(info.value).startswith(
        'grid.network.preset[1]: "CABLE" is not a known preset; did you mean cable?'
    )
    netprofile.check_key("rtt")
    netprofile.check_preset("cable")


def test_an_error_in_a_spec_names_the_whole_profile_by_its_path():
    with pytest.raises(ProfileError) as info:
        netprofile.parse("rtt=1ms,,bw=1mbit", path="base.network")
    assert info.value.field == "base.network"
    assert str(info.value).startswith('base.network: "rtt=1ms,,bw=1mbit" has an empty item (item 2 of 3);')


@pytest.mark.parametrize(
    ("value", "quoted"),
    [
        ('a"b', '"a\\"b"'),
        ("tab\there", '"tab\\there"'),
        ("\x01", '"\\x01"'),
        ("\u00a0", '"\\u00a0"'),
        ("é", '"é"'),
    ],
)
def test_values_are_quoted_as_the_engine_quotes_them(value, quoted):
    """strconv.Quote's escapes, so that a message with any value is the engine's to the byte."""
    assert netprofile._quote(value) == quoted


def test_a_long_value_is_cut_as_the_engine_cuts_it():
    with pytest.raises(ProfileError) as info:
        netprofile.parse("rtt=" + "é" * 150)
    shown = str(info.value).split(" ", 2)[1]
    assert shown.endswith('\\xc3..."') and len(shown.encode()) == 2 + 196 + 4 + 3


@pytest.mark.parametrize(
    ("ns", "text"),
    [(0, "0"), (150_000_000, "150ms"), (1_500_000_000, "1.5s"), (250_000, "250us"), (3, "0.003us")],
)
def test_format_duration_round_trips(ns, text):
    assert netprofile.format_duration(ns) == text
    assert netprofile.parse_duration(text) == ns


@pytest.mark.parametrize(
    ("bps", "text"), [(0, "unlimited"), (10_000_000, "10mbit"), (1_500_000, "1.5mbit"), (64_000, "64kbit")]
)
def test_format_rate_round_trips(bps, text):
    assert netprofile.format_rate(bps) == text
    assert netprofile.parse_rate(text) == bps
