"""The prediction model (docs/predict.md): physics round trips, the shipped labelled set's held-out
scores, bad input, the CLI (`wirelab predict`, `fit`, `validate`, `wirelab run --predict-only`) and the
validation spec's generator."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import wirelab
import wirelab.spec
from wirelab._predict import _config, _constants, _fit, _labels, _validate
from wirelab._predict._api import predict, predict_specs
from wirelab._predict._run import predict_configs
from wirelab._predict._sim import _median_delay
from wirelab._predict._vocab import PARTS
from wirelab.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent
ENGINE_PATH = Path(os.environ.get("WIRELAB_E2E_ENGINE") or ROOT / "bin" / "wirelab-engine")


def _has_pages_model() -> bool:
    if not ENGINE_PATH.exists():
        return False
    done = subprocess.run([str(ENGINE_PATH), "pages", "model", "twitter"], capture_output=True, timeout=120)
    return done.returncode == 0


pytestmark = pytest.mark.skipif(
    not _has_pages_model(), reason="needs bin/wirelab-engine with `pages model` (make build)"
)


@pytest.fixture(scope="module")
def engine():
    from wirelab._engine import SubprocessEngine

    return SubprocessEngine(ENGINE_PATH)


# --- physics ---------------------------------------------------------------------------------------


def test_physics_round_trips(engine, tmp_path):
    """A 1 kB page at 200 ms RTT, no loss, unlimited rate, names from a static map: setup is 1 RTT
    over h1 (TCP), 2 over h1s and h2 (TCP + TLS 1.3), 1 over h3 (QUIC); the page 2/3/3/2 RTT
    (docs/metrics.md's physics checks) — exactly, once the endpoints' own time is zero."""
    zero = {"round_s_tcp": 0.0, "round_s_quic": 0.0, "server_s": 0.0, "client_object_s": 0.0, "load_s": 0.0}
    path = tmp_path / "zero.json"
    path.write_text(json.dumps({"model": zero, "baseline": zero, "provenance": {}}))
    p = predict(
        "synthetic:0x1kB",
        network="rtt=200ms",
        protocols=["h1", "h1s", "h2", "h2c", "h3"],
        client={"dns": "static"},
        constants=path,
        engine=engine,
    )
    want = {"h1": (1, 2), "h1s": (2, 3), "h2": (2, 3), "h2c": (1, 2), "h3": (1, 2)}
    for proto, (setup, plt) in want.items():
        row = p[proto]
        assert row.parts_ms["setup"] == pytest.approx(setup * 200, abs=1e-6), proto
        assert row.plt_ms == pytest.approx(plt * 200, abs=1e-6), proto
        assert sum(row.parts_ms.values()) == pytest.approx(row.plt_ms, abs=1e-6)
    # TLS 1.2 adds a round trip to h1s and h2, never to h3 (QUIC is always TLS 1.3)
    p12 = predict(
        "synthetic:0x1kB",
        network="rtt=200ms",
        protocols=["h2", "h3"],
        server={"tls_version": "1.2"},
        client={"dns": "static"},
        constants=path,
        engine=engine,
    )
    assert p12["h2"].parts_ms["setup"] == pytest.approx(600) and p12["h3"].parts_ms["setup"] == pytest.approx(
        200
    )
    # across the path, the lookup is one more round trip
    dns = predict("synthetic:0x1kB", network="rtt=200ms", protocols=["h1"], constants=path, engine=engine)
    assert dns["h1"].parts_ms["dns"] == pytest.approx(200) and dns["h1"].plt_ms == pytest.approx(600)


def test_parts_are_the_decompositions_keys():
    """One owner: the prediction's parts are the engine's why.Defs (the load record's why_* keys)."""
    from wirelab._facts import why_parts

    assert [k + "_ms" for k in PARTS] == [p.key for p in why_parts()]


def test_parts_partition_the_load(engine):
    p = predict("imgur", network="rtt=80ms,bw=4mbit,loss=1%,queue=64", engine=engine)
    for row in p.protocols:
        assert set(row.parts_ms) == set(PARTS)
        assert sum(row.parts_ms.values()) == pytest.approx(row.plt_ms, rel=1e-9)
        assert all(v >= -1e-6 for v in row.parts_ms.values()), row.parts_ms
        assert 0 < row.tow_ms <= row.plt_ms
    assert p["h1s"].parts_ms["hol"] == 0 and p["h3"].parts_ms["hol"] == 0


def test_mechanisms_move_the_right_way(engine):
    """More RTT, less rate, more loss: slower; h2's one connection does not queue requests; a
    smaller initial window takes longer to fill the path; sharding adds lookups and handshakes."""
    base = dict(engine=engine, protocols=["h1s", "h2", "h3"])
    a = predict("youtube", network="rtt=50ms,bw=5mbit", **base)
    assert predict("youtube", network="rtt=200ms,bw=5mbit", **base)["h2"].plt_ms > a["h2"].plt_ms
    assert predict("youtube", network="rtt=50ms,bw=1mbit", **base)["h2"].plt_ms > a["h2"].plt_ms
    assert predict("youtube", network="rtt=50ms,bw=5mbit,loss=2%", **base)["h2"].plt_ms > a["h2"].plt_ms
    assert a["h2"].parts_ms["queueing"] < a["h1s"].parts_ms["queueing"]
    small_iw = predict("youtube", network="rtt=200ms,bw=20mbit,iw=2", **base)
    assert small_iw["h2"].plt_ms > predict("youtube", network="rtt=200ms,bw=20mbit", **base)["h2"].plt_ms
    sharded = predict("nytimes", network="rtt=100ms,bw=10mbit", shards=0, shard_mode="domain", **base)
    one = predict("nytimes", network="rtt=100ms,bw=10mbit", **base)
    assert sharded["h2"].parts_ms["dns"] + sharded["h2"].parts_ms["setup"] >= one["h2"].parts_ms["setup"]


def test_slot_sums_add_in_numpys_order():
    """The per-slot state is kept slot by slot; its sums over slots are NumPy's own (pairwise) sums
    of a configuration's row, to the last bit, whatever the slot count."""
    from wirelab._predict._sim import _rowsum

    rng = np.random.default_rng(3)
    for slots in [*range(1, 20), 31, 64, 127, 128, 129, 200, 300]:
        a = rng.standard_normal((64, slots)) * 10 ** rng.uniform(-3, 6, (64, slots))
        assert np.array_equal(_rowsum(np.ascontiguousarray(a.T)), a.sum(axis=1)), slots


def test_exp2_of_whole_numbers_is_the_power():
    """_ss_rounds takes 2**r of whole r (a ceiling) with np.exp2, which gives the power operator's
    bits over the whole float range (exact powers of two), much faster."""
    r = np.concatenate([np.arange(-1100.0, 1101.0), [np.inf, -np.inf, 0.0, -0.0]])
    with np.errstate(over="ignore"):
        assert np.array_equal(np.exp2(r).view(np.uint64), (2.0**r).view(np.uint64))


def test_shortcuts_and_general_path_agree(engine, monkeypatch):
    """The simulation's shortcuts for homogeneous batches (only multiplexed pools, one discipline,
    the state-independent per-step terms computed for every step at once, a step's connection state
    read and written as rows where its origin and slots are the same in every configuration) give the
    general path's results bit for bit: pages of 1 to 30 origins (up to 180 HTTP/1.x slots), every
    protocol, loss, replay, mixed and one-page batches, the baseline's view and the parts."""
    from wirelab._predict import _config, _pages, _plan, _sim

    configs = []
    for page, extra in (("twitter", {}), ("imgur", {}), ("nytimes", {"shards": 0, "shard_mode": "domain"})):
        for net in ("rtt=80ms,bw=4mbit,loss=1%,queue=16", "rtt=30ms,bw=20mbit,queue=1024", "rtt=200ms"):
            spec = {"page": page, "network": net, "protocols": ["h1s", "h2", "h3"], **extra}
            configs += _config.configs_of(spec, spec["protocols"])
    spec = {"page": "twitter", "network": "rtt=50ms,bw=10mbit,loss=0.5%", "protocols": ["h2"]}
    configs += _config.configs_of({**spec, "client": {"mode": "replay"}}, ["h2"])
    _pages.prefetch([c.page for c in configs], engine)
    facts = _pages.known([c.page for c in configs])
    k = _constants.load().constants
    batches = [_plan.batch(configs, facts)]
    batches += [_plan.batch([c], [f]) for c, f in zip(configs, facts, strict=True) if c.multiplexed][:6]
    # batches of one page and protocol: every step's origin and slots the same in every configuration
    same: dict[tuple, list[int]] = {}
    for j, c in enumerate(configs):
        same.setdefault((c.page, c.protocol, c.mode), []).append(j)
    batches += [_plan.batch([configs[j] for j in js], [facts[j] for j in js]) for js in same.values()]
    for b in batches:
        for baseline in (False, True):
            fast = _sim.simulate(b, k, baseline=baseline, explain=True)
            monkeypatch.setattr(_sim, "SHORTCUTS", False)
            general = _sim.simulate(b, k, baseline=baseline, explain=True)
            monkeypatch.setattr(_sim, "SHORTCUTS", True)
            for name in ("plt", "tow", "parts"):
                assert np.array_equal(getattr(fast, name), getattr(general, name)), (name, baseline)


def test_fixture_predictions_are_the_general_paths(engine, monkeypatch):
    """Every configuration of the shipped labelled set (885: 159 pages of 1 to 54 origins loaded
    flat, h1s/h2/h3, with and without loss), batched as ``predict`` batches them: the shortcuts
    give the general path's PLT, ToW and parts bit for bit — model and baseline without
    ``explain`` (a step's dependencies are read as rows only then), the model with it."""
    from wirelab._predict import _labels, _sim

    cfile = _constants.load()
    configs = [c for label in _labels.read_fixture() for c in _config.configs_of(label.spec)]
    for baseline, k, explain in (
        (False, cfile.constants, False),
        (True, cfile.baseline, False),
        (False, cfile.constants, True),
    ):
        fast = predict_configs(configs, k, baseline=baseline, explain=explain, engine=engine)
        monkeypatch.setattr(_sim, "SHORTCUTS", False)
        general = predict_configs(configs, k, baseline=baseline, explain=explain, engine=engine)
        monkeypatch.setattr(_sim, "SHORTCUTS", True)
        for name in ("plt", "tow", "parts"):
            a, b = getattr(fast, name), getattr(general, name)
            assert (a is None and b is None) or np.array_equal(a, b), (name, baseline, explain)


def test_one_connection_holds_the_link_behind_a_shallow_queue(engine):
    """A drop-tail queue of a quarter of the BDP: the one h2 connection backs off from its share of
    the full pipe (BDP + queue), not from the window at which its slow start overflowed, so it
    loses little to the deep queue's (docs/predict.md, §6): the largest sign misses of session 36."""
    net = "rtt=209ms,bw=7080kbit,queue={}"
    shallow = predict("unh100", network=net.format(32), protocols=["h1s", "h2"], engine=engine)
    deep = predict("unh100", network=net.format(1024), protocols=["h1s", "h2"], engine=engine)
    assert shallow["h2"].plt_ms < 1.15 * deep["h2"].plt_ms
    assert shallow["h2"].plt_ms < shallow["h1s"].plt_ms


def test_a_fifo_queue_delays_each_connection_by_the_others_bytes(engine):
    """A drop-tail queue is a FIFO (docs/predict.md, §9): each later round of a response waits
    behind the other connections' queued bytes, and the flows share the link in proportion to their
    bytes in flight. One connection (h2, h3 on one origin) has no others, so it is untouched;
    HTTP/1.1's six connections pay it, and behind a queue of four BDPs with no loss h1s is then
    slower than h2, as the emulator measures (imgur, 146 ms, 2.64 Mbit/s: h1s 7.8 s, h2 6.7 s in the
    shipped labels). The baseline keeps Lantern's fair share whatever the constants say."""
    cfile = _constants.load()
    k = cfile.constants.replace(queue_in_rounds=1.0, window_shares=1.0)
    configs = _config.configs_of(
        {"page": "imgur", "network": "rtt=146ms,bw=2640kbit,queue=128,iw=4", "protocols": ["h1s", "h2", "h3"]}
    )
    fifo = predict_configs(configs, k, engine=engine).plt
    fair = predict_configs(configs, k.replace(queue_in_rounds=0.0, window_shares=0.0), engine=engine).plt
    assert fifo[1:].tolist() == fair[1:].tolist()
    assert fifo[0] > fair[0] and fifo[0] > fifo[1]
    shares_only = predict_configs(configs, k.replace(queue_in_rounds=0.0), engine=engine).plt
    assert shares_only[1:].tolist() == fair[1:].tolist() and shares_only[0] != fair[0]
    b = cfile.baseline
    base = predict_configs(configs, b, baseline=True, engine=engine).plt
    base_off = predict_configs(
        configs, b.replace(queue_in_rounds=0.0, window_shares=0.0), baseline=True, engine=engine
    ).plt
    assert base.tolist() == base_off.tolist()


def test_slow_start_below_the_path_goes_on_in_congestion_avoidance():
    """A slow start that ends at a ceiling below the path's packets per round (the other
    connections held the pipe when it started) goes on in congestion avoidance, one packet more per
    round, not at its ceiling for the rest of the response (docs/predict.md §5): 55 packets from
    IW 4 with the ceiling at 4 and 32 per round take 8 rounds (4 + 5 + … + 11), not ⌈55/4⌉ = 14.
    A ceiling at the path leaves the rounds as they were: 2 doubling rounds (10 + 20), then
    ⌈170/32⌉."""
    from wirelab._predict._sim import _ss_rounds

    f = lambda *xs: np.array(xs, dtype=np.float64)  # noqa: E731
    assert _ss_rounds(f(4), f(4), f(32), f(55))[0].tolist() == [8.0]
    assert _ss_rounds(f(10), f(32), f(32), f(200))[0].tolist() == [2.0 + 6.0]
    # within slow start, as before: ⌈log₂(n/w + 1)⌉; an unlimited path never leaves it
    assert _ss_rounds(f(4, 10), f(46, np.inf), f(32, np.inf), f(55, 55))[0].tolist() == [4.0, 3.0]


def test_congestion_avoidance_grows_to_the_path_and_no_further():
    """Congestion avoidance's rounds carry w, w + 1, … packets until the window reaches the path's
    packets per round, then the path's (docs/predict.md §5): from 4 packets on a 32-packet path,
    1,000 packets take the 28 rounds that grow the window (490 packets) and 510/32 more — not the
    41.4 rounds of a window that grows past the path. A busy connection's flow that carries on in
    congestion avoidance (h2, h3: a response queued behind others) takes the same rounds, not n/w
    at a flat window (55 packets from 4: 7.6 rounds, not 13.75)."""
    from wirelab._predict._sim import _ca_rounds, _ca_span

    f = lambda *xs: np.array(xs, dtype=np.float64)  # noqa: E731
    assert _ca_span(f(4), f(32), f(1000))[0] == pytest.approx(28 + 510 / 32)
    assert _ca_span(f(4), f(32), f(55))[0] == pytest.approx((np.sqrt(49 + 440) - 7) / 2)
    assert _ca_span(f(4), f(np.inf), f(55))[0] == pytest.approx((np.sqrt(49 + 440) - 7) / 2)
    assert _ca_span(f(40), f(32), f(64))[0] == pytest.approx(2.0)  # at the path already
    assert _ca_rounds(f(4, 40), f(32, 32), f(1000, 64))[0].tolist() == [44.0, 2.0]


def test_a_connection_opened_beside_a_full_pipe_is_not_held_at_its_ceiling(engine):
    """imgur by domain over h2 at 146 ms, 2.64 Mbit/s, IW 4, a 4-BDP drop-tail queue: the fifth
    origin's connection opens while the others hold 53 packets in flight, so its slow start ends at
    its initial window; its 80 kB response then grew one packet per round (13 rounds at 4 packets
    before, long after the others had finished: 9.1 s predicted). The emulator measures 6.7 s
    (`scripts/predict_trial.py c980a638`); the model now predicts under 8.5 s, and h3 (one
    connection per origin too, but paced from a 32-packet initial window) faster, as measured
    (6.0 s)."""
    configs = _config.configs_of(
        {
            "page": "imgur",
            "network": "rtt=146ms,bw=2640kbit,queue=128,iw=4",
            "protocols": ["h1s", "h2", "h3"],
            "shards": 0,
            "shard_mode": "domain",
        }
    )
    plt = predict_configs(configs, _constants.load().constants, engine=engine).plt
    assert plt[1] < 8.5
    assert plt[2] < plt[1]


def test_relabel_replaces_a_trials_loads_only():
    """A trial emulated again (scripts/predict_relabel.py, predict_fixture.py --relabel) replaces its
    label's loads and keeps its place and spec; a trial outside the set, or another spec, is refused."""
    labels = _labels.read_fixture()[:3]
    a = labels[1]
    spec = {**a.spec, "client": {**a.spec.get("client", {}), "view": "first"}}  # a later contract's default
    again = _labels.Label(a.trial_id, spec, {"h2": (1.0, 2.0)}, {"h2": (0.5, 1.5)})
    out, ids = _labels.replace(labels, [again])
    assert ids == [a.trial_id] and [x.trial_id for x in out] == [x.trial_id for x in labels]
    assert out[1].spec == a.spec and out[1].plt_ms == {"h2": (1.0, 2.0)} and out[0] == labels[0]
    with pytest.raises(UsageError, match="relabel: trial nope"):
        _labels.replace(labels, [_labels.Label("nope", a.spec, {}, {})])
    other = {**a.spec, "network": "rtt=1ms"}
    with pytest.raises(UsageError, match="spec differs"):
        _labels.replace(labels, [_labels.Label(a.trial_id, other, {}, {})])


def test_relabel_spec_is_the_same_trials():
    import importlib.util

    loc = importlib.util.spec_from_file_location("predict_relabel", ROOT / "scripts" / "predict_relabel.py")
    assert loc is not None and loc.loader is not None
    mod = importlib.util.module_from_spec(loc)
    loc.loader.exec_module(mod)
    ids = [lab.trial_id for lab in _labels.read_fixture()[5:7]]
    text = mod.relabel_spec(ids)
    assert [t.id for t in wirelab.spec.loads(text).trials] == ids
    with pytest.raises(SystemExit, match="not in"):
        mod.relabel_spec(["0000000000000000"])


def test_replay_counts_computation(engine):
    p = predict(
        "twitter", network="rtt=50ms,bw=10mbit", protocols=["h2"], client={"mode": "replay"}, engine=engine
    )
    slow = predict(
        "twitter",
        network="rtt=50ms,bw=10mbit",
        protocols=["h2"],
        client={"mode": "replay", "compute_scale": 10},
        engine=engine,
    )
    assert p["h2"].parts_ms["compute"] > 0 and slow["h2"].plt_ms > p["h2"].plt_ms


def test_median_delay_of_rare_events():
    # one kind, expected count λ: the chance of at least one is 1 − e^−λ; the median load pays the
    # cost once that chance passes ½ (smoothed: 3P² − 2P³)
    costs, counts = np.array([[5.0], [1.0]]), np.array([[0.0], [0.0]])
    assert _median_delay(costs, counts)[0] == 0
    counts = np.array([[10.0], [0.0]])
    assert _median_delay(costs, counts)[0] == pytest.approx(5.0, rel=1e-6)
    counts = np.array([[0.0], [np.log(2)]])  # P = ½ → w = ½
    assert _median_delay(costs, counts)[0] == pytest.approx(0.5)


# --- the shipped labelled set and constants ----------------------------------------------------------


def test_shipped_labels_are_real_trials():
    labels = _labels.read_fixture()
    assert len(labels) >= 250
    ids = {lab.trial_id for lab in labels}
    assert len(ids) == len(labels)
    spec_text = (ROOT / "experiments" / "predict-validation.quick.toml").read_text()
    plan = wirelab.plan(ROOT / "experiments" / "predict-validation.quick.toml")
    planned = {t.id for t in plan.trials}
    assert ids <= planned and "predict-validation-quick" in spec_text
    for lab in labels:
        assert set(lab.plt_ms) <= {"h1s", "h2", "h3"} and all(lab.plt_ms.values())
        assert not lab.flags


def test_shipped_constants_name_their_labels():
    cfile = _constants.load()
    prov = cfile.provenance
    assert prov["labels_sha256"] == _validate.file_sha256(ROOT / "wirelab" / "_predict" / _labels.FIXTURE)
    assert prov["split"] == {"holdout": 0.3, "seed": 1}
    assert set(cfile.constants.to_dict()) == set(_constants.Constants().to_dict())


def test_heldout_targets_hold_on_the_shipped_set(engine):
    """The issue's targets on the configurations the shipped constants were not fitted on, beside
    the Lantern-style baseline scored on the same configurations."""
    v = _validate.score_shipped(engine=engine)
    m, b = v.model_scores, v.baseline_scores
    assert v.heldout >= 60 and m.significant >= 50
    assert m.median_abs_error <= 0.10
    assert m.p90_abs_error <= 0.25
    assert m.spearman >= 0.95
    # and the baseline, with no loss, no queue and h3 as TCP, does worse on each
    assert m.median_abs_error < b.median_abs_error and m.p90_abs_error < b.p90_abs_error
    assert m.spearman > b.spearman and m.sign_right >= b.sign_right
    # the sign of the gain, among the pairs whose emulated 95 % interval excludes zero: 91.0 % of
    # 134 (122) since session 40; the target, 90 %, needs 121
    assert m.sign_right >= 0.90


def test_split_is_by_trial_and_stable():
    labels = _labels.read_fixture()
    a, b = _fit.split(labels, 0.3, 1)
    assert {x.trial_id for x in a}.isdisjoint({x.trial_id for x in b})
    assert len(a) + len(b) == len(labels) and 0.2 < len(b) / len(labels) < 0.4
    assert [x.trial_id for x in _fit.split(labels[::-1], 0.3, 1)[1]] == [x.trial_id for x in b][::-1]


# --- bad input -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"page": "nope"}, "page"),
        ({"page": "twitter", "network": "rtt=10"}, "network.rtt"),
        ({"page": "twitter", "network": "bw=1mbps"}, "network.bw"),
        ({"page": "twitter", "protocols": ["h1s", "h9"]}, "protocols[1]"),
        ({"page": "twitter", "server": {"tls_version": "1.4"}}, "server.tls_version"),
        ({"page": "twitter", "server": {"impl": "apache"}, "protocols": ["h3"]}, "protocols[0]"),
        ({"page": "twitter", "client": {"impl": "chromium"}, "protocols": ["spdy3"]}, "protocols[0]"),
        ({"page": "url:https://h3.wirelab.test/L/fixture/"}, "page"),
        ({"page": "twitter", "server": {"push": "all"}}, "server.push"),
    ],
)
def test_bad_input_names_the_field(engine, kwargs, field):
    with pytest.raises(UsageError) as e:
        predict(engine=engine, **kwargs)
    assert str(e.value).startswith(f"{field}:"), str(e.value)
    assert "\n" not in str(e.value)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WIRELAB_ENGINE": str(ENGINE_PATH), "COLUMNS": "160"}
    return subprocess.run(
        [sys.executable, "-m", "wirelab._main", *args], capture_output=True, text=True, env=env, timeout=600
    )


