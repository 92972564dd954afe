"""Experiment specs: a base trial and a grid, expanded into trial specs (``docs/spec.md``).

An experiment spec is TOML::

    [sweep]
    name = "rtt"
    [base]
    page = "twitter"
    protocols = ["h1s", "h2"]
    network = { bw = "1mbit", rtt = "150ms" }
    [grid]
    "network.rtt" = { from = "10ms", to = "490ms", step = "40ms" }

:func:`load` reads and validates one and :func:`expand` turns it into a :class:`Plan`: one
:class:`PlannedTrial` per grid point, each a complete trial spec (valid against
``schemas/trial-spec.schema.json``) with a stable id derived from its content. Every error is a
:class:`~wirelab.errors.SpecError` whose one-line message names the dotted path, the value and what is
allowed.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import itertools
import json
import math
import tomllib
from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
)

from wirelab import contract, netprofile
from wirelab._contract_models import (
    CaptureConfig,
    ClientConfig,
    ServerConfig,
    TrialSpecFields,
    TrialSpecOwnFields,
)
from wirelab.errors import ProfileError, SpecError, cut

__all__ = [
    "CaptureConfig",
    "ClientConfig",
    "ExperimentSpec",
    "Plan",
    "PlannedTrial",
    "ServerConfig",
    "TrialSpec",
    "GridFields",
    "config_id",
    "expand",
    "experiment_json_schema",
    "grid_points",
    "load",
    "loads",
    "network_string",
    "network_kind",
    "numeric_params",
    "parse_grid",
    "resolve_trial",
    "worker_repeats",
]

_TRIAL_SCHEMA = contract.load_schema("trial-spec")
_FIELDS_SCHEMA = _TRIAL_SCHEMA["$defs"]["fields"]

Protocol = Literal["h1", "h1s", "h2", "h2c", "h3", "spdy3"]
#: the contract's protocols, in its order (the schema's enum; ``Protocol`` is the generated models')
PROTOCOLS: tuple[str, ...] = tuple(_FIELDS_SCHEMA["properties"]["protocols"]["items"]["enum"])
SHARD_MODES: tuple[str, ...] = tuple(_FIELDS_SCHEMA["properties"]["shard_mode"]["enum"])
#: The most origins a page may be sharded over; ``shards = 0`` means one per top-level-domain group
#: (``shard_mode = "tld"``) or per domain (``"domain"``), as many as the page has.
MAX_SHARDS: int = _FIELDS_SCHEMA["properties"]["shards"]["maximum"]
MAX_TRIALS = 100_000
MAX_WORKER_REPEATS = 100  #: [sweep] repeat_on_each_worker: at most this many trials per worker


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, validate_default=True)


# The trial spec's knobs are the generated models of the contract's schema (wirelab/_contract_models.py,
# `python -m wirelab._codegen`): ServerConfig, ClientConfig, CaptureConfig and the implementation
# tables. What pydantic cannot say (write_chunk_bytes' gap, protocols listed twice, shards = 0 with
# round-robin) the schema says, and resolve_trial and the grid's value checks ask it.
_TrialFields = TrialSpecFields


def _shards_problem(shards: Any, shard_mode: Any) -> str | None:
    """Why ``shards`` and ``shard_mode`` do not go together (``None`` when they do): the schema's rule
    (its ``if``/``then``) and its words."""
    if (
        shards == 0
        and not isinstance(shards, bool)
        and shard_mode not in _FIELDS_SCHEMA["then"]["properties"]["shard_mode"]["enum"]
    ):
        return str(_FIELDS_SCHEMA["then"]["x-allowed"])
    return None


class TrialSpec(TrialSpecFields, TrialSpecOwnFields):
    """One trial as the engine receives it (``schemas/trial-spec.schema.json``)."""

    @field_validator("network")
    @classmethod
    def _profile(cls, v: str) -> str:
        try:
            netprofile.parse(v)
        except ProfileError as e:
            raise ValueError(str(e)) from None
        return v


#: Trial spec fields in the order of docs/trial-contract.md (and of every dumped spec): the schema's.
TRIAL_FIELDS: tuple[str, ...] = tuple(_FIELDS_SCHEMA["properties"])

NetworkValue = str | int | float


class BaseTrial(_TrialFields):
    """``[base]``: a trial spec whose ``page`` may come from the grid and whose ``network`` may be a table."""

    page: Annotated[str | None, *TrialSpecOwnFields.model_fields["page"].metadata] = Field(
        None, description="as in the trial spec; required here or in the grid"
    )
    network: str | dict[str, NetworkValue] = Field(
        "native",
        description="a profile string, or a table of profile keys ({rtt = '150ms', bw = '1mbit'}) "
        "with an optional 'preset'",
    )


class SweepInfo(_Model):
    """``[sweep]``: what the experiment is called."""

    name: str = Field(
        pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$",
        description="names the sweep in the database and its results directory",
    )
    description: str = Field("", description="free text shown with the results")
    repeat_on_each_worker: int = Field(
        0,
        ge=0,
        le=MAX_WORKER_REPEATS,
        description="on a cluster (--cluster): also run the first configuration this many times on every "
        "worker, so the report can compare the baseline protocol's ToW across workers "
        "(docs/distributed.md); ignored on one machine",
    )


class RangeSpec(_Model):
    """A grid axis written as a range: arithmetic (``step``) or geometric (``factor``), both ends included."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)
    from_: NetworkValue = Field(alias="from", description="first value")
    to: NetworkValue = Field(description="last value (included when the steps land on it)")
    step: NetworkValue | None = Field(None, description="increment, in the field's units")
    factor: float | int | None = Field(None, description="multiplier (> 1) for a geometric range")


