"""Analysis functions on small hand-made data with known answers."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from wirelab import analysis
from wirelab.analysis import conclusions
from wirelab.analysis.stats import rng_for
from wirelab.analysis.sweep import Axis
from wirelab.errors import UsageError


def loads_frame(rows):
    """Minimal load rows: (trial_id, protocol, repetition, tow_ms[, plt_ms])."""
    out = []
    for r in rows:
        trial_id, protocol, rep, tow = r[:4]
        out.append(
            {
                "trial_id": trial_id,
                "protocol": protocol,
                "repetition": rep,
                "tow_ms": float(tow),
                "plt_ms": float(r[4] if len(r) > 4 else tow),
                "error": None,
            }
        )
    return pd.DataFrame(out)


# --- gain, CI -------------------------------------------------------------------------------------


def test_gain_is_the_reduction_of_the_means():
    assert analysis.gain_pct([100, 100], [80, 80]) == pytest.approx(20.0)
    assert analysis.gain_pct([100, 300], [150, 150]) == pytest.approx(25.0)  # means 200 and 150
    assert analysis.gain_pct([100], [120]) == pytest.approx(-20.0)
    assert math.isnan(analysis.gain_pct([], [1.0]))


def test_gain_table_per_configuration():
    rows = [("a", "h1s", i, 1000 + i) for i in range(4)] + [("a", "h2", i, 750 + i) for i in range(4)]
    rows += [("b", "h1s", i, 200) for i in range(3)] + [("b", "h2", i, 220) for i in range(3)]
    table = analysis.gain(loads_frame(rows), ["trial_id"], "h1s", "h2").set_index("trial_id")
    assert table.loc["a", "gain_pct"] == pytest.approx((1001.5 - 751.5) / 1001.5 * 100)
    assert table.loc["b", "gain_pct"] == pytest.approx(-10.0)
    assert table.loc["b", "ci_low"] == pytest.approx(-10.0) and table.loc["b", "ci_high"] == pytest.approx(
        -10.0
    )
    assert (table["n"] == [4, 3]).all() and (table["n_base"] == [4, 3]).all()


def test_loads_with_errors_are_left_out():
    frame = loads_frame([("a", "h1s", 0, 100), ("a", "h1s", 1, 5000), ("a", "h2", 0, 50)])
    frame.loc[1, "error"] = "timeout"
    assert analysis.gain(frame, ["trial_id"], "h1s", "h2")["gain_pct"].iloc[0] == pytest.approx(50.0)
    described = analysis.describe(frame, ["trial_id", "protocol"]).set_index("protocol")
    assert described.loc["h1s", "n"] == 1 and described.loc["h1s", "errors"] == 1


def test_bootstrap_ci_contains_the_true_mean_and_is_seeded():
    rng = np.random.default_rng(1)  # a fixed sample; coverage in general is the next test's subject
    sample = rng.normal(100.0, 10.0, size=40)
    low, high = analysis.bootstrap_ci(sample, seed=1, key="x")
    assert low < sample.mean() < high
    assert low < 100.0 < high
    assert (low, high) == analysis.bootstrap_ci(sample, seed=1, key="x")
    assert (low, high) != analysis.bootstrap_ci(sample, seed=2, key="x")


def test_bootstrap_ci_coverage_is_near_95_percent():
    rng = np.random.default_rng(11)
    hits = 0
    trials = 300
    for i in range(trials):
        low, high = analysis.bootstrap_ci(rng.normal(50.0, 5.0, size=30), seed=3, key=i, n_boot=1000)
        hits += low <= 50.0 <= high
    assert 0.88 <= hits / trials <= 0.99


def test_bootstrap_ci_is_scipys_bca():
    """The interval is scipy.stats.bootstrap's BCa interval, with the generator seeded per key."""
    sample = np.array([812.0, 790.5, 901.2, 850.0, 799.9, 1020.3, 845.1])
    got = analysis.bootstrap_ci(sample, "median", seed=4, key="k", n_boot=500)
    want = sps.bootstrap(
        [sample], np.median, n_resamples=500, method="BCa", vectorized=True, rng=rng_for(4, "k")
    ).confidence_interval
    assert got == pytest.approx((want.low, want.high))
    assert analysis.BOOTSTRAP_METHOD == "BCa"


