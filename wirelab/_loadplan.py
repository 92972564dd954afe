"""Load-test specs: ``wirelab loadtest SPEC.toml`` (``docs/loadtest.md``, "Control plane").

A load-test spec is TOML::

    [sweep]
    name = "capacity"
    [load]                                   # the loadtest spec's fields (schemas/loadtest-spec.schema.json)
    page = "neoload50"
    protocols = ["h1s", "h2"]                # each runs in turn, on a fresh server, same scenario
    network = { preset = "neoload" }
    server = { impl = "apache" }
    scenario = { stages = [{ duration_s = 1200, target = 1000 }] }
    [grid]
    "server.apache.mpm" = ["worker", "event"]

:func:`load` reads one and returns a :class:`LoadPlan`: one :class:`PlannedLoadtest` per grid point ×
protocol, in running order, each a loadtest spec the engine runs (``wirelab-engine loadtest``) with a
stable id derived from its content. The loadtest spec's JSON Schema is the one definition of the fields:
every value is checked against it (:func:`wirelab._contract.problem`, the schema's words), its defaults
come from it (:func:`wirelab._contract.apply_defaults`); the grid is ``wirelab run``'s
(:func:`wirelab.spec.parse_grid` over :data:`LOAD_GRID`). Every error is a one-line
:class:`~wirelab.errors.SpecError` naming where in the file the value is.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from wirelab import _contract as contract
from wirelab import _netprofile as netprofile
from wirelab import spec as spec_mod
from wirelab._spec_errors import parse_toml, raise_problem, raise_validation, refuse_non_finite
from wirelab._spec_hash import canonical
from wirelab._spec_models import show_value
from wirelab._spec_trial import select_impl_table
from wirelab._suggest import did_you_mean
from wirelab._userpath import read_spec_text
from wirelab.errors import SpecError, cut

__all__ = [
    "LOAD_GRID",
    "LOAD_PATHS",
    "LoadPlan",
    "PlannedLoadtest",
    "is_loadtest",
    "load",
    "loads",
    "from_dict",
    "loadtest_id",
    "stages_seconds",
]

SCHEMA = "loadtest-spec"
_SCHEMA = contract.load_schema(SCHEMA)
#: fields of the loadtest spec that wirelab sets, and what to write instead
_SET_BY_WIRELAB = {
    "contract": "is set by wirelab",
    "loadtest_id": "is set by wirelab (each run's id comes from its content)",
    "protocol": "is set by wirelab from protocols (each protocol runs in turn)",
    "allow_internet": "is set only by --allow-internet on the command line of wirelab loadtest, not the file",
}
#: top-level tables of a load-test spec
_TABLES = ("sweep", "load", "grid")


def _leaf_paths(node: Any, prefix: str = "") -> list[str]:
    """Every dotted path a grid may set below ``node``: objects with properties are walked (the server's
    implementation tables too), anything else is a leaf (``scenario.stages`` is one: a list)."""
    node = contract._resolve(_SCHEMA, node)
    paths: list[str] = []
    for key, prop in (node.get("properties") or {}).items():
        path = f"{prefix}{key}"
        if not prefix and key in _SET_BY_WIRELAB:
            continue
        resolved = contract._resolve(_SCHEMA, prop)
        if resolved.get("type") == "object" and resolved.get("properties"):
            paths.extend(_leaf_paths(resolved, f"{path}."))
        else:
            paths.append(path)
    return paths


_NETWORK_PATHS = sorted(f"network.{k}" for k in (*netprofile.KEYS, "preset"))
#: every dotted path a load test's grid may name: the loadtest spec's fields (from its schema), the
#: network's profile keys and ``protocols``
LOAD_PATHS: tuple[str, ...] = ("protocols", *_leaf_paths(_SCHEMA), *_NETWORK_PATHS)


def _node(path: str) -> Mapping[str, Any]:
    node: Any = _SCHEMA
    for key in path.split("."):
        node = contract._resolve(_SCHEMA, contract._resolve(_SCHEMA, node)["properties"][key])
    return node


def _kind(path: str) -> str:
    network = spec_mod.network_kind(path)
    if network is not None:
        return network
    if path not in LOAD_PATHS or path == "protocols":
        return "other"
    return {"integer": "int", "number": "float"}.get(_node(path).get("type", ""), "other")


def _check_protocols(value: Any, where: str) -> list[str]:
    """``protocols``: a non-empty list of the contract's protocols, each once."""
    if not isinstance(value, list) or not value:
        raise SpecError(
            f"{where}: got {contract.show(value)}; must be a list of protocols, e.g. "
            '["h1s", "h2"] (each runs in turn, on a fresh server)',
            path=where,
            value=value,
        )
    for i, p in enumerate(value):
        found = contract.problem(SCHEMA, p, root_path=("protocol",))
        if found is not None:
            raise_problem(found, f"{where}[{i}]")
        if p in value[:i]:
            raise SpecError(
                f"{where}[{i}]: got {contract.show(p)}; listed twice (also at "
                f"[{value.index(p)}]); each at most once",
                path=f"{where}[{i}]",
                value=p,
            )
    return list(value)