GridValue = list[Any] | RangeSpec


class ExperimentSpec(_Model):
    """A whole experiment spec file."""

    sweep: SweepInfo
    base: BaseTrial = Field(default_factory=BaseTrial)
    grid: dict[str, Any] = Field(
        default_factory=dict,
        description="axes: dotted base-field paths → list of values or a range; [[grid.zip]] groups "
        "axes that move together",
    )


# --------------------------------------------------------------------------------------------------
# Expansion


@dataclasses.dataclass(frozen=True)
class PlannedTrial:
    """One configuration of a sweep."""

    id: str  #: stable id: a hash of the resolved spec without ids (``config_id``)
    index: int  #: position in the plan (0-based)
    params: dict[str, Any]  #: grid coordinates: dotted path → value as written or generated
    spec: dict[str, Any]  #: the complete trial spec, ``trial_id`` = ``id``

    @property
    def loads(self) -> int:
        return len(self.spec["protocols"]) * self.spec["repetitions"]

    @property
    def label(self) -> str:
        """``network.rtt=20ms page=twitter`` (or the page alone when there is no grid)."""
        if not self.params:
            return f"page={self.spec['page']}"
        return " ".join(f"{k}={_show(v)}" for k, v in self.params.items())


@dataclasses.dataclass(frozen=True)
class Plan:
    """An expanded experiment spec."""

    name: str
    description: str
    spec_hash: str  #: hash of the set of resolved trial specs: same hash = same experiment
    trials: tuple[PlannedTrial, ...]
    spec: dict[str, Any]  #: the validated experiment spec (JSON-compatible)
    source: str = ""  #: the TOML text it came from, when it came from a file

    @property
    def loads(self) -> int:
        return sum(t.loads for t in self.trials)

    @property
    def axes(self) -> list[str]:
        return list(self.trials[0].params) if self.trials else []


def worker_repeats(trial: PlannedTrial, worker: str, k: int) -> list[PlannedTrial]:
    """``[sweep] repeat_on_each_worker = k`` on the cluster worker named ``worker``: ``k`` trials of the
    configuration ``trial``, ids ``<trial id>-w<8 hex of the worker's name>-<i>`` (stable per worker, so a
    rerun resumes them)."""
    tag = hashlib.sha256(worker.encode()).hexdigest()[:8]
    out = []
    for i in range(1, k + 1):
        trial_id = f"{trial.id}-w{tag}-{i}"
        out.append(dataclasses.replace(trial, id=trial_id, spec={**trial.spec, "trial_id": trial_id}))
    return out


def _show(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))


def _fmt(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, float) else repr(value)
    return cut(text)


def _suggest(word: str, options: list[str]) -> str:
    """``"did you mean X? "`` for the closest option, or ``""``."""
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f"did you mean {close[0]}? " if close else ""


def _schema_pattern_words(node: Any) -> dict[str, str]:
    """pattern → its words (the property's ``x-allowed``) for every property of the trial schema."""
    words: dict[str, str] = {}
    if isinstance(node, Mapping):
        if isinstance(node.get("pattern"), str) and isinstance(node.get("x-allowed"), str):
            words[node["pattern"]] = node["x-allowed"]
        for value in node.values():
            words.update(_schema_pattern_words(value))
    elif isinstance(node, list):
        for value in node:
            words.update(_schema_pattern_words(value))
    return words


_PATTERN_WORDS = {
    **_schema_pattern_words(_TRIAL_SCHEMA),
    r"^[a-z0-9][a-z0-9_.-]{0,63}$": "use up to 64 lowercase letters, digits, '-', '_' or '.', "
    "starting with a letter or digit",
}


# Field kinds of every grid-able path: how ranges are generated and values parsed.
_DURATION_KEYS = {"rtt", "delay_up", "delay_down", "jitter", "jitter_up", "jitter_down"}
_RATE_KEYS = {"bw", "bw_up", "bw_down"}
_LOSS_KEYS = {"loss", "loss_up", "loss_down"}
_QUEUE_KEYS = {"queue", "queue_up", "queue_down"}
_INT_KEYS = {"iw", "irw", "tcpplus"}


