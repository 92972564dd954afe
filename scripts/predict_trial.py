"""One labelled configuration, measured beside predicted (docs/predict.md quotes single trials so).

    .venv/bin/python scripts/predict_trial.py c977a57a      # unh100 at 209 ms (a prefix of a trial id)
    .venv/bin/python scripts/predict_trial.py c124bd0a --db /var/tmp/predict-labels/pv-quick.db
    .venv/bin/python scripts/predict_trial.py --retransmissions --db /var/tmp/predict-labels/pv-quick.db

For a trial of the shipped labels (``wirelab/_predict/labels.jsonl.gz``): its configuration, each
protocol's measured loads and median PLT, the model's PLT and parts and the Lantern-style baseline's
(the shipped constants; ``--set NAME=VALUE`` changes some). With ``--db`` (the results database the
labels came from) also what the emulator saw in that trial: the downlink queue's peak (packets, and
as a wait at the bottleneck's rate), each protocol's objects' time to first byte (``objects.wait_ms``:
median and p90 per load) and each load's retransmissions beyond the queue's and the random loss's
drops (a sender's spurious retransmissions).

``--retransmissions`` (with ``--db``): over every trial, the median per protocol of a load's
retransmissions beyond its drops, by the queue's depth in bandwidth-delay products and by loss.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections import defaultdict

import numpy as np

from wirelab._predict import _constants, _labels
from wirelab._predict._fit import targets
from wirelab._predict._run import predict_configs
from wirelab._predict._vocab import PARTS


def _db(path: str) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def _emulated(db: str, trial_id: str, rate: float) -> None:
    con = _db(db)
    row = con.execute("select id, emulator_json from trials where trial_id = ?", (trial_id,)).fetchone()
    if row is None:
        print(f"  (trial {trial_id} is not in {db})")
        return
    emu = json.loads(row[1] or "{}")
    peak = emu.get("down", {}).get("max_queue_packets")
    if peak is not None:
        wait = peak * 1500 / rate * 1000
        print(f"  emulator: downlink queue peak {peak} packets ≈ {wait:.0f} ms at the bottleneck")
    loads = con.execute(
        "select id, protocol, repetition, plt_ms, retransmissions, drops_queue, drops_loss from loads "
        "where trial_row = ? order by load_index",
        (row[0],),
    ).fetchall()
    for lid, proto, rep, plt, rtx, dq, dl in loads:
        got = con.execute("select wait_ms from objects where load_id = ?", (lid,))
        waits = [w for (w,) in got if w is not None]
        ttfb = f"median {np.median(waits):.0f} ms, p90 {np.percentile(waits, 90):.0f} ms" if waits else "-"
        print(
            f"  {proto:4s} #{rep}: PLT {plt or 0:8.0f} ms, retransmissions {rtx} − drops {dq}+{dl} = "
            f"{(rtx or 0) - (dq or 0) - (dl or 0)}; objects' first byte {ttfb}"
        )


def _retransmissions(db: str) -> None:
    con = _db(db)
    by: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    rows = con.execute(
        "select t.spec_json, l.protocol, l.retransmissions, l.drops_queue, l.drops_loss from loads l "
        "join trials t on t.id = l.trial_row "
        "where (l.error is null or l.error = '') and t.status = 'complete'"
    )
    from wirelab._predict._config import configs_of

    seen: dict[str, object] = {}
    for spec_json, proto, rtx, dq, dl in rows:
        if spec_json not in seen:
            spec = json.loads(spec_json)
            fields = {k: spec[k] for k in ("page", "network", "protocols") if k in spec}
            seen[spec_json] = configs_of(fields)[0]
        c = seen[spec_json]
        depth = c.queue_down / (c.rate_down * c.rtt)  # type: ignore[attr-defined]
        band = "< 1 BDP" if depth < 1 else "1-4 BDP" if depth < 4 else ">= 4 BDP"
        lossy = "loss" if c.loss_down > 0 else "no loss"  # type: ignore[attr-defined]
        by[(band, lossy, proto)].append((rtx or 0) - (dq or 0) - (dl or 0))
    print("median retransmissions beyond the drops, per load (loads)")
    for band in ("< 1 BDP", "1-4 BDP", ">= 4 BDP"):
        for lossy in ("no loss", "loss"):
            cells = [
                f"{p} {np.median(by[(band, lossy, p)]):g} ({len(by[(band, lossy, p)])})"
                for p in ("h1s", "h2", "h3")
                if by[(band, lossy, p)]
            ]
            print(f"  queue {band:8s} {lossy:7s}: " + ", ".join(cells))


def _seconds(ms: tuple[float, ...]) -> list[float]:
    return [round(x / 1000, 2) for x in ms]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trial", nargs="?", help="a trial id of the shipped labels, or a prefix of one")
    ap.add_argument("--db", help="the results database the labels came from")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="change a constant")
    ap.add_argument("--retransmissions", action="store_true")
    ap.add_argument("--labels", help="a labels file (default: the shipped one)")
    args = ap.parse_args()
    if args.retransmissions:
        if not args.db:
            ap.error("--retransmissions needs --db")
        _retransmissions(args.db)
        return 0
    if not args.trial:
        ap.error("give a trial id (or --retransmissions)")
    labels = [lab for lab in _labels.read_fixture(args.labels) if lab.trial_id.startswith(args.trial)]
    if len(labels) != 1:
        print(f"trial: {args.trial!r} matches {len(labels)} labels; give a longer prefix", file=sys.stderr)
        return 2
    lab = labels[0]
    cfile = _constants.load()
    k = cfile.constants.replace(**{n: float(v) for n, v in (s.split("=", 1) for s in args.set)})
    tgts = targets([lab])
    configs = [t.config for t in tgts]
    model = predict_configs(configs, k, explain=True)
    base = predict_configs(configs, cfile.baseline, baseline=True)
    c = configs[0]
    print(f"trial {lab.trial_id}: {lab.spec['page']} {lab.spec['network']}, shards {lab.spec.get('shards')}")
    print(
        f"  BDP {c.rate_down * c.rtt / 1000:.0f} kB, queue {c.queue_down / 1000:.0f} kB "
        f"= {c.queue_down / (c.rate_down * c.rtt):.2f} BDP"
    )
    for t, plt, parts, b in zip(tgts, model.plt, model.parts, base.plt, strict=True):
        shown = ", ".join(f"{n} {v:.2f}" for n, v in zip(PARTS, parts, strict=True) if abs(v) >= 0.005)
        print(
            f"  {t.config.protocol:4s} measured {t.median_s:6.2f} s {_seconds(t.plt_ms)}; "
            f"model {plt:6.2f} s ({shown}); baseline {b:6.2f} s"
        )
    if args.db:
        _emulated(args.db, lab.trial_id, c.rate_down)
    return 0


if __name__ == "__main__":
    sys.exit(main())
