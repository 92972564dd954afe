"""scripts/trace_connects.py splits each traced connect into its stretches."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "trace_connects.py"


def load():
    spec = importlib.util.spec_from_file_location("trace_connects", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def connect(pid: int, t0: float) -> list[str]:
    """One 10 ms connect: SYN 20 µs in, woken 80 µs after the RTT, running 30 µs later, out 10 µs later."""

    def at(us: float) -> str:
        return f"{t0 + us / 1e6:.6f}"

    p = f"  wirelab-engine-{pid}    ( {pid}) [001]"
    wakes = f"comm=x pid={pid} prio=98 target_cpu=001"
    return [
        f"{p} ..... {at(0)}: sys_connect(fd: 3, uservaddr: 0x1, addrlen: 0x10)",
        f"{p} b.... {at(20)}: net_dev_queue: dev=wltun0 skbaddr=00000000 len=60",
        # a timer interrupt's wake-up does not count as the emulator's
        f"  <idle>-0   (-------) [001] d.h3. {at(5000)}: sched_waking: {wakes}",
        f"  wirelab-engine-50   (    50) [000] D..4. {at(10100)}: sched_waking: {wakes}",
        f"  <idle>-0   (-------) [001] d..2. {at(10130)}: sched_switch: prev_comm=swapper/1 prev_pid=0 "
        f"prev_prio=120 prev_state=R ==> next_comm=x next_pid={pid} next_prio=98",
        f"{p} ..... {at(10140)}: sys_connect -> 0x0",
    ]


def test_analyse_splits_connects(capsys):
    mod = load()
    lines = []
    for i in range(6):
        lines += connect(100 + i, 1000.0 + i * 0.1)
    mod.analyse("\n".join(lines))
    out = capsys.readouterr().out.splitlines()
    row = [line for line in out if line.strip().startswith("10ms")]
    assert len(row) == 1, out
    assert row[0].split() == ["10ms", "6", "140", "20", "80", "30", "10"]


def test_analyse_needs_five_connects_per_path(capsys):
    mod = load()
    mod.analyse("\n".join(connect(100, 1000.0)))
    assert not [line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("10ms")]
