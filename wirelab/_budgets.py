"""Budgets: an experiment spec's ``[sweep] thresholds``, checked on the sweep's stored loads by the
engine's one parser and evaluator (``wirelab-engine thresholds``, ``engine/budget``; docs/vitals.md,
"Budgets"). wirelab checks them when it plans a sweep (a bad one is one line, exit 2, nothing
created) and after ``wirelab run``; ``wirelab results check NAME`` checks a stored sweep again."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wirelab._engine import SubprocessEngine
from wirelab.errors import SpecError, UsageError

__all__ = ["Budgets", "check", "evaluate", "rows"]


@dataclasses.dataclass(frozen=True)
class Budgets:
    """The outcome of a sweep's thresholds: the engine's results, one per threshold, in order."""

    sweep: str
    passed: bool
    results: list[dict[str, Any]]

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.results if not r["pass"]]

    def lines(self) -> list[str]:
        """One line per failed check: the threshold, the configuration, the two sides' values."""
        out = []
        for r in self.failed:
            if not r["failures"]:
                out.append(f"{r['expr']}: no configuration has both values")
            for f in r["failures"]:
                where = "over the sweep" if r["aggregated"] else f"{f['trial_id']} ({f['label'] or 'base'})"
                out.append(f"{r['expr']}: {where}: {_value(f['left'])} vs {_value(f['right'])}")
        return out


def _value(v: float | None) -> str:
    return "no value" if v is None else f"{v:,.4g}"


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _number(v: Any) -> float | None:
    return None if v is None or math.isnan(float(v)) else float(v)


def _engine(engine: str | Path | None) -> SubprocessEngine:
    return SubprocessEngine(engine)


def check(thresholds: Sequence[str], protocols: Sequence[str], *, engine: str | Path | None = None) -> None:
    """Refuse a malformed threshold, an unknown metric or a protocol no trial loads: :class:`SpecError`
    naming ``sweep.thresholds[i]``."""
    if not thresholds:
        return
    try:
        _engine(engine).thresholds(list(thresholds), list(protocols))
    except UsageError as e:
        text = str(e)
        raise SpecError(f"sweep.{text}", path=f"sweep.{text.split(':', 1)[0]}") from None


def _label(params_json: str) -> str:
    params = json.loads(params_json or "{}")
    return " ".join(f"{k}={v}" for k, v in params.items())


def rows(results: Any, sweep: str) -> list[dict[str, Any]]:
    """The sweep's loads as ``wirelab-engine thresholds --loads`` reads them: configuration, label,
    protocol, error, and the record's numeric fields (its client object's as ``client.NAME``)."""
    loads = results.loads(sweep)
    query = (
        "SELECT t.trial_id, t.params_json FROM trials t JOIN sweeps s ON s.id = t.sweep_id WHERE s.name = ?"
    )
    labels = {row["trial_id"]: _label(row["params_json"]) for row in results.conn.execute(query, (sweep,))}
    skip = ("trial_index", "load_id")
    numeric = [c for c in loads.columns if loads[c].dtype.kind in "fiu" and c not in skip]
    out = []
    for rec in loads.to_dict("records"):
        values = {c: _number(rec[c]) for c in numeric}
        # the loader's own fields (Chromium's first_contentful_paint_ms: the fcp base) as client.NAME
        client = rec.get("client")
        if isinstance(client, dict):
            values |= {f"client.{k}": _number(v) for k, v in client.items() if _is_number(v)}
        error = rec.get("error")
        out.append(
            {
                "trial_id": rec["trial_id"],
                "label": labels.get(rec["trial_id"], ""),
                "protocol": rec["protocol"],
                "error": error if isinstance(error, str) else None,
                "values": values,
            }
        )
    return out


def evaluate(results: Any, sweep: str, *, engine: str | Path | None = None) -> Budgets | None:
    """Check the stored sweep's ``[sweep] thresholds`` on its loads; None when it has none. ``results``
    is an open :class:`wirelab.Results`."""
    spec, _ = results.sweep_spec(sweep)
    thresholds = (spec.get("sweep") or {}).get("thresholds") or []
    if not thresholds:
        return None
    loads = rows(results, sweep)
    protocols = sorted({r["protocol"] for r in loads})
    planned = sorted({p for t in results.trials(sweep)["spec"] for p in t["protocols"]})
    out = _engine(engine).thresholds(thresholds, planned or protocols, loads)
    assert out is not None
    return Budgets(sweep=sweep, passed=bool(out["passed"]), results=list(out["results"]))
