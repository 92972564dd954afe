"""The report's figure policy (wirelab.report._choose) on its own: the limits it names."""

from wirelab.report import _choose as choose


def test_phase_values_spread_over_the_axis():
    values = list(range(20))
    picked = choose.phase_values(values)
    assert len(picked) == choose.MAX_PHASE_BARS
    assert picked[0] == 0 and picked[-1] == 19 and picked == sorted(picked)
    assert choose.phase_values([1, 2, 3]) == [1, 2, 3]


def test_phase_groups_beyond_the_limit_are_left_to_the_table():
    groups = [("p", i) for i in range(5)]
    shown, notes = choose.phase_groups(groups)
    assert shown == groups[: choose.MAX_GROUPS]
    assert notes == [f"Phase bars drawn for the first {choose.MAX_GROUPS} of 5 series; the table has all."]
    assert choose.phase_groups(groups[:2]) == (groups[:2], [])


def test_waterfall_and_tree_limits():
    protocols = ["h1", "h1s", "h2", "h3"]
    assert choose.waterfall_protocols(protocols) == protocols[: choose.MAX_WATERFALLS]
    assert choose.tree_protocol(choose.MIN_TREE_CONFIGS)
    assert not choose.tree_protocol(choose.MIN_TREE_CONFIGS - 1)
