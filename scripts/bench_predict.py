"""Prediction benchmark (`make bench`): the model's accuracy and speed targets, as figures (not assertions).

- accuracy: `wirelab predict validate` on the shipped labelled set (no emulation): median and p90
  absolute PLT error, Spearman ρ, the sign of significant gains, model beside the Lantern-style
  baseline (targets: ≤ 10 %, ≤ 25 %, ≥ 0.95, ≥ 90 %);
- throughput: predictions per second on one core — a grid of 1024 random configurations (RTT
  20–500 ms, 256 kbit/s–20 Mbit/s, loss 0–3 %, queue 16–1024) × h1s, h2, h3 over one page, for
  pages of a few to a few hundred objects (target ≥ 10,000/s);
- cold start: `wirelab predict twitter --net 3g` in a fresh process, wall and CPU time (target < 1 s).

Prints one JSON object with the load average beside the figures (the machine is shared).
Usage: scripts/bench_predict.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from wirelab._predict import _config, _constants, _validate  # noqa: E402
from wirelab._predict._run import predict_configs  # noqa: E402

PAGES = ("twitter", "youtube", "imgur", "web200:17")


def grid(page: str, n: int, seed: int = 1) -> list[_config.Config]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        net = (
            f"rtt={int(np.exp(rng.uniform(np.log(20), np.log(500))))}ms,"
            f"bw={int(np.exp(rng.uniform(np.log(256), np.log(20000))))}kbit,"
            f"loss={rng.uniform(0, 3):.2f}%,queue={int(rng.choice([16, 64, 256, 1024]))}"
        )
        out += _config.configs_of({"page": page, "network": net, "protocols": ["h1s", "h2", "h3"]})
    return out


def cold_start() -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "wirelab._main", "predict", "twitter", "--net", "3g"],
        check=True,
        capture_output=True,
        env={**os.environ, "COLUMNS": "120"},
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    v = _validate.score_shipped()
    k = _constants.load().constants
    speed = {}
    for page in PAGES:
        configs = grid(page, 1024)
        predict_configs(configs[:3], k)  # the page's facts from the engine, once
        times = []
        for _ in range(args.runs):
            start = time.process_time()
            predict_configs(configs, k)
            times.append(time.process_time() - start)
        speed[page] = round(len(configs) / statistics.median(times))
    colds = [cold_start() for _ in range(args.runs)]
    result = {
        "validation": {
            "heldout_configurations": v.heldout,
            "model": {
                k_: round(x, 4) if isinstance(x, float) else x for k_, x in v.model_scores.row().items()
            },
            "baseline": {
                k_: round(x, 4) if isinstance(x, float) else x for k_, x in v.baseline_scores.row().items()
            },
            "targets": {
                "median_abs_error": 0.10,
                "p90_abs_error": 0.25,
                "spearman": 0.95,
                "sign_right": 0.90,
            },
        },
        "predictions_per_cpu_second": speed,
        "cold_start_s": {
            "wall": round(statistics.median(c[0] for c in colds), 3),
            "cpu": round(statistics.median(c[1] for c in colds), 3),
        },
        "runs": args.runs,
        "load_average": [round(load_before, 1), round(os.getloadavg()[0], 1)],
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
