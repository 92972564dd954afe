"""Grid expansion: the ``[grid]`` table's axes (lists, arithmetic or geometric ranges in the field's
units, ``[[grid.zip]]`` groups that move together), each value checked against its field where it is
written, and the cartesian product of the dimensions as a :class:`~wirelab._spec_models.Plan` of
resolved trial specs. Part of :mod:`wirelab.spec`.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

from pydantic import TypeAdapter, ValidationError

from wirelab import _contract as contract
from wirelab import _corpus as corpus
from wirelab import _netprofile as netprofile
from wirelab._spec_errors import fmt, pydantic_problem, raise_problem, raise_validation
from wirelab._spec_hash import plan_hash
from wirelab._spec_models import (
    FIELD_PATHS,
    GRID_PATHS,
    ExperimentSpec,
    Plan,
    PlannedTrial,
    RangeSpec,
    show_value,
)
from wirelab._spec_trial import check_shards, network_string, network_value_text, resolve_trial
from wirelab._suggest import did_you_mean
from wirelab.errors import ProfileError, SpecError

__all__ = [
    "MAX_TRIALS",
    "TRIAL_GRID",
    "GridFields",
    "expand",
    "grid_points",
    "network_kind",
    "numeric_params",
    "parse_grid",
    "path_kind",
    "with_internet",
]

MAX_TRIALS = 100_000


# Field kinds of every grid-able path: how ranges are generated and values parsed.
_DURATION_KEYS = {"rtt", "delay_up", "delay_down", "jitter", "jitter_up", "jitter_down"}
_RATE_KEYS = {"bw", "bw_up", "bw_down"}
_LOSS_KEYS = {"loss", "loss_up", "loss_down"}
_QUEUE_KEYS = {"queue", "queue_up", "queue_down"}
_INT_KEYS = {"iw", "irw", "tcpplus"}


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


def path_kind(path: str) -> str:
    """duration | rate | loss | queue | int | float | other."""
    network = network_kind(path)
    if network is not None:
        return network
    info = FIELD_PATHS.get(path)
    if info is None:
        return "other"
    if info.annotation is int:
        return "int"
    if info.annotation is float:
        return "float"
    return "other"


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
        is_leaf = isinstance(raw, Mapping) and ("from" in raw or corpus.is_corpus_value(raw))
        if isinstance(raw, Mapping) and not is_leaf:
            out.extend(_flatten(raw, here, path))
        else:
            out.append((path, here, raw))
    return out


@dataclasses.dataclass(frozen=True)
class GridFields:
    """What a ``[grid]`` may vary: the fields of the table it applies to — a trial sweep's ``[base]``
    (:data:`TRIAL_GRID`) or a load test's ``[load]`` (``wirelab._loadplan``) — and how their values are
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
            f"{where}: {path!r} is not a field of {self.table}; {did_you_mean(path, list(self.paths))}"
            f"axes are dotted paths such as {self.examples}",
            path=where,
            value=path,
        )


