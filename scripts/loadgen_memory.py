#!/usr/bin/env python3
"""Memory per VU of one load generator, and what it is made of (docs/loadtest.md, "Memory per VU").

Serves a page with ``wirelab-engine serve`` on loopback, runs ``wirelab-engine loadgen`` against it
(``--pprof`` on loopback) through a ramp to VUS and a hold, and prints:

- memory per VU = (median RSS in the hold − RSS of the first interval) ÷ the VUs added, from the
  interval lines (``generator.rss_bytes``), with the goroutines in the hold and the errors;
- in the middle of the hold: the Go runtime's MemStats (``/debug/pprof/heap?debug=1`` after a
  collection), the goroutine count, and the heap profile with ``gc=1`` (saved with ``--profile-dir``;
  ``go tool pprof -top -sample_index=inuse_space DIR/heap.pb.gz`` takes it apart).

Only loopback is contacted. Example (the docs' 2,000-VU rows; 5,000 for the breakdown):

    .venv/bin/python scripts/loadgen_memory.py --vus 2000 --ramp 60 --hold 40 --think 30
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", default=str(ROOT / "bin" / "wirelab-engine"))
    ap.add_argument("--vus", type=int, default=2000)
    ap.add_argument("--ramp", type=float, default=60.0, help="seconds to reach --vus")
    ap.add_argument("--hold", type=float, default=40.0, help="seconds at --vus")
    ap.add_argument("--think", type=float, default=30.0, help="mean think time (s, exponential)")
    ap.add_argument("--protocol", default="h2", choices=["h1", "h1s", "h2", "h2c"])
    ap.add_argument("--page", default="synthetic:1x1kB")
    ap.add_argument("--interval", type=float, default=5.0, help="interval_s of the spec")
    ap.add_argument("--pprof-port", type=int, default=6060)
    ap.add_argument("--gogc", help="GOGC for the generator (default: loadgen's own choice)")
    ap.add_argument("--profile-dir", type=Path, help="keep the hold's heap profile here (heap.pb.gz)")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    a = ap.parse_args()
    if a.vus < 1 or a.ramp <= 0 or a.hold <= 0 or a.think < 0:
        ap.error("--vus ≥ 1, --ramp > 0, --hold > 0, --think ≥ 0")

    work = Path(tempfile.mkdtemp(prefix="loadgen-memory-"))
    serve = subprocess.Popen(
        [a.engine, "serve", "--page", a.page, "--addrs", "127.0.0.1", "--port-http", "0", "--port-https", "0",
         "--port-quic", "0", "--cert-dir", str(work / "certs")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    gen: subprocess.Popen[str] | None = None
    try:
        assert serve.stdout is not None
        ready = json.loads(serve.stdout.readline())
        if ready.get("event") != "ready":
            raise SystemExit(f"serve: {ready}")
        tls = a.protocol in ("h1s", "h2")
        port = ready["ports"]["https" if tls else "http"]
        url = f"{'https' if tls else 'http'}://s1.wirelab.test:{port}/L/memory/"
        spec = {
            "protocol": a.protocol,
            "interval_s": a.interval,
            "think": {"mean_s": a.think, "distribution": "exponential"},
            "scenario": {
                "start": 0,
                "stages": [
                    {"duration_s": a.ramp, "target": a.vus},
                    {"duration_s": a.hold, "target": a.vus},
                ],
            },
        }
        (work / "spec.json").write_text(json.dumps(spec))
        pprof = f"127.0.0.1:{a.pprof_port}"
        argv = [a.engine, "loadgen", "--spec", str(work / "spec.json"), "--target", url,
                "--resolve", "s1.wirelab.test=127.0.0.1", "--pprof", pprof]  # fmt: skip
        if tls:
            argv += ["--ca", ready["ca_file"]]
        env = dict(os.environ)
        if a.gogc:
            env["GOGC"] = a.gogc
        gen = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env)
        lines: list[dict[str, Any]] = []
        reader = threading.Thread(target=_read, args=(gen, lines), daemon=True)
        reader.start()
        started = time.monotonic()
        time.sleep(max(0.0, a.ramp + a.hold / 2 - (time.monotonic() - started)))
        inside = _profile(pprof, a.profile_dir)
        gen.wait()
        reader.join(10)
    finally:
        for p in (gen, serve):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGINT)
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
    figures = _figures(lines, a.ramp)
    figures.update(inside)
    figures["load_average"] = os.getloadavg()
    figures["command"] = " ".join(sys.argv)
    if a.json:
        print(json.dumps(figures, indent=1))
    else:
        for k, v in figures.items():
            print(f"{k:28} {v}")
    return 0


def _read(gen: subprocess.Popen[str], lines: list[dict[str, Any]]) -> None:
    assert gen.stdout is not None
    for line in gen.stdout:
        if line.strip():
            lines.append(json.loads(line))


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as r:  # noqa: S310 - loopback, our own generator
        return bytes(r.read())


def _profile(pprof: str, keep: Path | None) -> dict[str, Any]:
    """The generator's runtime in the hold: MemStats after a collection, goroutines, the heap profile."""
    heap = _get(f"http://{pprof}/debug/pprof/heap?gc=1")
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        (keep / "heap.pb.gz").write_bytes(heap)
    text = _get(f"http://{pprof}/debug/pprof/heap?debug=1").decode()
    stats = {
        m.group(1): int(m.group(2)) for m in re.finditer(r"^# (\w+) = (\d+)", text, re.M)
    }  # "# Stack = in use / sys"
    first = _get(f"http://{pprof}/debug/pprof/goroutine?debug=1").decode().splitlines()[0]
    mb = 1e6
    return {
        "hold_heap_alloc_mb": round(stats.get("HeapAlloc", 0) / mb, 1),
        "hold_heap_inuse_mb": round(stats.get("HeapInuse", 0) / mb, 1),
        "hold_stack_inuse_mb": round(stats.get("Stack", 0) / mb, 1),
        "hold_next_gc_mb": round(stats.get("NextGC", 0) / mb, 1),
        "hold_sys_mb": round(stats.get("Sys", 0) / mb, 1),
        "hold_goroutines_profile": int(first.rsplit(" ", 1)[-1]),
    }