def _submodel(info: Any) -> type[BaseModel] | None:
    """The model a field holds (``ServerConfig``, or ``ApacheConfig`` of ``ApacheConfig | None``), if any."""
    for candidate in (info.annotation, *get_args(info.annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _model_paths(model: type[BaseModel] | None = None, prefix: str = "") -> dict[str, Any]:
    """Dotted path → pydantic FieldInfo, for every field a grid may set (not contract/trial_id), through
    nested tables (``server.apache.mpm``)."""
    paths: dict[str, Any] = {}
    for name, info in (model or BaseTrial).model_fields.items():
        sub = _submodel(info)
        if sub is not None and name != "network":
            paths.update(_model_paths(sub, f"{prefix}{name}."))
        else:
            paths[f"{prefix}{name}"] = info
    return paths


def _model_tables(model: type[BaseModel], prefix: str) -> dict[str, list[str]]:
    """Dotted path of every table → its field names (for "did you mean" on an unknown field)."""
    tables = {prefix.rstrip("."): list(model.model_fields)}
    for name, info in model.model_fields.items():
        sub = _submodel(info)
        if sub is not None:
            tables.update(_model_tables(sub, f"{prefix}{name}."))
    return tables


_PATHS = _model_paths()
_NETWORK_PATHS = {f"network.{k}" for k in (*netprofile.KEYS, "preset")}
GRID_PATHS: tuple[str, ...] = (*_PATHS, *sorted(_NETWORK_PATHS))


def network_kind(path: str) -> str | None:
    """The kind of a ``network.<key>`` path (duration | rate | loss | queue | int | other), None for
    other paths."""
    if not path.startswith("network."):
        return None
    key = path.split(".", 1)[1]
    if key in _DURATION_KEYS:
        return "duration"
    if key in _RATE_KEYS:
        return "rate"
    if key in _LOSS_KEYS:
        return "loss"
    if key in _QUEUE_KEYS:
        return "queue"
    if key in _INT_KEYS:
        return "int"
    return "other"


def _path_kind(path: str) -> str:
    """duration | rate | loss | queue | int | float | other."""
    network = network_kind(path)
    if network is not None:
        return network
    info = _PATHS.get(path)
    if info is None:
        return "other"
    if info.annotation is int:
        return "int"
    if info.annotation is float:
        return "float"
    return "other"


def _pydantic_problem(error: Mapping[str, Any], model_fields: list[str] | None = None) -> str:
    """One error of a pydantic ValidationError as '<problem>; <allowed>'."""
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden":
        name = str(error["loc"][-1]) if error["loc"] else ""
        options = model_fields or []
        hint = _suggest(name, options) or (f"fields: {', '.join(options)}" if options else "")
        return f"is not a field; {hint}".rstrip("; ")
    if kind == "missing":
        return "is missing; it is required"
    if kind == "literal_error":
        return f"is not allowed; use one of {ctx.get('expected', '')}"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        op = {"greater_than_equal": "≥", "less_than_equal": "≤", "greater_than": ">", "less_than": "<"}[kind]
        limit = next(iter(ctx.values()))
        return f"is out of range; it must be {op} {limit}"
    if kind == "string_pattern_mismatch":
        pattern = ctx.get("pattern", "")
        return f"is not allowed; {_PATTERN_WORDS.get(pattern, 'use the form ' + pattern)}"
    if kind in ("too_short", "string_too_short"):
        return "is empty; give at least one value"
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))
    if kind.endswith("_type") or kind.endswith("_parsing"):
        want = kind.removesuffix("_type").removesuffix("_parsing").replace("_", " ")
        want = {"int": "an integer", "float": "a number", "bool": "true or false", "string": "a string"}.get(
            want, want
        )
        return f"has the wrong type; use {want}"
    return error["msg"]


def _raise_validation(exc: ValidationError, prefix: str, *, value_override: Any = ...) -> None:
    error = exc.errors(include_url=False)[0]
    # pydantic puts union member names ("str", "dict[str,...]") into loc; keep only real field names
    loc = [
        f"[{p}]" if isinstance(p, int) else str(p)
        for p in error["loc"]
        if not (isinstance(p, str) and (p.startswith(("dict[", "list[")) or p in ("str", "int", "float")))
    ]
    path = ".".join([prefix, *loc]) if prefix else ".".join(loc)
    path = path.replace(".[", "[").replace(".from_", ".from")
    path = cut(path)  # an unknown field's name is the user's text
    field_names: list[str] = []
    if error["type"] == "extra_forbidden":
        parent = ".".join(loc[:-1])
        field_names = _field_names(parent if not prefix.startswith("grid") else "")
    value = error.get("input") if value_override is ... else value_override
    problem = _pydantic_problem(error, field_names)
    if error["type"] in ("missing", "extra_forbidden"):
        raise SpecError(f"{path}: {problem}", path=path, value=None) from None
    raise SpecError(f"{path}: {_fmt(value)} {problem}", path=path, value=value) from None


_TABLES = {
    "": list(ExperimentSpec.model_fields),
    "sweep": list(SweepInfo.model_fields),
    **_model_tables(BaseTrial, "base."),
}


def _field_names(parent: str) -> list[str]:
    return _TABLES.get(parent, [])


# Network: string or table → canonical profile string


def _network_value_text(value: NetworkValue) -> str:
    if isinstance(value, bool):
        raise TypeError
    if isinstance(value, float):
        return format(Decimal(repr(value)).normalize(), "f")
    return str(value)


