"""A sweep as the analysis sees it: its loads, its configurations and the axes it varied.

:func:`load_sweep` reads one sweep from a results database (:class:`wirelab.store.Results`) into a
:class:`SweepData`. Its :attr:`~SweepData.axes` say what the sweep varied, each as an :class:`Axis`
with the DataFrame column that holds its values: the numeric companion of a unit-bearing parameter
(``network.rtt`` → ``network.rtt_ms``), the parameter itself when it is a number (``shards``), or a
category (``page``, a whole ``network`` profile). A ``page`` axis whose values are all synthetic pages
(``synthetic:64x10kB``) becomes two numeric factors, ``page.objects`` and ``page.object_kb``.
A sweep that varies ``shard_mode``, or whose ``shards`` include 0 (one origin per top-level-domain group
or per domain), has one categorical ``sharding`` axis instead of ``shards`` and ``shard_mode``: its
values name each arrangement (``one origin``, ``per top-level domain``, ``per domain``, …); ``shards`` swept
on its own (1 → 7 round robin), or crossed with ``shard_mode`` without a 0, stays numeric.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from typing import Any

import numpy as np
import pandas as pd

from wirelab import _facts
from wirelab.spec import BaseTrial, network_string
from wirelab.store import Results

__all__ = [
    "AXIS_NAMES",
    "Axis",
    "SHARDING",
    "StoredSweep",
    "SweepData",
    "format_value",
    "load_sweep",
    "parse_synthetic",
    "sharding_label",
]

#: Display name and unit of the parameters the studies sweep (grid path → (name, unit)).
AXIS_NAMES: dict[str, tuple[str, str]] = {
    "network.rtt": ("RTT", "ms"),
    "network.delay_down": ("downlink delay", "ms"),
    "network.delay_up": ("uplink delay", "ms"),
    "network.jitter": ("jitter", "ms"),
    "network.bw": ("bandwidth", "Mbit/s"),
    "network.bw_down": ("downlink bandwidth", "Mbit/s"),
    "network.bw_up": ("uplink bandwidth", "Mbit/s"),
    "network.loss": ("packet loss", "%"),
    "network.loss_down": ("downlink loss", "%"),
    "network.loss_up": ("uplink loss", "%"),
    "network.queue": ("gateway queue", "packets"),
    "network.iw": ("TCP initial window", "segments"),
    "network.irw": ("TCP initial receive window", "segments"),
    "shards": ("shards", "origins"),
    "shard_mode": ("shard mode", ""),
    "sharding": ("sharding", ""),
    "server.impl": ("server", ""),
    "server.apache.mpm": ("Apache MPM", ""),
    "server.max_concurrent_streams": ("max concurrent streams", ""),
    "server.write_chunk_bytes": ("write chunk", "bytes"),
    "client.max_connections_per_origin": ("connections per origin", ""),
    "client.compute_scale": ("computation scale", "×"),
    "page.objects": ("objects per page", ""),
    "page.object_kb": ("object size", "kB"),
    "page": ("page", ""),
    "network": ("network profile", ""),
    "repetitions": ("repetitions", ""),
}

#: Parameters drawn on a log axis when they span ≥ 20× (RTT, loss, shards … stay linear, as in the studies).
LOG_PARAMS = frozenset(
    {
        "network.bw",
        "network.bw_down",
        "network.bw_up",
        "page.objects",
        "page.object_kb",
        "server.max_concurrent_streams",
        "server.write_chunk_bytes",
    }
)

_SYNTHETIC = re.compile(r"^synthetic:([0-9]+)x([0-9]+(?:\.[0-9]+)?)([A-Za-z]*)(?:,html=.+)?$")


def parse_synthetic(page: str) -> tuple[int, float] | None:
    """``synthetic:64x10kB`` → (64 objects, 10000.0 bytes each), the engine's synthetic page syntax
    (``synthetic:NxS[,html=SIZE]``: N images of S bytes referenced by a root document); None for
    other pages. S is a SIZE with one of the engine's size units (``docs/profile-grammar.md``, "Units":
    ``kB`` = 1000, ``KiB`` = 1024; ``KB`` and a bare number are not sizes, and the engine refuses
    such a page)."""
    m = _SYNTHETIC.match(page) if isinstance(page, str) else None
    factor = _facts.units("size").get(m.group(3)) if m else None
    if m is None or factor is None:
        return None
    return int(m.group(1)), float(m.group(2)) * factor


#: The derived axis that names a sweep's arrangements of the page over origins (``shards`` with
#: ``shard_mode``).
SHARDING = "sharding"


def sharding_label(shards: int, mode: str) -> str:
    """What ``shards`` with ``shard_mode`` does to a page: ``one origin``, ``per top-level domain``
    (one origin each), ``per domain``, ``round robin over 4 origins``, ``domains on 3 origins``, …"""
    shards = int(shards)
    if mode == "round-robin":
        return "one origin" if shards == 1 else f"round robin over {shards} origins"
    unit = {"tld": "top-level domain", "domain": "domain"}.get(mode, mode)
    if shards == 0:
        return f"per {unit}"
    if shards == 1:
        return f"one origin ({mode})"
    return f"{unit}s on {shards} origins"


def _fold_sharding(axes: list[Axis], loads: pd.DataFrame, trials: pd.DataFrame) -> list[Axis]:
    """``axes`` with ``shards`` and ``shard_mode`` replaced by one categorical ``sharding`` axis (see
    the module docstring); ``loads`` gets its column."""
    params = [a.param for a in axes]
    if not {"shards", "shard_mode"} & set(params) or loads.empty:
        return axes
    specs = dict(zip(trials["trial_id"], trials["spec"], strict=True))
    shards = loads["trial_id"].map(lambda t: int(specs[t].get("shards", 1)))
    modes = loads["trial_id"].map(lambda t: specs[t].get("shard_mode", "round-robin"))
    if not (shards == 0).any():
        if "shard_mode" not in params:
            return axes  # shards alone: a number of origins
        per_mode = pd.DataFrame({"shards": shards, "mode": modes}).groupby("mode")["shards"].nunique()
        if "shards" in params and int(per_mode.max()) > 1:
            return axes  # shards × shard_mode: lines along shards, one per mode
    loads[SHARDING] = [sharding_label(n, m) for n, m in zip(shards, modes, strict=True)]
    at = min(i for i, p in enumerate(params) if p in ("shards", "shard_mode"))
    folded = [a for a in axes if a.param not in ("shards", "shard_mode")]
    values = tuple(dict.fromkeys(loads[SHARDING]))
    if len(values) >= 2:
        name, _unit = AXIS_NAMES[SHARDING]
        folded.insert(at, Axis(SHARDING, SHARDING, name, "", False, values))
    return folded


@dataclasses.dataclass(frozen=True)
class Axis:
    """One thing a sweep varied."""

    param: str  #: grid path (``network.rtt``) or derived factor (``page.objects``)
    column: str  #: DataFrame column with the values (``network.rtt_ms``)
    name: str  #: display name (``RTT``)
    unit: str  #: display unit (``ms``), "" when none
    numeric: bool
    values: tuple[Any, ...]  #: distinct values, sorted

    @property
    def label(self) -> str:
        """``RTT (ms)``."""
        return f"{self.name} ({self.unit})" if self.unit else self.name

    @property
    def log(self) -> bool:
        """Whether to draw the axis on a log scale: quantities that studies sweep geometrically
        (bandwidth, object size and count, stream limits) when their values span ≥ 20×."""
        if not self.numeric or len(self.values) < 3 or self.param not in LOG_PARAMS:
            return False
        vals = np.asarray(self.values, dtype=float)
        return bool((vals > 0).all() and vals.max() / vals.min() >= 20)

    def format(self, value: Any) -> str:
        return format_value(value, self.unit if self.numeric else "")


def format_value(value: Any, unit: str = "") -> str:
    """``150 ms``, ``0.5 %``, ``twitter``; numbers without trailing zeros."""
    if isinstance(value, float | int | np.floating | np.integer) and not isinstance(value, bool):
        v = float(value)
        if not np.isfinite(v):
            return "—"
        text = f"{v:.4g}" if abs(v) < 1e5 else f"{v:,.0f}"
        if unit in ("", "×"):
            return f"{text}{unit}"
        return f"{text} {unit}"
    return str(value)


def _numeric(series: pd.Series) -> bool:
    values = series.dropna()
    return len(values) > 0 and all(
        isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool) for v in values
    )


def _axis_for(param: str, frame: pd.DataFrame) -> list[Axis]:
    def make(param: str, column: str, numeric: bool) -> Axis | None:
        values = frame[column].dropna().unique().tolist()
        if len(values) < 2:
            return None
        name, unit = AXIS_NAMES.get(param, (param, ""))
        # numbers ascending; categories in the grid's order (loads come sorted by trial)
        values = sorted(float(v) for v in values) if numeric else list(dict.fromkeys(values))
        return Axis(param, column, name, unit if numeric else "", numeric, tuple(values))

    if param == "page":
        pages = frame["page"].dropna().unique().tolist()
        parsed = [parse_synthetic(p) for p in pages]
        if pages and all(p is not None for p in parsed):
            axes = [
                make("page.objects", "page.objects", True),
                make("page.object_kb", "page.object_kb", True),
            ]
            return [a for a in axes if a is not None]
        axis = make("page", "page", False)
        return [axis] if axis else []
    for suffix in ("_ms", "_mbit", "_pct", "_packets", "_bytes"):
        column = param + suffix
        if column in frame and frame[column].dropna().nunique() > 1:
            axis = make(param, column, True)
            if suffix == "_bytes":
                axis = dataclasses.replace(axis, unit="bytes") if axis else None
            return [axis] if axis else []
    if param not in frame:
        return []
    column = frame[param]
    if column.map(lambda v: isinstance(v, list | dict)).any():
        frame[param] = column.map(lambda v: json.dumps(v) if isinstance(v, list | dict) else v)
        column = frame[param]
    axis = make(param, param, _numeric(column))
    return [axis] if axis else []


@dataclasses.dataclass
class StoredSweep:
    """What the data of every stored sweep (trials: :class:`SweepData`; a load test: ``CapacityData``)
    begins with: the sweep's name, description and spec."""

    name: str
    description: str
    spec_hash: str
    spec: dict[str, Any]  #: the spec as validated (JSON form)
    source: str  #: its TOML text

    @staticmethod
    def read(results: Results, sweep: str) -> tuple[dict[str, Any], pd.Series]:
        """The fields of the stored sweep ``sweep`` (keyword arguments) and its row of ``Results.sweeps``."""
        info = results.sweeps().set_index("sweep").loc[sweep]
        spec, source = results.sweep_spec(sweep)
        fields = {
            "name": sweep,
            "description": str(info["description"] or ""),
            "spec_hash": str(info["spec_hash"]),
            "spec": spec,
            "source": source,
        }
        return fields, info


