"""Sweep throughput benchmark (`make bench`): loads per minute of a fixed small sweep at --parallel 1, 2
and 4, with what parallelism costs in fidelity at each, so that the default parallelism is a measured
choice. Prints one JSON object per run; figures, not assertions.

Fidelity is measured two ways:
- the emulators' timer lateness (worst trial's p99; the runner flags trials over 1 ms);
- the results themselves: for every configuration (page × RTT × protocol) the median ToW and PLT
  against the first `--parallel 1` run, and the gain of h2 over h1s in percentage points. The sweep
  runs at --parallel 1 a second time at the end, so the shift between two serial runs — the
  measurement's own noise — is printed beside the shifts that parallelism adds.

With --cluster, the same sweep instead runs twice side by side: at --parallel 2 on this machine and on
a Dask LocalCluster of two `wirelab worker` processes with one slot each (docs/distributed.md),
printing loads/min of both and the cluster's scheduling overhead per trial: submit to start (from the
later of the task's submission and its worker's slot falling free to the task starting on the worker),
start to engine, and result to stored (the engine's end to the trial in the database: packing,
transfer, unpacking, ingest) — beside the local run's engine end to stored (its ingest alone).

Needs root and an engine with the `trial` command; says so and exits 0 otherwise.
Usage: scripts/bench_sweep.py [--parallel 1,2,4] [--repetitions 3] [--client engine|chromium] [--cluster]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import wirelab  # noqa: E402
from wirelab._engine import SubprocessEngine  # noqa: E402
from wirelab.errors import EngineNotFoundError  # noqa: E402
from wirelab.runner import Observer  # noqa: E402

SPEC = """
[sweep]
name = "{name}"
[base]
page = "twitter"
protocols = ["h1s", "h2"]
repetitions = {repetitions}
network = {{ bw = "10mbit" }}
client = {{ impl = "{impl}" }}
[grid]
page = ["twitter", "youtube"]
"network.rtt" = ["20ms", "50ms", "100ms", "150ms"]
"""

CONFIG = ["page", "network.rtt"]


def medians(db: Path, sweep: str) -> dict[tuple, dict[str, float]]:
    """(page, rtt, protocol) → median tow_ms and plt_ms of the sweep's error-free loads."""
    loads = wirelab.open(db).loads(sweep=sweep, with_errors=False)
    out: dict[tuple, dict[str, float]] = {}
    for key, group in loads.groupby(CONFIG + ["protocol"]):
        out[tuple(key)] = {
            "tow_ms": float(group["tow_ms"].median()),
            "plt_ms": float(group["plt_ms"].median()),
        }
    return out


def gains(med: dict[tuple, dict[str, float]]) -> dict[tuple, float]:
    """(page, rtt) → % reduction of median ToW by h2 over h1s (study E's gain)."""
    out = {}
    for (page, rtt, proto), m in med.items():
        if proto == "h2" and (page, rtt, "h1s") in med:
            base = med[(page, rtt, "h1s")]["tow_ms"]
            out[(page, rtt)] = (base - m["tow_ms"]) / base * 100
    return out


def shift(
    run: dict[tuple, dict[str, float]], ref: dict[tuple, dict[str, float]], field: str
) -> dict[str, float]:
    """Median and largest |relative change| of one field's configuration medians, in %."""
    changes = [abs(run[k][field] / ref[k][field] - 1) * 100 for k in ref if k in run and ref[k][field] > 0]
    if not changes:
        return {}
    return {"median_pct": round(statistics.median(changes), 2), "max_pct": round(max(changes), 2)}


class Stored(Observer):
    """When each trial was stored (wall clock)."""

    def __init__(self) -> None:
        self.at: dict[str, float] = {}

    def trial_ended(self, outcome) -> None:
        self.at[outcome.trial.id] = time.time()