def test_bootstrap_edge_cases():
    assert all(np.isnan(analysis.bootstrap_ci([])))
    assert analysis.bootstrap_ci([7.0]) == (7.0, 7.0)
    assert analysis.bootstrap_ci([7.0, 7.0, 7.0], "median") == (7.0, 7.0)
    # a sample of one is a constant in the gain: only the other side is resampled
    low, high = analysis.gain_ci([100.0], [80.0, 85.0, 90.0], seed=0, key="one")
    assert 10.0 <= low <= 15.0 <= high <= 20.0
    assert analysis.gain_ci([100.0, 100.0], [80.0, 80.0]) == (20.0, 20.0)
    # BCa undefined (every resample on one side of the estimate): the percentile interval instead
    low, high = analysis.bootstrap_ci([1.0, 1.0, 1.0, 1.0, 9.0], "median", seed=0, key="ties")
    assert np.isfinite(low) and np.isfinite(high) and low <= 1.0 <= high


def test_gain_ci_contains_the_true_gain():
    rng = np.random.default_rng(5)
    true_gain = 20.0  # means 1000 and 800
    hits = 0
    for i in range(100):
        base, x = rng.normal(1000, 50, 20), rng.normal(800, 40, 20)
        low, high = analysis.gain_ci(base, x, seed=0, key=i, n_boot=1000)
        hits += low <= true_gain <= high
    assert hits >= 88
    low, high = analysis.gain_ci(rng.normal(1000, 50, 20), rng.normal(800, 40, 20), seed=0, key="one")
    assert low < true_gain < high and high - low < 10


def test_describe_numbers():
    frame = loads_frame([("a", "h2", i, v) for i, v in enumerate([10, 20, 30, 40, 100])])
    row = analysis.describe(frame, ["trial_id", "protocol"]).iloc[0]
    assert (row["n"], row["mean"], row["median"], row["min"], row["max"]) == (5, 40.0, 30.0, 10.0, 100.0)
    assert row["ci_low"] <= 40.0 <= row["ci_high"]
    assert row["median_ci_low"] <= 30.0 <= row["median_ci_high"]


def test_ecdf():
    xs, ys = analysis.ecdf([3.0, 1.0, 2.0, float("nan")])
    assert list(xs) == [1.0, 2.0, 3.0] and list(ys) == pytest.approx([1 / 3, 2 / 3, 1.0])


# --- Mann–Whitney, ratios ---------------------------------------------------------------------------


def test_mann_whitney_matches_scipy():
    rng = np.random.default_rng(3)
    base, x = rng.normal(100, 10, 12), rng.normal(92, 10, 15)
    u, p = analysis.mann_whitney_test(base, x)
    expected = sps.mannwhitneyu(x, base, alternative="two-sided")
    assert u == pytest.approx(expected.statistic) and p == pytest.approx(expected.pvalue)
    rows = [("a", "h1s", i, v) for i, v in enumerate(base)] + [("a", "h2", i, v) for i, v in enumerate(x)]
    table = analysis.mann_whitney(loads_frame(rows), ["trial_id"], "h1s", "h2")
    assert table["p_value"].iloc[0] == pytest.approx(expected.pvalue)


def test_mann_whitney_edge_cases():
    assert analysis.mann_whitney_test([5, 5, 5], [5, 5]) == (3.0, 1.0)
    assert all(math.isnan(v) for v in analysis.mann_whitney_test([], [1, 2]))


def test_smallest_possible_p_value():
    assert analysis.min_p_value(3, 3) == pytest.approx(0.1)
    separated = analysis.mann_whitney_test([10, 11, 12], [1, 2, 3])[1]
    assert separated == pytest.approx(analysis.min_p_value(3, 3))
    assert analysis.min_p_value(5, 5) < 0.05


@pytest.mark.parametrize(
    ("s", "cls"),
    [(0.5, "better"), (0.8999, "better"), (0.9, "equal"), (1.0, "equal"), (1.1, "equal"), (1.1001, "worse")],
)
def test_ratio_classes_thresholds(s, cls):
    assert analysis.classify_ratio(s) == cls


def test_ratio_uses_medians():
    rows = [("a", "h1", i, 0, v) for i, v in enumerate([100, 100, 1000])]
    rows += [("a", "h2c", i, 0, v) for i, v in enumerate([85, 85, 10])]
    row = analysis.ratio_classes(loads_frame(rows), ["trial_id"], "h1", "h2c").iloc[0]
    assert row["s"] == pytest.approx(0.85) and row["cls"] == "better"


