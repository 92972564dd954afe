"""Issue 31's check over the whole corpus: a repeat view of every corpus page over h1s, h2 and h3
moves fewer bytes than the first view (the engine loader's HTTP cache), makes no full handshake
(TLS 1.3 / QUIC resumption on), and an h3 repeat view sends 0-RTT datagrams (docs/vitals.md).

``TestEngineRepeatViewCache`` checks three pages in ``make test``; this runs the same trials for
every page the engine lists (``wirelab-engine pages ls``), built-in server, ``rtt=10ms``. Needs root;
run it in a namespace with no route off the machine:

    unshare --net -- sh -c 'ip link set lo up && exec "$@"' isolate \\
        .venv/bin/python scripts/repeat_view_corpus.py [--engine bin/wirelab-engine] [PAGE ...]

Prints a row per page and protocol; exits 1 when a row fails.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

PROTOCOLS = ("h1s", "h2", "h3")


def corpus(engine: str) -> list[str]:
    out = subprocess.run([engine, "pages", "ls"], check=True, capture_output=True, text=True).stdout
    return [p["name"] for p in json.loads(out)["corpus"]]


def trial(engine: str, work: Path, page: str, view: str, network: str) -> dict[str, dict]:
    spec = {
        "page": page,
        "protocols": list(PROTOCOLS),
        "repetitions": 1,
        "network": network,
        "server": {"impl": "builtin", "session_resumption": True},
        "client": {"view": view},
    }
    out = work / f"{page}-{view}"
    out.mkdir()
    (out / "spec.json").write_text(json.dumps(spec))
    r = subprocess.run(
        [engine, "trial", "--spec", str(out / "spec.json"), "--out", str(out)], capture_output=True, text=True
    )
    if r.returncode:
        sys.exit(f"{page} {view} view: trial exited {r.returncode}: {r.stderr.strip()[-400:]}")
    return {rec["protocol"]: rec for rec in map(json.loads, (out / "loads.jsonl").read_text().splitlines())}


def check(first: dict, repeat: dict, proto: str) -> list[str]:
    why = []
    if repeat.get("error") or first.get("error"):
        why.append(f"error {repeat.get('error') or first.get('error')}")
    if repeat["bytes_down"] >= first["bytes_down"]:
        why.append("no fewer bytes")
    if repeat["tls_handshakes"] != 0 or repeat["tls_resumed"] != repeat["connections"]:
        why.append("full handshake")
    zero_rtt = repeat.get("quic_0rtt_packets", 0)
    if (proto == "h3") != (zero_rtt >= 1) or first.get("quic_0rtt_packets", 0):
        why.append(f"0-RTT datagrams {zero_rtt}")
    return why


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pages", nargs="*", help="corpus pages (default: every page `pages ls` lists)")
    ap.add_argument("--engine", default="bin/wirelab-engine")
    ap.add_argument("--net", default="rtt=10ms", help="network profile (default rtt=10ms)")
    a = ap.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="wirelab-repeat-") as tmp:
        for page in a.pages or corpus(a.engine):
            first, repeat = (trial(a.engine, Path(tmp), page, v, a.net) for v in ("first", "repeat"))
            for p in PROTOCOLS:
                f, r = first[p], repeat[p]
                c = r.get("client", {})
                why = check(f, r, p)
                verdict = "FAIL: " + ", ".join(why) if why else "ok"
                failed += bool(why)
                print(
                    f"{page:10} {p:3} bytes down {f['bytes_down']:>9,} → {r['bytes_down']:>7,}  "
                    f"hits {c.get('cache_hits')} revalidated {c.get('cache_revalidated')}  "
                    f"connections {r['connections']} full {r['tls_handshakes']} resumed {r['tls_resumed']}  "
                    f"0-RTT datagrams {r.get('quic_0rtt_packets', 0)}  {verdict}"
                )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