def _check_value(path: str, where: str, value: Any) -> None:
    """One grid value against its field: the schema's words (network keys: the profile grammar's)."""
    if path == "protocols":
        _check_protocols(value, where)
        return
    if path == "network" or path.startswith("network."):
        spec_mod.TRIAL_GRID.check_value(path, where, value)
        return
    found = contract.problem(SCHEMA, value, root_path=tuple(path.split(".")))
    if found is not None:
        raise_problem(found, where)


#: A load test's grid: the fields of ``[load]``.
LOAD_GRID = spec_mod.GridFields(
    table="load",
    paths=LOAD_PATHS,
    kind=_kind,
    check_value=_check_value,
    reserved=_SET_BY_WIRELAB,
    examples="protocols, server.impl, server.apache.mpm, network.rtt, think.mean_s",
)


@dataclasses.dataclass(frozen=True)
class PlannedLoadtest:
    """One run of a load-test sweep: one grid point, one protocol."""

    id: str  #: the loadtest_id: a hash of the resolved spec without it (:func:`loadtest_id`)
    index: int  #: position in the plan (the running order)
    point: int  #: the grid point (0-based): the runs of one point differ only in protocol
    params: dict[str, Any]  #: grid coordinates: dotted path → value as written or generated
    protocol: str
    spec: dict[str, Any]  #: the loadtest spec given to the engine (``loadtest_id`` = ``id``)
    resolved: dict[str, Any]  #: ``spec`` with the schema's defaults filled in

    @property
    def label(self) -> str:
        """``h2 server.apache.mpm=worker`` (the protocol alone when there is no grid)."""
        return " ".join([self.protocol, *(f"{k}={show_value(v)}" for k, v in self.params.items())])

    @property
    def planned_s(self) -> float:
        """How long its scenario's stages last (the run lasts that, plus the lab's start and stop and the
        pages in flight at the end)."""
        return stages_seconds(self.resolved)


@dataclasses.dataclass(frozen=True)
class LoadPlan:
    """An expanded load-test spec."""

    name: str
    description: str
    spec_hash: str  #: hash of the set of run ids: same hash = same experiment
    runs: tuple[PlannedLoadtest, ...]
    spec: dict[str, Any]  #: the validated spec (JSON-compatible)
    source: str = ""  #: the TOML text it came from, when it came from a file

    kind = "loadtest"

    @property
    def axes(self) -> list[str]:
        return list(self.runs[0].params) if self.runs else []

    @property
    def protocols(self) -> list[str]:
        return list(dict.fromkeys(r.protocol for r in self.runs))

    @property
    def planned_s(self) -> float:
        return sum(r.planned_s for r in self.runs)


#: loadtest-spec fields added after load tests were first stored: (section, key, the schema's default).
_ADDED_LATER: tuple[tuple[str, str, Any], ...] = (("limits", "max_rps", 0),)


def stages_seconds(spec: Mapping[str, Any]) -> float:
    """The total duration of a loadtest spec's stages."""
    return float(sum(stage["duration_s"] for stage in spec["scenario"]["stages"]))