def test_compare_merges_everything():
    rows = [("a", "h1s", i, 100 + i) for i in range(6)] + [("a", "h2", i, 50 + i) for i in range(6)]
    rows += [("a", "h3", i, 100 + i) for i in range(6)]
    table = analysis.compare(loads_frame(rows), ["trial_id"], "h1s", ["h1s", "h2", "h3"]).set_index(
        "protocol"
    )
    assert list(table.index) == ["h2", "h3"]
    assert table.loc["h2", "gain_pct"] == pytest.approx(50 / 102.5 * 100)
    assert bool(table.loc["h2", "significant"]) and not bool(table.loc["h3", "significant"])
    assert table.loc["h3", "cls"] == "equal"


# --- phases, gateway ---------------------------------------------------------------------------------


def test_phase_shares_count_ssl_once():
    frame = pd.DataFrame(
        [
            {
                "trial_id": "a",
                "protocol": "h1s",
                "error": None,
                "dns_ms": 10,
                "connect_ms": 30,
                "ssl_ms": 10,
                "send_ms": 0,
                "wait_ms": 40,
                "receive_ms": 20,
                "blocked_ms": 0,
            },
        ]
    )
    shares = analysis.phase_shares(frame, ["trial_id", "protocol"]).iloc[0]
    assert shares["total_ms"] == pytest.approx(100.0)  # dns 10 + tcp 20 + ssl 10 + wait 40 + receive 20
    assert shares["connect"] == pytest.approx(0.2) and shares["ssl"] == pytest.approx(0.1)
    assert "send" not in shares and "blocked" not in shares  # zero everywhere: left out


def test_rtt_inflation_from_har_timings():
    objects = pd.DataFrame(
        [
            {
                "trial_id": "t",
                "load_index": 0,
                "started_ms": 0,
                "connect_ms": 200,
                "ssl_ms": 100,
                "wait_ms": 100,
            },
            {
                "trial_id": "t",
                "load_index": 0,
                "started_ms": 300,
                "connect_ms": None,
                "ssl_ms": None,
                "wait_ms": 150,
            },
            {
                "trial_id": "t",
                "load_index": 0,
                "started_ms": 301,
                "connect_ms": None,
                "ssl_ms": None,
                "wait_ms": 160,
            },
            {
                "trial_id": "t",
                "load_index": 0,
                "started_ms": 302,
                "connect_ms": None,
                "ssl_ms": None,
                "wait_ms": 400,
            },
        ]
    )
    row = analysis.rtt_inflation(objects).iloc[0]
    assert row["idle_rtt_ms"] == pytest.approx(100.0)
    assert row["loaded_ttfb_ms"] == pytest.approx(160.0)
    assert row["rtt_inflation_ms"] == pytest.approx(60.0)


def test_queue_delay_bound():
    emulator = {"down": {"max_queue_packets": 10}}
    spec = {"network_resolved": {"down": {"rate_bps": 1_000_000}}}
    assert analysis.queue_delay_bound_ms(emulator, spec) == pytest.approx(120.0)
    assert math.isnan(
        analysis.queue_delay_bound_ms(emulator, {"network_resolved": {"down": {"rate_bps": 0}}})
    )


def test_gateway_effects_means():
    frame = pd.DataFrame(
        [
            {
                "trial_id": "a",
                "load_index": i,
                "protocol": "h1s",
                "error": None,
                "retransmissions": r,
                "drops_queue": q,
                "drops_loss": 0,
                "packets_down": 90,
                "packets_up": 10,
                "connections": 6,
                "body_bytes": 125_000,
                "plt_ms": 1000.0,
            }
            for i, (r, q) in enumerate([(2, 1), (4, 3)])
        ]
    )
    row = analysis.gateway_effects(frame, ["trial_id", "protocol"]).iloc[0]
    assert row["retransmissions"] == 3 and row["drops_queue"] == 2
    assert row["retransmission_pct"] == pytest.approx(3.0) and row["throughput_mbit"] == pytest.approx(1.0)
    assert "sojourn_down_p95_ms" not in row  # loads stored before the gateway columns
    frame = frame.assign(drops_aqm=[1, 3], sojourn_down_p95_ms=[4.0, 6.0], marks=float("nan"))
    row = analysis.gateway_effects(frame, ["trial_id", "protocol"]).iloc[0]
    assert row["drops_aqm"] == 2 and row["sojourn_down_p95_ms"] == pytest.approx(5.0)
    assert "marks" not in row  # none of the loads has it