def _decimal(value: Any, where: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise SpecError(f"{where}: {fmt(value)} is not a number", path=where, value=value)
    try:
        return Decimal(str(value)) if not isinstance(value, float) else Decimal(repr(value))
    except InvalidOperation:
        raise SpecError(f"{where}: {fmt(value)} is not a number", path=where, value=value) from None


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
                    f"{where}: {fmt(value)} a Gilbert–Elliott loss cannot be a range end; list the values",
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
        raise SpecError(f"{where}: {fmt(value)} is not an integer", path=where, value=value)
    return _decimal(value, where)


def _need_str(value: Any, where: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value == 0:
        return "0"
    if not isinstance(value, str):
        raise SpecError(
            f'{where}: {fmt(value)} needs a unit; write it as a string such as "40ms"',
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
        raise_validation(e, where)
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
            f"{where}.to: {fmt(rng.to)} is below from ({fmt(rng.from_)}); ranges go upwards",
            path=f"{where}.to",
            value=rng.to,
        )
    values: list[Decimal] = []
    if rng.step is not None:
        step = _to_base_units(kind, rng.step, f"{where}.step")
        if step <= 0:
            raise SpecError(
                f"{where}.step: {fmt(rng.step)} must be > 0", path=f"{where}.step", value=rng.step
            )
        count = int((stop - start) / step) + 1
        if count > MAX_TRIALS:
            raise SpecError(f"{where}: {count} values; at most {MAX_TRIALS}", path=where, value=dict(raw))
        values = [start + i * step for i in range(count)]
    else:
        factor = _decimal(rng.factor, f"{where}.factor")
        if factor <= 1:
            raise SpecError(
                f"{where}.factor: {fmt(rng.factor)} must be > 1", path=f"{where}.factor", value=rng.factor
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
    if path == "page" and corpus.is_corpus_value(raw):  # page = "corpus:web200" stands for its pages
        raw = [raw]
    if isinstance(raw, Mapping) and "from" in raw:
        values = _expand_range(path, where, raw, fields)
    elif isinstance(raw, list) and path == "page":
        values = [p for i, v in enumerate(raw) for p in corpus.expand_page_value(v, f"{where}[{i}]")]
    elif isinstance(raw, list):
        values = list(raw)
    else:
        raise SpecError(
            f"{where}: {fmt(raw)} is not a list of values or a range; write {path} = [a, b, …] "
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
            if not isinstance(value, str):
                raise SpecError(
                    f"{where}: {fmt(value)} is not a preset; presets are {', '.join(netprofile.PRESETS)}",
                    path=where,
                    value=value,
                )
            netprofile.check_preset(value, path=where)
            return
        try:
            text = network_value_text(value)
        except TypeError:
            raise SpecError(
                f'{where}: {fmt(value)} has the wrong type; use a string such as "150ms"',
                path=where,
                value=value,
            ) from None
        netprofile.check_value(key, text, path=where)
        return
    info = FIELD_PATHS[path]
    # Annotated needs at least one annotation: fields without constraints (a Literal) have none.
    annotated = Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation
    adapter = TypeAdapter(annotated)  # type: ignore[arg-type]
    if path == "protocols" and not isinstance(value, list):
        raise SpecError(
            f"{where}: {fmt(value)} is not a list of protocols; each value of the protocols axis is a list, "
            'e.g. protocols = [["h1s", "h2"], ["h1s", "h3"]]',
            path=where,
            value=value,
        )
    try:
        value = adapter.validate_python(value, strict=True)
    except ValidationError as e:
        error = e.errors(include_url=False)[0]
        bad = error.get("input", value)
        raise SpecError(f"{where}: {fmt(bad)} {pydantic_problem(error)}", path=where, value=bad) from None
    except ValueError as e:
        raise SpecError(f"{where}: {fmt(value)} {e}", path=where, value=value) from None
    # What the model cannot say about the value (write_chunk_bytes' gap, a protocol listed twice), the
    # schema says.
    found = contract.problem("trial-spec", value, root_path=tuple(path.split(".")))
    if found is not None:
        raise_problem(found, where)


#: A trial sweep's grid: the fields of ``[base]``.
TRIAL_GRID = GridFields(
    table="base",
    paths=GRID_PATHS,
    kind=path_kind,
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
        if isinstance(raw, Mapping) and "from" not in raw and not corpus.is_corpus_value(raw):
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
        check_shards(
            fields,
            written.get("shards", "base.shards"),
            written.get("shard_mode", "base.shard_mode"),
            mode_default="shard_mode" not in fields,
        )
        label = " ".join(f"{k}={show_value(v)}" for k, v in params.items())
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

    spec_hash = plan_hash(t.id for t in trials)
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


def numeric_params(params: Mapping[str, Any]) -> dict[str, float | None]:
    """Numeric companions of unit-bearing grid values: ``network.rtt="20ms"`` → ``network.rtt_ms=20.0``.

    Durations → ``_ms``, rates → ``_mbit`` (unlimited → None), Bernoulli losses → ``_pct`` (percent;
    Gilbert–Elliott → None), drop-tail queues → ``_packets`` and ``_bytes`` (0 = no limit in that
    dimension; None for another discipline, whose axis is then categorical).
    """
    out: dict[str, float | None] = {}
    for path, value in params.items():
        kind = path_kind(path)
        if kind not in ("duration", "rate", "loss", "queue"):
            continue
        text = network_value_text(value)
        if kind == "duration":
            out[path + "_ms"] = netprofile.parse_duration(text) / 1e6
        elif kind == "rate":
            bps = netprofile.parse_rate(text)
            out[path + "_mbit"] = bps / 1e6 if bps else None
        elif kind == "loss":
            loss = netprofile.parse_loss(text)
            out[path + "_pct"] = {"none": 0.0, "bernoulli": loss.get("p", 0) * 100}.get(loss["model"])
        else:
            # A discipline other than drop-tail (codel, fq_codel:2000, …) is a category, not a size.
            discipline, queue = netprofile.parse_queue_item(text)
            numeric = discipline["name"] == "droptail"
            out[path + "_packets"] = float(queue["packets"]) if numeric else None
            out[path + "_bytes"] = float(queue["bytes"]) if numeric else None
    return out
