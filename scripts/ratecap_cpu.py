"""The emulator's CPU on rate-capped paths, engines alternating (docs/network.md, "Where a
rate-limited path's CPU goes").

For each round, profile and engine: ``ENGINE shell --net PROFILE`` with a ``bench-peer``
bulk receiver (cubic, server → client) for ``--seconds``; the emulator runs in the shell's own
process, whose user + system time (``/proc/PID/stat``) is sampled over the transfer after a 1.5 s
warm-up. Prints goodput, the emulator's cores, packets per write and timer lateness (from
``--stats``), and the load average before and after. Needs root.

    sudo .venv/bin/python scripts/ratecap_cpu.py --engines /tmp/before bin/wirelab-engine \\
        --rounds 2 rtt=40ms,bw=10mbit rtt=10ms,bw=100mbit rtt=10ms,bw=1gbit,queue=2000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

WARMUP_S = 1.5


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14 and 15 of stat(5))


def run(engine: str, profile: str, seconds: int) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        stats = Path(tmp) / "stats.json"
        serve = f"{engine} bench-peer serve 10.77.1.1:9000"
        receive = f"{engine} bench-peer receive 10.77.1.1:9000 1s {seconds}s"
        cmd = [
            engine,
            "shell",
            "--stats",
            str(stats),
            "--net",
            profile,
            "--server-cmd",
            serve,
            "--server-port",
            "9000",
            "--",
            "sh",
            "-c",
            receive,
        ]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        time.sleep(WARMUP_S)
        hz = os.sysconf("SC_CLK_TCK")
        t0, w0 = cpu_ticks(proc.pid), time.monotonic()
        time.sleep(seconds - 1)
        t1, w1 = cpu_ticks(proc.pid), time.monotonic()
        out, _ = proc.communicate()
        if proc.returncode != 0:
            return f"{engine} {profile}: exit {proc.returncode}"
        got = json.loads(out.strip().splitlines()[-1])
        emu = json.loads(stats.read_text())["emulator"]
    down, up = emu["runner"]["down"], emu["runner"]["up"]
    cores = (t1 - t0) / hz / (w1 - w0)
    mbps = got["bytes"] * 8 / got["seconds"] / 1e6
    lat = emu["lateness_us"]
    return (
        f"{engine:28s} {profile:32s} {mbps:7.0f} Mbit/s  cores {cores:.2f}  "
        f"packets/write down {down['delivered'] / max(1, down['writes']):.2f} "
        f"up {up['delivered'] / max(1, up['writes']):.2f}  queue drops {down['drops_queue']}  "
        f"lateness p50 {lat['p50']:.1f} p99 {lat['p99']:.1f} µs"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("profiles", nargs="+", help="network profiles, e.g. rtt=10ms,bw=100mbit")
    ap.add_argument("--engines", nargs="+", default=["bin/wirelab-engine"])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--seconds", type=int, default=5, help="transfer length after the receiver's 1 s warm-up")
    args = ap.parse_args()
    print("load", os.getloadavg())
    for _ in range(args.rounds):
        for profile in args.profiles:
            for engine in args.engines:
                print(run(engine, profile, args.seconds), flush=True)
    print("load", os.getloadavg())


if __name__ == "__main__":
    main()
