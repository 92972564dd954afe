"""A spec that emulates some trials of the prediction model's labelled set again (docs/predict.md).

A label whose loads the host disturbed (a stall of the machine, not the path) misleads the fit and
the scores. This writes a spec of the named trials exactly as ``experiments/predict-validation.quick.toml``
has them (the same grid values, so the same trial ids), under its own sweep name:

    .venv/bin/python scripts/predict_relabel.py c90aebf6b00cf651 c330e3200f5c8e7f > /var/tmp/relabel.toml
    .venv/bin/wirelab run /var/tmp/relabel.toml --db /var/tmp/relabel.db
    scripts/predict_fixture.py /var/tmp/predict-labels/pv-quick.db --relabel /var/tmp/relabel.db …

``scripts/predict_fixture.py --relabel`` then takes those trials' labels from the new database.
The written spec is expanded before it is printed, and refused unless its trial ids are the ones named.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from wirelab import spec as spec_mod  # noqa: E402

QUICK = ROOT / "experiments" / "predict-validation.quick.toml"
SWEEP = "predict-relabel"


def _toml_value(v: object) -> str:
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return str(v)


def relabel_spec(trial_ids: list[str], source: Path = QUICK) -> str:
    """The TOML of a sweep holding ``trial_ids`` of ``source`` (one ``[[grid.zip]]``), checked."""
    text = source.read_text()
    plan = spec_mod.loads(text, origin=str(source))
    index = {t.id: t.index for t in plan.trials}
    missing = [t for t in trial_ids if t not in index]
    if missing:
        raise SystemExit(f"trial: {', '.join(missing)} not in {source.name}; give trial ids of its grid")
    data = tomllib.loads(text)
    (zipped,) = data["grid"]["zip"]  # the validation spec is one zip of every axis
    rows = [index[t] for t in trial_ids]
    base = data["base"]
    lines = [
        f"# Written by scripts/predict_relabel.py: trials {', '.join(trial_ids)} of {source.name},",
        "# emulated again (docs/predict.md, Validation).",
        "[sweep]",
        f'name = "{SWEEP}"',
        f'description = "the prediction model\'s labels, emulated again: {len(rows)} trials"',
        "",
        "[base]",
        *(
            f"{k} = {_toml_value(v)}"
            if not isinstance(v, dict)
            else f"{k} = {{ " + ", ".join(f"{kk} = {_toml_value(vv)}" for kk, vv in v.items()) + " }"
            for k, v in base.items()
        ),
        "",
        "[[grid.zip]]",
        *(f'"{axis}" = {_toml_value([values[r] for r in rows])}' for axis, values in zipped.items()),
    ]
    out = "\n".join(lines) + "\n"
    got = [t.id for t in spec_mod.loads(out, origin="relabel").trials]
    if got != trial_ids:
        raise SystemExit(f"trial: the written spec expands to {got}, not {trial_ids}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trial_ids", nargs="+")
    ap.add_argument("--source", type=Path, default=QUICK)
    args = ap.parse_args()
    sys.stdout.write(relabel_spec(args.trial_ids, args.source))
    return 0


if __name__ == "__main__":
    sys.exit(main())