def loadtest_id(spec: Mapping[str, Any]) -> str:
    """Stable id of a run: a hash of its spec with the schema's defaults, without ``loadtest_id``, the
    network as its resolved object (equivalent profile strings give the same id)."""
    # allow_internet is the command line's, not the test's: the same test with or without the flag
    body = {
        k: v
        for k, v in contract.apply_defaults(SCHEMA, dict(spec)).items()
        if k not in ("loadtest_id", "allow_internet")
    }
    body["network"] = netprofile.parse(body.get("network", "native"))
    # Fields added after load tests were first stored are left out at their default, so that a sweep
    # stored before them keeps its ids and resumes without running again.
    for section, key, default in _ADDED_LATER:
        part = body.get(section)
        if isinstance(part, dict) and part.get(key) == default:
            body[section] = {k: v for k, v in part.items() if k != key}
    return "l" + hashlib.sha256(canonical(_integral(body)).encode()).hexdigest()[:15]


def _integral(value: Any) -> Any:
    """Whole floats as integers (5.0 → 5): JSON numbers, as the engine reads them, are one value."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def _assign(target: dict[str, Any], path: str, value: Any) -> None:
    head, _, rest = path.partition(".")
    if rest:
        sub = dict(target.get(head) or {})
        target[head] = sub
        _assign(sub, rest, value)
    else:
        target[head] = value


def _place(found: contract.Problem, written: Mapping[str, str]) -> str:
    """Where in the file a problem's field was written: the grid value it came from, else ``load.…``."""
    field = found.field
    for path in sorted(written, key=len, reverse=True):
        if field == path or field.startswith((f"{path}.", f"{path}[")):
            return written[path] + field[len(path) :]
    return f"load.{field}"


def _raise_at(found: contract.Problem, written: Mapping[str, str]) -> None:
    where = _place(found, written)
    value = None if found.value is contract.MISSING else found.value
    raise SpecError(found.message(where=where), path=where, value=value) from None


def _server(server: Any) -> Any:
    """The server table as a trial's: the trial spec's model fills its defaults and keeps only the table
    of ``server.impl`` (``wirelab.spec`` — the same definition, referenced by the loadtest schema)."""
    if not isinstance(server, Mapping):
        return server
    try:
        dumped = spec_mod.ServerConfig.model_validate(dict(server)).model_dump(mode="json")
    except ValidationError:  # the schema has said what is wrong already; never reached
        return server
    select_impl_table(dumped)
    return dumped


