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


def test_tail_names_the_stretch_and_who_held_the_cpus(capsys):
    """A 10 ms connect whose SYN-ACK the emulator queued 900 µs late while another process's
    real-time thread held CPU 0: the tail names the up stretch and that thread."""
    mod = load()
    t0 = 1000.0

    def at(us: float) -> str:
        return f"{t0 + us / 1e6:.6f}"

    pid, emu, other = 100, 50, 70
    p = f"  wirelab-engine-{pid}    ( {pid}) [001]"
    e = f"  wirelab-engine-{emu + 1}   (    {emu}) [000]"
    o = f"  other-{other}   (    {other}) [000] d..2."
    wakes = f"comm=x pid={pid} prio=98 target_cpu=001"
    lines = [
        f"{p} ..... {at(0)}: sys_connect(fd: 3, uservaddr: 0x1, addrlen: 0x10)",
        f"{p} b.... {at(20)}: net_dev_queue: dev=wltun0 skbaddr=00000000 len=60",
        f"{o} {at(4900)}: sched_switch: prev_comm=swapper/0 prev_pid=0 "
        f"prev_prio=120 prev_state=R ==> next_comm=other next_pid={other} next_prio=97",
        f"{o} {at(5920)}: sched_switch: prev_comm=other prev_pid={other} "
        f"prev_prio=97 prev_state=S ==> next_comm=emu next_pid={emu + 1} next_prio=97",
        f"{e} b.... {at(5920)}: net_dev_queue: dev=wltun0 skbaddr=00000001 len=60",
        f"{e} D..4. {at(10940)}: sched_waking: {wakes}",
        f"  <idle>-0   (-------) [001] d..2. {at(10960)}: sched_switch: prev_comm=swapper/1 prev_pid=0 "
        f"prev_prio=120 prev_state=R ==> next_comm=x next_pid={pid} next_prio=98",
        f"{p} ..... {at(10970)}: sys_connect -> 0x0",
    ]
    mod.analyse("\n".join(lines), tail=1)
    out = capsys.readouterr().out.splitlines()
    row = [line for line in out if line.strip().startswith("10ms")]
    assert len(row) == 1, out
    assert "+  970" in row[0], row
    assert "up   900" in row[0] and "down    20" in row[0], row
    assert row[0].endswith("| up: other/97 900"), row
