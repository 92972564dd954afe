"""Ship the prediction model's labelled set and its fitted constants (docs/predict.md, "Validation").

From a results database holding the validation sweep (``wirelab run
experiments/predict-validation.quick.toml --db DB``):

1. ``wirelab/_predict/labels.jsonl.gz`` — every complete trial without a fidelity flag: its spec and
   each successful load's PLT and ToW per protocol (real emulated results, nothing synthesised);
2. ``wirelab/_predict/constants.json`` — the model's and the baseline's constants fitted on the
   labels' fitting part (``--holdout`` of the configurations kept out, seeded), with provenance:
   the database, the sweep, the labels' SHA-256, the split, the fit and the held-out scores.

``wirelab predict validate`` (no DB) then scores the held-out part with the shipped constants, and
``make bench`` prints the same figures without emulating.

``--relabel DB2`` takes the labels of the trials DB2 holds (the same trial ids, emulated again:
``scripts/predict_relabel.py``) in place of DB's, for trials whose loads the host disturbed.

Usage: scripts/predict_fixture.py DB [--sweep predict-validation-quick] [--holdout 0.3] [--seed 1]
       [--max-evals N] [--names a,b,…] [--keep-baseline] [--relabel DB2 [--relabel-sweep predict-relabel]]
       [--labels-only FILE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from wirelab._predict import _labels, _validate  # noqa: E402

PACKAGE = ROOT / "wirelab" / "_predict"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path)
    ap.add_argument("--sweep", default="predict-validation-quick")
    ap.add_argument("--holdout", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-evals", type=int, default=600)
    ap.add_argument(
        "--names",
        help="fit only these constants, comma-separated (the rest keep the shipped values); default: all",
    )
    ap.add_argument(
        "--keep-baseline",
        action="store_true",
        help="keep the shipped baseline's constants (a change that leaves the baseline's view untouched)",
    )
    ap.add_argument("--relabel", type=Path, help="a database of some of DB's trials emulated again")
    ap.add_argument("--relabel-sweep", default="predict-relabel")
    ap.add_argument(
        "--labels-only", type=Path, metavar="FILE", help="write the labels to FILE and stop (no fit)"
    )
    args = ap.parse_args()
    labels = _labels.from_db(args.db, [args.sweep])
    source = f"{args.db.name} (sweep {args.sweep})"
    if args.relabel:
        labels, replaced = _labels.replace(labels, _labels.from_db(args.relabel, [args.relabel_sweep]))
        source += f"; trials {', '.join(replaced)} from {args.relabel.name} (sweep {args.relabel_sweep})"
        print(f"relabelled {len(replaced)} trials from {args.relabel}: {', '.join(replaced)}")
    if args.labels_only:
        _labels.write_fixture(labels, args.labels_only)
        print(f"{args.labels_only}: {len(labels)} labelled configurations")
        return 0
    fixture = PACKAGE / _labels.FIXTURE
    _labels.write_fixture(labels, fixture)
    print(f"{fixture}: {len(labels)} labelled configurations ({fixture.stat().st_size} bytes)")

    def progress(stage: str, evals: int, loss: float) -> None:
        if evals % 10 == 0:
            print(f"  {stage}: {evals} evaluations, loss {loss:.4f}", flush=True)

    result = _validate.fit_and_score(
        labels=_labels.read_fixture(fixture),
        holdout=args.holdout,
        seed=args.seed,
        max_evals=args.max_evals,
        names=args.names.split(",") if args.names else None,
        fit_baseline=not args.keep_baseline,
        progress=progress,
    )
    out = PACKAGE / "constants.json"
    _validate.write_constants(result, out, labels_sha256=_validate.file_sha256(fixture), db=source)
    summary = result.summary()
    print(f"{out}: fitted on {result.fitting} configurations, scored on {result.heldout}")
    for who in ("model", "baseline"):
        s = summary[who]
        print(
            f"  {who}: median {s['median_abs_error']:.3f}, p90 {s['p90_abs_error']:.3f}, "
            f"rho {s['spearman']:.3f}, sign {s['sign_right']:.3f} of {s['significant']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