def test_cli_bad_input_is_one_line_exit_2(tmp_path):
    for args in (
        ["predict", "nope"],
        ["predict", "twitter", "--net", "rtt=10"],
        ["predict", "twitter", "--proto", "h1s,h9"],
        ["predict", "twitter", "--server", "apache", "--proto", "h3"],
    ):
        done = _cli(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("wirelab: "), done.stderr
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    from wirelab.store import Store

    Store(empty).close()
    done = _cli("predict", "fit", str(empty), "--out", str(tmp_path / "c.json"))
    assert done.returncode == 2 and done.stderr.startswith("wirelab: DB:"), done.stderr
    assert not (tmp_path / "c.json").exists()
    done = _cli("predict", "fit", str(tmp_path / "missing.db"))
    assert done.returncode == 2 and "does not exist" in done.stderr


def test_cli_predicts_a_page_as_json():
    done = _cli(
        "predict", "youtube", "--net", "rtt=100ms,bw=5mbit,loss=0.5%", "--proto", "h1s,h2,h3", "--json"
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    rows = {r["protocol"]: r for r in data["protocols"]}
    assert list(rows) == ["h1s", "h2", "h3"] and rows["h1s"]["gain_pct"] is None
    lo, hi = rows["h3"]["gain_interval_pct"]
    assert lo < rows["h3"]["gain_pct"] < hi
    assert data["constants"]["labels_sha256"]
    done = _cli("predict", "youtube", "--net", "3g")
    assert done.returncode == 0 and "where the time goes" in done.stdout and "h3 is predicted" in done.stdout


def test_cli_validate_prints_model_beside_baseline():
    done = _cli("predict", "validate")
    assert done.returncode == 0, done.stderr
    for words in (
        "median |PLT error|",
        "p90 |PLT error|",
        "Spearman",
        "sign of the gain",
        "Lantern-style baseline",
    ):
        assert words in done.stdout
    data = json.loads(_cli("predict", "validate", "--json").stdout)
    assert data["model"]["median_abs_error"] == pytest.approx(
        _validate.score_shipped().model_scores.median_abs_error
    )
    done = _cli("predict", "validate", "--holdout", "0.5")
    assert done.returncode == 2 and "fitted with holdout 0.3" in done.stderr


def test_fit_writes_constants_with_provenance(tmp_path, engine):
    labels = _labels.read_fixture()[:40]
    v = _validate.fit_and_score(labels=labels, holdout=0.3, max_evals=8, engine=engine)
    out = tmp_path / "c.json"
    _validate.write_constants(v, out, db="test")
    data = json.loads(out.read_text())
    assert (
        data["provenance"]["split"] == {"holdout": 0.3, "seed": 1} and data["provenance"]["source"] == "test"
    )
    assert data["provenance"]["heldout"]["model"]["configurations"] == v.heldout
    loaded = _constants.load(out)
    assert loaded.constants == v.model and loaded.baseline == v.baseline
    p = predict_specs([labels[0].spec], constants=out, engine=engine)[0]
    assert p.constants["source"] == "test"


def test_constants_file_refuses_unknown_names(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"model": {"sever_s": 1}}))
    with pytest.raises(UsageError, match=r"model\.sever_s: not a constant"):
        _constants.load(bad)


