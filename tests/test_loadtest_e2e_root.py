"""`wirelab loadtest` with the real engine (root, about 30 s): a short closed ramp against Apache (worker
MPM, study N's server) over h1s and h2 through study N's emulated path — every interval and server sample
stored and consistent, Apache's busy workers among them —, and Ctrl-C in the middle of a run against the
built-in server: exit 130, the intervals measured so far stored, the lab gone. Skipped without root and
while the engine has no `loadtest` command."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from cli_process import cli_process, ctrl_c

import wirelab

pytestmark = [pytest.mark.root]

RAMP = """
[sweep]
name = "ramp"
[load]
page = "neoload50"
protocols = ["h1s", "h2"]
network = { preset = "neoload" }
server = SERVER
scenario = { stages = [{ duration_s = STAGE, target = 4 }] }
think = { mean_s = 0.5 }
interval_s = 1
at_vus = [2]
thresholds = ["errors == 0", "server_cpu_util_max < 2"]
"""


@pytest.fixture
def engine_path(real_engine) -> Path:
    return real_engine("loadtest")


def _gone(run_dir: Path) -> None:
    """The run's namespaces (named in its provenance) no longer exist."""
    result = json.loads((run_dir / "loadtest.json").read_text())
    for name in (result["provenance"].get("namespaces") or "").split():
        assert not Path("/run/netns", name).exists(), f"namespace {name} left"


def test_a_short_ramp_is_stored_whole(tmp_path, engine_path):
    db = tmp_path / "w.db"
    spec = RAMP.replace("STAGE", "4").replace("SERVER", '{ impl = "apache", apache = { mpm = "worker" } }')
    summary = wirelab.loadtest(spec, db=db, engine=engine_path)
    assert summary.ok, summary.lines()
    with wirelab.open(db) as results:
        runs = results.loadtests("ramp")
        intervals = results.load_intervals("ramp")
        samples = results.server_samples("ramp")
    assert (
        list(runs["protocol"]) == ["h1s", "h2"] and runs["complete"].all() and runs["thresholds_passed"].all()
    )
    for run in runs.to_dict("records"):
        mine = intervals[intervals["loadtest_id"] == run["loadtest_id"]]
        served = samples[samples["loadtest_id"] == run["loadtest_id"]]
        assert len(mine) >= 4 and len(served) == len(mine) == run["intervals"]
        assert mine["pages"].sum() == run["pages"] > 0 and mine["errors"].sum() == 0
        # the connections the server ended first, counted per interval, add up to the run's
        closed = mine["connections_closed_by_server"]
        totals = run["summary"]["totals"]
        assert closed.notna().all() and closed.sum() == totals["connections_closed_by_server"]
        # pages/s × an interval's length = its pages; the samples describe the same intervals
        length = mine["t_end_s"] - mine["t_start_s"]
        assert ((mine["pages_per_s"] * length - mine["pages"]).abs() < 1e-6).all()
        assert (
            (served["source"].notna()).all() and served["cpu_ms"].sum() > 0 and (served["threads"] > 0).all()
        )
        assert run["outcomes"]["server_at"]["2"]["index"] == run["outcomes"]["page_ms_at"]["2"]["index"]
        assert run["provenance"]["engine"]["server"]["impl"] == "apache"
        # mod_status's busy workers, sampled once per interval
        assert (served["busy_gauge"] == "busy_workers").all() and served["busy"].max() >= 1
        _gone(db.parent / run["dir"])


def test_ctrl_c_mid_run_stores_what_was_measured(tmp_path, engine_path):
    spec = tmp_path / "ramp.toml"
    spec.write_text(RAMP.replace("STAGE", "30").replace("SERVER", '{ impl = "builtin" }'))
    db = tmp_path / "w.db"
    argv = ["loadtest", str(spec), "--db", str(db), "--engine", str(engine_path)]
    with cli_process(*argv, stderr=subprocess.PIPE) as proc:
        deadline = time.monotonic() + 120
        while True:  # two intervals of the first run measured
            lines = [p for p in (tmp_path / "w.db.d" / "ramp").glob("*/intervals.jsonl")]
            if lines and len(lines[0].read_text().splitlines()) >= 2:
                break
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no intervals within 120 s"
            time.sleep(0.05)
        out, err = ctrl_c(proc, timeout=120)
    assert proc.returncode == 130, err
    with wirelab.open(db) as results:
        runs = results.loadtests("ramp")
        intervals = results.load_intervals("ramp")
    first = runs.iloc[0]
    assert first["status"] == "interrupted" and not first["complete"] and first["interrupted"]
    assert first["intervals"] >= 2 and len(intervals) == first["intervals"]
    assert runs.iloc[1]["status"] == "planned"
    _gone(db.parent / first["dir"])


TWO = """
[sweep]
name = "two"
[load]
page = "synthetic:6x1kB"
protocols = ["h2"]
network = { rtt = "10ms" }
server = { impl = "builtin" }
scenario = { start = 6, stages = [{ duration_s = 4, target = 6 }] }
think = { mean_s = 0.1 }
interval_s = 1
"""


def test_two_generators_are_stored_merged_with_their_shares(tmp_path, engine_path):
    """`wirelab loadtest --generators 2`: the merged intervals stored, each with both generators' shares
    (generators_json: their requests add up to the interval's), no interval degraded."""
    db = tmp_path / "w.db"
    summary = wirelab.loadtest(TWO, db=db, engine=engine_path, generators=2)
    assert summary.ok, summary.lines()
    with wirelab.open(db) as results:
        run = results.loadtests("two").iloc[0]
        intervals = results.load_intervals("two")
    assert run["status"] == "complete" and intervals["pages"].sum() == run["pages"] > 0
    assert (intervals["degraded"] == 0).all() and intervals["generators_lost"].isna().all()
    for row in intervals.to_dict("records"):
        shares = json.loads(row["generators_json"])
        assert [g["name"] for g in shares] == ["local-0", "local-1"]
        assert sum(g["hits"] for g in shares) == row["hits"]
        assert sum(g["pages"] for g in shares) == row["pages"]
    run_dir = Path(str(db) + ".d") / "two" / run["loadtest_id"]
    assert sorted(p.name for p in (run_dir / "generators").iterdir()) == ["local-0.jsonl", "local-1.jsonl"]
    _gone(run_dir)
    # the report's table per generator: one row each, their shares of the requests adding up to 100 %
    from wirelab.analysis.capacity import load_capacity
    from wirelab.report._capacity import build_capacity

    with wirelab.open(db) as results:
        section = build_capacity(load_capacity(results, "two"), tmp_path / "figures")
    (table,) = [t for t in section.tables if t.title == "Per generator"]
    assert [row[2].text for row in table.rows] == ["local-0", "local-1"]
    assert [row[3].text for row in table.rows] == ["0/2", "1/2"]
    shares = [float(row[4].text.removesuffix(" %")) for row in table.rows]
    assert abs(sum(shares) - 100) < 0.2 and min(shares) > 0
