"""Where a `bench link` connect's time goes, from the kernel's own trace (tracefs).

Records scheduler events, connect(2) entries and exits and packets queued on the TUN devices while
`wirelab-engine bench link --only rtt` runs, then splits every connect of the benchmark's peer into:

- enter→SYN: connect(2) entered → the SYN queued on the client's TUN device;
- SYN→woken −RTT: the SYN queued → the connecting thread woken by the emulator's writer that
  delivered the SYN-ACK, minus the configured RTT: what the emulator and both kernels add (the
  kernel's own RTT sample of the benchmark measures nearly the same stretch);
- woken→running: the connecting thread's wait for a CPU;
- running→exit: its way back out of connect(2).

Medians per path; the benchmark's own connect times add the peer's user-space work around the
system call. `--tail N` then lists the N slowest connects, their SYN→woken stretch split at the
SYN-ACK's queueing on the server's device (up: the reader's stamp and the up writer's release;
down: the pick-up or down reader and the down writer's release, each less the one-way delay), and,
for the longest stretch of each, which tasks held the CPUs meanwhile (command/kernel priority,
µs summed over the CPUs: prio 97 is SCHED_RR 2, the emulator's; 98 is 1, the peers'; 100–139
ordinary) — the evidence for a tail's cause. Tracing slows every event by a µs or two: compare
variants traced alike, not with the untraced benchmark. Needs root and tracefs. The trace is kept
(--keep) for reading by hand.

Usage: scripts/trace_connects.py [--engine bin/wirelab-engine] [--quick] [--keep FILE] [--tail N]
       scripts/trace_connects.py --read FILE [--tail N]   (analyse a kept trace)
"""

from __future__ import annotations

import argparse
import bisect
import collections
import os
import re
import statistics
import subprocess
import sys

TRACEFS = "/sys/kernel/tracing"
EVENTS = [
    "syscalls:sys_enter_connect",
    "syscalls:sys_exit_connect",
    "net:net_dev_queue",
    "sched:sched_switch",
    "sched:sched_waking",
]
LINE = re.compile(r"^\s*(.+?)-(\d+)\s+\(\s*([\d-]+)\)\s+\[(\d+)\]\s+(\S+)\s+([\d.]+):\s+(\w+):?\s*(.*)$")


def tracefs(name: str, value: str, append: bool = False) -> None:
    # os.open, not open(…, "a"): tracefs files refuse the seek to the end that Python's append does.
    flags = os.O_WRONLY | (os.O_APPEND if append else os.O_TRUNC)
    fd = os.open(os.path.join(TRACEFS, name), flags)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def record(engine: str, quick: bool) -> str:
    if not os.path.isdir(os.path.join(TRACEFS, "events")):
        subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS], check=True)
    # The tracer's settings as they were, restored afterwards (the buffer is 64 MB per CPU).
    saved = {}
    for name in ("tracing_on", "buffer_size_kb", "options/record-tgid"):
        with open(os.path.join(TRACEFS, name)) as f:
            saved[name] = f.read().split()[0]
    tracefs("tracing_on", "0")
    tracefs("trace", "")
    tracefs("buffer_size_kb", "65536")
    tracefs("options/record-tgid", "1")
    tracefs("set_event", "")
    try:
        for ev in EVENTS:
            tracefs("set_event", ev + "\n", append=True)
        tracefs("tracing_on", "1")
        cmd = [engine, "bench", "link", "--only", "rtt"] + (["--quick"] if quick else [])
        out = subprocess.run(cmd, capture_output=True, text=True)
        for line in out.stderr.splitlines():
            if line.startswith("bench: RTT"):
                print(line)
        tracefs("tracing_on", "0")
        with open(os.path.join(TRACEFS, "trace")) as f:
            return f.read()
    finally:
        tracefs("tracing_on", "0")
        tracefs("set_event", "")
        tracefs("trace", "")
        for name, value in saved.items():
            tracefs(name, value)


def parse(text: str) -> list[tuple]:
    """The trace's events: (time, pid, tgid, cpu, flags, event, rest)."""
    events = []
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            _, pid_s, tgid_s, cpu_s, flags, ts_s, name, rest = m.groups()
            tgid = int(tgid_s) if tgid_s.strip("-") else 0
            events.append((float(ts_s), int(pid_s), tgid, int(cpu_s), flags, name, rest))
    return events


def connects(events: list[tuple]) -> list[dict]:
    """Every complete connect of the trace: enter, syn, woken (with the waker's tgid), running, exit."""
    pending: dict[int, dict] = {}
    done: list[dict] = []
    for t, pid, tgid, _, flags, name, rest in events:
        if name == "sys_connect" and "->" not in rest:
            pending[pid] = {"pid": pid, "enter": t}
        elif name == "sys_connect" and pid in pending:
            c = pending.pop(pid)
            c["exit"] = t
            if c.get("woken") and c.get("running"):
                done.append(c)
        elif name == "net_dev_queue" and pid in pending and "syn" not in pending[pid]:
            pending[pid]["syn"] = t
        elif name == "sched_waking" and "h" not in flags:  # not from a timer interrupt
            woken = int(re.search(r" pid=(\d+)", rest).group(1))
            c = pending.get(woken)
            if c is not None and "syn" in c and "woken" not in c:
                c["woken"], c["running"], c["waker_tgid"] = t, None, tgid
        elif name == "sched_switch":
            nxt = int(re.search(r"next_pid=(\d+)", rest).group(1))
            c = pending.get(nxt)
            if c is not None and c.get("woken") and c.get("running") is None:
                c["running"] = t
    return done


