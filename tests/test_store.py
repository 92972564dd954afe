"""The results database: migrations, HAR objects, the DataFrame API, idempotent storing."""

import json
import os
import shutil
import sqlite3
import stat
from pathlib import Path

import pandas as pd
import pytest

import wirelab
from wirelab import _facts, spec
from wirelab.cli import main
from wirelab.errors import SchemaVersionError, StoreError, UsageError
from wirelab.runner import control_provenance, ingest
from wirelab.store import SCHEMA_VERSION, Results, Store, objects_from_har
from wirelab.testing import FIXTURES_DIR, FixtureEngine

FIXTURES = Path(__file__).parent / "fixtures"


def _v1_db(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / "wirelab-v1.sql").read_text())
    conn.close()
    return path


def _snapshot(root: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file below root: size, modification time and content."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_v1_database_is_migrated_on_open(tmp_path):
    db = _v1_db(tmp_path / "old.db")
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA user_version").fetchone()[0] == 1
        assert "objects" not in {r[0] for r in c.execute("SELECT name FROM sqlite_master")}
    before = _snapshot(tmp_path)
    with Results(db) as results:
        trials = results.trials("rtt-v1")
        loads = results.loads("rtt-v1")
        objects = results.objects("rtt-v1")
    # a reader migrates a copy in memory: the file keeps its version, nothing is created
    assert _snapshot(tmp_path) == before
    Store(db).close()  # a writer migrates the file
    # v11: lttarget's number (an empty step here); v12 the merged intervals' columns; v13 the
    # loads' quic_0rtt_packets
    assert SCHEMA_VERSION == 13
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        # v4 adds the probe tables, v6 the load tests' — empty
        tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"probe_runs", "probes", "probe_protocols"} <= tables
        assert {"loadtests", "load_intervals", "server_samples"} <= tables
        assert c.execute("SELECT COUNT(*) FROM probes").fetchone()[0] == 0
        # v5 adds trials.worker: unknown (NULL) for trials stored before
        assert c.execute("SELECT COUNT(*) FROM trials WHERE worker IS NOT NULL").fetchone()[0] == 0
    # v2 back-fills the lateness columns from the stored emulator summary
    assert trials.loc[0, "lateness_p99_us"] == 87.0 and trials.loc[0, "fidelity_flags"] == []
    assert len(loads) == 6 and list(loads["network.rtt_ms"]) == [100.0] * 6
    assert list(loads["protocol"][:3]) == ["h1", "h1s", "h2"]
    assert objects.empty  # v1 kept no per-object rows
    # v3 adds the server's cost per load: unknown (NULL) for loads stored before
    assert loads["server_cpu_ms"].isna().all() and loads["server_rss_peak_bytes"].isna().all()
    # v8 adds what the gateway did to each load: unknown (NULL) for loads stored before
    assert loads["drops_aqm"].isna().all() and loads["sojourn_down_p95_ms"].isna().all()
    assert loads["congested_flows"].isna().all()
    # v13 adds the client's 0-RTT datagrams: unknown (NULL) for loads stored before
    assert loads["quic_0rtt_packets"].isna().all()
    # v5 adds the worker a trial ran on: unknown (None) for trials stored before; and repeat_of (planned
    # trials: None)
    assert trials["worker"].isna().all() and loads["worker"].isna().all()
    assert trials["repeat_of"].isna().all() and loads["repeat_of"].isna().all()
    # v9 adds the decomposition and the retransmissions by kind: unknown (NULL) for loads stored before
    why_cols = [p.column for p in _facts.why_parts()] + ["why_path_json", *_facts.retx_keys()]
    assert loads[why_cols].isna().all().all()
    # v6 adds load tests: sweeps stored before are trial sweeps, and have none
    with Results(db) as results:
        assert list(results.sweeps()["kind"]) == ["trials"]
        assert results.sweep_kind("rtt-v1") == "trials" and results.sweep_kind("nope") is None
        assert results.loadtests().empty and results.load_intervals().empty and results.server_samples().empty


