"""The report of a load test (study N's figures, table and sentences) from runs recorded with the real
engine (wirelab/_fixtures/loadtests/, replayed by the FixtureEngine): what it draws, that its sentences
state what the stored runs say, and — in headless Chromium — that it renders with visible figures."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest
from test_report import (  # the report's own structure parser; Playwright's deadline in py-parallel
    CHROMIUM,
    CHROMIUM_ARGS,
    PLAYWRIGHT_TIMEOUT_MS,
    parse,
)

import wirelab
from wirelab.analysis.capacity import capacity_table, load_capacity
from wirelab.analysis.conclusions import capacity_sentences
from wirelab.report import write_report
from wirelab.testing import FIXTURES_DIR, FixtureEngine

GRID = """
[sweep]
name = "cap-grid"
description = "h1s vs h2 on the built-in server and Apache (worker MPM), a short ramp"
[load]
page = "neoload50"
protocols = ["h1s", "h2"]
network = { preset = "neoload" }
server = { apache = { mpm = "worker" } }
scenario = { stages = [{ duration_s = 8, target = 10 }] }
interval_s = 2
at_vus = [5]
sla = { page_ms = 1160 }
[grid]
"server.impl" = ["builtin", "apache"]
"""

TRIALS = """
[sweep]
name = "trials"
[base]
page = "twitter"
protocols = ["h1s", "h2"]
repetitions = 2
"""


def _recording(spec: dict) -> str:
    impl = spec["server"]["impl"]
    if impl == "builtin" and spec["protocol"] == "h1s":
        return "overload-h1s"  # pages time out and break the SLA: the markers
    return f"{impl}-{spec['protocol']}"


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[Path, Path]:
    """A load test over two servers (one run overloaded) and a trial sweep, in one report."""
    tmp = tmp_path_factory.mktemp("capacity")
    db = tmp / "w.db"
    wirelab.loadtest(GRID, db=db, engine=FixtureEngine(loadtest_recording=_recording))
    interrupted = GRID.replace('name = "cap-grid"', 'name = "cap-stopped"').replace(
        '[grid]\n"server.impl" = ["builtin", "apache"]\n', ""
    )
    interrupted = interrupted.replace("server = { apache", 'server = { impl = "apache", apache')
    wirelab.loadtest(interrupted, db=db, engine=FixtureEngine(loadtest_recording=lambda s: "interrupted-h2"))
    wirelab.run(TRIALS, db=db, engine=FixtureEngine())
    return db, write_report(db, None, tmp / "out")


def test_a_load_test_gets_study_n_s_figures_and_tables(report):
    _db, index = report
    sections = parse(index.read_text()).sweeps
    cap = sections["cap-grid"]
    titles = [title.removeprefix("capacity ") for kind, title in cap["figures"] if kind == "capacity"]
    assert titles == [
        "Throughput vs VUs",
        "Page time vs VUs",
        "Errors vs VUs",
        "Server CPU, memory and busy workers vs VUs",
    ]
    assert [name for name, _ in cap["tables"]] == ["capacity", "errors", "intervals"]
    columns = dict(cap["tables"])["capacity"]
    assert {"max pages/s", "VUs at 1st error", "VUs at SLA violation", "CPU max (cores)"} <= set(columns)
    assert {"page ms at 5 VUs", "CPU at 5 VUs", "MB at 5 VUs"} <= set(columns)
    assert cap["trials"] == 0 and cap["waterfalls"] == 0  # no page loads to list
    assert cap["findings"] == ["server builtin", "server apache", "Data quality"]
    written = index.parent / "figures" / "cap-grid"
    assert len(list(written.glob("*.png"))) == len(list(written.glob("*.svg"))) == 4
    assert sections["trials"]["figures"]  # a trial sweep beside it is drawn as before


def test_sentences_state_what_the_runs_say(report):
    db, index = report
    html = unescape(index.read_text())
    overload = json.loads((FIXTURES_DIR / "loadtests" / "overload-h1s" / "loadtest.json").read_text())
    outcomes = overload["outcomes"]
    first_error, sla = outcomes["vus_at_first_error"], outcomes["vus_at_first_sla_violation"]
    assert f"First failed page: HTTPS at {first_error} VUs; none over HTTP/2 (up to 10 VUs)" in html
    assert f"First interval violating the SLA (p90 page time ≤ 1160 ms): HTTPS at {sla} VUs" in html
    timeouts = sum(
        json.loads(line)["errors"]["timeout"]
        for line in (FIXTURES_DIR / "loadtests" / "overload-h1s" / "intervals.jsonl")
        .read_text()
        .splitlines()[:4]
    )
    assert f"Failed pages by kind: {timeouts} timeout." in html
    with wirelab.open(db) as results:
        table = capacity_table(load_capacity(results, "cap-grid")).set_index(["config", "protocol"])
    apache_h2 = table.loc[("server apache", "h2")]
    busy = [
        json.loads(x)["gauges"]["busy_workers"]
        for x in (FIXTURES_DIR / "loadtests" / "apache-h2" / "server.jsonl").read_text().splitlines()[:4]
    ]
    assert apache_h2["busy_max"] == max(busy) and apache_h2["busy_limit"] == 150  # worker MPM's default
    # the VUs' connections come from the engine's totals; these recordings predate the count of those the
    # server closed first, which stays unknown (the table shows the opened count alone)
    recorded = json.loads((FIXTURES_DIR / "loadtests" / "apache-h2" / "loadtest.json").read_text())
    totals = recorded["summary"]["totals"]
    assert apache_h2["connections_opened"] == totals["connections_opened"] > 0
    assert apache_h2["connections_closed_by_server"] is None and "connections_closed_by_server" not in totals
    busiest = table.loc[("server apache", "h1s"), "busy_max"]
    assert f"The server's busy workers peaked at {busiest:,.0f} over HTTPS" in html
    at = json.loads((FIXTURES_DIR / "loadtests" / "apache-h2" / "loadtest.json").read_text())["outcomes"]
    assert f"{at['page_ms_at']['5']['page_ms']['p90']:,.0f} ms over HTTP/2" in html
    assert f"{at['server_at']['5']['cpu_util']:.2f} cores and" in html
    # the highest rate is the engine's outcome: over the scenario, not the fraction of a second after it
    lines = [
        json.loads(x)
        for x in (FIXTURES_DIR / "loadtests" / "apache-h2" / "intervals.jsonl").read_text().splitlines()
    ]
    assert lines[-1]["pages_per_s"] > max(x["pages_per_s"] for x in lines[:-1])  # the short last interval
    assert apache_h2["max_pages_per_s"] == at["max_pages_per_s"] == max(x["pages_per_s"] for x in lines[:-1])
    assert f"{at['max_pages_per_s']:.1f}" in html


@pytest.mark.parametrize("name", sorted(p.name for p in (FIXTURES_DIR / "loadtests").iterdir()))
def test_recorded_peak_rates_are_over_the_scenario_s_full_intervals(name):
    """The recordings' outcomes follow the engine's definition of the peak rates (engine/loadgen
    report.go, inScenario): the full intervals that start before the last stage ends."""
    run = FIXTURES_DIR / "loadtests" / name
    result = json.loads((run / "loadtest.json").read_text())
    spec = result["spec"]
    end = sum(stage["duration_s"] for stage in spec["scenario"]["stages"])
    lines = [json.loads(x) for x in (run / "intervals.jsonl").read_text().splitlines()]
    full = [
        x
        for x in lines
        if x["t_start_s"] < end and x["t_end_s"] - x["t_start_s"] == pytest.approx(spec["interval_s"])
    ]
    for rate in ("pages_per_s", "hits_per_s"):
        assert result["outcomes"][f"max_{rate}"] == max(x[rate] for x in full), rate


def test_data_quality_names_incomplete_runs_and_failed_thresholds(report):
    _db, index = report
    html = unescape(index.read_text())
    stopped = parse(html).sweeps["cap-stopped"]
    assert stopped["findings"][-1] == "Data quality"
    assert re.search(r"Run l[0-9a-f]{15} \(HTTP/2\) is interrupted \(3 intervals measured", html)
    assert re.search(r"Run l[0-9a-f]{15} \(HTTPS\) failed its thresholds: errors == 0\.", html)


def test_report_command_takes_a_load_test(tmp_path, report, capsys):
    from test_cli import run_cli

    db, _index = report
    code, out, err = run_cli(capsys, "report", "cap-stopped", "--db", str(db), "--out", str(tmp_path / "r"))
    assert code == 0, err and f"report: {tmp_path / 'r' / 'index.html'}" in out


# --- in Chromium ------------------------------------------------------------------------------------


def test_renders_in_chromium_with_visible_figures(report, tmp_path):
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not installed (make setup installs Debian's chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    _db, index = report
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, timeout=PLAYWRIGHT_TIMEOUT_MS
        )
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        page.set_default_timeout(PLAYWRIGHT_TIMEOUT_MS)
        messages: list[str] = []
        page.on("console", lambda m: messages.append(m.text) if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: messages.append(str(e)))
        page.goto(index.as_uri())
        page.wait_for_load_state("load")
        section = page.locator("section[data-sweep='cap-grid']")
        images = section.locator("figure.fig img")
        assert images.count() == 4
        for i in range(images.count()):
            img = images.nth(i)
            img.scroll_into_view_if_needed()
            assert img.is_visible()
            width, height = img.evaluate("e => [e.naturalWidth, e.naturalHeight]")
            assert width > 300 and height > 150
        table = section.locator("details#tab-cap-grid-capacity table")
        assert table.is_visible() and table.locator("tbody tr").count() == 4
        section.screenshot(path=str(tmp_path / "capacity-section.png"))
        assert (tmp_path / "capacity-section.png").stat().st_size > 20_000
        assert messages == []
        browser.close()


def test_connections_cell():
    """The capacity table's connections: opened, then those the server closed first (when counted)."""
    from wirelab.report._capacity import _connections

    assert _connections(1054, 6) == "1,054 (6)"
    assert _connections(54, 0) == "54 (0)"
    assert _connections(54, None) == "54" and _connections(54, float("nan")) == "54"
    assert _connections(None, None) == "—"


def test_connections_the_server_closed_are_said_when_counted(report):
    """The findings say how many connections the server closed first — when the engine counted them."""
    db, index = report
    # the recordings predate the count: nothing is said
    assert "The server closed connections" not in unescape(index.read_text())
    with wirelab.open(db) as results:
        table = capacity_table(load_capacity(results, "cap-grid"))
    apache = table[table["config"] == "server apache"].copy()
    apache["connections_closed_by_server"] = apache["protocol"].map({"h1s": 12, "h2": 0})
    said = capacity_sentences(apache, ["h1s", "h2"])[-1]
    h1s, h2 = (apache.set_index("protocol").loc[p] for p in ("h1s", "h2"))
    assert said.startswith("The server closed connections before the VUs did")
    per_page = h1s["connections_opened"] / h1s["pages"]
    assert f"12 of {h1s['connections_opened']:,} over HTTPS ({per_page:.1f} opened per page)" in said
    assert f"0 of {h2['connections_opened']:,} over HTTP/2" in said
    apache["connections_closed_by_server"] = 0  # nothing closed: nothing to say
    assert not capacity_sentences(apache, ["h1s", "h2"])[-1].startswith("The server closed")
