"""`wirelab loadtest`'s runner and store with the engine's double (wirelab.testing.FixtureEngine replays
load-test directories recorded with the real engine, wirelab/_fixtures/loadtests/): runs one after the
other, every interval and server sample stored in one transaction, resume, Ctrl-C, failures, thresholds,
the DataFrames."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import stat
from pathlib import Path

import pytest
from test_runner import ctrl_c_at, interrupted_by_sigterm  # the Ctrl-C and SIGTERM holds of both runners

import wirelab
from wirelab import _loadplan as loadplan
from wirelab.errors import EngineNotFoundError, Interrupted, SpecError, SweepConflictError
from wirelab.store import INTERVAL_COLUMNS, Results, Store
from wirelab.testing import FIXTURES_DIR, FixtureEngine, FixtureFailure

RECORDINGS = FIXTURES_DIR / "loadtests"

SPEC = """
[sweep]
name = "cap"
description = "h1s vs h2 on Apache"
[load]
page = "neoload50"
protocols = ["h1s", "h2"]
network = { preset = "neoload" }
server = { impl = "apache", apache = { mpm = "worker" } }
scenario = { stages = [{ duration_s = 8, target = 10 }] }
interval_s = 2
at_vus = [5]
"""


def recorded(name: str, file: str) -> list[dict]:
    return [json.loads(line) for line in (RECORDINGS / name / file).read_text().splitlines()]


def test_runs_store_every_interval_and_sample(tmp_path):
    db = tmp_path / "w.db"
    engine = FixtureEngine()
    summary = wirelab.loadtest(SPEC, db=db, engine=engine)
    plan = loadplan.loads(SPEC)
    assert summary.ok and summary.complete_runs == 2 and engine.started == [r.id for r in plan.runs]
    assert engine.checked == [2]  # both specs checked by the engine before anything ran
    with wirelab.open(db) as results:
        runs = results.loadtests("cap")
        intervals = results.load_intervals("cap")
        samples = results.server_samples("cap")
        sweeps = results.sweeps()
    assert list(runs["protocol"]) == ["h1s", "h2"] and runs["complete"].all()
    assert list(runs["status"]) == ["complete", "complete"] and list(runs["server"]) == ["apache"] * 2
    for protocol in ("h1s", "h2"):
        lines = recorded(f"apache-{protocol}", "intervals.jsonl")
        result = json.loads((RECORDINGS / f"apache-{protocol}" / "loadtest.json").read_text())
        mine = intervals[intervals["protocol"] == protocol]
        assert list(mine["pages"]) == [line["pages"] for line in lines]
        assert list(mine["page_p90_ms"]) == [(line["page_ms"] or {}).get("p90") for line in lines]
        assert list(mine["errors"]) == [sum(line["errors"].values()) for line in lines]
        row = runs[runs["protocol"] == protocol].iloc[0]
        assert row["max_pages_per_s"] == result["outcomes"]["max_pages_per_s"]
        assert row["pages"] == result["summary"]["totals"]["pages"] == mine["pages"].sum()
        assert row["intervals"] == len(lines) and row["thresholds_passed"]
        assert row["outcomes"]["server_at"]["5"]["index"] == result["outcomes"]["page_ms_at"]["5"]["index"]
        assert row["spec"]["loadtest_id"] == row["loadtest_id"]
        assert row["provenance"]["engine"]["server"]["impl"] == "apache"
        served = samples[samples["protocol"] == protocol]
        raw = recorded(f"apache-{protocol}", "server.jsonl")
        assert list(served["cpu_util"]) == [s["cpu_util"] for s in raw]
        assert list(served["busy"]) == [s["gauges"]["busy_workers"] for s in raw]  # Apache's own gauge
        assert set(served["busy_gauge"]) == {"busy_workers"}
    # pages/s × an interval's length = its pages (the engine's invariant, kept by the store)
    full = intervals[intervals["t_end_s"] - intervals["t_start_s"] == 2]
    assert ((full["pages_per_s"] * 2 - full["pages"]).abs() < 1e-9).all()
    assert set(INTERVAL_COLUMNS) <= set(intervals.columns)
    cap = sweeps.set_index("sweep").loc["cap"]
    assert cap["kind"] == "loadtest" and cap["planned_trials"] == 2 and cap["complete_trials"] == 2


def test_resume_runs_only_what_is_not_complete(tmp_path):
    db = tmp_path / "w.db"
    plan = loadplan.loads(SPEC)
    failing = FixtureEngine(fail=lambda s: FixtureFailure(after_loads=2) if s["protocol"] == "h2" else None)
    summary = wirelab.loadtest(SPEC, db=db, engine=failing)
    assert not summary.ok and [o.status for o in summary.outcomes] == ["complete", "failed"]
    assert "address in use" in summary.failed[0].error
    with wirelab.open(db) as results:
        runs = results.loadtests("cap").set_index("protocol")
        intervals = results.load_intervals("cap")
    assert runs.loc["h2", "status"] == "failed" and not runs.loc["h2", "complete"]
    assert (intervals["protocol"] == "h2").sum() == 2  # what the failed run measured is kept
    engine = FixtureEngine()
    again = wirelab.loadtest(SPEC, db=db, engine=engine)
    assert again.ok and again.already_complete == 1 and engine.started == [plan.runs[1].id]
    with wirelab.open(db) as results:
        assert (results.load_intervals("cap")["protocol"] == "h2").sum() == 5  # replaced, not added
    engine = FixtureEngine()
    assert wirelab.loadtest(SPEC, db=db, engine=engine).ok and engine.started == []


@pytest.mark.serial
def test_ctrl_c_keeps_the_intervals_measured_and_exits_130(tmp_path):
    db = tmp_path / "w.db"
    plan = loadplan.loads(SPEC)
    engine = ctrl_c_at(plan.runs[0].id, 2)
    with pytest.raises(Interrupted) as info:
        wirelab.loadtest(SPEC, db=db, engine=engine)
    summary = info.value.summary
    assert info.value.exit_code == 130 and summary.interrupted
    assert [o.status for o in summary.outcomes] == ["interrupted"] and engine.started == [plan.runs[0].id]
    with wirelab.open(db) as results:
        runs = results.loadtests("cap")
        intervals = results.load_intervals("cap")
        samples = results.server_samples("cap")
        planned = results.loadtests("cap", status="planned")
    assert list(planned["loadtest_id"]) == [plan.runs[1].id]  # the status filter
    first = runs.iloc[0]
    assert first["status"] == "interrupted" and not first["complete"] and first["interrupted"]
    assert first["intervals"] == 2 and len(intervals) == 2 and len(samples) == 2
    assert runs.iloc[1]["status"] == "planned"
    engine = FixtureEngine()
    assert wirelab.loadtest(SPEC, db=db, engine=engine).ok
    assert engine.started == [r.id for r in plan.runs]  # the interrupted run runs again


@pytest.mark.serial
def test_sigterm_is_handled_like_ctrl_c(tmp_path):
    interrupted_by_sigterm(lambda engine: wirelab.loadtest(SPEC, db=tmp_path / "w.db", engine=engine))
    with wirelab.open(tmp_path / "w.db") as results:
        assert list(results.loadtests("cap")["status"]) == ["interrupted", "planned"]


def test_a_recorded_interruption_is_stored_as_one(tmp_path):
    """The engine's own interrupted run (recorded: SIGINT mid-ramp) — loadtest.json with interrupted
    true, exit 130 — is stored incomplete with its intervals, not mistaken for a complete one."""
    db = tmp_path / "w.db"
    engine = FixtureEngine(loadtest_recording=lambda s: "interrupted-h2" if s["protocol"] == "h2" else None)
    spec = SPEC.replace('["h1s", "h2"]', '["h2"]')
    summary = wirelab.loadtest(spec, db=db, engine=engine)
    assert not summary.ok and [o.status for o in summary.outcomes] == ["interrupted"]
    with wirelab.open(db) as results:
        run = results.loadtests("cap").iloc[0]
    assert not run["complete"] and run["intervals"] == len(recorded("interrupted-h2", "intervals.jsonl"))


def test_failed_thresholds_complete_the_run_and_fail_the_invocation(tmp_path):
    db = tmp_path / "w.db"
    engine = FixtureEngine(loadtest_recording=lambda s: "overload-h1s")
    spec = SPEC.replace('["h1s", "h2"]', '["h1s"]')
    summary = wirelab.loadtest(spec, db=db, engine=engine)
    assert [o.status for o in summary.outcomes] == ["complete"] and not summary.ok
    assert summary.thresholds_failed[0].failed_thresholds == ["errors == 0"]
    assert any(line.startswith("thresholds failed: ") for line in summary.lines())
    with wirelab.open(db) as results:
        run = results.loadtests("cap").iloc[0]
    assert run["complete"] and run["thresholds_passed"] == False  # noqa: E712 - a numpy bool
    assert run["vus_at_first_error"] is not None and run["vus_at_first_sla_violation"] is not None


def test_bad_spec_refused_by_the_engine_creates_nothing(tmp_path):
    db = tmp_path / "w.db"
    engine = FixtureEngine(loadtest_recording=lambda s: "apache-h1s" if s["protocol"] == "h1s" else "none")
    with pytest.raises(SpecError, match=r"^run 1 \(h2\): protocol: no load-test recording"):
        wirelab.loadtest(SPEC, db=db, engine=engine)
    assert not db.exists() and not (tmp_path / "w.db.d").exists()
    assert engine.started == []


def test_an_engine_without_loadtest_touches_nothing(tmp_path):
    with pytest.raises(EngineNotFoundError, match="no `loadtest` command"):
        wirelab.loadtest(SPEC, db=tmp_path / "w.db", engine=FixtureEngine(commands=("trial", "version")))
    assert not (tmp_path / "w.db").exists()


def test_a_sweep_name_is_one_kind(tmp_path, demo_spec):
    db = tmp_path / "w.db"
    wirelab.loadtest(SPEC, db=db, engine=FixtureEngine())
    trials = demo_spec.read_text().replace('name = "demo"', 'name = "cap"')
    with pytest.raises(SweepConflictError, match="holds a load test"):
        wirelab.run(trials, db=db, engine=FixtureEngine())
    changed = SPEC.replace("interval_s = 2", "interval_s = 4")
    with pytest.raises(SweepConflictError, match="holds results of a different spec"):
        wirelab.loadtest(changed, db=db, engine=FixtureEngine())
    assert wirelab.loadtest(changed, db=db, engine=FixtureEngine(), resume=False).ok


def test_a_killed_invocation_s_finished_run_is_stored_without_running_again(tmp_path):
    """The window between the engine writing loadtest.json and the runner storing it: the row says
    running, the directory is whole; the next invocation stores it as it is."""
    db = tmp_path / "w.db"
    wirelab.loadtest(SPEC, db=db, engine=FixtureEngine())
    plan = loadplan.loads(SPEC)
    with sqlite3.connect(db) as c:
        c.execute("UPDATE loadtests SET status = 'running' WHERE loadtest_id = ?", (plan.runs[1].id,))
        c.execute("DELETE FROM load_intervals")
    engine = FixtureEngine()
    summary = wirelab.loadtest(SPEC, db=db, engine=engine)
    assert summary.ok and engine.started == [] and [o.recovered for o in summary.outcomes] == [True]
    with Results(db) as results:
        assert (results.load_intervals("cap")["protocol"] == "h2").sum() == 5


def test_a_run_left_running_without_its_result_is_marked_interrupted_then_run_again(tmp_path):
    """Issue 26: a run found ``running`` with no loadtest.json (its wirelab was killed mid-run) is
    marked interrupted before it runs again."""
    db = tmp_path / "w.db"
    wirelab.loadtest(SPEC, db=db, engine=FixtureEngine())
    plan = loadplan.loads(SPEC)
    stale = plan.runs[1].id
    with sqlite3.connect(db) as c:
        c.execute("UPDATE loadtests SET status = 'running' WHERE loadtest_id = ?", (stale,))
    (tmp_path / "w.db.d" / "cap" / stale / "loadtest.json").unlink()
    seen: list[tuple[str, tuple]] = []

    class Recorder(wirelab.LoadObserver):
        def message(self, text: str) -> None:
            with sqlite3.connect(db) as c:
                seen.append(
                    (
                        text,
                        c.execute("SELECT status FROM loadtests WHERE loadtest_id = ?", (stale,)).fetchone(),
                    )
                )

    engine = FixtureEngine()
    summary = wirelab.loadtest(SPEC, db=db, engine=engine, observer=Recorder())
    assert summary.ok and engine.started == [stale]
    assert [r for t, r in seen if "marked interrupted" in t] == [("interrupted",)], seen
    with Results(db) as results:
        assert (results.load_intervals("cap")["loadtest_id"] == stale).sum() == 5


def test_engine_output_that_breaks_the_outputs_fails_the_run(tmp_path):
    db = tmp_path / "w.db"
    plan = loadplan.loads(SPEC)

    def hold(run, written):
        if written == 5:  # after the last interval, a line whose index is wrong
            with open(Path(run.out_dir) / "intervals.jsonl", "a") as f:
                f.write(json.dumps({"index": 7}) + "\n")

    summary = wirelab.loadtest(SPEC, db=db, engine=FixtureEngine(hold=hold))
    assert [o.status for o in summary.outcomes] == ["failed", "failed"]
    assert (
        "breaks the load test's outputs: intervals.jsonl line 6: its index is not 5"
        in summary.failed[0].error
    )
    with wirelab.open(db) as results:
        assert results.loadtests("cap").set_index("loadtest_id").loc[plan.runs[0].id, "status"] == "failed"


def test_stored_runs_have_fixed_modes_whatever_the_umask(tmp_path):
    """A load test's directories get the results' modes (data 0644, directories 0755) as trials' do."""
    db = tmp_path / "w.db"
    previous = os.umask(0o077)
    try:
        assert wirelab.loadtest(SPEC, db=db, engine=FixtureEngine()).ok
    finally:
        os.umask(previous)
    tree = [db.with_name("w.db.d"), *db.with_name("w.db.d").rglob("*")]
    assert len([p for p in tree if p.name == "intervals.jsonl"]) == 2
    for path in tree:
        want = 0o755 if path.is_dir() else 0o644
        assert stat.S_IMODE(path.stat().st_mode) == want, path


