"""Measured against estimated durations: for every sweep in the given results databases, the wall time
of its trials (first start to last end, and the sum of the trials' own times) beside
`wirelab._reproduce.estimate_trial_seconds` of the same trials. Prints one JSON object per sweep, then
the spread of measured/estimated over all trials, and a least-squares fit of what a trial costs
beyond its loads' own PLTs: seconds per trial and per load (the estimate's TRIAL_OVERHEAD_S and
LOAD_OVERHEAD_S). Use it to fill in docs/reproducing.md and to check the estimate's constants.

With --scale, also the scale model of docs/distributed.md: the wall time of every full experiment of
the catalog on 1, 4, 16 and 64 two-core workers (one trial slot each), from each trial's estimate
times the measured/estimate median of the given databases, plus --overhead-ms of scheduling per
trial (scripts/bench_sweep.py --cluster measures it), the trials placed longest first on the slot
that falls free first (what the scheduler does with equal tasks, at best). One JSON object per
experiment, then a Markdown table.

Usage: scripts/durations.py DB [DB …] [--scale 1,4,16,64 --overhead-ms MS]
"""

from __future__ import annotations

import heapq
import json
import statistics
import sys
from datetime import datetime
from pathlib import Path

import numpy

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import wirelab  # noqa: E402
from wirelab._reproduce import catalog, estimate_trial_seconds, format_duration  # noqa: E402


def wall_seconds(trial_seconds: list[float], slots: int) -> float:
    """Longest-first list scheduling of the trials on ``slots`` equal slots: the last one's end."""
    ends = [0.0] * slots
    for seconds in sorted(trial_seconds, reverse=True):
        heapq.heappush(ends, heapq.heappop(ends) + seconds)
    return max(ends)


def scale_model(ratio: float, overhead_s: float, workers: list[int]) -> None:
    """Print the wall time of every full experiment on each number of one-slot workers."""
    rows = []
    for experiment in catalog():
        plan = experiment.plan(False)
        trials = [estimate_trial_seconds(t.spec) * ratio + overhead_s for t in plan.trials]
        walls = {n: wall_seconds(trials, n) for n in workers}
        row = {
            "experiment": experiment.name,
            "trials": len(trials),
            "longest_trial_s": round(max(trials), 1),
            "wall_s": {str(n): round(w, 1) for n, w in walls.items()},
        }
        rows.append(row)
        print(json.dumps(row))
    print()
    print("| experiment | trials | longest trial | " + " | ".join(f"{n} worker(s)" for n in workers) + " |")
    print("|---|---|---|" + "---|" * len(workers))
    for row in rows:
        walls = " | ".join(format_duration(row["wall_s"][str(n)]) for n in workers)
        longest = format_duration(row["longest_trial_s"])
        print(f"| `{row['experiment']}` | {row['trials']} | {longest} | {walls} |")


def _t(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    scale: list[int] = []
    overhead_ms = 0.0
    if "--scale" in argv:
        i = argv.index("--scale")
        scale = [int(n) for n in argv[i + 1].split(",")]
        argv = argv[:i] + argv[i + 2 :]
    if "--overhead-ms" in argv:
        i = argv.index("--overhead-ms")
        overhead_ms = float(argv[i + 1])
        argv = argv[:i] + argv[i + 2 :]
    ratios: list[float] = []
    overhead: list[tuple[int, float]] = []  # (loads, trial seconds − Σ PLT)
    for db in argv:
        with wirelab.open(db) as results:
            for sweep in results.sweeps()["sweep"]:
                trials = results.trials(sweep, status="complete")
                if trials.empty:
                    continue
                starts = [_t(s) for s in trials["started_at"]]
                ends = [_t(e) for e in trials["ended_at"]]
                own = [(e - s).total_seconds() for s, e in zip(starts, ends, strict=True)]
                est = [estimate_trial_seconds(spec) for spec in trials["spec"]]
                ratios += [o / e for o, e in zip(own, est, strict=True)]
                loads = results.loads(sweep=sweep)
                plt_s = loads.groupby("trial_id")["plt_ms"].sum() / 1000
                counts = loads.groupby("trial_id").size()
                for trial_id, seconds in zip(trials["trial_id"], own, strict=True):
                    overhead.append((int(counts[trial_id]), seconds - float(plt_s[trial_id])))
                print(
                    json.dumps(
                        {
                            "sweep": sweep,
                            "trials": len(trials),
                            "parallel": trials["provenance"].iloc[0].get("control", {}).get("parallel"),
                            "wall_s": round((max(ends) - min(starts)).total_seconds(), 1),
                            "trial_seconds_sum": round(sum(own), 1),
                            "estimate_s": round(sum(est), 1),
                            "measured_over_estimate": round(sum(own) / sum(est), 2),
                        }
                    )
                )
    if len({n for n, _ in overhead}) > 1:
        # seconds − Σ PLT = per_trial + per_load × loads
        per_load, per_trial = numpy.polyfit([n for n, _ in overhead], [o for _, o in overhead], 1)
        print(
            json.dumps(
                {"overhead_fit": {"per_trial_s": round(per_trial, 2), "per_load_s": round(per_load, 3)}}
            )
        )
    if ratios:
        q = statistics.quantiles(ratios, n=10) if len(ratios) > 1 else [ratios[0]] * 9
        print(
            json.dumps(
                {
                    "trials": len(ratios),
                    "measured_over_estimate": {
                        "p10": round(q[0], 2),
                        "median": round(statistics.median(ratios), 2),
                        "p90": round(q[-1], 2),
                    },
                }
            )
        )
    if scale:
        if not ratios:
            print("--scale: no complete trials in the given databases to measure against", file=sys.stderr)
            return 2
        print(
            json.dumps(
                {
                    "scale_model": {
                        "measured_over_estimate": round(statistics.median(ratios), 3),
                        "overhead_ms_per_trial": overhead_ms,
                        "workers": scale,
                    }
                }
            )
        )
        scale_model(statistics.median(ratios), overhead_ms / 1000, scale)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