def network_string(
    network: str | Mapping[str, NetworkValue],
    overlay: Mapping[str, NetworkValue] | None = None,
    *,
    path: str = "network",
) -> str:
    """A profile string from the spec form of ``network`` plus grid overrides of single keys.

    A table becomes ``preset`` first, then its keys in :data:`wirelab.netprofile.KEYS` order (both
    directions before one direction), so a per-direction key overrides a general one whatever the order
    in the file. Keys from ``overlay`` replace the table's. A string keeps its text and overlay items
    are appended after it. The result is validated (errors name ``path``).
    """
    overlay = dict(overlay or {})
    if isinstance(network, Mapping):
        table = {**network, **overlay}
        items: list[str] = []
        preset = table.pop("preset", None)
        if preset is not None:
            items.append(str(preset))
        for key in table:
            if key not in netprofile.KEYS:
                hint = _suggest(key, [*netprofile.KEYS, "preset"])
                raise SpecError(
                    f'{path}.{key}: "{key}" is not a profile key; {hint}'
                    f"keys: preset, {', '.join(netprofile.KEYS)}",
                    path=f"{path}.{key}",
                    value=key,
                )
        for key in netprofile.KEYS:
            if key in table:
                try:
                    text = _network_value_text(table[key])
                except TypeError:
                    raise SpecError(
                        f'{path}.{key}: {_fmt(table[key])} has the wrong type; use a string such as "150ms"',
                        path=f"{path}.{key}",
                        value=table[key],
                    ) from None
                items.append(f"{key}={text}")
        profile = ",".join(items) or "native"
    elif isinstance(network, str):
        text = network.strip()
        extra = network_string({}, overlay, path=path) if overlay else ""
        parts = [p for p in (text, extra) if p and not (p == "native" and extra)]
        profile = ",".join(parts) or "native"
    else:
        raise SpecError(
            f"{path}: {_fmt(network)} is neither a profile string nor a table of profile keys",
            path=path,
            value=network,
        )
    netprofile.parse(profile, path=path)
    return profile


# Grid


@dataclasses.dataclass
class _Axis:
    path: str  #: dotted base-field path
    where: str  #: where in the spec it was written (for errors): grid.network.rtt, grid.zip[0].page
    values: list[Any]


def _flatten(table: Mapping[str, Any], where: str, prefix: str = "") -> list[tuple[str, str, Any]]:
    """(path, where, raw) for every axis of a grid table; nested tables are dotted paths."""
    out = []
    for key, raw in table.items():
        path = f"{prefix}.{key}" if prefix else key
        here = f"{where}.{key}"
        is_range = isinstance(raw, Mapping) and "from" in raw
        if isinstance(raw, Mapping) and not is_range:
            out.extend(_flatten(raw, here, path))
        else:
            out.append((path, here, raw))
    return out


@dataclasses.dataclass(frozen=True)
class GridFields:
    """What a ``[grid]`` may vary: the fields of the table it applies to — a trial sweep's ``[base]``
    (:data:`TRIAL_GRID`) or a load test's ``[load]`` (``wirelab.loadplan``) — and how their values are
    checked, so that both kinds of sweep share one grid syntax and one set of errors."""

    table: str  #: the table the axes are fields of (``base``, ``load``)
    paths: tuple[str, ...]  #: every dotted path an axis may name
    kind: Callable[[str], str]  #: a path's kind for ranges: duration|rate|loss|queue|int|float|other
    check_value: Callable[[str, str, Any], None]  #: (path, where, value): raise SpecError when bad
    reserved: Mapping[str, str]  #: paths that cannot be axes → why (``"is set by wirelab"``)
    examples: str  #: axes to name in an error

    def check_path(self, path: str, where: str) -> None:
        if path in self.paths:
            return
        if path in self.reserved:
            raise SpecError(
                f"{where}: {path} {self.reserved[path]}; it cannot be a grid axis", path=where, value=path
            )
        raise SpecError(
            f"{where}: {path!r} is not a field of {self.table}; {_suggest(path, list(self.paths))}"
            f"axes are dotted paths such as {self.examples}",
            path=where,
            value=path,
        )


