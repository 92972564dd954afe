"""`wirelab probe`: records checked against the contract's schema on both sides, stored (one row per
site, one per site and protocol), shares computed, exported, and drawn in the report; bad input is one
line and exit 2 with nothing stored; Ctrl-C keeps what arrived. The records are
tests/fixtures/probes/local.jsonl, recorded by the real engine against the local internet; the
expectations are the engine's own (`wirelab-engine sites ls --json`, recorded beside them and checked
against the engine when it is built). The root tests run the real probe against the local internet.
Nothing here passes --allow-internet."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from timebound import bound, retry

import wirelab.cli as cli
from wirelab import _contract as contract
from wirelab._engine import SubprocessEngine
from wirelab.analysis.probes import ANNOUNCEMENTS, gaps, probe_shares
from wirelab.cli import main
from wirelab.errors import ContractError, EngineNotFoundError
from wirelab.report import write_report
from wirelab.store import PROBE_PROTOCOLS, Results, Store

ROOT = Path(__file__).resolve().parent.parent
PROBES = ROOT / "tests" / "fixtures" / "probes"
RECORDS = [json.loads(line) for line in (PROBES / "local.jsonl").read_text().splitlines()]
SITES = json.loads((PROBES / "sites.json").read_text())
EXPECTED = {s["url"]: s for s in SITES}


def run_cli(capsys, *argv):
    cli.out.width = cli.err.width = 200
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def real_engine() -> Path:
    candidate = os.environ.get("WIRELAB_E2E_ENGINE") or str(ROOT / "bin" / "wirelab-engine")
    try:
        engine = SubprocessEngine(candidate)
    except EngineNotFoundError as e:
        pytest.skip(f"no engine: {e}")
    if "probe" not in engine.commands():
        pytest.skip(f"{engine.path} has no `probe` command ({engine.version()})")
    return engine.path


def check_classification(protocols: pd.DataFrame) -> None:
    """Every stored site is classified as the engine's catalog says it must be."""
    for row in protocols.to_dict("records"):
        want = EXPECTED[row["site"]]["expected"][row["protocol"]]
        assert row["announced"] == want["announced"], row
        assert sorted(row["announced_by"]) == want["announced_by"], row
        assert row["served"] == want["served"], row


# ------------------------------------------------------------------------------------------------
# the contract


def test_fixture_records_satisfy_the_schema():
    assert len(RECORDS) == sum(not s["expected_refused"] for s in SITES)
    for r in RECORDS:
        contract.validate("probe-record", r)
    broken = copy.deepcopy(RECORDS[0])
    broken["protocols"]["h1"]["announced"] = True  # h1 has no announcement
    with pytest.raises(ContractError, match="protocols.h1.announced"):
        contract.validate("probe-record", broken)
    del broken["protocols"]["h3"]
    with pytest.raises(ContractError):
        contract.validate("probe-record", broken)


def test_store_columns_are_the_schemas_fields():
    """The columns of probe_protocols are fixed by the store's schema (v4), so they are a copy of the
    record's fields that this test keeps in step; the protocols and announcement kinds are read from
    the record's schema (store.PROBE_PROTOCOLS, analysis.probes.ANNOUNCEMENTS)."""
    from wirelab.store import PROBE_FIELDS

    defs = contract.load_schema("probe-record")["$defs"]
    assert set(defs["result"]["required"]) == set(PROBE_FIELDS)
    assert PROBE_PROTOCOLS[0] == "h1" and "h3" in PROBE_PROTOCOLS
    assert {"alpn", "alt-svc", "https-rr"} <= set(ANNOUNCEMENTS)


