"""Prediction benchmark (`make bench`): the model's accuracy and speed targets, as figures (not assertions).

- accuracy: `wirelab predict validate` on the shipped labelled set (no emulation): median and p90
  absolute PLT error, Spearman ρ, the sign of significant gains, model beside the Lantern-style
  baseline (targets: ≤ 10 %, ≤ 25 %, ≥ 0.95, ≥ 90 %);
- throughput: predictions per second on one core — a grid of 1024 random configurations (RTT
  20–500 ms, 256 kbit/s–20 Mbit/s, loss 0–3 %, queue 16–1024) × h1s, h2, h3 over one page, for
  pages of a few to a few hundred objects (target ≥ 10,000/s);
- cold start: `wirelab predict twitter --net 3g` in a fresh process, wall and CPU time (target < 1 s).

Prints one JSON object with the load average beside the figures (the machine is shared).

- ``--per-step``: also the simulation's time per plan step (ms, median of the runs) for each page and
  protocol at 1,024 and 4,096 configurations per batch (a step's cost against the batch's width);
- ``--against REV``: the throughput of the model at git revision REV and of this tree, each in its
  own process, alternately for ``--runs`` rounds on the same grids, and their ratios (this tree's
  predictions per CPU second over REV's): a speed-up measured under one load; and whether both
  predicted the same bits (``same_predictions``: a SHA-256 of every PLT and ToW, model and
  baseline — a change meant only to be faster must keep it true; a change of the model makes it
  false); and each tree's cold start, CPU seconds (median), timed in the same rounds.

Usage: scripts/bench_predict.py [--runs 3] [--per-step] [--against REV]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from wirelab._predict import _config, _constants, _validate  # noqa: E402
from wirelab._predict._run import predict_configs  # noqa: E402

PAGES = ("twitter", "youtube", "imgur", "web200:17")


def grid(page: str, n: int, seed: int = 1) -> list[_config.Config]:
    """n random networks × h1s, h2, h3 over ``page``."""
    return [c for s in grid_specs(page, n, seed) for c in _config.configs_of(s)]


def cold_start(tree: str | None = None, env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of a fresh ``wirelab predict twitter --net 3g``, the engine's included;
    with ``tree``, that tree's wirelab package."""
    entry = ["-m", "wirelab._main"]
    if tree is not None:
        entry = [
            "-c",
            f"import sys; sys.path.insert(0, {tree!r}); from wirelab._main import main; sys.exit(main())",
        ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, *entry, "predict", "twitter", "--net", "3g"],
        check=True,
        capture_output=True,
        env={**(env or os.environ), "COLUMNS": "120"},
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


#: One throughput measurement in a fresh process, with the wirelab package of TREE (argv[1]): the
#: grid's specs on stdin; per page on stdout, predictions per CPU second and a SHA-256 of the
#: predictions' bits (PLT and ToW, model and baseline).
_CHILD = """
import hashlib, json, sys, time
sys.path.insert(0, sys.argv[1])
from wirelab._predict import _config, _constants
from wirelab._predict._run import predict_configs
cf = _constants.load()
k = cf.constants
out = {}
for page, specs in json.load(sys.stdin).items():
    configs = [c for s in specs for c in _config.configs_of(s)]
    predict_configs(configs[:3], k)
    start = time.process_time()
    r = predict_configs(configs, k)
    rate = len(configs) / (time.process_time() - start)
    b = predict_configs(configs, cf.baseline, baseline=True)
    digest = hashlib.sha256(b"".join(a.tobytes() for a in (r.plt, r.tow, b.plt, b.tow))).hexdigest()
    out[page] = [rate, digest]
print(json.dumps(out))
"""


def grid_specs(page: str, n: int, seed: int = 1) -> list[dict]:
    """The specs :func:`grid` predicts (one per network, three protocols each)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        net = (
            f"rtt={int(np.exp(rng.uniform(np.log(20), np.log(500))))}ms,"
            f"bw={int(np.exp(rng.uniform(np.log(256), np.log(20000))))}kbit,"
            f"loss={rng.uniform(0, 3):.2f}%,queue={int(rng.choice([16, 64, 256, 1024]))}"
        )
        out.append({"page": page, "network": net, "protocols": ["h1s", "h2", "h3"]})
    return out


def against(rev: str, runs: int) -> dict[str, dict]:
    """This tree's throughput beside REV's, alternately in fresh processes (see the module's doc)."""
    specs = json.dumps({page: grid_specs(page, 1024) for page in PAGES})
    engine = os.environ.get("WIRELAB_ENGINE") or str(ROOT / "bin" / "wirelab-engine")
    env = {**os.environ, "WIRELAB_ENGINE": engine}
    with tempfile.TemporaryDirectory(prefix="bench-predict-") as tmp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev, "wirelab", "schemas", "engine/contract/schemas"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        got: dict[str, list[dict]] = {rev: [], "tree": []}
        colds: dict[str, list[float]] = {rev: [], "tree": []}
        for _ in range(runs):
            for who, tree in ((rev, tmp), ("tree", str(ROOT))):
                colds[who].append(cold_start(tree, env)[1])
                done = subprocess.run(
                    [sys.executable, "-c", _CHILD, tree], input=specs, capture_output=True, text=True, env=env
                )
                if done.returncode != 0:
                    raise SystemExit(f"--against: the {who} run failed: {done.stderr.strip()[-500:]}")
                got[who].append(json.loads(done.stdout))
    per = {}
    for page in PAGES:
        old = [r[page][0] for r in got[rev]]
        new = [r[page][0] for r in got["tree"]]
        digests = {r[page][1] for r in got[rev] + got["tree"]}
        per[page] = {
            rev: round(statistics.median(old)),
            "tree": round(statistics.median(new)),
            "ratios": [round(b / a, 2) for a, b in zip(old, new, strict=True)],
            "same_predictions": len(digests) == 1,
        }
    per["cold_start_cpu_s"] = {who: round(statistics.median(c), 3) for who, c in colds.items()}
    return per


def per_step(runs: int) -> dict:
    """ms per plan step of the simulation, per page and protocol, at 1,024 and 4,096 configurations."""
    from wirelab._predict import _pages
    from wirelab._predict._plan import batch
    from wirelab._predict._sim import simulate

    k = _constants.load().constants
    out: dict[str, dict[str, float]] = {}
    for page in PAGES:
        configs = grid(page, 4096, seed=2)
        predict_configs(configs[:3], k)
        facts = _pages.known([c.page for c in configs])
        for proto in ("h1s", "h2", "h3"):
            for width in (1024, 4096):
                idx = [j for j, c in enumerate(configs) if c.protocol == proto][:width]
                b = batch([configs[j] for j in idx], [facts[j] for j in idx])
                times = []
                for _ in range(runs):
                    start = time.process_time()
                    simulate(b, k)
                    times.append(time.process_time() - start)
                out.setdefault(page, {})[f"{proto}@{width}"] = round(
                    1000 * statistics.median(times) / b.kind.shape[0], 3
                )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--per-step", action="store_true")
    ap.add_argument("--against", metavar="REV")
    args = ap.parse_args()
    if args.against:
        load_before = os.getloadavg()[0]
        per = against(args.against, args.runs)
        print(
            json.dumps(
                {
                    "predictions_per_cpu_second": per,
                    "runs": args.runs,
                    "load_average": [round(load_before, 1), round(os.getloadavg()[0], 1)],
                },
                indent=1,
            )
        )
        return 0
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
        **({"ms_per_step": per_step(args.runs)} if args.per_step else {}),
        "runs": args.runs,
        "load_average": [round(load_before, 1), round(os.getloadavg()[0], 1)],
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
