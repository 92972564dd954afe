"""`wirelab reproduce elkhatib-rtt --quick` with the real engine (root): the study's RTT figure from real
loads, two trials at a time (--parallel 2: the run's longest trial, at 490 ms, overlaps the other two).
Skipped without root and while the engine has no `trial` command (see tests/test_e2e_root.py)."""

import subprocess
import sys

import pytest
from test_e2e_root import engine_path  # noqa: F401 - the fixture: the real engine or a skip

import wirelab

pytestmark = [pytest.mark.root, pytest.mark.slow]


def test_reproduce_elkhatib_rtt_quick(tmp_path, engine_path):  # noqa: F811
    db, out = tmp_path / "w.db", tmp_path / "report"
    argv = [
        sys.executable,
        "-m",
        "wirelab.cli",
        "reproduce",
        "elkhatib-rtt",
        "--quick",
        "--parallel",
        "2",
        "--db",
        str(db),
        "--out",
        str(out),
        "--engine",
        str(engine_path),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"report: {out / 'index.html'}" in done.stdout
    html = (out / "index.html").read_text()
    assert "ToW reduction vs RTT</figcaption>" in html
    assert (out / "figures" / "elkhatib-rtt-quick" / "gain-tow-reduction-vs-rtt.png").is_file()
    with wirelab.open(db) as results:
        loads = results.loads("elkhatib-rtt-quick")
    assert len(loads) == 18 and loads["error"].isna().all()
    # the report states what the loads say: count the RTT settings where h2's mean ToW is lower
    means = loads.groupby(["network.rtt_ms", "protocol"])["tow_ms"].mean().unstack()
    wins = int((means["h2"] < means["h1s"]).sum())
    assert f"HTTP/2 beats HTTPS (lower mean ToW) in {wins} of 3 RTT settings" in html