# --- decision tree ------------------------------------------------------------------------------------


def test_tree_splits_on_the_one_informative_factor():
    rng = np.random.default_rng(0)
    n = 60
    data = pd.DataFrame(
        {
            "rtt": rng.choice([20, 100, 200], n).astype(float),
            "loss": rng.choice([0, 0.5, 1, 2], n).astype(float),
            "objects": rng.choice([2, 8, 32, 128], n).astype(float),
        }
    )
    data["cls"] = np.where(data["rtt"] > 60, "better", "worse")
    tree = analysis.fit_tree(data, ["rtt", "loss", "objects"])
    assert tree.root.feature == "rtt" and 20 < tree.root.threshold < 100
    assert tree.importances["rtt"] == pytest.approx(1.0)
    assert tree.top_factors() == ["rtt"]
    assert all(leaf.label is not None and leaf.likelihood == 1.0 for leaf in tree.leaves())
    assert tree.accuracy == 1.0


def test_tree_labels_only_likely_nodes():
    # one factor, depth 1: the right leaf is 70 % "better" and must stay unlabelled (≤ 0.75)
    data = pd.DataFrame(
        {"rtt": [10.0] * 10 + [200.0] * 10, "cls": ["worse"] * 10 + ["better"] * 7 + ["equal"] * 3}
    )
    tree = analysis.fit_tree(data, ["rtt"], max_depth=1)
    left, right = tree.nodes[tree.root.left], tree.nodes[tree.root.right]
    assert left.label == "worse" and left.likelihood == 1.0
    assert right.label is None and right.majority == "better" and right.likelihood == pytest.approx(0.7)
    rules = dict((cond, leaf.label) for cond, leaf in tree.rules({"rtt": "RTT"}))
    assert rules == {"RTT ≤ 105": "worse", "RTT > 105": None}


def test_tree_needs_a_varying_factor():
    with pytest.raises(UsageError, match="at least one factor that varies"):
        analysis.fit_tree(pd.DataFrame({"rtt": [1.0, 1.0], "cls": ["better", "worse"]}), ["rtt"])


# --- streams needed, m ≈ r/k ------------------------------------------------------------------------


def test_streams_needed_is_the_smallest_winning_value():
    gains = pd.DataFrame(
        {
            "page": ["p"] * 4 + ["q"] * 4,
            "network.rtt_ms": [100.0] * 8,
            "server.max_concurrent_streams": [1, 2, 4, 8] * 2,
            "gain_pct": [-10, -5, 3, 8, -9, -8, -7, -1],
            "resources": [8] * 4 + [50] * 4,
        }
    )
    points = analysis.streams_needed(gains).set_index("page")
    assert points.loc["p", "m"] == 4 and points.loc["p", "r"] == 8
    assert math.isnan(points.loc["q", "m"]) and points.loc["q", "tested"] == 4


def test_m_vs_r_regression_slope():
    points = pd.DataFrame({"r": [8.0, 20.0, 40.0, 80.0], "m": [2.0, 5.0, 10.0, 20.0]})
    fit = analysis.fit_m_vs_r(points)
    assert fit.slope == pytest.approx(0.25) and fit.k == pytest.approx(4.0) and fit.r2 == pytest.approx(1.0)
    noisy = pd.DataFrame({"r": [7.0, 50.0, 133.0, 7.0, 50.0, 133.0], "m": [2.0, 12.0, 35.0, 3.0, 14.0, 32.0]})
    fit = analysis.fit_m_vs_r(noisy)
    expected = (noisy["r"] * noisy["m"]).sum() / (noisy["r"] ** 2).sum()
    assert fit.slope == pytest.approx(expected) and 0.9 < fit.r2 < 1.0 and fit.n == 6 and fit.pages == 3
    assert analysis.fit_m_vs_r(pd.DataFrame({"r": [5.0], "m": [float("nan")]})) is None


# --- sweeps and sentences ---------------------------------------------------------------------------


