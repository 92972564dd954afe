"""Labelled configurations: what the emulator measured, per trial and protocol.

A label is one trial's configuration (its trial spec) and, per protocol, the PLT and ToW of each
successful load. Labels come from a results database (any sweep of complete trials) or from the
fixture the package ships (``labels.jsonl.gz``: the validation set, ``experiments/
predict-validation.quick.toml`` as measured, written by ``scripts/predict_fixture.py``).
Trials with a fidelity flag (docs/running.md) are left out: their loads do not measure the path.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from wirelab.errors import UsageError

__all__ = ["FIXTURE", "Label", "from_db", "read_fixture", "replace", "write_fixture"]

FIXTURE = "labels.jsonl.gz"

#: Trial spec fields a label keeps (the rest are the contract's defaults or do not change a load).
_SPEC_KEYS = ("page", "seed", "shards", "shard_mode", "network", "server", "client", "protocols")


@dataclasses.dataclass(frozen=True)
class Label:
    """One labelled trial."""

    trial_id: str
    spec: dict[str, Any]
    plt_ms: dict[str, tuple[float, ...]]  #: per protocol, each successful load's PLT
    tow_ms: dict[str, tuple[float, ...]]
    flags: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "trial_id": self.trial_id,
            "spec": self.spec,
            "plt_ms": {p: list(v) for p, v in self.plt_ms.items()},
            "tow_ms": {p: list(v) for p, v in self.tow_ms.items()},
            "flags": list(self.flags),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Label:
        return cls(
            d["trial_id"],
            d["spec"],
            {p: tuple(v) for p, v in d["plt_ms"].items()},
            {p: tuple(v) for p, v in d["tow_ms"].items()},
            tuple(d.get("flags", ())),
        )


def _compact(spec: dict[str, Any]) -> dict[str, Any]:
    return {k: spec[k] for k in _SPEC_KEYS if k in spec}


def from_db(
    db: str | Path, sweeps: Iterable[str] | None = None, *, keep_flagged: bool = False
) -> list[Label]:
    """The labels of every complete trial of ``sweeps`` (all sweeps when None) in the database."""
    import wirelab

    path = Path(db)
    if not path.is_file():
        raise UsageError(f"DB: {db} does not exist; give a results database (wirelab run … --db FILE)")
    results = wirelab.open(path)
    names = (
        list(sweeps)
        if sweeps
        else [
            s
            for s, k in zip(results.sweeps()["sweep"], results.sweeps()["kind"], strict=True)
            if k == "trials"
        ]
    )
    labels: list[Label] = []
    for sweep in names:
        trials = results.trials(sweep, status="complete")
        loads = results.loads(sweep, with_errors=False)
        by_trial = {tid: g for tid, g in loads.groupby("trial_id")}
        for row in trials.itertuples():
            flags = tuple(row.fidelity_flags)
            if flags and not keep_flagged:
                continue
            g = by_trial.get(row.trial_id)
            if g is None or g.empty:
                continue
            plt = {p: tuple(float(x) for x in gg["plt_ms"]) for p, gg in g.groupby("protocol")}
            tow = {
                p: tuple(float(x) for x in gg["tow_ms"].fillna(float("nan")))
                for p, gg in g.groupby("protocol")
            }
            labels.append(Label(row.trial_id, _compact(row.spec), plt, tow, flags))
    if not labels:
        raise UsageError(
            f"DB: {db} has no complete trial with successful loads"
            + (f" in sweep {', '.join(names)}" if names else "")
            + "; label configurations first (wirelab run experiments/predict-validation.quick.toml)"
        )
    return labels


def replace(labels: list[Label], again: Iterable[Label]) -> tuple[list[Label], list[str]]:
    """``labels`` with each trial of ``again`` (the same trial, emulated again) in place of its
    label, in the same order; and the ids replaced. A trial of ``again`` that ``labels`` lacks, or
    whose spec differs, is refused: a re-emulation replaces a label, it never adds one."""
    by_id = {lab.trial_id: lab for lab in again}
    known = {lab.trial_id: lab for lab in labels}
    for tid, lab in by_id.items():
        if tid not in known:
            raise UsageError(
                f"relabel: trial {tid} is not in the labelled set; emulate the set's trials only"
            )
        if not _within(known[tid].spec, lab.spec):
            raise UsageError(f"relabel: trial {tid}'s spec differs from the set's; emulate the same trial")
    out = [
        dataclasses.replace(
            lab,
            plt_ms=by_id[lab.trial_id].plt_ms,
            tow_ms=by_id[lab.trial_id].tow_ms,
            flags=by_id[lab.trial_id].flags,
        )
        if lab.trial_id in by_id
        else lab
        for lab in labels
    ]
    return out, sorted(by_id)


def _within(old: Any, new: Any) -> bool:
    """Every field ``old`` sets, ``new`` sets alike (a later contract may spell out more defaults;
    the trial id, a hash of the resolved spec, is the same)."""
    if isinstance(old, dict):
        return isinstance(new, dict) and all(k in new and _within(v, new[k]) for k, v in old.items())
    return bool(old == new)


def write_fixture(labels: Iterable[Label], path: str | Path) -> None:
    """Write labels as gzipped JSON lines (deterministic bytes: no timestamp in the gzip header)."""
    text = "".join(json.dumps(lab.to_json(), sort_keys=True, separators=(",", ":")) + "\n" for lab in labels)
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as f:
        f.write(text.encode())


def read_fixture(path: str | Path | None = None) -> list[Label]:
    """The labels of a fixture file, else the package's."""
    if path is None:
        data = resources.files("wirelab._predict").joinpath(FIXTURE).read_bytes()
    else:
        data = Path(path).read_bytes()
    return [Label.from_json(json.loads(line)) for line in gzip.decompress(data).decode().splitlines() if line]
