"""The held-out pairs whose gain's sign the shipped model gets wrong (docs/predict.md, Results).

Scores the shipped constants on the shipped labels' seeded held-out split, as ``wirelab predict
validate`` does, and lists each significant pair (emulated 95 % interval of the gain excludes zero)
whose predicted sign is wrong, with the measured and predicted gains and the configuration.

    WIRELAB_ENGINE=bin/wirelab-engine .venv/bin/python scripts/predict_sign_misses.py [--set NAME=VALUE …]

``--set`` scores the shipped constants with some changed (e.g. ``--set queue_in_rounds=1``: the
FIFO's wait in later rounds, docs/predict.md §9) and prints the held-out scores beside the misses.
``--labels FILE`` scores another labels file (``predict_fixture.py`` writes one) on the same seeded
split; ``--part fit`` scores the part the constants were fitted on instead of the held-out one.
"""

from __future__ import annotations

import argparse
import collections

import numpy as np

from wirelab._predict import _constants, _labels
from wirelab._predict._fit import _gain_interval, score, split, targets
from wirelab._predict._run import predict_configs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="change a constant")
    ap.add_argument("--labels", help="a labels file (default: the shipped one)")
    ap.add_argument("--part", choices=("held", "fit"), default="held")
    args = ap.parse_args()
    cfile = _constants.load()
    changes = {name: float(value) for name, value in (s.split("=", 1) for s in args.set)}
    k = cfile.constants.replace(**changes)
    split_ = cfile.provenance["split"]
    fit_part, held = split(_labels.read_fixture(args.labels), split_["holdout"], split_["seed"])
    if args.part == "fit":
        held = fit_part
    tgts = targets(held)
    plt = predict_configs([t.config for t in tgts], k).plt
    scores = score(tgts, plt)
    print(
        f"{'held out' if args.part == 'held' else 'fitted on'} {len(held)} configurations"
        f"{' with ' + ', '.join(args.set) if args.set else ''}: "
        f"median {100 * scores.median_abs_error:.1f} %, p90 {100 * scores.p90_abs_error:.1f} %, "
        f"rho {scores.spearman:.3f}, sign {100 * scores.sign_right:.1f} %"
    )
    by: dict[str, dict[str, tuple]] = {}
    for t, p in zip(tgts, plt, strict=True):
        by.setdefault(t.label.trial_id, {})[t.config.protocol] = (t, float(p))
    rows = []  # (pair, measured gain, predicted gain, config, right)
    for per in by.values():
        protos = sorted(per)
        for i, a in enumerate(protos):
            for b in protos[i + 1 :]:
                (ta, pa), (tb, pb) = per[a], per[b]
                if len(ta.plt_ms) < 2 or len(tb.plt_ms) < 2:
                    continue
                lo, hi = _gain_interval(ta.plt_ms, tb.plt_ms)
                if not (lo > 0 or hi < 0):
                    continue
                ma, mb = np.median(ta.plt_ms), np.median(tb.plt_ms)
                right = ((pb - pa) > 0) == (lo > 0)
                rows.append((f"{a}-{b}", (ma - mb) / ma, (pa - pb) / pa, ta.config, right))
    wrong = [r for r in rows if not r[4]]
    print(f"significant pairs {len(rows)}, sign wrong {len(wrong)} (gain = first's PLT saved by the second)")
    total, bad = collections.Counter(r[0] for r in rows), collections.Counter(r[0] for r in wrong)
    for k in sorted(total):
        print(f"  {k}: {bad[k]} wrong of {total[k]}")
    for name, sel in (("wrong", wrong), ("right", [r for r in rows if r[4]])):
        print(f"  median measured |gain|, {name}: {100 * np.median([abs(r[1]) for r in sel]):.1f} %")
    small = [abs(r[1]) for r in wrong]
    print(
        f"  wrong with |gain| < 5 %: {sum(g < 0.05 for g in small)}, < 10 %: {sum(g < 0.10 for g in small)}"
    )
    for pair, g, pg, c, _ in sorted(wrong, key=lambda r: -abs(r[1])):
        print(
            f"  {pair:7} measured {100 * g:+6.1f} % predicted {100 * pg:+6.1f} %  page={c.page[0]} "
            f"rtt={1000 * c.rtt:.0f}ms rate={c.rate_down * 8 / 1e6:.2f}Mbit/s loss={100 * c.loss_down:.2f}% "
            f"queue={c.queue_down / 1000:.0f}kB ({c.queue_down / (c.rate_down * c.rtt):.2f} BDP)"
        )
    shallow = [r for r in rows if r[3].queue_down < r[3].rate_down * r[3].rtt]
    print(
        f"  queue below the BDP: {sum(not r[4] for r in shallow)} wrong of {len(shallow)}; "
        f"at or above: {sum(not r[4] for r in rows) - sum(not r[4] for r in shallow)} wrong of "
        f"{len(rows) - len(shallow)}"
    )


if __name__ == "__main__":
    main()