def test_parse_synthetic():
    assert analysis.parse_synthetic("synthetic:64x10kB") == (64, 10_000.0)
    assert analysis.parse_synthetic("synthetic:2x1MB") == (2, 1_000_000.0)
    assert analysis.parse_synthetic("synthetic:8x100B") == (8, 100.0)
    assert analysis.parse_synthetic("synthetic:4x2KiB,html=20kB") == (4, 2048.0)
    assert analysis.parse_synthetic("twitter") is None
    # the engine's units only: KB is ambiguous and a bare number is not a size (the engine refuses both)
    for not_a_size in ("synthetic:4x10KB", "synthetic:4x10", "synthetic:4x10 kB", "synthetic:4x10kb"):
        assert analysis.parse_synthetic(not_a_size) is None, not_a_size


def test_gain_sentences_count_and_locate():
    rtt = Axis("network.rtt", "network.rtt_ms", "RTT", "ms", True, (10.0, 50.0, 90.0, 130.0))
    comp = pd.DataFrame(
        {
            "trial_id": list("abcd"),
            "network.rtt_ms": [10.0, 50.0, 90.0, 130.0],
            "protocol": "h2",
            "baseline": "h1s",
            "gain_pct": [-5.0, 2.0, 10.0, 30.0],
            "ci_low": [-8.0, -1.0, 6.0, 25.0],
            "ci_high": [-2.0, 5.0, 14.0, 35.0],
            "p_value": [0.01, 0.4, 0.01, 0.001],
            "significant": [True, False, True, True],
            "n_base": 20,
            "n": 20,
        }
    )
    text = " ".join(conclusions.gain_sentences(comp, [rtt], "h1s", "h2"))
    assert "HTTP/2 beats HTTPS (lower mean ToW) in 3 of 4 RTT settings; significantly" in text
    assert "in 2. HTTPS is significantly faster in 1." in text
    assert "Largest gain: +30.0 % (95 % CI 25.0 to 35.0 %) at RTT 130 ms." in text
    assert "Largest loss: -5.0 %" in text
    assert "HTTP/2 wins from 50 ms up; the gain rises with RTT (Spearman ρ = 1.00)" in text


def test_power_warning_for_three_repetitions():
    comp = pd.DataFrame({"trial_id": ["a"], "gain_pct": [5.0], "n_base": [3], "n": [3]})
    (sentence,) = conclusions.power_sentences(comp)
    assert "With 3 loads per protocol" in sentence and "0.10" in sentence
    assert conclusions.power_sentences(comp.assign(n_base=20, n=20)) == []


def test_log_axes_only_for_geometric_quantities():
    rtt = Axis(
        "network.rtt", "network.rtt_ms", "RTT", "ms", True, tuple(float(v) for v in range(10, 491, 40))
    )
    bw = Axis("network.bw", "network.bw_mbit", "bandwidth", "Mbit/s", True, (0.064, 0.128, 1.0, 8.192))
    narrow = Axis("network.bw", "network.bw_mbit", "bandwidth", "Mbit/s", True, (1.0, 2.0, 4.0))
    assert not rtt.log and bw.log and not narrow.log
    assert rtt.format(130.0) == "130 ms" and bw.format(0.064) == "0.064 Mbit/s"


def test_main_effects_average_the_other_factors():
    rows = [
        {"a": float(a), "b": float(b), "protocol": "h2", "gain_pct": a * 10.0 + 2 * b}
        for a in (1, 2)
        for b in (10, 20)
    ]
    effects = analysis.main_effects(pd.DataFrame(rows), ["a", "b"]).set_index(["factor", "level"])
    assert effects.loc[("a", 1.0), "mean"] == pytest.approx(40.0)  # (30 + 50) / 2
    assert effects.loc[("a", 2.0), "mean"] == pytest.approx(50.0)
    assert effects.loc[("b", 10.0), "mean"] == pytest.approx(35.0)
    assert effects.loc[("b", 20.0), "mean"] == pytest.approx(55.0)
    assert (effects["n"] == 2).all()
    low, high = effects.loc[("a", 1.0), ["ci_low", "ci_high"]]
    assert 30.0 <= low <= 40.0 <= high <= 50.0  # bootstrap of two values: within their range
    a, b = Axis("a", "a", "A", "", True, (1.0, 2.0)), Axis("b", "b", "B", "ms", True, (10.0, 20.0))
    (sentence,) = conclusions.main_effect_sentences(effects.reset_index(), {"a": a, "b": b}, "h1s")
    assert "gain over HTTPS moves most with B: from +35.0 % at 10 ms to +55.0 % at 20 ms" in sentence
    assert "(a spread of 20 points; A 10 for the others)" in sentence