def test_run_predict_only_runs_nothing(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(
        '[sweep]\nname = "p"\n[base]\npage = "twitter"\nprotocols = ["h1s", "h2"]\nrepetitions = 2\n'
        '[grid]\n"network.rtt" = ["20ms", "200ms"]\n'
    )
    db = tmp_path / "w.db"
    done = _cli("run", str(spec), "--db", str(db), "--predict-only")
    assert done.returncode == 0, done.stderr
    assert "predicted: p (2 trials)" in done.stdout and "predicted wall time of the grid" in done.stdout
    assert "network.rtt=200ms" in done.stdout and not db.exists()


# --- the validation spec ----------------------------------------------------------------------------


def test_validation_specs_are_the_generators_output():
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "predict_validation_spec.py"), "--check"],
        capture_output=True,
        text=True,
        env={**os.environ, "WIRELAB_ENGINE": str(ENGINE_PATH)},
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    quick = wirelab.plan(ROOT / "experiments" / "predict-validation.quick.toml")
    full = wirelab.plan(ROOT / "experiments" / "predict-validation.toml")
    assert len(quick.trials) >= 300 and len(full.trials) > len(quick.trials)
    pages = {t.spec["page"] for t in quick.trials}
    assert any(p.startswith(("web200:", "mobile200:")) for p in pages) and pages & {
        "twitter",
        "imgur",
        "nytimes",
    }
    assert {tuple(t.spec["protocols"]) for t in quick.trials} == {("h1s", "h2", "h3")}