@dataclasses.dataclass
class SweepData(StoredSweep):
    """One sweep's data, ready for analysis (see the module docstring); ``spec``: the experiment spec."""

    trials: pd.DataFrame  #: ``Results.trials`` (every status)
    loads: pd.DataFrame  #: ``Results.loads`` plus derived factor columns
    configs: pd.DataFrame  #: one row per complete trial: trial_id, axis columns, page, network, label
    axes: list[Axis]
    protocols: list[str]  #: in spec order; the first is the baseline
    emulator: dict[str, dict[str, Any]]  #: trial id → the emulator summary of its trial.json
    results: Results | None = None
    #: the trials of ``[sweep] repeat_on_each_worker`` (``Results.trials(repeats=True)``, every status)
    repeat_trials: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)
    #: loads of every configuration repeated on each worker, its planned trial's and its repeats', with
    #: ``config`` (the planned trial's id) and ``worker``
    worker_loads: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)

    @property
    def baseline(self) -> str:
        return self.protocols[0]

    @property
    def compared(self) -> list[str]:
        return self.protocols[1:]

    @property
    def numeric_axes(self) -> list[Axis]:
        return [a for a in self.axes if a.numeric]

    @property
    def categorical_axes(self) -> list[Axis]:
        return [a for a in self.axes if not a.numeric]

    def axis(self, param: str) -> Axis | None:
        return next((a for a in self.axes if a.param == param), None)

    def with_config(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` (with a ``trial_id`` column) joined with the configuration columns."""
        extra = [c for c in self.configs.columns if c not in frame.columns or c == "trial_id"]
        return frame.merge(self.configs[extra], on="trial_id", how="left")

    @functools.cached_property
    def objects(self) -> pd.DataFrame:
        """``Results.objects`` of the sweep (empty without a database)."""
        if self.results is None:
            return pd.DataFrame()
        return _objects(self.results, self.name)

    def har(self, trial_id: str, load_index: int) -> dict[str, Any]:
        assert self.results is not None
        return self.results.har(self.name, trial_id, load_index)

    def fixed(self) -> dict[str, str]:
        """What stayed the same across the sweep: page (when not an axis), network, protocols,
        repetitions and the base spec's other fields where they differ from their defaults."""
        base = self.spec.get("base", {})
        out: dict[str, str] = {}
        varied = {a.param for a in self.axes} | {a.param.split(".")[0] for a in self.axes}
        if SHARDING in varied:
            varied |= {"shards", "shard_mode"}
        if "page" not in varied and len(self.configs):
            out["page"] = str(self.configs["page"].iloc[0])
        network = base.get("network", "native")
        if isinstance(network, dict):
            items = {k: v for k, v in network.items() if f"network.{k}" not in varied}
            network = network_string(items) if items else "native"
        if "network" not in {a.param for a in self.axes}:
            out["network"] = str(network)
        out["protocols"] = ", ".join(self.protocols)
        out["repetitions"] = str(base.get("repetitions", 5))
        defaults = BaseTrial().model_dump(mode="json")
        for section in ("server", "client", "capture"):
            for key, value in (base.get(section) or {}).items():
                if f"{section}.{key}" not in varied and value != defaults[section].get(key):
                    out[f"{section}.{key}"] = json.dumps(value) if not isinstance(value, str) else value
        for key in ("shards", "shard_mode", "order", "gap_ms", "seed"):
            if key in base and key not in varied and base[key] != defaults.get(key):
                out[key] = str(base[key])
        return out


def _objects(results: Results, sweep: str) -> pd.DataFrame:
    """The sweep's objects with their load's keys — ``Results.objects`` without the grid-parameter
    columns, which it builds row by row (minutes for a sweep with 10⁵–10⁶ requests); the analysis joins
    parameters per configuration instead."""
    return pd.read_sql_query(
        """
        SELECT t.trial_id, l.load_index, l.protocol AS load_protocol, l.repetition, o.entry_index, o.url,
               o.origin, o.protocol, o.connection, o.stream_id, o.status, o.mime_type, o.size_bytes,
               o.started_ms, o.time_ms, o.blocked_ms, o.dns_ms, o.connect_ms, o.ssl_ms, o.send_ms, o.wait_ms,
               o.receive_ms
          FROM objects o JOIN loads l ON l.id = o.load_id JOIN trials t ON t.id = l.trial_row
               JOIN sweeps s ON s.id = t.sweep_id
         WHERE s.name = ? AND t.repeat_of IS NULL ORDER BY t.idx, l.load_index, o.entry_index
        """,
        results.conn,
        params=(sweep,),
    )


def _emulator(results: Results, sweep: str) -> dict[str, dict[str, Any]]:
    trials = results.trials(sweep)
    return {t: e for t, e in zip(trials["trial_id"], trials["emulator"], strict=True) if e is not None}


def _derive(loads: pd.DataFrame) -> pd.DataFrame:
    if "page" in loads and len(loads):
        parsed = loads["page"].map(parse_synthetic)
        if parsed.notna().all():
            loads["page.objects"] = parsed.map(lambda p: float(p[0]))
            loads["page.object_kb"] = parsed.map(lambda p: p[1] / 1000)
    return loads


def _label(row: pd.Series, axes: list[Axis]) -> str:
    if not axes:
        return str(row["page"])
    return ", ".join(f"{a.name} {a.format(row[a.column])}" if a.numeric else str(row[a.column]) for a in axes)


def load_sweep(results: Results, sweep: str) -> SweepData:
    """Read ``sweep`` from ``results`` (raises :class:`~wirelab.errors.UsageError` for an unknown name)."""
    trials = results.trials(sweep)
    loads = _derive(results.loads(sweep))
    stored, info = StoredSweep.read(results, sweep)
    spec = stored["spec"]
    protocols: list[str] = []
    for s in trials["spec"]:
        protocols.extend(p for p in s["protocols"] if p not in protocols)
    base_protocols = (spec.get("base") or {}).get("protocols")
    if base_protocols:
        protocols = [p for p in base_protocols if p in protocols] + [
            p for p in protocols if p not in base_protocols
        ]
    axes: list[Axis] = []
    for param in info["axes"]:
        axes.extend(_axis_for(param, loads))
    axes = _fold_sharding(axes, loads, trials)
    config_cols = list(
        dict.fromkeys(["trial_id", "trial_index", "page", "network", *(a.column for a in axes)])
    )
    if "objects" in loads:
        resources = loads.groupby("trial_id")["objects"].median().rename("resources")
    else:
        resources = pd.Series(dtype=float, name="resources")
    configs = (
        loads[[c for c in config_cols if c in loads]]
        .drop_duplicates("trial_id")
        .merge(resources, left_on="trial_id", right_index=True, how="left")
        .reset_index(drop=True)
    )
    configs["label"] = [_label(r, axes) for _, r in configs.iterrows()] if len(configs) else []
    every = results.trials(sweep, repeats=True)
    repeat_trials = every[every["repeat_of"].notna()].reset_index(drop=True)
    worker_loads = pd.DataFrame()
    if len(repeat_trials):
        repeated = set(repeat_trials["repeat_of"])
        all_loads = results.loads(sweep, repeats=True)
        all_loads["config"] = all_loads["repeat_of"].fillna(all_loads["trial_id"])
        worker_loads = all_loads[all_loads["config"].isin(repeated)].reset_index(drop=True)
    return SweepData(
        **stored,
        trials=trials,
        loads=loads,
        configs=configs,
        axes=axes,
        protocols=protocols or ["h1s", "h2"],
        emulator=_emulator(results, sweep),
        results=results,
        repeat_trials=repeat_trials,
        worker_loads=worker_loads,
    )
