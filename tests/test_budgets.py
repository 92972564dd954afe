"""Budgets: [sweep] thresholds checked at plan time and on a sweep's stored loads by the engine's one
evaluator (wirelab-engine thresholds), against figures computed here from the same loads with pandas."""

import json
import sqlite3

import pytest

import wirelab
from wirelab import _budgets
from wirelab import spec as spec_mod
from wirelab.cli import main
from wirelab.errors import SpecError
from wirelab.testing import FixtureEngine

SPEC = """
[sweep]
name = "small"
thresholds = {thresholds}
[base]
protocols = ["h1s", "h2"]
repetitions = 2
network = {{ bw = "10mbit" }}
[grid]
page = ["twitter", "youtube"]
"network.rtt" = ["20ms", "100ms", "200ms"]
"""


def write(tmp_path, *thresholds):
    path = tmp_path / "small.toml"
    path.write_text(SPEC.format(thresholds="[" + ", ".join(f'"{t}"' for t in thresholds) + "]"))
    return path


@pytest.fixture
def stored(tmp_path):
    """A stored sweep (recorded trials) and its loads' medians per configuration and protocol."""
    db = tmp_path / "w.db"
    spec = write(tmp_path, "h2.tow_median_ms < h1s.tow_median_ms")
    assert wirelab.run(spec, db=db, engine=FixtureEngine()).ok
    with wirelab.open(db) as results:
        loads = results.loads("small", with_errors=False)
    medians = loads.groupby(["trial_id", "protocol"])["tow_ms"].median().unstack()
    return db, medians


def test_thresholds_are_evaluated_on_the_stored_loads(stored):
    db, medians = stored
    with wirelab.open(db) as results:
        budgets = _budgets.evaluate(results, "small")
    assert budgets is not None and len(budgets.results) == 1
    (r,) = budgets.results
    # The engine's verdict per configuration equals pandas' medians of the same loads.
    slower = sorted(medians.index[medians["h2"] >= medians["h1s"]])
    assert sorted(f["trial_id"] for f in r["failures"]) == slower
    assert r["checked"] == len(medians) and r["pass"] == (not slower) and budgets.passed == (not slower)
    for f in r["failures"]:
        assert f["left"] == pytest.approx(medians.loc[f["trial_id"], "h2"])
        assert f["right"] == pytest.approx(medians.loc[f["trial_id"], "h1s"])
        assert "network.rtt=" in f["label"]


def test_results_check_and_run_exit_1_on_a_failed_budget(stored, capsys, tmp_path, fake_engine):
    db, medians = stored
    code = main(["results", "check", "small", "--db", str(db)])
    out = capsys.readouterr().out
    slower = int((medians["h2"] >= medians["h1s"]).sum())
    if slower:
        assert code == 1 and "budgets: 1 of 1 thresholds failed" in out
        assert out.count("h2.tow_median_ms < h1s.tow_median_ms: ") == slower
    else:
        assert code == 0 and "budgets: 1 of 1 thresholds passed" in out
    # A budget no configuration can meet fails `wirelab run` after the sweep, naming every configuration.
    spec = write(tmp_path, "max(h2.tow_p90_ms) < 0.001", "h1s.errors == 0")
    code = main(["run", str(spec), "--db", str(tmp_path / "x.db"), "--engine", str(fake_engine)])
    out = capsys.readouterr().out
    assert code == 1 and "budgets: 1 of 2 thresholds failed" in out
    assert "max(h2.tow_p90_ms) < 0.001: over the sweep: " in out


def test_a_bad_threshold_is_refused_before_anything_exists(tmp_path):
    for threshold, words in [
        (
            "h3.tow_median_ms < 100",
            'sweep.thresholds[0]: got "h3.tow_median_ms < 100"; protocol "h3": the sweep loads',
        ),
        ("h2.lcp_p76_ms < 2500", "did you mean lcp_p75_ms?"),
        ("h2.tow_median_ms", "want SIDE OP SIDE"),
    ]:
        db = tmp_path / "w.db"
        with pytest.raises(SpecError) as e:
            wirelab.run(write(tmp_path, threshold), db=db, engine=FixtureEngine())
        assert words in str(e.value) and e.value.path == "sweep.thresholds[0]"
        assert not db.exists()


def test_a_sweep_without_thresholds_has_nothing_to_check(tmp_path, capsys):
    db = tmp_path / "w.db"
    spec = tmp_path / "plain.toml"
    spec.write_text(SPEC.replace("thresholds = {thresholds}\n", "").replace("{{", "{").replace("}}", "}"))
    assert wirelab.run(spec, db=db, engine=FixtureEngine()).ok
    with wirelab.open(db) as results:
        assert _budgets.evaluate(results, "small") is None
    assert main(["results", "check", "small", "--db", str(db)]) == 2
    assert "its spec has no [sweep] thresholds" in capsys.readouterr().err
    assert spec_mod.load(spec).spec["sweep"]["thresholds"] == []


def test_fcp_is_a_base_read_from_the_loads_client_object(stored):
    """FCP (Chromium's client.first_contentful_paint_ms) is a budget base: its statistics are the
    engine's over the loads that have one; a load without it is left out, not counted as 0."""
    db, _ = stored
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT id, protocol, tow_ms, client_json FROM loads").fetchall()
        for load_id, protocol, tow, client_json in rows:
            client = json.loads(client_json)
            # h2 paints 30 ms after its time on the wire; h1s loads say nothing (no FCP measured)
            if protocol == "h2":
                client["first_contentful_paint_ms"] = tow + 30
                c.execute("UPDATE loads SET client_json = ? WHERE id = ?", (json.dumps(client), load_id))
    with wirelab.open(db) as results:
        loads = results.loads("small", with_errors=False)
        h2 = loads[loads["protocol"] == "h2"]
        fcp = h2.assign(fcp=[c["first_contentful_paint_ms"] for c in h2["client"]]).groupby("trial_id")["fcp"]
        p75 = fcp.quantile(0.75)
        limit = float(p75.median())
        thresholds = [f"h2.fcp_p75_ms < {limit}", "h1s.fcp_median_ms < 1e9"]
        budgets = _budgets._engine(None).thresholds(
            thresholds, ["h1s", "h2"], _budgets.rows(results, "small")
        )
    assert budgets is not None
    first, second = budgets["results"]
    over = sorted(p75.index[p75 >= limit])
    assert sorted(f["trial_id"] for f in first["failures"]) == over and over
    for f in first["failures"]:
        assert f["left"] == pytest.approx(p75[f["trial_id"]])
    # h1s has no FCP: every configuration fails with no value
    assert second["checked"] == len(p75) and all(f["left"] is None for f in second["failures"])
    assert len(second["failures"]) == len(p75)
