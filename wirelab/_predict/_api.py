"""``wirelab.predict``: the model's answer for one configuration, or for every trial of a plan."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from wirelab._predict import _constants
from wirelab._predict._config import configs_of
from wirelab._predict._run import predict_configs
from wirelab._predict._vocab import PARTS

__all__ = ["Prediction", "ProtocolPrediction", "predict", "predict_specs"]


@dataclasses.dataclass(frozen=True)
class ProtocolPrediction:
    """One protocol's predicted load (ms)."""

    protocol: str
    plt_ms: float
    tow_ms: float
    parts_ms: dict[str, float]  #: PLT split into the decomposition's parts (they sum to ``plt_ms``)
    baseline_plt_ms: float  #: the Lantern-style baseline's PLT for the same configuration
    gain_pct: float | None  #: PLT reduction against the first protocol, % (positive: faster)
    gain_interval_pct: tuple[float, float] | None  #: the model's 95 % error on held-out gains around it
    plt_interval_ms: tuple[float, float] | None  #: the same for PLT

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Prediction:
    """The model's prediction for one trial spec: a row per protocol, the first the baseline of gains."""

    spec: dict[str, Any]
    protocols: tuple[ProtocolPrediction, ...]
    constants: dict[str, Any]  #: where the constants came from (their file's provenance)

    def __getitem__(self, protocol: str) -> ProtocolPrediction:
        for p in self.protocols:
            if p.protocol == protocol:
                return p
        raise KeyError(protocol)

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "protocols": [p.to_dict() for p in self.protocols],
            "constants": self.constants,
        }

    def table(self) -> Any:
        """One row per protocol (a pandas DataFrame)."""
        import pandas as pd

        rows = []
        for p in self.protocols:
            row = {k: v for k, v in p.to_dict().items() if k != "parts_ms"}
            row.update({f"{k}_ms": v for k, v in p.parts_ms.items()})
            rows.append(row)
        return pd.DataFrame(rows)


def _interval(quantiles: Any, key: str) -> tuple[float, float] | None:
    q = (quantiles or {}).get(key)
    return (float(q[0]), float(q[1])) if q else None


def predict_specs(
    specs: Sequence[Mapping[str, Any]],
    *,
    constants: str | Path | None = None,
    explain: bool = True,
    engine: Any = None,
) -> list[Prediction]:
    """Predictions for trial specs (as a plan holds them, or partial: the contract's defaults fill
    the rest), all configurations simulated together."""
    cfile = _constants.load(constants)
    per_spec = [configs_of(s, engine=engine) for s in specs]
    flat = [c for cs in per_spec for c in cs]
    model = predict_configs(flat, cfile.constants, explain=explain, engine=engine)
    base = predict_configs(flat, cfile.baseline, baseline=True, engine=engine)
    held = cfile.provenance.get("heldout", {}).get("error_quantiles", {})
    plt_q = _interval(held, "plt_log_ratio")
    gain_q = _interval(held, "gain_pp")
    out, at = [], 0
    for spec, cs in zip(specs, per_spec, strict=True):
        rows = []
        first = None
        for c in cs:
            plt, tow = float(model.plt[at]) * 1000, float(model.tow[at]) * 1000
            parts = (
                {f"{name}": float(v) * 1000 for name, v in zip(PARTS, model.parts[at], strict=True)}
                if model.parts is not None
                else {}
            )
            first = plt if first is None else first
            gain = None if c is cs[0] else (first - plt) / first * 100
            rows.append(
                ProtocolPrediction(
                    protocol=c.protocol,
                    plt_ms=plt,
                    tow_ms=tow,
                    parts_ms=parts,
                    baseline_plt_ms=float(base.plt[at]) * 1000,
                    gain_pct=gain,
                    gain_interval_pct=(gain + gain_q[0], gain + gain_q[1])
                    if gain is not None and gain_q
                    else None,
                    plt_interval_ms=(plt * float(np.exp(plt_q[0])), plt * float(np.exp(plt_q[1])))
                    if plt_q
                    else None,
                )
            )
            at += 1
        out.append(Prediction(dict(spec), tuple(rows), cfile.provenance))
    return out


def predict(
    page: str,
    *,
    network: str = "native",
    protocols: Sequence[str] = ("h1s", "h2", "h3"),
    shards: int = 1,
    shard_mode: str = "round-robin",
    seed: int = 1,
    server: Mapping[str, Any] | None = None,
    client: Mapping[str, Any] | None = None,
    constants: str | Path | None = None,
    engine: Any = None,
) -> Prediction:
    """Predict PLT and ToW of ``page`` over ``protocols`` through ``network`` (docs/predict.md)::

        >>> p = wirelab.predict("twitter", network="rtt=100ms,bw=10mbit", protocols=["h1s", "h2"])
        >>> p["h2"].plt_ms, p["h2"].gain_pct, p["h2"].parts_ms["setup"]

    ``server``/``client`` are the trial spec's tables (``{"tls_version": "1.2"}``,
    ``{"mode": "replay", "compute_scale": 0.5}``); ``constants`` a ``wirelab predict fit`` file.
    Bad input raises :class:`wirelab.UsageError` naming the field."""
    spec: dict[str, Any] = {
        "page": page,
        "network": network,
        "protocols": list(protocols),
        "shards": shards,
        "shard_mode": shard_mode,
        "seed": seed,
    }
    if server:
        spec["server"] = dict(server)
    if client:
        spec["client"] = dict(client)
    return predict_specs([spec], constants=constants, engine=engine)[0]