def _decimal(value: Any, where: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise SpecError(f"{where}: {_fmt(value)} is not a number", path=where, value=value)
    try:
        return Decimal(str(value)) if not isinstance(value, float) else Decimal(repr(value))
    except InvalidOperation:
        raise SpecError(f"{where}: {_fmt(value)} is not a number", path=where, value=value) from None


def _to_base_units(kind: str, value: Any, where: str) -> Decimal:
    """A range end or step in the field's base unit (ns, bit/s, probability, packets, number)."""
    key = where.rsplit(".", 1)[-1]
    try:
        if kind == "duration":
            return Decimal(netprofile.parse_duration(_need_str(value, where), where))
        if kind == "rate":
            text = _need_str(value, where)
            if text == "unlimited":
                raise SpecError(f'{where}: "unlimited" cannot be a range end', path=where, value=value)
            return Decimal(netprofile.parse_rate(text, where))
        if kind == "loss":
            text = str(value) if not isinstance(value, str) else value
            if text.startswith("ge:"):
                raise SpecError(
                    f"{where}: {_fmt(value)} a Gilbert–Elliott loss cannot be a range end; list the values",
                    path=where,
                    value=value,
                )
            loss = netprofile.parse_loss(text, where)
            return Decimal(repr(loss.get("p", 0.0)))
    except ProfileError as e:
        raise SpecError(str(e), path=where, value=value) from None
    del key
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if kind in ("queue", "int") and not is_int and not (isinstance(value, str) and value.isdigit()):
        raise SpecError(f"{where}: {_fmt(value)} is not an integer", path=where, value=value)
    return _decimal(value, where)


def _need_str(value: Any, where: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value == 0:
        return "0"
    if not isinstance(value, str):
        raise SpecError(
            f'{where}: {_fmt(value)} needs a unit; write it as a string such as "40ms"',
            path=where,
            value=value,
        )
    return value


def _from_base_units(kind: str, value: Decimal, unit_hint: Any) -> Any:
    if kind == "duration":
        return netprofile.format_duration(int(value))
    if kind == "rate":
        return netprofile.format_rate(int(value))
    if kind == "loss":
        text = unit_hint if isinstance(unit_hint, str) else ""
        if text.endswith("%"):
            return format((value * 100).normalize(), "f") + "%"
        return format(value.normalize(), "f") if value else "0"
    if kind in ("queue", "int"):
        return int(value)
    return float(value)


def _expand_range(path: str, where: str, raw: Mapping[str, Any], fields: GridFields) -> list[Any]:
    try:
        rng = RangeSpec.model_validate(raw)
    except ValidationError as e:
        _raise_validation(e, where)
    kind = fields.kind(path)
    if kind == "other":
        raise SpecError(
            f"{where}: a range needs a numeric or unit-bearing field, and {path} is neither; list the values",
            path=where,
            value=dict(raw),
        )
    if (rng.step is None) == (rng.factor is None):
        raise SpecError(f"{where}: a range needs exactly one of step or factor", path=where, value=dict(raw))
    start = _to_base_units(kind, rng.from_, f"{where}.from")
    stop = _to_base_units(kind, rng.to, f"{where}.to")
    if stop < start:
        raise SpecError(
            f"{where}.to: {_fmt(rng.to)} is below from ({_fmt(rng.from_)}); ranges go upwards",
            path=f"{where}.to",
            value=rng.to,
        )
    values: list[Decimal] = []
    if rng.step is not None:
        step = _to_base_units(kind, rng.step, f"{where}.step")
        if step <= 0:
            raise SpecError(
                f"{where}.step: {_fmt(rng.step)} must be > 0", path=f"{where}.step", value=rng.step
            )
        count = int((stop - start) / step) + 1
        if count > MAX_TRIALS:
            raise SpecError(f"{where}: {count} values; at most {MAX_TRIALS}", path=where, value=dict(raw))
        values = [start + i * step for i in range(count)]
    else:
        factor = _decimal(rng.factor, f"{where}.factor")
        if factor <= 1:
            raise SpecError(
                f"{where}.factor: {_fmt(rng.factor)} must be > 1", path=f"{where}.factor", value=rng.factor
            )
        if start <= 0:
            raise SpecError(
                f"{where}.from: a geometric range must start above 0", path=f"{where}.from", value=rng.from_
            )
        v = start
        while v <= stop:
            values.append(v)
            v = v * factor
            if len(values) > MAX_TRIALS:
                raise SpecError(
                    f"{where}: too many values; at most {MAX_TRIALS}", path=where, value=dict(raw)
                )
    if kind in ("queue", "int") and any(v != v.to_integral_value() for v in values):
        raise SpecError(
            f"{where}: gives non-integer values for the integer field {path}", path=where, value=dict(raw)
        )
    return [_from_base_units(kind, v, rng.from_) for v in values]


def _axis_values(path: str, where: str, raw: Any, fields: GridFields) -> list[Any]:
    if isinstance(raw, Mapping) and "from" in raw:
        values = _expand_range(path, where, raw, fields)
    elif isinstance(raw, list):
        values = list(raw)
    else:
        raise SpecError(
            f"{where}: {_fmt(raw)} is not a list of values or a range; write {path} = [a, b, …] "
            "(or {from = …, to = …, step = …})",
            path=where,
            value=raw,
        )
    if not values:
        raise SpecError(f"{where}: is an empty list; give at least one value", path=where, value=raw)
    for i, value in enumerate(values):
        fields.check_value(path, f"{where}[{i}]", value)
    return values


def _check_value(path: str, where: str, value: Any) -> None:
    """Validate one axis value against its field, so errors point at the value in the grid."""
    if path == "network":
        network_string(value, path=where)
        return
    if path.startswith("network."):
        key = path.split(".", 1)[1]
        if key == "preset":
            if not isinstance(value, str) or value not in netprofile.PRESETS:
                hint = _suggest(str(value), list(netprofile.PRESETS))
                raise SpecError(
                    f"{where}: {_fmt(value)} is not a preset{hint}; presets: {', '.join(netprofile.PRESETS)}",
                    path=where,
                    value=value,
                )
            return
        try:
            text = _network_value_text(value)
        except TypeError:
            raise SpecError(
                f'{where}: {_fmt(value)} has the wrong type; use a string such as "150ms"',
                path=where,
                value=value,
            ) from None
        try:
            netprofile.parse(f"{key}={text}")
        except ProfileError as e:
            message = str(e).split(": ", 1)[1]
            raise SpecError(f"{where}: {message}", path=where, value=value) from None
        return
    info = _PATHS[path]
    # Annotated needs at least one annotation: fields without constraints (a Literal) have none.
    annotated = Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation
    adapter = TypeAdapter(annotated)
    if path == "protocols" and not isinstance(value, list):
        raise SpecError(
            f"{where}: {_fmt(value)} is not a list of protocols; each value of the protocols axis is a list, "
            'e.g. protocols = [["h1s", "h2"], ["h1s", "h3"]]',
            path=where,
            value=value,
        )
    try:
        value = adapter.validate_python(value, strict=True)
    except ValidationError as e:
        error = e.errors(include_url=False)[0]
        bad = error.get("input", value)
        raise SpecError(f"{where}: {_fmt(bad)} {_pydantic_problem(error)}", path=where, value=bad) from None
    except ValueError as e:
        raise SpecError(f"{where}: {_fmt(value)} {e}", path=where, value=value) from None
    # What the model cannot say about the value (write_chunk_bytes' gap, a protocol listed twice), the
    # schema says.
    found = contract.problem("trial-spec", value, root_path=tuple(path.split(".")))
    if found is not None:
        _raise_problem(found, where)


#: A trial sweep's grid: the fields of ``[base]``.
TRIAL_GRID = GridFields(
    table="base",
    paths=GRID_PATHS,
    kind=_path_kind,
    check_value=_check_value,
    reserved={"contract": "is set by wirelab", "trial_id": "is set by wirelab"},
    examples="network.rtt, page, shards, server.max_concurrent_streams",
)


def parse_grid(grid: Mapping[str, Any], fields: GridFields | None = None) -> list[list[_Axis]]:
    """Dimensions of the product: a plain axis is a dimension of one; a zip group one of several.
    ``fields``: what the axes may name (default: a trial sweep's ``[base]``)."""
    fields = fields or TRIAL_GRID
    dims: list[list[_Axis]] = []
    seen: dict[str, str] = {}

    def add(path: str, where: str, raw: Any) -> _Axis:
        fields.check_path(path, where)
        if path in seen:
            raise SpecError(
                f"{where}: {path} is already an axis ({seen[path]}); an axis appears once",
                path=where,
                value=path,
            )
        seen[path] = where
        return _Axis(path, where, _axis_values(path, where, raw, fields))

    for key, raw in grid.items():
        if key == "zip":
            groups = raw if isinstance(raw, list) else None
            if groups is None or not all(isinstance(g, Mapping) for g in groups):
                raise SpecError(
                    "grid.zip: is not a list of tables; write each group as [[grid.zip]] with its axes",
                    path="grid.zip",
                    value=raw,
                )
            for gi, group in enumerate(groups):
                where = f"grid.zip[{gi}]"
                axes = [add(p, w, r) for p, w, r in _flatten(group, where)]
                if not axes:
                    raise SpecError(f"{where}: is empty; a zip group needs axes", path=where, value={})
                lengths = {a.path: len(a.values) for a in axes}
                if len(set(lengths.values())) > 1:
                    listing = ", ".join(f"{p}: {n}" for p, n in lengths.items())
                    raise SpecError(
                        f"{where}: axes have different lengths ({listing}); zipped axes move together and "
                        "need as many values each",
                        path=where,
                        value=lengths,
                    )
                dims.append(axes)
            continue
        if isinstance(raw, Mapping) and "from" not in raw:
            for p, w, r in _flatten(raw, f"grid.{key}", key):
                dims.append([add(p, w, r)])
        else:
            dims.append([add(key, f"grid.{key}", raw)])
    return dims


def grid_points(
    dims: list[list[_Axis]], what: str = "trials"
) -> Iterator[tuple[dict[str, Any], dict[str, str]]]:
    """The grid's points in product order: (params — dotted path → value —, written — dotted path →
    where that value is in the file, ``grid.network.rtt[2]``). At most :data:`MAX_TRIALS` points."""
    sizes = [len(d[0].values) for d in dims]
    total = math.prod(sizes)
    if total > MAX_TRIALS:
        raise SpecError(f"grid: expands to {total} {what}; at most {MAX_TRIALS}", path="grid", value=total)
    for combo in itertools.product(*(range(n) for n in sizes)):
        params: dict[str, Any] = {}
        written: dict[str, str] = {}
        for dim, i in zip(dims, combo, strict=True):
            for axis in dim:
                params[axis.path] = axis.values[i]
                written[axis.path] = f"{axis.where}[{i}]"
        yield params, written


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def config_id(spec: Mapping[str, Any]) -> str:
    """Stable id of a configuration: hash of the resolved trial spec without ``trial_id``, with the
    network as its resolved object (so equivalent profile strings give the same id)."""
    # allow_internet is the command line's permission (--allow-internet), not part of what is measured.
    body = {k: v for k, v in spec.items() if k not in ("trial_id", "network_resolved", "allow_internet")}
    body["network"] = netprofile.parse(spec.get("network", "native"))
    # Keys added to the resolved form later are left out at their default, so that a configuration
    # keeps its id across versions (a sweep stored before them resumes without running again).
    if body["network"].get("tcpplus") == 0:
        del body["network"]["tcpplus"]
    return "c" + hashlib.sha256(_canonical(body).encode()).hexdigest()[:15]


def _check_shards(
    fields: Mapping[str, Any], shards_where: str, mode_where: str, *, mode_default: bool = False
) -> None:
    """The one check across two fields: shards = 0 needs shard_mode tld or domain."""
    shards, mode = fields.get("shards", 1), fields.get("shard_mode", "round-robin")
    problem = _shards_problem(shards, mode)
    if problem is None:
        return
    mode_text = "the default" if mode_default else f"at {mode_where}"
    raise SpecError(
        f'{shards_where}: {problem} (shard_mode is "round-robin", {mode_text})',
        path=shards_where,
        value=shards,
    )


def resolve_trial(fields: Mapping[str, Any], *, path: str = "trial") -> dict[str, Any]:
    """Validate a trial spec (as a dict) and return it with every default filled in and its id set."""
    _check_shards(fields, f"{path}.shards", f"{path}.shard_mode", mode_default="shard_mode" not in fields)
    try:
        spec = TrialSpec.model_validate(dict(fields))
    except ValidationError as e:
        _raise_validation(e, path)
    dumped = spec.model_dump(mode="json")
    _select_impl_table(dumped["server"])
    dumped["trial_id"] = config_id(dumped)
    resolved = {key: dumped[key] for key in TRIAL_FIELDS}
    found = contract.problem("trial-spec", resolved)
    if found is not None:
        _raise_problem(found, path)
    return resolved


def _select_impl_table(server: dict[str, Any]) -> None:
    """Keep the table of ``server.impl`` (filled with its defaults) and drop the other implementations'
    tables and an absent ``config``: a table configures its implementation only when that one runs."""
    for name, impl in ServerConfig.IMPL_TABLES.items():
        if impl != server["impl"]:
            server.pop(name, None)
        elif server.get(name) is None:
            table = _submodel(ServerConfig.model_fields[name])
            assert table is not None
            server[name] = table().model_dump(mode="json")
    if server.get("config") is None:
        server.pop("config", None)


def _raise_problem(found: contract.Problem, prefix: str) -> None:
    """A schema problem as a SpecError at ``prefix`` (``base``, ``grid.shards[1]``, …)."""
    where = ".".join(p for p in (prefix, found.field) if p).replace(".[", "[")
    if found.value is contract.MISSING:
        raise SpecError(f"{where}: {found.allowed}", path=where, value=None) from None
    raise SpecError(
        f"{where}: {contract.show(found.value)} is not allowed; {found.allowed}",
        path=where,
        value=found.value,
    ) from None


def _assign(target: dict[str, Any], path: str, value: Any) -> None:
    head, _, rest = path.partition(".")
    if rest:
        sub = target.setdefault(head, {})
        _assign(sub, rest, value)
    else:
        target[head] = value


def expand(spec: ExperimentSpec, *, source: str = "") -> Plan:
    """Expand a validated experiment spec into its plan (cartesian product of the grid's dimensions)."""
    base = spec.base.model_dump(mode="python", exclude_unset=True)
    base_network = spec.base.network
    network_string(base_network, path="base.network")
    dims = parse_grid(spec.grid)
    if "allow_internet" in base or any(a.path == "allow_internet" for d in dims for a in d):
        raise SpecError(
            "base.allow_internet: is set by --allow-internet on the command line (wirelab run, "
            "wirelab load), never by a spec; remove it",
            path="base.allow_internet",
        )
    if base.get("page") is None and not any(a.path == "page" for d in dims for a in d):
        raise SpecError("base.page: is missing; set base.page or make page a grid axis", path="base.page")

    trials: list[PlannedTrial] = []
    ids: dict[str, int] = {}
    for params, written in grid_points(dims):
        fields = {k: v for k, v in base.items() if k != "network"}
        network: Any = params.get("network", base_network)
        overlay = {p.split(".", 1)[1]: v for p, v in params.items() if p.startswith("network.")}
        where = "grid" if params else "base"
        for path, value in params.items():
            if not path.startswith("network"):
                _assign(fields, path, value)
        fields["network"] = network_string(network, overlay, path=f"{where}.network")
        _check_shards(
            fields,
            written.get("shards", "base.shards"),
            written.get("shard_mode", "base.shard_mode"),
            mode_default="shard_mode" not in fields,
        )
        label = " ".join(f"{k}={_show(v)}" for k, v in params.items())
        resolved = resolve_trial(fields, path=f"grid ({label})" if params else "base")
        if resolved["trial_id"] in ids:
            other = trials[ids[resolved["trial_id"]]]
            raise SpecError(
                f"grid: configurations {other.index} ({other.label}) and {len(trials)} ({label}) are "
                "the same trial; remove the duplicate value",
                path="grid",
                value=label,
            )
        ids[resolved["trial_id"]] = len(trials)
        trials.append(PlannedTrial(id=resolved["trial_id"], index=len(trials), params=params, spec=resolved))

    spec_hash = hashlib.sha256(_canonical(sorted(t.id for t in trials)).encode()).hexdigest()[:16]
    return Plan(
        name=spec.sweep.name,
        description=spec.sweep.description,
        spec_hash=spec_hash,
        trials=tuple(trials),
        spec=spec.model_dump(mode="json", by_alias=True),
        source=source,
    )


def with_internet(plan: Plan) -> Plan:
    """``plan`` with ``allow_internet`` set in every trial spec (``--allow-internet``): live pages
    (``page = "url:…"``) may then name public sites (docs/live.md). The trials' ids do not change."""
    trials = tuple(dataclasses.replace(t, spec={**t.spec, "allow_internet": True}) for t in plan.trials)
    return dataclasses.replace(plan, trials=trials)


def loads(text: str, *, origin: str = "spec") -> Plan:
    """Parse, validate and expand TOML text. ``origin`` names the text in syntax errors."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{origin}: TOML syntax error: {e}", path=origin) from None
    return from_dict(data, source=text)


def _refuse_non_finite(value: Any, path: str) -> None:
    """TOML (and Python) allow inf and nan; no field of a spec does: refused here, at the edge."""
    if isinstance(value, float) and not math.isfinite(value):
        raise SpecError(f"{path}: {value!r} is not allowed; use a finite number", path=path, value=value)
    if isinstance(value, Mapping):
        for k, v in value.items():
            _refuse_non_finite(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _refuse_non_finite(v, f"{path}[{i}]")


def from_dict(data: Mapping[str, Any], *, source: str = "") -> Plan:
    """Validate and expand an experiment spec given as a dict (the TOML's structure)."""
    _refuse_non_finite(data, "")
    try:
        spec = ExperimentSpec.model_validate(dict(data))
    except ValidationError as e:
        _raise_validation(e, "")
    return expand(spec, source=source)


def load(path: str | Path) -> Plan:
    """Read, validate and expand an experiment spec file."""
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise SpecError(f"{path}: no such spec file", path=str(path)) from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as e:
        raise SpecError(f"{path}: cannot read the spec ({e.__class__.__name__})", path=str(path)) from None
    return loads(text, origin=str(path))


def experiment_json_schema() -> dict[str, Any]:
    """JSON Schema of an experiment spec (``wirelab spec schema``)."""
    schema = ExperimentSpec.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "wirelab experiment spec"
    schema["description"] = (
        "An experiment: [sweep] names it, [base] is a trial spec (docs/trial-contract.md) whose network may "
        "be a table of profile keys, [grid] maps dotted base-field paths to lists or ranges; [[grid.zip]] "
        "groups axes that move together. See docs/spec.md."
    )
    schema["properties"]["grid"] = {
        "type": "object",
        "description": ExperimentSpec.model_fields["grid"].description,
        "properties": {
            "zip": {
                "type": "array",
                "items": {"type": "object", "additionalProperties": {"$ref": "#/$defs/GridAxis"}},
            }
        },
        "additionalProperties": {"$ref": "#/$defs/GridAxis"},
        "propertyNames": {"enum": [*GRID_PATHS, "zip", "server", "client", "capture", "network"]},
    }
    schema.setdefault("$defs", {})["GridAxis"] = {
        "anyOf": [
            {"type": "array", "minItems": 1, "description": "the axis' values"},
            {"$ref": "#/$defs/RangeSpec"},
            {"type": "object", "description": "nested table: dotted paths written as TOML tables"},
        ]
    }
    return schema


_NUMERIC_SUFFIX = {"duration": "_ms", "rate": "_mbit", "loss": "_pct"}


def numeric_params(params: Mapping[str, Any]) -> dict[str, float | None]:
    """Numeric companions of unit-bearing grid values: ``network.rtt="20ms"`` → ``network.rtt_ms=20.0``.

    Durations → ``_ms``, rates → ``_mbit`` (unlimited → None), Bernoulli losses → ``_pct`` (percent;
    Gilbert–Elliott → None), queues → ``_packets`` and ``_bytes`` (0 = no limit in that dimension).
    """
    out: dict[str, float | None] = {}
    for path, value in params.items():
        kind = _path_kind(path)
        if kind not in ("duration", "rate", "loss", "queue"):
            continue
        text = _network_value_text(value)
        if kind == "duration":
            out[path + "_ms"] = netprofile.parse_duration(text) / 1e6
        elif kind == "rate":
            bps = netprofile.parse_rate(text)
            out[path + "_mbit"] = bps / 1e6 if bps else None
        elif kind == "loss":
            loss = netprofile.parse_loss(text)
            out[path + "_pct"] = {"none": 0.0, "bernoulli": loss.get("p", 0) * 100}.get(loss["model"])
        else:
            queue = netprofile.parse_queue(text)
            out[path + "_packets"] = float(queue["packets"])
            out[path + "_bytes"] = float(queue["bytes"])
    return out