def _figures(lines: list[dict[str, Any]], ramp: float) -> dict[str, Any]:
    intervals = [x for x in lines if x.get("event") == "interval"]
    summary = next((x for x in lines if x.get("event") == "summary"), None)
    if not intervals or summary is None:
        raise SystemExit("loadgen printed no intervals or no summary")
    first = intervals[0]
    hold = [x for x in intervals if x["t_start_s"] >= ramp and x["t_end_s"] - x["t_start_s"] >= 0.999]
    if not hold:
        raise SystemExit("no complete interval in the hold")
    rss = statistics.median(x["generator"]["rss_bytes"] for x in hold)
    vus = statistics.median(x["vus"] for x in hold)
    totals = summary["totals"]
    return {
        "rss_first_mb": round(first["generator"]["rss_bytes"] / 1e6, 1),
        "vus_first": first["vus"],
        "rss_hold_mb": f"{min(x['generator']['rss_bytes'] for x in hold) / 1e6:.1f}–"
        f"{max(x['generator']['rss_bytes'] for x in hold) / 1e6:.1f} (median {rss / 1e6:.1f})",
        "vus_hold": vus,
        "kb_per_vu": round((rss - first["generator"]["rss_bytes"]) / max(1, vus - first["vus"]) / 1e3, 1),
        "kb_per_vu_whole_rss": round(rss / max(1, vus) / 1e3, 1),
        "goroutines_hold": statistics.median(x["generator"]["goroutines"] for x in hold),
        "pages": totals["pages"],
        "pages_failed": totals["pages_failed"],
        "errors": {k: v for k, v in (totals.get("errors") or {}).items() if v},
    }


if __name__ == "__main__":
    sys.exit(main())