def _resolve_run(
    fields: Mapping[str, Any], protocol: str, written: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the spec for the engine, the same with the schema's defaults) of one run; problems name the
    place in the file."""
    spec = {"contract": contract.CONTRACT_VERSION, **fields, "protocol": protocol}
    found = contract.problem(SCHEMA, spec)
    if found is not None:
        _raise_at(found, written)
    if "server" in spec:
        spec["server"] = _server(spec["server"])
    spec["loadtest_id"] = loadtest_id(spec)
    ordered = {k: spec[k] for k in _SCHEMA["properties"] if k in spec}
    return ordered, contract.apply_defaults(SCHEMA, ordered)


def _page_required(where: str) -> SpecError:
    allowed = contract.describe(contract._resolve(_SCHEMA, _SCHEMA["properties"]["page"]))
    return SpecError(
        f"{where}: required: the page the server under test serves — {allowed}; set it in [load] or "
        "make page a grid axis",
        path=where,
    )


def _check_tables(data: Mapping[str, Any]) -> None:
    for key in data:
        if key not in _TABLES:
            hint = did_you_mean(str(key), list(_TABLES))
            what = " (a trial sweep's table: load tests write [load])" if key == "base" else ""
            raise SpecError(
                f"{cut(str(key))}: is not a table of a load-test spec{what}; {hint}tables: sweep, load, grid",
                path=str(key),
            )
    for key in ("sweep", "load"):
        if key not in data:
            raise SpecError(f"{key}: is missing; a load-test spec has [sweep] and [load]", path=key)
        if not isinstance(data[key], Mapping):
            raise SpecError(f"{key}: is not a table; write [{key}] with its fields", path=key)
    if "grid" in data and not isinstance(data["grid"], Mapping):
        raise SpecError("grid: is not a table; write [grid] with its axes", path="grid")


def from_dict(data: Mapping[str, Any], *, source: str = "", allow_internet: bool = False) -> LoadPlan:
    """Validate and expand a load-test spec given as a dict (the TOML's structure). ``allow_internet``
    (``wirelab loadtest --allow-internet``, never the file) lets a ``[load.target]`` be outside loopback
    and the run's local internet; it is not part of a run's id."""
    refuse_non_finite(data, "")
    _check_tables(data)
    try:
        sweep = spec_mod.SweepInfo.model_validate(dict(data["sweep"]))
    except ValidationError as e:
        raise_validation(e, "sweep")
    load_table = dict(data["load"])
    for key in load_table:
        if key in _SET_BY_WIRELAB:
            raise SpecError(f"load.{key}: {_SET_BY_WIRELAB[key]}; leave it out", path=f"load.{key}")
    network = load_table.pop("network", None)
    if network is not None:
        load_table["network"] = spec_mod.network_string(network, path="load.network")
    dims = spec_mod.parse_grid(data.get("grid") or {}, LOAD_GRID)
    axes = {a.path for d in dims for a in d}
    if "protocols" in load_table:
        _check_protocols(load_table["protocols"], "load.protocols")
    elif "protocols" not in axes:
        raise SpecError(
            'load.protocols: is missing; list the protocols to run in turn, e.g. protocols = ["h1s", "h2"]',
            path="load.protocols",
        )
    if "page" not in load_table and "page" not in axes and "target" not in load_table:
        raise _page_required("load.page")
    runs: list[PlannedLoadtest] = []
    ids: dict[str, int] = {}
    for point, (params, written) in enumerate(spec_mod.grid_points(dims, "grid points")):
        fields: dict[str, Any] = {k: json.loads(json.dumps(v)) for k, v in load_table.items()}
        network_overlay = {p.split(".", 1)[1]: v for p, v in params.items() if p.startswith("network.")}
        for path, value in params.items():
            if not path.startswith("network"):
                _assign(fields, path, value)
        if "network" in params or network_overlay:
            where = written.get("network", "grid.network")
            fields["network"] = spec_mod.network_string(
                params.get("network", fields.get("network", "native")), network_overlay, path=where
            )
        protocols = fields.pop("protocols")
        for protocol in protocols:
            spec, resolved = _resolve_run(fields, protocol, written)
            if allow_internet and "target" in spec:
                spec["allow_internet"] = resolved["allow_internet"] = True
            run = PlannedLoadtest(
                id=spec["loadtest_id"],
                index=len(runs),
                point=point,
                params=params,
                protocol=protocol,
                spec=spec,
                resolved=resolved,
            )
            if run.id in ids:
                other = runs[ids[run.id]]
                raise SpecError(
                    f"grid: runs {other.index} ({other.label}) and {run.index} ({run.label}) are the same "
                    "load test; remove the duplicate value",
                    path="grid",
                    value=run.label,
                )
            ids[run.id] = run.index
            runs.append(run)
    spec_hash = hashlib.sha256(canonical(sorted(ids)).encode()).hexdigest()[:16]
    return LoadPlan(
        name=sweep.name,
        description=sweep.description,
        spec_hash=spec_hash,
        runs=tuple(runs),
        spec=json.loads(
            json.dumps({"sweep": sweep.model_dump(), **{k: data[k] for k in ("load", "grid") if k in data}})
        ),
        source=source,
    )


def loads(text: str, *, origin: str = "spec", allow_internet: bool = False) -> LoadPlan:
    """Parse, validate and expand TOML text. ``origin`` names the text in syntax errors."""
    return from_dict(parse_toml(text, origin), source=text, allow_internet=allow_internet)


def load(path: str | Path, *, allow_internet: bool = False) -> LoadPlan:
    """Read, validate and expand a load-test spec file."""
    return loads(read_spec_text(path), origin=str(path), allow_internet=allow_internet)


def is_loadtest(path: str | Path) -> bool:
    """Whether the TOML file at ``path`` is a load-test spec (it has a ``[load]`` table); False when it
    cannot be read or parsed (the spec's own loader then says why)."""
    try:
        return "load" in tomllib.loads(read_spec_text(path))  # never blocks on a FIFO (docs/bad-input.md)
    except (SpecError, tomllib.TOMLDecodeError):
        return False
