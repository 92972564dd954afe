"""explain's cost (`make bench`): `wirelab explain` of a 10,000-load sweep (the issue's bar: ≤ 10 s).

The sweep comes from tests/model_engine.py (a model, not measurements: its loads carry a decomposition
that sums to their time on the wire, as the engine's do) run through the real runner and store: 100
configurations (RTT × bandwidth) × 2 protocols × 50 repetitions. Prints one JSON object: the time to
build the database (not the figure), and the times of `Results.explain` and of the whole CLI command
(`wirelab explain SWEEP`: the database read, the contributions, the sentences, the table), each the
median of three runs. Figures, not assertions.
Usage: scripts/bench_explain.py [--db PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from model_engine import ModelEngine  # noqa: E402

import wirelab  # noqa: E402
from wirelab.cli import main  # noqa: E402

SPEC = """
[sweep]
name = "explain-bench"
[base]
page = "twitter"
protocols = ["h1s", "h2"]
repetitions = 50
network = { loss = "0.5%" }
[grid]
"network.rtt" = ["10ms", "20ms", "40ms", "60ms", "80ms", "100ms", "150ms", "200ms", "300ms", "400ms"]
"network.bw" = ["256kbit", "512kbit", "1mbit", "2mbit", "4mbit", "8mbit", "16mbit", "32mbit",
                "64mbit", "1gbit"]
"""


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main_() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", type=Path, help="reuse (or keep) the database here")
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    db = args.db or Path(tmp.name) / "explain.db"
    build_s = 0.0
    if not db.exists():
        spec = db.parent / "explain-bench.toml"
        spec.write_text(SPEC)
        build_s = timed(lambda: wirelab.run(spec, db=db, engine=ModelEngine(), parallel=os.cpu_count() or 2))
    with wirelab.open(db) as results:
        loads = len(results.loads("explain-bench"))
        api = [timed(lambda: results.explain("explain-bench")) for _ in range(3)]

    def cli() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["explain", "explain-bench", "--db", str(db)]) == 0

    command = [timed(cli) for _ in range(3)]
    print(
        json.dumps(
            {
                "benchmark": "explain",
                "loads": loads,
                "build_db_s": round(build_s, 1),
                "results_explain_s": round(statistics.median(api), 3),
                "cli_explain_s": round(statistics.median(command), 3),
                "loadavg": os.getloadavg(),
            }
        )
    )


if __name__ == "__main__":
    main_()