def _wall(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")[:26] + "+00:00").timestamp()


def _spread(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    values = sorted(values)
    return {
        "median": round(statistics.median(values), 1),
        "p90": round(values[min(len(values) - 1, int(0.9 * len(values)))], 1),
        "max": round(values[-1], 1),
    }


def idle_cpu_pct(pids: list[int], seconds: float) -> list[float]:
    """CPU use of each process (% of one core) over ``seconds`` of doing nothing else."""

    def cpu(pid: int) -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    before, t0 = [cpu(p) for p in pids], time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - t0
    return [round((cpu(p) - b) / elapsed * 100, 1) for p, b in zip(pids, before, strict=True)]


def engine_end_to_stored_ms(db: Path, sweep: str, stored: dict[str, float]) -> list[float]:
    """Per trial: the engine's own end (trial.json provenance.ended_at) to the trial being stored."""
    trials = wirelab.open(db).trials(sweep, status="complete")
    return [
        (stored[t] - _wall(p["engine"]["ended_at"])) * 1000
        for t, p in zip(trials["trial_id"], trials["provenance"], strict=True)
        if t in stored
    ]


def bench_cluster(
    engine: SubprocessEngine, repetitions: int, client: str, keep: str | None, rounds: int
) -> None:
    """Local --parallel 2 against a 2-worker LocalCluster with 1 slot each, same sweep, side by side;
    ``rounds`` times alternately, so that other work on the machine weighs on both alike."""
    from wirelab._cluster import ClusterEngine, local_cluster

    with tempfile.TemporaryDirectory(prefix="wirelab-bench-") as tmp:
        db = Path(keep) if keep else Path(tmp) / "bench.db"
        rows = []
        for round_, mode in [(r, m) for r in range(1, rounds + 1) for m in ("local", "cluster")]:
            name = f"bench-{client}-{mode}-2-round{round_}"
            text = SPEC.format(name=name, repetitions=repetitions, impl=client)
            stored = Stored()
            row: dict = {"bench": "sweep-cluster", "run": name, "mode": mode, "client": client}
            row["loadavg_before"] = os.getloadavg()[0]
            if mode == "local":
                started = time.monotonic()
                summary = wirelab.run(text, db=db, parallel=2, engine=engine, observer=stored)
                seconds = time.monotonic() - started
                row["setup"] = "--parallel 2 on this machine"
            else:
                with local_cluster(2, slots=1, engine=engine.path) as cluster:
                    row["worker_idle_cpu_pct"] = idle_cpu_pct([p.pid for p in cluster.procs], 10.0)
                    on_cluster = ClusterEngine(cluster.address, checker=engine)
                    try:
                        started = time.monotonic()
                        summary = wirelab.runner.run_plan(
                            wirelab.plan(text), db=db, engine=on_cluster, parallel=2, observer=stored
                        )
                        seconds = time.monotonic() - started
                    finally:
                        on_cluster.close()
                timings = on_cluster.timings
                free: dict[str, float] = {}  # worker → when its slot fell free
                to_start, to_engine, to_stored, ingest = [], [], [], []
                for trial_id, t in sorted(timings.items(), key=lambda kv: kv[1]["task_started"]):
                    ready = max(t["submitted"], free.get(t["worker"], 0.0))
                    to_start.append((t["task_started"] - ready) * 1000)
                    to_engine.append((t["engine_started"] - t["task_started"]) * 1000)
                    free[t["worker"]] = t["task_ended"]
                    if trial_id in stored.at:
                        to_stored.append((stored.at[trial_id] - t["engine_exited"]) * 1000)
                        ingest.append((stored.at[trial_id] - t["unpacked"]) * 1000)
                row["setup"] = "LocalCluster: 2 wirelab workers x 1 slot"
                row["overhead_ms_per_trial"] = {
                    "submit_to_start": _spread(to_start),
                    "start_to_engine": _spread(to_engine),
                    "result_to_stored": _spread(to_stored),
                    "of_which_ingest": _spread(ingest),
                }
                row["archive_kB_median"] = round(
                    statistics.median(t["archive_bytes"] for t in timings.values()) / 1000, 1
                )
            loads = sum(o.loads for o in summary.completed)
            row.update(
                trials=len(summary.completed),
                failed=len(summary.failed),
                loads=loads,
                seconds=round(seconds, 2),
                loads_per_minute=round(loads / seconds * 60, 1) if seconds else None,
                engine_end_to_stored_ms=_spread(engine_end_to_stored_ms(db, name, stored.at)),
                fidelity_warnings=len(summary.fidelity_warnings),
            )
            rows.append(row)
            print(json.dumps(row), flush=True)
        local = [r for r in rows if r["mode"] == "local" and r["loads_per_minute"]]
        cluster = [r for r in rows if r["mode"] == "cluster" and r["loads_per_minute"]]
        if local and cluster:
            total = {
                mode: sum(r["loads"] for r in runs) / sum(r["seconds"] for r in runs) * 60
                for mode, runs in (("local", local), ("cluster", cluster))
            }
            summary_row = {
                "bench": "sweep-cluster",
                "rounds": rounds,
                "local_loads_per_minute": round(total["local"], 1),
                "cluster_loads_per_minute": round(total["cluster"], 1),
                "cluster_over_local_loads_per_minute": round(total["cluster"] / total["local"], 3),
            }
            print(json.dumps(summary_row))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--parallel", default="1,2,4", help="parallelism levels, comma-separated (default 1,2,4)"
    )
    parser.add_argument("--repetitions", type=int, default=3, help="loads per protocol and trial (default 3)")
    parser.add_argument(
        "--client", default="engine", choices=["engine", "chromium"], help="the trials' loader (client.impl)"
    )
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="compare --parallel 2 here with a 2-worker LocalCluster of 1 slot each (scheduling overhead)",
    )
    parser.add_argument("--db", help="keep the results in this database (for scripts/durations.py)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="--cluster: alternate local and cluster runs this often (default 2)",
    )
    args = parser.parse_args()
    levels = [int(p) for p in args.parallel.split(",")]
    if os.geteuid() != 0:
        print("bench sweep: skipped (needs root for network namespaces)")
        return 0
    try:
        engine = SubprocessEngine(os.environ.get("WIRELAB_ENGINE"))
    except EngineNotFoundError as e:
        print(f"bench sweep: skipped ({e})")
        return 0
    if "trial" not in engine.commands():
        print(f"bench sweep: skipped ({engine.path} has no `trial` command yet)")
        return 0
    if args.cluster:
        bench_cluster(engine, args.repetitions, args.client, args.db, args.rounds)
        return 0
    # the first level runs again at the end: its shift is the measurement's own run-to-run noise
    runs = [(p, f"bench-{args.client}-parallel-{p}") for p in levels]
    runs.append((levels[0], f"bench-{args.client}-parallel-{levels[0]}-again"))
    reference: dict[tuple, dict[str, float]] | None = None
    with tempfile.TemporaryDirectory(prefix="wirelab-bench-") as tmp:
        db = Path(args.db) if args.db else Path(tmp) / "bench.db"
        for parallel, name in runs:
            started = time.monotonic()
            summary = wirelab.run(
                SPEC.format(name=name, repetitions=args.repetitions, impl=args.client),
                db=db,
                parallel=parallel,
                engine=engine,
            )
            seconds = time.monotonic() - started
            loads = sum(o.loads for o in summary.completed)
            lateness = [o.lateness_p99_us for o in summary.completed if o.lateness_p99_us is not None]
            med = medians(db, name)
            row = {
                "bench": "sweep",
                "run": name,
                "client": args.client,
                "parallel": parallel,
                "trials": len(summary.completed),
                "failed": len(summary.failed),
                "loads": loads,
                "seconds": round(seconds, 2),
                "loads_per_minute": round(loads / seconds * 60, 1) if seconds else None,
                "lateness_p99_us_max": max(lateness) if lateness else None,
                "fidelity_warnings": len(summary.fidelity_warnings),
            }
            if reference is None:
                reference = med
            else:
                g_run, g_ref = gains(med), gains(reference)
                diffs = [abs(g_run[k] - g_ref[k]) for k in g_ref if k in g_run]
                row["vs_first_run"] = {
                    "tow_median_shift": shift(med, reference, "tow_ms"),
                    "plt_median_shift": shift(med, reference, "plt_ms"),
                    "h2_gain_shift_pp": {
                        "median": round(statistics.median(diffs), 2),
                        "max": round(max(diffs), 2),
                    }
                    if diffs
                    else {},
                }
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
