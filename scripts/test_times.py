#!/usr/bin/env python3
"""How long each test took, for `make test`'s list of its slowest tests (Go and Python together).

    go test -json ./... | scripts/test_times.py go TIMES.jsonl
        prints what `go test` prints without -json (each package's result; a failing test's output,
        whole), and writes one line per top-level test to TIMES.jsonl: {"test", "seconds"}.
    scripts/test_times.py slowest N FILE…
        the N slowest tests of the given files: TIMES.jsonl from above and pytest's --junitxml reports.

A package whose test binary fails to build or crashes still prints its lines and its FAIL; the exit
status of `go test` is the pipeline's (the Makefile sets pipefail).
"""

from __future__ import annotations

import json
import sys
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
    times = sorted((t for p in paths if p.exists() for t in _times(p)), reverse=True)
    if not times:
        return 0
    print(f"the {min(n, len(times))} slowest of {len(times)} tests:")
    for seconds, name in times[:n]:
        print(f"  {seconds:8.1f} s  {name}")
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "go":
        return go(Path(argv[1]))
    if len(argv) >= 2 and argv[0] == "slowest":
        return slowest(int(argv[1]), [Path(p) for p in argv[2:]])
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
