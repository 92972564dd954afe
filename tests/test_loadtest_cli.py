"""`wirelab loadtest` on the command line, through the real SubprocessEngine and the engine stand-in
(tests/fake_engine.py replays wirelab/_fixtures/loadtests/): the runs' table, exit codes (0, 1 when a
threshold fails, 2 bad input with nothing created, 130 on Ctrl-C with what was measured stored),
`results show|ls|export` of a load test."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from cli_process import cli_process, ctrl_c
from test_cli import run_cli  # the helper: main() with wide consoles
from test_loadtest_runner import SPEC as RUNNER_SPEC  # the load test the recordings answer

import wirelab

SPEC = RUNNER_SPEC + 'thresholds = ["errors == 0"]\n'


@pytest.fixture
def spec(tmp_path) -> Path:
    path = tmp_path / "cap.toml"
    path.write_text(SPEC)
    return path


def test_loadtest_prints_its_runs_and_results_show_them(capsys, tmp_path, spec, fake_engine):
    db = tmp_path / "w.db"
    code, out, err = run_cli(capsys, "loadtest", str(spec), "--db", str(db), "--engine", str(fake_engine))
    assert code == 0, err
    assert "load test cap: 2/2 runs complete; this run: 2 complete, 0 failed" in out
    assert "│ h1s " in out and "│ h2 " in out and "passed" in out
    # off a terminal, every interval is a line with the server's sample beside it
    assert err.count("  interval ") == 10 and "busy 19" in err  # Apache's busy workers (mod_status)
    code, out, _ = run_cli(capsys, "results", "show", "cap", "--db", str(db))
    assert code == 0 and "cap (load test): h1s vs h2 on Apache" in out and "2/2 runs complete" in out
    code, out, _ = run_cli(capsys, "results", "ls", "--db", str(db))
    assert "cap (load test)" in out and "2/2 runs" in out
    target = tmp_path / "samples.csv"
    code, out, _ = run_cli(
        capsys,
        "results",
        "export",
        "cap",
        "-f",
        "csv",
        "--table",
        "server_samples",
        "--db",
        str(db),
        "-o",
        str(target),
    )
    assert code == 0 and "wrote 10 rows" in out and "busy_workers" in target.read_text()
    # without --table, a load test's runs
    code, out, _ = run_cli(
        capsys, "results", "export", "cap", "-f", "csv", "--db", str(db), "-o", str(target)
    )
    assert code == 0 and "wrote 2 rows" in out and "vus_at_first_error" in target.read_text()


def test_a_failed_threshold_exits_1_after_storing_everything(
    capsys, tmp_path, spec, fake_engine, monkeypatch
):
    monkeypatch.setenv("FAKE_ENGINE_LOADTEST_RECORDING", "overload-h1s")
    db = tmp_path / "w.db"
    code, out, _ = run_cli(capsys, "loadtest", str(spec), "--db", str(db), "--engine", str(fake_engine))
    assert code == 1
    assert "thresholds failed: " in out and "errors == 0" in out
    with wirelab.open(db) as results:
        runs = results.loadtests("cap")
    assert runs["complete"].all() and len(runs) == 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            SPEC.replace("interval_s = 2", "interval_s = 0"),
            "wirelab: load.interval_s: got 0; must be",
        ),
        (SPEC.replace('"h2"]', '"h3"]'), "wirelab: run 1 (h3): protocol: no load-test recording"),
        (
            '[sweep]\nname = "x"\n[base]\npage = "twitter"\n',
            "wirelab: SPEC: a trial sweep ([base]); run it with wirelab run",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2_and_creates_nothing(capsys, tmp_path, fake_engine, text, expected):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    db = tmp_path / "w.db"
    code, out, err = run_cli(capsys, "loadtest", str(path), "--db", str(db), "--engine", str(fake_engine))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(expected.replace("SPEC", str(path))), err
    assert not db.exists() and not (tmp_path / "w.db.d").exists()


def test_wirelab_run_points_a_load_test_to_loadtest(capsys, tmp_path, spec, fake_engine):
    code, _, err = run_cli(
        capsys, "run", str(spec), "--db", str(tmp_path / "w.db"), "--engine", str(fake_engine)
    )
    assert code == 2 and err.startswith(
        f"wirelab: {spec}: a load-test spec ([load]); run it with wirelab loadtest"
    )


@pytest.mark.serial
def test_ctrl_c_stops_the_vus_stores_what_was_measured_and_exits_130(tmp_path, spec, fake_engine):
    db = tmp_path / "w.db"
    marker = tmp_path / "held"
    env = {
        **os.environ,
        "FAKE_ENGINE_HOLD": "0:2",  # the first run holds after two intervals, until a signal
        "FAKE_ENGINE_ORDER": str(tmp_path / "order"),
        "FAKE_ENGINE_MARKER": str(marker),
    }
    argv = ["loadtest", str(spec), "--db", str(db), "--engine", str(fake_engine)]
    with cli_process(*argv, env=env, stderr=subprocess.PIPE) as proc:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        out, err = ctrl_c(proc, timeout=60)  # Ctrl-C reaches wirelab; the engine is in its own group
    assert proc.returncode == 130, err
    assert "interrupted: what was measured is stored" in out and "wirelab: load test cap: interrupted" in err
    with wirelab.open(db) as results:
        runs = results.loadtests("cap")
        intervals = results.load_intervals("cap")
    assert list(runs["status"]) == ["interrupted", "planned"] and not runs["complete"].any()
    assert runs.iloc[0]["interrupted"] and len(intervals) == 2