def test_results_md_documents_every_load_test_column(tmp_path):
    """docs/results.md has a row for every column of the load-test tables (the schema is the owner)."""
    docs = (Path(__file__).resolve().parent.parent / "docs" / "results.md").read_text()
    with Results(_empty_db(tmp_path)) as results:
        for table in ("loadtests", "load_intervals", "server_samples"):
            section = docs.split(f"## `{table}`", 1)[1].split("\n## ", 1)[0]
            columns = [r[1] for r in results.conn.execute(f"PRAGMA table_xinfo({table})")]
            # a row names a column as `name`, or a run of them as `first` … `last`
            missing = [c for c in columns if f"`{c}`" not in section and not _in_range(c, section)]
            assert not missing, f"docs/results.md, {table}: {missing}"


def _empty_db(tmp_path: Path) -> Path:
    db = tmp_path / "empty.db"
    Store(db).close()
    return db


def _in_range(column: str, section: str) -> bool:
    """``page_p90_ms`` is documented by a row ``page_p50_ms`` … ``page_p99_ms``, ``page_max_ms``."""
    prefix = column.rsplit("_", 2)[0] + "_"
    return f"`{prefix}p50_ms` …" in section and column.startswith(prefix) and column.endswith("_ms")


@pytest.mark.serial
def test_an_interrupt_while_the_engine_starts_stops_it(tmp_path):
    """Ctrl-C (here SIGTERM) that arrives while the engine is being started is held until it has
    started, then stops it: the run is stored interrupted, no engine is left running."""

    class InterruptedAtStart(FixtureEngine):
        def start_loadtest(self, spec, out_dir, on_event):
            os.kill(os.getpid(), signal.SIGTERM)  # delivered here, in the main thread, mid-start
            return super().start_loadtest(spec, out_dir, on_event)

    engine = InterruptedAtStart(hold=lambda run, written: run.stopping.wait(20))  # measures until stopped
    with pytest.raises(Interrupted):
        wirelab.loadtest(SPEC, db=tmp_path / "w.db", engine=engine)
    assert len(engine.runs) == 1 and engine.runs[0].stopping.is_set()
    with wirelab.open(tmp_path / "w.db") as results:
        assert list(results.loadtests("cap")["status"]) == ["interrupted", "planned"]