def analyse(text: str, tail: int = 0) -> None:
    events = parse(text)
    done = connects(events)
    by_path: dict[int, list[dict]] = collections.defaultdict(list)
    for c in done:
        by_path[round((c["exit"] - c["enter"]) * 100) * 10].append(c)  # nearest 10 ms

    def med(xs: list[float]) -> str:
        return f"{statistics.median(xs) * 1e6:6.0f}"

    print("path    n  total−RTT  enter→SYN  SYN→woken−RTT  woken→running  running→exit   (µs, medians)")
    for rtt_ms, cs in sorted(by_path.items()):
        if len(cs) < 5:
            continue
        rtt = rtt_ms / 1000
        cols = [
            med([c["exit"] - c["enter"] - rtt for c in cs]),
            med([c["syn"] - c["enter"] for c in cs]),
            med([c["woken"] - c["syn"] - rtt for c in cs]),
            med([c["running"] - c["woken"] for c in cs]),
            med([c["exit"] - c["running"] for c in cs]),
        ]
        print(f"{rtt_ms:4d}ms {len(cs):4d} " + "    ".join(cols))
    if tail > 0 and done:
        print_tail(events, done, tail)


def held(events: list[tuple], a: float, b: float) -> collections.Counter:
    """CPU time per (command, kernel priority) of the tasks running on each CPU between a and b."""
    occ: collections.Counter = collections.Counter()
    current: dict[int, tuple[str, str]] = {}
    since: dict[int, float] = {}
    for t, _, _, cpu, _, name, rest in events:
        if name != "sched_switch" or t > b:
            if t > b:
                break
            continue
        prev = re.search(r"prev_comm=(.*?) prev_pid=\d+ prev_prio=(\d+)", rest)
        nxt = re.search(r"next_comm=(.*?) next_pid=\d+ next_prio=(\d+)", rest)
        if t > a:
            occ[(prev.group(1), prev.group(2))] += t - max(a, since.get(cpu, a))
        current[cpu], since[cpu] = (nxt.group(1), nxt.group(2)), t
    for cpu, task in current.items():
        occ[task] += b - max(a, since[cpu])
    return occ


def print_tail(events: list[tuple], done: list[dict], n: int) -> None:
    emulator = collections.Counter(c["waker_tgid"] for c in done).most_common(1)[0][0]
    synacks = [
        t
        for t, _, tgid, _, _, name, rest in events
        if name == "net_dev_queue" and tgid == emulator and "dev=wltun0" in rest
    ]
    rows = []
    for c in done:
        total = c["exit"] - c["enter"]
        rtt = round(total * 100) / 100
        one_way = rtt / 2
        # The SYN-ACK: the first packet the emulator queued a one-way delay after the SYN.
        i = bisect.bisect_left(synacks, c["syn"] + one_way - 1e-4)
        if i == len(synacks):
            continue
        stretches = {
            "up": synacks[i] - c["syn"] - one_way,
            "down": c["woken"] - synacks[i] - one_way,
            "woken→running": c["running"] - c["woken"],
        }
        ends = {"up": synacks[i], "down": c["woken"], "woken→running": c["running"]}
        rows.append((total - rtt, rtt, stretches, ends))
    rows.sort(key=lambda r: -r[0])
    print(f"\nthe {n} slowest connects (µs; for the longest stretch, CPU time of the tasks on the CPUs then)")
    for err, rtt, st, ends in rows[:n]:
        worst = max(st, key=st.get)
        occ = held(events, ends[worst] - st[worst], ends[worst])
        who = ", ".join(
            f"{comm}/{prio} {us * 1e6:.0f}" for (comm, prio), us in occ.most_common(3) if us >= 1e-6
        )
        parts = "  ".join(f"{k} {v * 1e6:5.0f}" for k, v in st.items())
        print(f"{rtt * 1000:4.0f}ms  +{err * 1e6:5.0f}  {parts}  | {worst}: {who}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", default="bin/wirelab-engine")
    ap.add_argument("--quick", action="store_true", help="30 connects per path instead of 200")
    ap.add_argument("--keep", metavar="FILE", help="keep the raw trace in FILE")
    ap.add_argument("--read", metavar="FILE", help="analyse a kept trace instead of recording one")
    ap.add_argument(
        "--tail", type=int, default=0, metavar="N", help="list the N slowest connects and their causes"
    )
    args = ap.parse_args()
    if args.read:
        with open(args.read) as f:
            analyse(f.read(), args.tail)
        return 0
    if os.geteuid() != 0:
        print("trace_connects: needs root (tracefs and the benchmark's namespaces)", file=sys.stderr)
        return 2
    text = record(args.engine, args.quick)
    if args.keep:
        with open(args.keep, "w") as f:
            f.write(text)
    analyse(text, args.tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