# --- sharding: one categorical axis for shards × shard_mode ------------------------------------------


def test_sharding_labels():
    assert analysis.sweep.sharding_label(1, "round-robin") == "one origin"
    assert analysis.sweep.sharding_label(4, "round-robin") == "round robin over 4 origins"
    assert analysis.sweep.sharding_label(0, "tld") == "per top-level domain"
    assert analysis.sweep.sharding_label(0, "domain") == "per domain"
    assert analysis.sweep.sharding_label(2, "domain") == "domains on 2 origins"
    assert analysis.sweep.sharding_label(1, "tld") == "one origin (tld)"


def _sharding_frames(points):
    """(loads, trials) for configurations (shards, shard_mode), two loads each."""
    trials = pd.DataFrame(
        {
            "trial_id": [f"t{i}" for i in range(len(points))],
            "spec": [{"page": "nytimes", "shards": n, "shard_mode": m} for n, m in points],
        }
    )
    loads = pd.DataFrame(
        [
            {"trial_id": f"t{i}", "shards": n, "shard_mode": m}
            for i, (n, m) in enumerate(points)
            for _ in (0, 1)
        ]
    )
    return loads, trials


def _axes_of(loads, params):
    from wirelab.analysis.sweep import _axis_for

    return [a for p in params for a in _axis_for(p, loads)]


def test_shards_with_shard_mode_fold_into_one_categorical_axis():
    from wirelab.analysis.sweep import SHARDING, _fold_sharding

    # W's zip group: one origin, one per top-level domain, one per domain
    loads, trials = _sharding_frames([(1, "round-robin"), (0, "tld"), (0, "domain")])
    rtt = Axis("network.rtt", "network.rtt_ms", "RTT", "ms", True, (20.0, 200.0))
    axes = _fold_sharding([rtt, *_axes_of(loads, ["shards", "shard_mode"])], loads, trials)
    assert [a.param for a in axes] == ["network.rtt", SHARDING]
    assert not axes[1].numeric and axes[1].values == ("one origin", "per top-level domain", "per domain")
    assert list(loads[SHARDING].drop_duplicates()) == list(axes[1].values)
    # shards 0 with the mode fixed in the base: the same, one axis
    loads, trials = _sharding_frames([(0, "domain"), (2, "domain")])
    (axis,) = _fold_sharding(_axes_of(loads, ["shards"]), loads, trials)
    assert axis.param == SHARDING and axis.values == ("per domain", "domains on 2 origins")
    # E's round-robin shards 1 → 7 stay a number of origins (gain vs shards)
    loads, trials = _sharding_frames([(n, "round-robin") for n in range(1, 8)])
    (axis,) = _fold_sharding(_axes_of(loads, ["shards"]), loads, trials)
    assert axis.param == "shards" and axis.numeric
    # shards × shard_mode without a 0: lines along shards, one per mode
    loads, trials = _sharding_frames([(n, m) for m in ("round-robin", "tld") for n in (1, 2)])
    axes = _fold_sharding(_axes_of(loads, ["shards", "shard_mode"]), loads, trials)
    assert [(a.param, a.numeric) for a in axes] == [("shards", True), ("shard_mode", False)]


def test_main_effects_keep_categorical_levels():
    rows = [
        {"rtt": rtt, "sharding": a, "protocol": "h2c", "gain_pct": g + rtt / 100}
        for rtt in (20.0, 200.0)
        for a, g in (("one origin", 10.0), ("per domain", -10.0))
    ]
    effects = analysis.main_effects(pd.DataFrame(rows), ["rtt", "sharding"]).set_index(["factor", "level"])
    assert effects.loc[("sharding", "one origin"), "mean"] == pytest.approx(11.1)
    assert effects.loc[("sharding", "per domain"), "mean"] == pytest.approx(-8.9)
    assert effects.loc[("rtt", 20.0), "mean"] == pytest.approx(0.2)
    sharding = Axis("sharding", "sharding", "sharding", "", False, ("one origin", "per domain"))
    rtt = Axis("rtt", "rtt", "RTT", "ms", True, (20.0, 200.0))
    (sentence,) = conclusions.main_effect_sentences(
        effects.reset_index(), {"rtt": rtt, "sharding": sharding}, "h1"
    )
    assert "moves most with sharding: from -8.9 % at per domain to +11.1 % at one origin" in sentence