def test_recorded_catalog_is_the_engines():
    engine = real_engine()
    out = subprocess.run([str(engine), "sites", "ls", "--json"], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == SITES, (
        "re-record: .venv/bin/python tests/fixtures/make_fixtures.py --only probes"
    )


# ------------------------------------------------------------------------------------------------
# store and analysis


def stored(tmp_path: Path) -> Path:
    db = tmp_path / "w.db"
    with Store(db) as store:
        run = store.create_probe_run("local", local=True, allow_internet=False, args=["x"], provenance={})
        for r in RECORDS:
            store.add_probe(run, r)
        refused = copy.deepcopy(RECORDS[0])  # a refused site, as the engine writes it with --allow-internet
        refused.update(
            index=len(RECORDS),
            site="192.0.2.1",
            url="https://192.0.2.1/",
            host="192.0.2.1",
            addr="",
            dns=None,
            alt_svc="",
            refused="192.0.2.1: a special-purpose address (documentation)",
        )
        for p in refused["protocols"].values():
            p.update(
                announced=None if p is refused["protocols"]["h1"] else False,
                announced_by=[],
                served=False,
                status=0,
                server="",
                alpn="",
                tls_version="",
                cert_error="",
                connect_ms=None,
                handshake_ms=None,
                first_byte_ms=None,
                port=0,
                error="",
            )
        contract.validate("probe-record", refused)
        store.add_probe(run, refused)
        store.end_probe_run(run, "complete")
    return db


def test_store_and_shares(tmp_path):
    db = stored(tmp_path)
    with Results(db) as results:
        runs = results.probe_runs()
        protocols = results.probe_protocols("local")
        sites = results.probes("local")
    assert runs.loc[0, "sites"] == len(RECORDS) + 1 and runs.loc[0, "refused"] == 1
    assert len(protocols) == 6 * (len(RECORDS) + 1) and len(sites) == len(RECORDS) + 1
    check_classification(protocols[protocols["addr"] != ""])
    shares = probe_shares(protocols).set_index("protocol")
    # counted straight from the records
    for proto in PROBE_PROTOCOLS:
        rs = [r["protocols"][proto] for r in RECORDS]
        assert shares.loc[proto, "sites"] == len(RECORDS)
        assert shares.loc[proto, "served"] == sum(r["served"] for r in rs)
        if proto == "h1":
            assert pd.isna(shares.loc[proto, "announced"])
            continue
        assert shares.loc[proto, "announced"] == sum(bool(r["announced"]) for r in rs)
        assert shares.loc[proto, "announced_not_served"] == sum(
            bool(r["announced"]) and not r["served"] for r in rs
        )
        assert shares.loc[proto, "by_alt-svc"] == sum("alt-svc" in r["announced_by"] for r in rs)
    gap = gaps(protocols)
    assert list(gap[gap["protocol"] == "h3"]["site"]) == ["https://h3-unserved.wirelab.test/L/fixture/"]
    assert set(gap["kind"]) == {"announced, not served"}
    https = sites.set_index("host").loc["https-rr.wirelab.test"]
    assert https["https_alpn"] == "h3,h2" and https["https_ech"] == 1 and https["h3_served"]
    assert sites.iloc[-1]["refused"].startswith("192.0.2.1") and sites.iloc[-1]["addr"] == ""


# ------------------------------------------------------------------------------------------------
# the command line (the engine stand-in replays the recorded records)


def test_probe_stores_prints_exports_and_reports(capsys, tmp_path, fake_engine):
    db = tmp_path / "w.db"
    urls = [r["site"] for r in RECORDS]
    code, out, err = run_cli(
        capsys,
        "probe",
        *urls,
        "--name",
        "fx",
        "--db",
        str(db),
        "--engine",
        str(fake_engine),
        "--export",
        "csv",
        "--out",
        str(tmp_path / "p.csv"),
    )
    assert code == 0, err
    assert "fx: 7 sites, 7 contacted" in out and "stored as probe run fx" in out
    h3 = next(line for line in out.splitlines() if line.startswith("│ h3 "))
    assert "4 (57 %)" in h3 and "3 (43 %)" in h3  # announced by 4 of 7 sites, served by 3
    df = pd.read_csv(tmp_path / "p.csv")
    assert len(df) == 7 and {"site", "h3_announced", "h3_served", "h2c_announced_by"} <= set(df.columns)
    with Results(db) as results:
        check_classification(results.probe_protocols("fx"))
    code, out, _ = run_cli(
        capsys,
        "probe",
        "--run",
        "fx",
        "--export",
        "parquet",
        "--out",
        str(tmp_path / "p.pq"),
        "--db",
        str(db),
    )
    assert code == 0 and "wrote 7 rows" in out and len(pd.read_parquet(tmp_path / "p.pq")) == 7
    code, out, _ = run_cli(capsys, "results", "ls", "--db", str(db))
    assert code == 0 and "probe runs" in out and "fx" in out
    # the same name again: refused before the engine runs
    code, _, err = run_cli(
        capsys, "probe", urls[0], "--name", "fx", "--db", str(db), "--engine", str(fake_engine)
    )
    assert code == 2 and err.count("\n") == 1 and "already in" in err
    index = write_report(db, out_dir=tmp_path / "report")
    html = index.read_text()
    assert 'data-probe="fx"' in html and "Announced vs served, per protocol" in html
    assert "h3-unserved.wirelab.test" in html and (tmp_path / "report" / "figures" / "probe-fx").is_dir()
    assert "announced, not served (https://h3-unserved.wirelab.test/L/fixture/)" in html
    # naming a sweep leaves probe runs out; naming an unknown run is one line
    with pytest.raises(Exception, match="not a probe run"):
        write_report(db, probe_runs=["nope"], out_dir=tmp_path / "r2")


def test_local_without_sites_probes_every_reachable_catalog_site(capsys, tmp_path, fake_engine):
    db = tmp_path / "w.db"
    code, out, err = run_cli(capsys, "probe", "--local", "--db", str(db), "--engine", str(fake_engine))
    assert code == 0, err
    with Results(db) as results:
        sites = results.probes()
        assert bool(results.probe_runs().loc[0, "local"])
    assert sorted(sites["site"]) == sorted(s["url"] for s in SITES if not s["expected_refused"])


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], "wirelab: sites: none given"),
        (["example.org"], "wirelab: probe: example.org: a public name"),
        (["--export", "xlsx", "h1.wirelab.test"], 'wirelab: --export: "xlsx" is not a format'),
        (["--run", "x"], "wirelab: --run: needs --export"),
        (["--run", "x", "--export", "csv", "h1.wirelab.test"], "wirelab: --run: exports a stored run"),
        (["--concurrency", "x", "h1.wirelab.test"], "wirelab probe: Invalid value for '--concurrency'"),
    ],
)
def test_bad_input_with_the_stand_in(capsys, tmp_path, fake_engine, argv, expected):
    db = tmp_path / "w.db"
    code, out, err = run_cli(capsys, "probe", *argv, "--db", str(db), "--engine", str(fake_engine))
    assert code == 2 and err.count("\n") == 1 and err.startswith(expected), err
    assert not db.exists()


