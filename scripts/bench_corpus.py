"""Corpus benchmark (`make bench`): the issue's performance targets, as figures (not assertions).

- generating web200: `wirelab-engine pages generate --like httparchive-2024-desktop --count 200 --seed 1`
  (the engine's whole work: 200 page models with graphs and their characteristics), and writing the
  200 page files with --out; target ≤ 5 s;
- expanding a 200-page grid (`page = "corpus:web200"`, 4 protocols) into its plan, and planning its
  sweep (the plan registered in a fresh results database, as `wirelab run` does before the first
  trial); target ≤ 2 s.

Prints one JSON object: the median of --runs runs of each step and the load average beside them.
Usage: scripts/bench_corpus.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from wirelab import spec  # noqa: E402
from wirelab.store import Store  # noqa: E402

SPEC = """
[sweep]
name = "bench-corpus"
[base]
protocols = ["h1", "h2c", "h2", "h3"]
[grid]
page = "corpus:web200"
"""


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    engine = os.environ.get("WIRELAB_ENGINE") or str(
        Path(__file__).resolve().parent.parent / "bin" / "wirelab-engine"
    )
    gen = [engine, "pages", "generate", "--like", "httparchive-2024-desktop", "--count", "200", "--seed", "1"]
    figures: dict[str, list[float]] = {
        "generate_web200_s": [],
        "generate_web200_files_s": [],
        "expand_s": [],
        "plan_s": [],
    }
    for _ in range(args.runs):
        figures["generate_web200_s"].append(
            timed(lambda: subprocess.run(gen, check=True, capture_output=True))
        )
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            subprocess.run([*gen, "--out", tmp], check=True, capture_output=True)
            figures["generate_web200_files_s"].append(time.perf_counter() - start)
            start = time.perf_counter()
            plan = spec.loads(SPEC)
            figures["expand_s"].append(time.perf_counter() - start)
            assert len(plan.trials) == 200
            start = time.perf_counter()
            store = Store(Path(tmp) / "wirelab.db")
            store.create_sweep(plan, {"bench": "corpus"})
            store.close()
            figures["plan_s"].append(time.perf_counter() - start)
    result = {k: round(statistics.median(v), 3) for k, v in figures.items()}
    result["expand_and_plan_s"] = round(result["expand_s"] + result["plan_s"], 3)
    result["runs"] = args.runs
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    result["targets"] = {"generate_web200_s": 5.0, "expand_and_plan_s": 2.0}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