def test_loads_stored_before_the_visual_metrics_are_first_views_without_them(tmp_path):
    """v10 (docs/vitals.md): view and the visual metrics are NULL for loads stored before — read as
    first views without visual metrics."""
    db = _v1_db(tmp_path / "old.db")
    with Results(db) as results:
        loads = results.loads("rtt-v1")
    assert loads["view"].isna().all() and loads["lcp_ms"].isna().all() and loads["cls"].isna().all()
    assert loads["speed_index_ms"].isna().all() and loads["visual_progress"].isna().all()
    assert loads["frames"].isna().all()


def test_a_database_from_a_newer_wirelab_is_refused(tmp_path):
    db = tmp_path / "new.db"
    with sqlite3.connect(db) as c:
        c.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(SchemaVersionError, match=f"schema v{SCHEMA_VERSION + 1} is newer"):
        Results(db)


def test_not_a_database(tmp_path):
    bogus = tmp_path / "bogus.db"
    bogus.write_text("this is not sqlite, it is text long enough to fill a header page" * 40)
    with pytest.raises(StoreError, match="not a usable SQLite database"):
        Results(bogus)
    with pytest.raises(StoreError, match="no such database"):
        Results(tmp_path / "missing.db")


def test_objects_from_har():
    har = {
        "log": {
            "pages": [{"startedDateTime": "2025-11-20T14:03:07.000Z", "id": "p"}],
            "entries": [
                {
                    "startedDateTime": "2025-11-20T14:03:07.000Z",
                    "time": 410.5,
                    "request": {"url": "https://www.wirelab.test/"},
                    "response": {
                        "status": 200,
                        "bodySize": 62310,
                        "httpVersion": "h2",
                        "content": {"size": 62310, "mimeType": "text/html"},
                    },
                    "timings": {
                        "blocked": 0.3,
                        "dns": 100.4,
                        "connect": 201.0,
                        "ssl": 100.7,
                        "send": 0.1,
                        "wait": 101.2,
                        "receive": 7.5,
                    },
                    "connection": "1",
                    "_stream_id": 1,
                },
                {
                    "startedDateTime": "2025-11-20T14:03:07.412+00:00",
                    "time": 120,
                    "request": {"url": "https://s2.wirelab.test:8443/a.png"},
                    "response": {
                        "status": 200,
                        "bodySize": -1,
                        "httpVersion": "http/1.1",
                        "content": {"size": 900, "mimeType": "image/png"},
                    },
                    "timings": {
                        "blocked": -1,
                        "dns": -1,
                        "connect": -1,
                        "send": 0.1,
                        "wait": 100,
                        "receive": 19.9,
                    },
                    "_connection": 4,
                    "_protocol": "h1s",
                },
            ],
        }
    }
    first, second = objects_from_har(har)
    assert first["origin"] == "https://www.wirelab.test" and first["protocol"] == "h2"
    assert first["stream_id"] == 1 and first["connection"] == "1" and first["started_ms"] == 0.0
    assert first["connect_ms"] == 201.0 and first["ssl_ms"] == 100.7 and first["size_bytes"] == 62310
    assert second["origin"] == "https://s2.wirelab.test:8443" and second["protocol"] == "h1s"
    assert second["connection"] == "4" and second["stream_id"] is None
    assert second["started_ms"] == pytest.approx(412.0)
    assert second["blocked_ms"] is None and second["ssl_ms"] is None and second["size_bytes"] == 900


def test_storing_a_trial_twice_keeps_one_copy(tmp_path, demo_spec):
    db = tmp_path / "w.db"
    wirelab.run(demo_spec, db=db, engine=FixtureEngine())
    plan = spec.load(demo_spec)
    trial = plan.trials[0]
    with Store(db) as store:
        ingest(
            store,
            plan.name,
            trial,
            store.results_dir / plan.name / trial.id,
            control_provenance(FixtureEngine(), 1),
        )
    with Results(db) as results:
        loads = results.loads("demo")
        objects = results.objects("demo", trial_id=trial.id, load_index=0)
        artifacts = results.artifacts("demo", trial_id=trial.id)
    assert len(loads) == plan.loads
    assert len(objects) == 7
    assert (artifacts["kind"] == "har").sum() == trial.loads


