#!/usr/bin/env python3
"""How long each test took, for `make test`'s list of its slowest tests (Go and Python together).

    go test -json ./... | scripts/test_times.py go TIMES.jsonl
        prints what `go test` prints without -json (each package's result; a failing test's output,
        whole), and writes one line per top-level test to TIMES.jsonl: {"test", "seconds"}.
    scripts/test_times.py slowest N FILE…
        the N slowest tests of the given files: TIMES.jsonl from above and pytest's --junitxml reports;
        and, when a PHASES.jsonl is among them, every phase's time (below).
    scripts/test_times.py record PHASES.jsonl NAME START LOAD TIMESFILE RC
        appends one line to PHASES.jsonl, at the end of a phase of `make test` run in one bash command
        line: its name, wall time (since START, `date +%s.%N`), CPU time (user + system of every process
        the line ran: what that shell's `times` wrote to TIMESFILE), the load average before (LOAD) and
        after, and its exit status — where `make test`'s minutes go (the Makefile's PHASE_START and
        PHASE_END). An idle 2-core machine needs at least CPU / 2 of wall time for a phase.

A package whose test binary fails to build or crashes still prints its lines and its FAIL; the exit
status of `go test` is the pipeline's (the Makefile sets pipefail).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path


def go(out_path: Path) -> int:
    """Filter ``go test -json`` on stdin (see the module docstring)."""
    held: dict[tuple[str, str], list[str]] = {}
    with open(out_path, "w") as out:
        for raw in sys.stdin:
            try:
                event = json.loads(raw)
            except json.JSONDecodeError:  # not an event (go's own messages): as it came
                sys.stdout.write(raw)
                continue
            package, test, action = event.get("Package", ""), event.get("Test", ""), event.get("Action")
            if action == "output":
                text = event.get("Output", "")
                if test:
                    held.setdefault((package, test), []).append(text)
                elif text.strip() not in ("PASS", "FAIL") and not text.startswith("=== "):
                    if text.startswith("FAIL"):  # before it, what its unfinished tests said (a panic)
                        for key in [k for k in held if k[0] == package]:
                            _write(held.pop(key))
                    sys.stdout.write(text)  # ok/FAIL/no test files lines, panics, build output
            elif action in ("pass", "fail", "skip") and test:
                lines = held.pop((package, test), [])
                if action == "fail":  # a subtest's lines are its own: each failing test prints its lines
                    _write(lines)
                if "/" not in test and "Elapsed" in event:
                    out.write(json.dumps({"test": f"{package} {test}", "seconds": event["Elapsed"]}) + "\n")
            sys.stdout.flush()
    for lines in held.values():
        _write(lines)
    return 0


def _write(lines: list[str]) -> None:
    sys.stdout.write("".join(line for line in lines if not line.startswith("=== ")))


def _times(path: Path) -> list[tuple[float, str]]:
    if path.suffix == ".jsonl":
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return [(float(r["seconds"]), "go " + r["test"]) for r in rows]
    return [
        (float(case.get("time", 0)), f"py {case.get('classname', '')}::{case.get('name', '')}")
        for case in ET.parse(path).iter("testcase")
    ]


def slowest(n: int, paths: list[Path]) -> int:
    phases = [p for p in paths if p.name.startswith("phases")]
    times = sorted((t for p in paths if p.exists() and p not in phases for t in _times(p)), reverse=True)
    for p in phases:
        _print_phases(p)
    if not times:
        return 0
    print(f"the {min(n, len(times))} slowest of {len(times)} tests:")
    for seconds, name in times[:n]:
        print(f"  {seconds:8.1f} s  {name}")
    return 0


def record(
    out_path: Path, name: str, start: str, load_before: str, times_file: str, rc: str, beside: str = ""
) -> int:
    """Append a phase's line to PHASES.jsonl (module docstring); ``times_file`` holds what bash's
    ``times`` printed (its last line: the children's user and system time), ``start`` is the phase's
    ``date +%s.%N``; ``beside``, the phase this one ran beside (the total counts overlapping time once)."""
    lines = Path(times_file).read_text().splitlines() if Path(times_file).exists() else []
    times_line = lines[-1] if lines else ""

    def seconds(field: str) -> float:  # "1m2.345s"
        m = re.fullmatch(r"(\d+)m([\d.]+)s", field)
        return int(m[1]) * 60 + float(m[2]) if m else 0.0

    user, system = (times_line.split() + ["", ""])[:2]
    row = {
        "phase": name,
        "start": round(float(start), 1),
        "wall_s": round(time.time() - float(start), 1),
        "cpu_s": round(seconds(user) + seconds(system), 1),
        "load_before": load_before,
        "load_after": _loadavg(),
        "exit": int(rc),
    }
    if beside:
        row["beside"] = beside
    with open(out_path, "a") as out:
        out.write(json.dumps(row) + "\n")
    return 0


def _loadavg() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _print_phases(path: Path) -> None:
    if not path.exists():
        return
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if not rows:
        return
    print("phases (wall, CPU = user + system of every process; load average before → after):")
    for r in rows:
        load = f"{r['load_before']} → {r['load_after']}"
        beside = f", beside {r['beside']}" if r.get("beside") else ""
        print(f"  {r['wall_s']:8.1f} s  {r['cpu_s']:8.1f} s CPU  {r['phase']}  ({load}{beside})")
    if all("start" in r for r in rows):  # from the first phase's start to the last one's end
        wall = max(r["start"] + r["wall_s"] for r in rows) - min(r["start"] for r in rows)
    else:
        wall = sum(r["wall_s"] for r in rows if not r.get("beside"))
    print(f"  {wall:8.1f} s  {sum(r['cpu_s'] for r in rows):8.1f} s CPU  in all")


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "go":
        return go(Path(argv[1]))
    if len(argv) in (7, 8) and argv[0] == "record":
        return record(Path(argv[1]), *argv[2:])
    if len(argv) >= 2 and argv[0] == "slowest":
        return slowest(int(argv[1]), [Path(p) for p in argv[2:]])
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
