"""How a test checks a timing bound (the twin of engine/internal/timebound; docs/testing.md).

A bound on wall-clock time — a deadline for something to happen, a duration measured — measures the code
and also the machine: a check run while others compile can miss it with nothing wrong in the code. So the
attempt (the measurement and its bound checks) runs once more when it misses, and the test fails only when
both attempts do, with the evidence of both and the load average at each::

    def attempt(n):
        start = time.monotonic()
        ...
        bound(time.monotonic() - start < 30, f"took {time.monotonic() - start:.1f} s, want < 30 s")

    retry(attempt)

Only a missed ``bound`` is retried: any other failure of the attempt (a wrong result no load explains) fails
the test at once, as usual. The attempt sets up anew what it measures.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

ATTEMPTS = 2  # the first, and once more


class Missed(AssertionError):
    """A timing bound the attempt missed; its message is the evidence (the measurement and the bound)."""


def bound(ok: bool, evidence: str) -> None:
    """Check one timing bound of an attempt: a miss ends the attempt (see retry)."""
    if not ok:
        raise Missed(evidence)


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def retry(attempt: Callable[[int], T]) -> T:
    """Run ``attempt(1)``; if it misses a bound, run ``attempt(2)``; if that misses too, fail with both
    attempts' evidence. Returns what the attempt that passed returned."""
    evidence = []
    for n in range(1, ATTEMPTS + 1):
        start = time.monotonic()
        try:
            return attempt(n)
        except Missed as e:
            took = time.monotonic() - start
            evidence.append(f"attempt {n} ({took:.1f} s, load average {load_average()}): {e}")
            if n < ATTEMPTS:
                print(f"timing bound missed, retrying once — {evidence[-1]}")
    raise AssertionError("timing bound missed on both attempts:\n  " + "\n  ".join(evidence))