def test_gateway_columns(tmp_path, demo_spec):
    """A load record's ``gateway`` lands in the v8 columns: drops by cause and marks summed over the
    directions, each direction's sojourn percentiles, the congested flows as a list."""
    db = tmp_path / "w.db"
    wirelab.run(demo_spec, db=db, engine=FixtureEngine())
    plan = spec.load(demo_spec)
    trial = plan.trials[0]
    directory = Path(f"{db}.d") / plan.name / trial.id
    records = [json.loads(line) for line in (directory / "loads.jsonl").read_text().splitlines()]
    flow = {
        "proto": "tcp",
        "client": "10.77.0.2:40000",
        "server": "10.77.1.1:443",
        "packets": 90,
        "drops": 3,
        "marks": 1,
    }
    for i, rec in enumerate(records):
        rec["gateway"] = {
            "up": {"drops_tail": 1, "drops_aqm": 0, "drops_overflow": 0, "marks": 0,
                   "sojourn_ms": {"p50": 0.1, "p95": 0.2, "p99": 0.3, "max": 0.4}},
            "down": {"drops_tail": 0, "drops_aqm": 2 + i, "drops_overflow": 1, "marks": 1,
                     "sojourn_ms": {"p50": 5.0, "p95": 12.5, "p99": 20.0, "max": 31.0}},
            "flows": 7, "flows_congested": 1, "max_flow_drops": 3, "congested_flows": [flow],
        }  # fmt: skip
    (directory / "loads.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    with Store(db) as store:
        ingest(store, plan.name, trial, directory, control_provenance(FixtureEngine(), 1))
    with Results(db) as results:
        loads = results.loads("demo")
    mine = loads[loads["trial_id"] == trial.id].sort_values("load_index")
    assert list(mine["drops_aqm"]) == [2 + i for i in range(len(records))]
    assert set(mine["drops_tail"]) == {1} and set(mine["drops_overflow"]) == {1} and set(mine["marks"]) == {1}
    assert set(mine["sojourn_down_p95_ms"]) == {12.5} and set(mine["sojourn_up_max_ms"]) == {0.4}
    assert set(mine["flows"]) == {7} and set(mine["max_flow_drops"]) == {3}
    assert mine["congested_flows"].iloc[0] == [flow]
    others = loads[loads["trial_id"] != trial.id]
    assert others["drops_aqm"].isna().all()  # the fixtures' records have no gateway


def test_results_api(tmp_path, demo_spec):
    db = tmp_path / "w.db"
    wirelab.run(demo_spec, db=db, engine=FixtureEngine())
    with wirelab.open(db) as results:
        sweeps = results.sweeps()
        loads = results.loads(sweep="demo", protocol="h2")
        har = results.har("demo", loads.loc[0, "trial_id"], int(loads.loc[0, "load_index"]))
        with pytest.raises(UsageError, match="'nope' is not in .*; sweeps: demo"):
            results.loads(sweep="nope")
    assert sweeps.loc[0, "sweep"] == "demo" and sweeps.loc[0, "axes"] == ["page", "network.rtt"]
    assert int(sweeps.loc[0, "loads"]) == 36
    assert set(loads["protocol"]) == {"h2"} and len(loads) == 18
    for column in (
        "page",
        "network",
        "network.rtt",
        "network.rtt_ms",
        "tow_ms",
        "plt_ms",
        "dns_ms",
        "error",
        "har",
        "lateness_p99_us",
    ):
        assert column in loads.columns, column
    assert loads["network"].iloc[0] == "rtt=20ms,bw=10mbit"
    assert len(har["log"]["entries"]) == 7
    # the engine's loader extras come back as a dict (url, mode, dns_queries, retries)
    client = json.loads(json.dumps(loads["client"].iloc[0]))
    assert {"url", "mode", "dns_queries", "retries"} <= set(client) and client["mode"] == "flat"


def test_reading_creates_and_changes_nothing(tmp_path, demo_spec):
    """Read-only commands and the reading API never create or modify a file: not the database, not
    its -wal/-shm files, not the results directory — with no writer, and beside a writer at work."""
    from typer.testing import CliRunner

    from wirelab.cli import app

    data = tmp_path / "data"
    db = data / "w.db"
    data.mkdir()  # a database goes into an existing directory
    wirelab.run(demo_spec, db=db, engine=FixtureEngine())
    before = _snapshot(data)
    assert not (data / "w.db-wal").exists()
    with wirelab.open(db) as results:
        assert len(results.loads("demo")) == 36
        assert len(results.objects("demo")) > 0
    runner = CliRunner()
    export = ["results", "export", "demo", "--format", "csv", "--out", str(tmp_path / "loads.csv")]
    for args in (["results", "ls"], ["results", "show", "demo"], export):
        r = runner.invoke(app, [*args, "--db", str(db)])
        assert r.exit_code == 0, (args, r.output)
    assert _snapshot(data) == before
    # beside a writer holding the database open (its -wal and -shm exist): read, create nothing more
    with Store(db) as store:
        store.conn.execute("CREATE TABLE scratch (x)")
        files = set(os.listdir(data))
        with Results(db) as results:
            assert "demo" in set(results.sweeps()["sweep"])
        assert set(os.listdir(data)) == files


def test_results_have_fixed_modes_whatever_the_umask(tmp_path, demo_spec):
    """Data 0644 and directories 0755 for the database, every trial directory and the report, with a
    umask of 077; the report leaves the rest of its output directory alone."""
    from wirelab.report import write_report

    db = tmp_path / "w.db"
    out = tmp_path / "report"
    out.mkdir(mode=0o700)
    (out / "mine.txt").write_text("the user's")
    os.chmod(out / "mine.txt", 0o600)
    previous = os.umask(0o077)
    try:
        wirelab.run(demo_spec, db=db, engine=FixtureEngine())
        index = write_report(db, out_dir=out)
    finally:
        os.umask(previous)
    assert stat.S_IMODE(db.stat().st_mode) == 0o644
    tree = [db.with_name("w.db.d"), *db.with_name("w.db.d").rglob("*")]
    assert len(tree) > 10
    for path in tree:
        want = 0o755 if path.is_dir() else 0o644
        assert stat.S_IMODE(path.stat().st_mode) == want, path
    assert stat.S_IMODE(index.stat().st_mode) == 0o644
    figures = list((out / "figures").rglob("*"))
    assert figures and all(stat.S_IMODE(p.stat().st_mode) in (0o644, 0o755) for p in figures)
    assert stat.S_IMODE((out / "mine.txt").stat().st_mode) == 0o600


def test_repeats_on_each_worker_stay_out_of_the_sweeps_tables_unless_asked_for(tmp_path, demo_spec):
    db = tmp_path / "w.db"
    wirelab.run(demo_spec, db=db, engine=FixtureEngine())
    plan = spec.load(demo_spec)
    of = plan.trials[0]
    repeats = spec.worker_repeats(of, "node-a", 2)
    assert [t.id for t in repeats] == [r.spec["trial_id"] for r in repeats] and len(
        {t.id for t in repeats}
    ) == 2
    assert all(r.spec | {"trial_id": of.id} == of.spec for r in repeats)  # the same configuration
    assert spec.worker_repeats(of, "node-a", 2) == repeats != spec.worker_repeats(of, "node-b", 2)
    with Store(db) as store:
        store.add_repeats(plan.name, of, repeats)
        store.add_repeats(plan.name, of, repeats)  # planned once
        store.mark_running(plan.name, repeats[0].id)
        directory = store.results_dir / plan.name / repeats[0].id
        FixtureEngine().start_trial(repeats[0].spec, directory, lambda event: None).wait()
        ingest(store, plan.name, repeats[0], directory, control_provenance(FixtureEngine(), 1))
        assert store.statuses(plan.name)[repeats[1].id] == "planned"
    with Results(db) as results:
        sweeps = results.sweeps()
        trials, every = results.trials("demo"), results.trials("demo", repeats=True)
        loads, all_loads = results.loads("demo"), results.loads("demo", repeats=True)
        objects = results.objects("demo")
        repeat_objects = results.objects("demo", trial_id=repeats[0].id)
    assert list(trials["trial_id"]) == [t.id for t in plan.trials] and len(loads) == plan.loads
    assert sweeps.loc[0, "complete_trials"] == len(plan.trials) and sweeps.loc[0, "loads"] == plan.loads
    extra = every[every["repeat_of"].notna()]
    assert list(extra["trial_id"]) == [t.id for t in repeats] and set(extra["repeat_of"]) == {of.id}
    assert list(extra["status"]) == ["complete", "planned"]
    assert len(all_loads) == plan.loads + of.loads
    assert set(all_loads.loc[all_loads["repeat_of"].notna(), "trial_id"]) == {repeats[0].id}
    assert len(repeat_objects) and not set(objects["trial_id"]) & {repeats[0].id}


def test_visual_metrics_go_from_the_record_to_the_export(tmp_path, demo_spec):
    """A Chromium load's visual fields (docs/vitals.md: lcp_ms, the LCP element's URL, size and type,
    cls, speed_index_ms, visually_complete_ms, visual_progress, view) are stored, come back from
    Results.loads and are exported by `wirelab results export` (visual_progress as JSON)."""
    fixtures = tmp_path / "fixtures"
    shutil.copytree(FIXTURES_DIR, fixtures)
    visual = {
        "view": "first",
        "lcp_ms": 812.5,
        "lcp_url": "https://s1.wirelab.test/L/x/hero.jpg",
        "lcp_size_px": 240000.0,
        "lcp_type": "image",
        "cls": 0.118,
        "speed_index_ms": 640.2,
        "visually_complete_ms": 815.1,
        "visual_progress": [[0, 0], [530.8, 41], [815.1, 100]],
    }
    for loads_file in (fixtures / "trials").glob("*/loads.jsonl"):
        records = [json.loads(line) for line in loads_file.read_text().splitlines() if line.strip()]
        loads_file.write_text("".join(json.dumps(r | visual) + "\n" for r in records))
    db = tmp_path / "w.db"
    assert wirelab.run(demo_spec, db=db, engine=FixtureEngine(fixtures)).ok
    with wirelab.open(db) as results:
        loads = results.loads("demo")
    ok = loads[loads["error"].isna()]
    assert len(ok) and (ok["lcp_ms"] == 812.5).all() and (ok["lcp_url"] == visual["lcp_url"]).all()
    assert (ok["lcp_size_px"] == 240000).all() and (ok["lcp_type"] == "image").all()
    assert ok["visual_progress"].map(lambda v: v == visual["visual_progress"]).all()
    out = tmp_path / "loads.csv"
    assert main(["results", "export", "demo", "-f", "csv", "-o", str(out), "--db", str(db)]) == 0
    exported = pd.read_csv(out)
    for column in ("view", "lcp_ms", "lcp_url", "lcp_size_px", "lcp_type", "cls", "speed_index_ms"):
        assert column in exported.columns, column
    row = exported[exported["error"].isna()].iloc[0]
    assert row["lcp_url"] == visual["lcp_url"] and row["speed_index_ms"] == 640.2 and row["cls"] == 0.118
    assert json.loads(row["visual_progress"]) == visual["visual_progress"]
