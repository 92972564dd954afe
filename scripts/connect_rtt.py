"""TCP connect times from where it runs to HOST:PORT: median and percentiles, in ms.

Run it in a run's client namespace to see what the path costs a round trip (docs/live.md,
"Measured": the egress router's cost)::

    sudo bin/wirelab-engine sites --net rtt=20ms -- python3 scripts/connect_rtt.py h1.wirelab.test 80 500
"""

from __future__ import annotations

import socket
import statistics
import sys
import time

#: idle time between two connects, so that one connect's teardown does not overlap the next
PAUSE_S = 0.02


def connect_times(host: str, port: int, n: int) -> list[float]:
    """n connect durations in ms, sorted."""
    addr = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_STREAM)[0][4]
    times = []
    for _ in range(n):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            t0 = time.perf_counter()
            s.connect(addr)
            times.append((time.perf_counter() - t0) * 1000)
        time.sleep(PAUSE_S)
    return sorted(times)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: connect_rtt.py HOST PORT N", file=sys.stderr)
        return 2
    host, port, n = argv[0], int(argv[1]), int(argv[2])
    t = connect_times(host, port, n)

    def q(p: float) -> float:
        return t[min(len(t) - 1, int(p * len(t)))]

    print(
        f"{host}:{port} n={n} median {statistics.median(t):.3f} ms  p10 {q(0.1):.3f}  "
        f"p90 {q(0.9):.3f}  p99 {q(0.99):.3f}  min {t[0]:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