@pytest.mark.clock
def test_bad_input_through_the_real_engine(capsys, tmp_path, off_machine):
    """The engine owns site syntax, list limits and knob ranges: each is one line, exit 2, nothing
    stored. Public names among them: runs only where no route leads off the machine."""
    engine = real_engine()
    db = tmp_path / "w.db"
    empty, million = tmp_path / "empty.txt", tmp_path / "million.txt"
    empty.write_text("# no sites\n")
    million.write_text("".join(f"s{i}.example.org\n" for i in range(1_000_000)))
    cases = {
        "has no sites": ["--list", str(empty)],
        "has more than 1000 sites": ["--list", str(million)],
        "must be a valid URL": ["https://example.org/%zz"],
        'scheme "ftp" is not http': ["ftp://example.org/"],
        'scheme "mailto" is not http': ["mailto:someone@example.org"],
        "rate: got": ["--rate", "fast", "h1.wirelab.test"],
        "timeout: got": ["--timeout", "1ms", "h1.wirelab.test"],
    }
    for expected, argv in cases.items():

        def attempt(n: int, argv: list[str] = argv, expected: str = expected) -> None:
            start = time.monotonic()
            code, out, err = run_cli(capsys, "probe", *argv, "--db", str(db), "--engine", str(engine))
            assert code == 2 and err.count("\n") == 1 and expected in err, (argv, err)
            took = time.monotonic() - start
            bound(took < 30, f"{argv}: refused after {took:.1f} s, want < 30 s")

        retry(attempt)  # a timing bound (tests/timebound.py)
        assert not db.exists()


@pytest.mark.serial
def test_interrupt_keeps_the_records_so_far(tmp_path, fake_engine):
    """SIGINT to `wirelab probe` mid-run: the engine is interrupted, the records that arrived are stored,
    the run is marked interrupted, exit 130."""
    db, marker = tmp_path / "w.db", tmp_path / "held"
    env = {**os.environ, "FAKE_ENGINE_PROBE_HOLD": "2", "FAKE_ENGINE_MARKER": str(marker)}
    urls = [r["site"] for r in RECORDS]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "wirelab.cli",
            "probe",
            *urls,
            "--name",
            "held",
            "--db",
            str(db),
            "--engine",
            str(fake_engine),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("wirelab: "), err
    assert db.exists(), err
    with Results(db) as results:
        run = results.probe_runs().set_index("run").loc["held"]
        assert run["status"] == "interrupted" and run["sites"] == 2


# ------------------------------------------------------------------------------------------------
# against the local internet (root)


def root_engine() -> Path:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces)")
    return real_engine()


def probe_local(capsys, tmp_path: Path, *args: str) -> tuple[int, str, str, Path]:
    """``wirelab probe --local ARGS`` with the real engine (as root) into a new database: the exit
    code, stdout, stderr and the database's path."""
    engine = root_engine()
    db = tmp_path / "w.db"
    code, out, err = run_cli(capsys, "probe", "--local", *args, "--db", str(db), "--engine", str(engine))
    return code, out, err, db


@pytest.mark.root
def test_local_internet_end_to_end(capsys, tmp_path):
    code, out, err, db = probe_local(capsys, tmp_path, "--rate", "50/s", "--timeout", "2s", "--name", "live")
    assert code == 0, err
    with Results(db) as results:
        protocols = results.probe_protocols("live")
    assert len(protocols) == 6 * len(RECORDS)
    check_classification(protocols)


@pytest.mark.root
def test_local_documentation_address_is_refused(capsys, tmp_path, off_machine):
    code, out, err, db = probe_local(capsys, tmp_path, "doc.wirelab.test")
    assert code == 2 and err.count("\n") == 1, err
    assert "192.0.2.1" in err and "--allow-internet" in err
    assert not db.exists()


@pytest.mark.root
def test_local_nothing_to_contact_is_one_line_per_site_and_stores_nothing(capsys, tmp_path, off_machine):
    """Issue 26: sites of the local internet without an address (names it does not have) — nothing to
    contact — are one line each, exit 2, and no probe run is stored (an internal error and a stored run
    before)."""
    code, out, err, db = probe_local(capsys, tmp_path, "nosuch.wirelab.test", "https://gone.wirelab.test/x")
    lines = err.strip().splitlines()
    assert code == 2 and out == "", err
    assert len(lines) == 2, err
    assert lines[0].startswith("wirelab: probe: nosuch.wirelab.test: no address to probe"), lines
    assert lines[1].startswith("wirelab: probe: https://gone.wirelab.test/x: no address to probe"), lines
    assert "internal error" not in err
    assert not db.exists()
