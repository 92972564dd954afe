"""The experiments catalog, `wirelab reproduce`, `wirelab report` and the demo's report hook."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wirelab import _loadplan as loadplan
from wirelab import _reproduce as rep
from wirelab import cli
from wirelab import spec as spec_mod
from wirelab.errors import UsageError
from wirelab.testing import FixtureEngine

ROOT = Path(__file__).resolve().parent.parent
EXPERIMENTS = ROOT / "experiments"
STUDY_FIGURES = {  # issue 5: one experiment per figure the engine can express
    "elkhatib-rtt",
    "elkhatib-bandwidth",
    "elkhatib-loss",
    "elkhatib-initial-window",
    "elkhatib-shards",
    "elkhatib-streams",
    "elkhatib-phases",
    "elkhatib-queue",
    "wang-synthetic-tree",
    "unh-scenarios",
    "neoload-page",
}


def test_catalog_and_spec_files_agree():
    names = [e.name for e in rep.catalog()]
    assert set(names) >= STUDY_FIGURES
    on_disk = {p.name.removesuffix(".quick.toml").removesuffix(".toml") for p in EXPERIMENTS.glob("*.toml")}
    # not study reproductions: the demo, and the prediction model's labelled set (docs/predict.md)
    assert on_disk - {"demo", "catalog", "predict-validation"} == set(names)
    for e in rep.catalog():
        assert e.full.is_file() and e.quick.is_file(), e.name
        assert e.study in ("E", "W", "N", "U") and e.reproduces and e.figures


@pytest.mark.parametrize("entry", rep.catalog(), ids=lambda e: e.name)
def test_variants(entry):
    quick, full = entry.plan(True), entry.plan(False)
    assert full.name == entry.name and quick.name == f"{entry.name}-quick"
    if entry.kind == "loadtest":  # a load test's quick variant ramps for minutes instead of the study's 20
        assert isinstance(quick, loadplan.LoadPlan) and quick.protocols == full.protocols
        assert quick.planned_s < full.planned_s and set(quick.axes) <= set(full.axes)
        assert rep.estimate_seconds(quick) < 15 * 60 < rep.estimate_seconds(full)
        return
    assert all(t.spec["repetitions"] == 3 for t in quick.trials)
    assert quick.loads <= 100 and quick.loads < full.loads
    assert set(quick.axes) <= set(full.axes) | {"page"}
    assert rep.estimate_seconds(quick) < 15 * 60  # "minutes"
    assert rep.estimate_seconds(full) > rep.estimate_seconds(quick)


def test_full_variants_follow_the_studies():
    rtt = rep.experiment("elkhatib-rtt").plan(False)
    assert [t.params["network.rtt"] for t in rtt.trials][:13] == [f"{v}ms" for v in range(10, 491, 40)]
    assert {t.spec["repetitions"] for t in rtt.trials} == {20}
    shards = rep.experiment("elkhatib-shards").plan(False)
    assert sorted({t.spec["shards"] for t in shards.trials}) == list(range(1, 8))
    assert {t.spec["repetitions"] for t in shards.trials} == {100}
    unh = rep.experiment("unh-scenarios").plan(False)
    assert [t.spec["network"] for t in unh.trials] == ["unh-high-latency", "unh-high-loss", "unh-high-both"]
    sharding = rep.experiment("wang-sharding").plan(False)
    arrangements = [(1, "round-robin"), (0, "tld"), (0, "domain")]
    assert {(t.spec["shards"], t.spec["shard_mode"]) for t in sharding.trials} == set(arrangements)
    assert {t.spec["page"] for t in sharding.trials} == {"twitter", "youtube", "imgur", "nytimes"}
    assert {t.spec["repetitions"] for t in sharding.trials} == {5} and len(sharding.trials) == 4 * 2 * 2 * 3
    quick = rep.experiment("wang-sharding").plan(True)
    assert [(t.spec["shards"], t.spec["shard_mode"]) for t in quick.trials] == arrangements
    tree = rep.experiment("wang-synthetic-tree").plan(False)
    assert {t.spec["client"]["mode"] for t in tree.trials} == {"objects"}
    assert {t.spec["protocols"][0] for t in tree.trials} == {"h1"}


def test_unknown_experiment_suggests_a_name():
    with pytest.raises(UsageError, match="did you mean elkhatib-rtt"):
        rep.experiment("elkhatib-rt")


def test_catalog_entries_document_each_field():
    data = tomllib.loads((EXPERIMENTS / "catalog.toml").read_text())
    for name, entry in data.items():
        assert set(entry) == {"study", "reproduces", "figures", "not_here"}, name


def test_estimate_grows_with_rtt_and_size():
    slow = spec_mod.resolve_trial({"page": "imgur", "network": "rtt=490ms,bw=1mbit"})
    fast = spec_mod.resolve_trial({"page": "twitter", "network": "rtt=10ms,bw=8mbit"})
    assert rep._load_seconds(slow) > 10 * rep._load_seconds(fast)
    assert rep.format_duration(30) == "30 s" and rep.format_duration(7200) == "2.0 h"


def test_estimate_follows_each_protocols_connections():
    # loss-limited: one h2 connection moves a sixth of what h1's six do (measured on unh-high-both:
    # h2 92–118 s, h1 18–25 s per load)
    lossy = spec_mod.resolve_trial({"page": "unh100", "protocols": ["h1", "h2"], "network": "unh-high-both"})
    assert rep._load_seconds(lossy, "h2") > 3 * rep._load_seconds(lossy, "h1")
    # latency-bound without loss: h1 waits a round trip per wave of six requests, h2 sends them at once
    clean = spec_mod.resolve_trial({"page": "imgur", "protocols": ["h1s", "h2"], "network": "rtt=200ms"})
    assert rep._load_seconds(clean, "h1s") > rep._load_seconds(clean, "h2") + 20 * 0.2
    # Chromium costs more per load than the engine's loader
    chromium = spec_mod.resolve_trial({"page": "twitter", "client": {"impl": "chromium"}})
    assert rep._load_seconds(chromium) > rep._load_seconds(spec_mod.resolve_trial({"page": "twitter"}))


def test_estimate_counts_one_origin_per_group():
    # shards = 0: as many origins as the page has groups; HTTP/1.1's six connections per origin
    one = spec_mod.resolve_trial({"page": "nytimes", "protocols": ["h1"], "network": "rtt=200ms"})
    per_domain = spec_mod.resolve_trial(
        {"page": "nytimes", "protocols": ["h1"], "network": "rtt=200ms", "shards": 0, "shard_mode": "domain"}
    )
    assert rep._load_seconds(per_domain) < rep._load_seconds(one)


def test_docs_list_every_experiment():
    text = (ROOT / "docs" / "reproducing.md").read_text()
    for e in rep.catalog():
        assert f"`{e.name}`" in text


# --- the commands ------------------------------------------------------------------------------------


def test_reproduce_elkhatib_rtt_quick_writes_its_report(tmp_path, fixture_engine, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli.app, ["reproduce", "elkhatib-rtt", "--quick", "--db", "w.db"])
    assert result.exit_code == 0, result.output
    index = tmp_path / "wirelab-report" / "elkhatib-rtt-quick" / "index.html"
    assert f"report: {Path('wirelab-report') / 'elkhatib-rtt-quick' / 'index.html'}" in result.output
    html = index.read_text()
    assert re.search(
        r'<figure class="card fig fig-gain" id="[^"]*">\s*<figcaption><span class="kind">gain</span> '
        r"ToW reduction vs RTT</figcaption>",
        html,
    )
    assert (index.parent / "figures" / "elkhatib-rtt-quick" / "gain-tow-reduction-vs-rtt.svg").is_file()
    assert len(fixture_engine.started) == 3
    # resumable: a second run starts nothing and rewrites the report
    again = CliRunner().invoke(
        cli.app, ["reproduce", "elkhatib-rtt", "--quick", "--db", "w.db", "--out", "r2"]
    )
    assert again.exit_code == 0 and len(fixture_engine.started) == 3
    assert (tmp_path / "r2" / "index.html").is_file()


def test_reproduce_ls_and_bad_name(fixture_engine, monkeypatch):
    # `reproduce ls` plans every experiment of the catalog, ~10,000 trials each checked against the
    # contract (~18 s of CPU): the second listing, at another width, reuses the first one's plans
    plans: dict[tuple[str, bool], object] = {}
    plan = rep.Experiment.plan

    def planned_once(self, quick):
        if (self.name, quick) not in plans:
            plans[self.name, quick] = plan(self, quick)
        return plans[self.name, quick]

    monkeypatch.setattr(rep.Experiment, "plan", planned_once)
    monkeypatch.setattr(cli.out, "_width", 200)
    result = CliRunner().invoke(cli.app, ["reproduce", "ls"])
    assert result.exit_code == 0
    for e in rep.catalog():
        assert e.name in result.output
        assert e.reproduces[:40] in " ".join(result.output.split())
    # 80 columns: names and durations whole, one per line; the descriptions are left out
    monkeypatch.setattr(cli.out, "_width", 80)
    narrow = CliRunner().invoke(cli.app, ["reproduce", "ls"])
    assert narrow.exit_code == 0
    for e in rep.catalog():
        line = next(ln for ln in narrow.output.splitlines() if f" {e.name} " in ln)
        assert ("runs ≈" if e.kind == "loadtest" else "loads ≈") in line
    assert "110 columns" in narrow.output
    assert cli.main(["reproduce", "no-such-experiment"]) == 2


def test_report_command(tmp_path, fixture_engine, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["report", "--db", "missing.db"]) == 2
    assert (
        CliRunner()
        .invoke(cli.app, ["run", str(ROOT / "experiments" / "demo.toml"), "--db", "w.db"])
        .exit_code
        == 0
    )
    result = CliRunner().invoke(cli.app, ["report", "demo", "--db", "w.db", "--out", "rep"])
    assert result.exit_code == 0, result.output
    assert "report: rep/index.html" in result.output
    assert 'data-sweep="demo"' in (tmp_path / "rep" / "index.html").read_text()
    assert cli.main(["report", "nope", "--db", "w.db", "--out", "rep"]) == 2


def test_demo_ends_with_the_report(tmp_path, fixture_engine, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli.app, ["demo", "--db", "demo.db"])
    assert result.exit_code == 0, result.output
    assert result.output.rstrip().splitlines()[-1] == f"report: {Path('wirelab-report') / 'index.html'}"
    html = (tmp_path / "wirelab-report" / "index.html").read_text()
    assert 'data-sweep="demo"' in html and "fig-gain" in html


def test_report_states_failed_and_flagged_trials(tmp_path):
    import wirelab
    from wirelab.report import write_report
    from wirelab.testing import FixtureFailure

    def fail(spec):
        return FixtureFailure() if spec["page"] == "youtube" and "rtt=200ms" in spec["network"] else None

    def lateness(spec):
        return 5000.0 if spec["page"] == "twitter" and "rtt=20ms" in spec["network"] else 50.0

    db = tmp_path / "w.db"
    engine = FixtureEngine(fail=fail, lateness_p99_us=lateness)
    summary = wirelab.run(EXPERIMENTS / "demo.toml", db=db, engine=engine)
    assert len(summary.failed) == 1 and len(summary.fidelity_warnings) == 1
    html = write_report(db, ["demo"], tmp_path / "out").read_text()
    assert "1 of 6 trials is not complete (failed); their configurations are missing" in html
    assert "1 trial carries fidelity flags (lateness_p99_over_1ms)" in html
    assert html.count('<span class="badge status-failed">failed</span>') == 1
    assert "⚠ lateness_p99_over_1ms" in html


def test_report_with_failed_loads(tmp_path):
    import sqlite3

    import wirelab
    from wirelab.report import write_report

    db = tmp_path / "w.db"
    wirelab.run(EXPERIMENTS / "demo.toml", db=db, engine=FixtureEngine())
    with sqlite3.connect(db) as c:  # every h2 load of the first trial failed
        c.execute(
            "UPDATE loads SET error = 'timeout after 120 s' WHERE protocol = 'h2'"
            " AND trial_row = (SELECT MIN(id) FROM trials)"
        )
    html = write_report(db, ["demo"], tmp_path / "some").read_text()
    assert "3 of 36 loads ended with an error and are left out of the statistics" in html
    assert "“timeout after 120 s”, 3 loads" in html and "fig-gain" in html
    with sqlite3.connect(db) as c:
        c.execute("UPDATE loads SET error = 'connection refused'")
    html = write_report(db, ["demo"], tmp_path / "all").read_text()
    assert "No load of this sweep succeeded" in html and "fig-gain" not in html


def test_neoload_capacity_is_n_s_load_test():
    """N's setup, written once in the spec: Apache's worker MPM with N's settings, the ramp, the think
    time, the path, the page, the SLA and N's user counts."""
    full = rep.experiment("neoload-capacity").plan(False)
    assert isinstance(full, loadplan.LoadPlan) and full.protocols == ["h1", "h1s", "h2"]
    for run in full.runs:
        spec = run.resolved
        assert spec["page"] == "neoload50" and spec["network"] == "neoload"
        assert spec["scenario"]["stages"] == [{"duration_s": 1200, "target": 1000}]
        assert spec["scenario"]["start"] == 1 and spec["think"] == {"distribution": "fixed", "mean_s": 5}
        assert spec["interval_s"] == 30 and spec["sla"] == {"page_ms": 3000, "statistic": "p90"}
        assert spec["at_vus"] == [100, 120, 200, 777]
        apache = spec["server"]["apache"]
        assert spec["server"]["impl"] == "apache" and spec["server"]["max_concurrent_streams"] == 100
        assert (apache["mpm"], apache["start_servers"], apache["max_request_workers"]) == ("worker", 5, 600)
        assert (apache["threads_per_child"], apache["min_spare_threads"], apache["max_spare_threads"]) == (
            50,
            50,
            150,
        )
        assert apache["max_connections_per_child"] == 0
    mpm = rep.experiment("neoload-mpm").plan(False)
    servers = [
        (r.resolved["server"]["impl"], r.resolved["server"].get("apache", {}).get("mpm")) for r in mpm.runs
    ]
    assert servers == [("apache", "event")] * 3 + [("nginx", None)] * 3
    # the same load test otherwise
    assert {json.dumps(r.resolved["scenario"]) for r in mpm.runs} == {
        json.dumps(full.runs[0].resolved["scenario"])
    }


