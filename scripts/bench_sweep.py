"""Sweep throughput benchmark (`make bench`): loads per minute of a fixed small sweep at --parallel 1, 2
and 4, with the emulator's worst timer lateness p99 at each, so that the default parallelism is a
measured choice. Prints one JSON object per parallelism; figures, not assertions.

Needs root and an engine with the `trial` command; says so and exits 0 otherwise.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import wirelab  # noqa: E402
from wirelab.engine import SubprocessEngine  # noqa: E402
from wirelab.errors import EngineNotFoundError  # noqa: E402

SPEC = """
[sweep]
name = "bench-parallel-{parallel}"
[base]
page = "twitter"
protocols = ["h1s", "h2"]
repetitions = 3
network = {{ bw = "10mbit" }}
[grid]
"network.rtt" = ["20ms", "50ms", "100ms", "150ms"]
"""


def main() -> int:
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
    with tempfile.TemporaryDirectory(prefix="wirelab-bench-") as tmp:
        for parallel in (1, 2, 4):
            db = Path(tmp) / "bench.db"
            started = time.monotonic()
            summary = wirelab.run(SPEC.format(parallel=parallel), db=db, parallel=parallel, engine=engine)
            seconds = time.monotonic() - started
            loads = sum(o.loads for o in summary.completed)
            lateness = [o.lateness_p99_us for o in summary.completed if o.lateness_p99_us is not None]
            print(
                json.dumps(
                    {
                        "bench": "sweep",
                        "parallel": parallel,
                        "trials": len(summary.completed),
                        "failed": len(summary.failed),
                        "loads": loads,
                        "seconds": round(seconds, 2),
                        "loads_per_minute": round(loads / seconds * 60, 1) if seconds else None,
                        "lateness_p99_us_max": max(lateness) if lateness else None,
                        "fidelity_warnings": len(summary.fidelity_warnings),
                    }
                ),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