def test_a_load_test_estimate_is_its_stages_and_its_overhead():
    run = rep.experiment("neoload-capacity").plan(True).runs[0]
    seconds = rep.estimate_loadtest_seconds(run.resolved)
    assert run.planned_s + rep.LOADTEST_OVERHEAD_S < seconds < run.planned_s + rep.LOADTEST_OVERHEAD_S + 5


def test_reproduce_runs_a_load_test_and_writes_its_report(tmp_path, fixture_engine, monkeypatch):
    monkeypatch.chdir(tmp_path)
    recorded = {"apache": {"h1": "apache-h1s", "h1s": "apache-h1s", "h2": "apache-h2"}, "nginx": {}}
    fixture_engine.loadtest_recording = lambda s: recorded[s["server"]["impl"]].get(s["protocol"], "nginx-h2")
    result = CliRunner().invoke(cli.app, ["reproduce", "neoload-mpm", "--quick", "--db", "w.db"])
    assert result.exit_code == 0, result.output
    assert len(fixture_engine.started) == 6  # 2 servers × 3 protocols, one after the other
    html = (tmp_path / "wirelab-report" / "neoload-mpm-quick" / "index.html").read_text()
    assert "Server CPU, memory and busy workers vs VUs" in html and "server nginx" in html


def test_a_load_test_is_not_sent_to_a_cluster(tmp_path, fixture_engine, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = cli.main(["reproduce", "neoload-capacity", "--quick", "--cluster", "tcp://127.0.0.1:9"])
    assert code == 2 and "is a load test" in capsys.readouterr().err
    assert not (tmp_path / "wirelab.db").exists() and fixture_engine.started == []
