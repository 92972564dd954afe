"""The trial contract (``docs/trial-contract.md``): its version, its JSON Schemas and validation.

The schemas live in ``schemas/`` at the repository root, shared with the engine's tests, and ship
with the package (``wirelab/_schemas``):
``trial-spec.schema.json`` (input of ``wirelab-engine trial``), ``load-record.schema.json`` (one line
of ``loads.jsonl``), ``trial-result.schema.json`` (``trial.json``), ``page.schema.json``,
``probe-record.schema.json`` (one line of ``wirelab-engine probe``, ``docs/probe.md``) and
``loadtest-spec.schema.json`` (input of ``wirelab-engine loadtest``; its lab fields refer to the trial
spec's definitions with ``urn:wirelab:schema:trial-spec:1#/…`` references, which every function here
follows across the two documents).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from wirelab._paths import schemas_dir
from wirelab._suggest import closest
from wirelab.errors import MAX_SHOWN, SHOWN_PREFIX, ContractError, cut

__all__ = [
    "CONTRACT_VERSION",
    "MISSING",
    "SCHEMA_NAMES",
    "Problem",
    "apply_defaults",
    "describe",
    "load_schema",
    "problem",
    "show",
    "validate",
]

CONTRACT_VERSION: Final = 1
SCHEMA_NAMES = ("trial-spec", "load-record", "trial-result", "page", "probe-record", "loadtest-spec")


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    """The parsed JSON Schema ``schemas/<name>.schema.json``."""
    if name not in SCHEMA_NAMES:
        raise ValueError(f"unknown schema {name!r}; known: {', '.join(SCHEMA_NAMES)}")
    path: Path = schemas_dir() / f"{name}.schema.json"
    return json.loads(path.read_text())


@functools.cache
def _registry() -> Any:
    from referencing import Registry, Resource

    registry: Registry = Registry()
    for other in SCHEMA_NAMES:
        schema = load_schema(other)
        registry = registry.with_resource(schema["$id"], Resource.from_contents(schema))
    return registry


def _validator_of(schema: dict[str, Any]) -> Any:
    """A validator of ``schema``. The shipped schemas are checked against their meta-schema by the
    tests (tests/test_contract_models.py), not here: checking costs a cold ``wirelab predict`` about
    0.1 s of CPU."""
    import jsonschema  # imported on first use: it is slow to import

    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, registry=_registry())


@functools.cache
def _validator(name: str) -> Any:
    return _validator_of(load_schema(name))


def _named_in(node: Any) -> set[str]:
    """Every property name a subschema reads (``properties``, ``required``), at any depth."""
    names: set[str] = set()
    if isinstance(node, Mapping):
        names |= set(node.get("properties", {})) | set(node.get("required", []))
        for value in node.values():
            names |= _named_in(value)
    elif isinstance(node, list):
        for value in node:
            names |= _named_in(value)
    return names


@functools.cache
def _fields(name: str) -> tuple[Any, tuple[str, ...], tuple[str, ...]] | None:
    """For a schema whose root takes its fields from ``$ref: #/$defs/X`` (the trial spec): a validator
    of the root with each of X's fields accepted as it is, except those its own keywords (``if``/
    ``then``) read; the names of those (``kept``) and of the others (``alone``, each checked on its
    own against its schema, :func:`_field_valid`). The root's verdict then depends on the instance's
    keys and the kept fields' values only."""
    schema = load_schema(name)
    ref = schema.get("$ref", "")
    prefix = "#/$defs/"
    if not isinstance(ref, str) or not ref.startswith(prefix) or "/" in ref[len(prefix) :]:
        return None
    fields = schema["$defs"][ref[len(prefix) :]]
    kept = _named_in({k: v for k, v in fields.items() if k != "properties"})
    alone = tuple(k for k in fields.get("properties", {}) if k not in kept)
    shallow = json.loads(json.dumps(schema))
    for key in alone:
        shallow["$defs"][ref[len(prefix) :]]["properties"][key] = True
    return _validator_of(shallow), tuple(sorted(kept)), alone


@functools.lru_cache(maxsize=8192)
def _field_valid(name: str, key: str, text: str) -> bool:
    """Whether field ``key`` of schema ``name``'s root, given as JSON, is valid against its schema."""
    schema = load_schema(name)
    node = _resolve(schema, schema)["properties"][key]
    return bool(_validator(name).evolve(schema=node).is_valid(json.loads(text)))


@functools.lru_cache(maxsize=1024)
def _root_valid(name: str, text: str) -> bool:
    """Whether the instance given as JSON (its keys, the kept fields' values) passes the root's keywords."""
    split = _fields(name)
    assert split is not None
    return bool(split[0].is_valid(json.loads(text)))


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=False)


def _valid_by_fields(name: str, instance: Any) -> bool:
    """True only if ``instance`` is valid against ``name`` (False says nothing): the root's keywords
    once per distinct key set, each field once per distinct value — a sweep's thousands of trials
    differ in a few grid fields, and checking every trial whole was most of planning's time."""
    split = _fields(name)
    if split is None or not isinstance(instance, Mapping):
        return False
    _, kept, alone = split
    try:
        root = _canonical({k: (instance[k] if k in kept else None) for k in instance})
        texts = [(k, _canonical(instance[k])) for k in alone if k in instance]
    except (TypeError, ValueError):  # not JSON (or a key not a string): the full check words it
        return False
    return _root_valid(name, root) and all(_field_valid(name, k, text) for k, text in texts)


def _where(error: Any) -> str:
    return _field(error.absolute_path) or "(top level)"


def validate(name: str, instance: Any, *, what: str = "") -> None:
    """Raise :class:`ContractError` (one line) when ``instance`` breaks schema ``name``."""
    import jsonschema

    validator = _validator(name)
    error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
    if error is not None:
        message = error.message.replace("\n", " ")
        if len(message) > 300:
            message = message[:297] + "..."
        prefix = f"{what}: " if what else ""
        raise ContractError(f"{prefix}{_where(error)}: {message} (schema {name})")


# --------------------------------------------------------------------------------------------------
# One problem, in words: the control plane's twin of the engine's contract.explain (engine/contract),
# so that both halves say the same thing about the same spec. The words come from the schema: a
# property's "x-allowed", an if/then branch's "x-field" and "x-allowed", else its type, range or enum.


def show(value: Any) -> str:
    """A JSON value as messages quote it: strings in double quotes, long ones cut with their length
    (as the engine's fielderr.Quote: :data:`wirelab.errors.MAX_SHOWN`)."""
    if isinstance(value, str):
        if len(value) > MAX_SHOWN:
            return f"{json.dumps(value[:SHOWN_PREFIX], ensure_ascii=False)}… ({len(value)} characters)"
        return json.dumps(value, ensure_ascii=False)
    if value == []:
        return "[]"
    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return cut(json.dumps(value))
    names: dict[type, str] = {list: "an array", dict: "an object"}
    return names.get(type(value), type(value).__name__)


def _or_list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def _num(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def describe(prop: Mapping[str, Any]) -> str:
    """What a property schema allows, in words ("an integer 1–64", "h1, h1s or h2")."""
    if isinstance(prop.get("x-allowed"), str):
        return prop["x-allowed"].removeprefix("must be ")
    if "enum" in prop:
        return _or_list([v if isinstance(v, str) else json.dumps(v) for v in prop["enum"]])
    if "const" in prop:
        return json.dumps(prop["const"])
    typ = prop.get("type")
    if typ in ("integer", "number"):
        word = "an integer" if typ == "integer" else "a number"
        lo, xlo, hi = prop.get("minimum"), prop.get("exclusiveMinimum"), prop.get("maximum")
        if lo is not None and hi is not None:
            return f"{word} {_num(lo)}–{_num(hi)}"
        if lo is not None:
            return f"{word} ≥ {_num(lo)}"
        if xlo is not None and hi is not None:
            return f"{word} > {_num(xlo)} and ≤ {_num(hi)}"
        if xlo is not None:
            return f"{word} > {_num(xlo)}"
        if hi is not None:
            return f"{word} ≤ {_num(hi)}"
        return word
    if typ == "boolean":
        return "true or false"
    if typ == "string":
        return "a non-empty string" if prop.get("minLength") else "a string"
    if typ == "array":
        items = prop.get("items")
        return f"a list of {describe(items)}" if isinstance(items, Mapping) else "a list"
    if typ == "object":
        return "an object"
    return "a valid value"


@functools.cache
def _names_by_id() -> dict[str, str]:
    return {load_schema(n)["$id"]: n for n in SCHEMA_NAMES}


def _absolute(node: Any, base: str) -> Any:
    """``node`` (from the document ``base``) with its local references made absolute (``base#/…``), so
    that it means the same wherever it is used."""
    if isinstance(node, Mapping):
        out = {k: _absolute(v, base) for k, v in node.items()}
        if isinstance(out.get("$ref"), str) and out["$ref"].startswith("#"):
            out["$ref"] = base + out["$ref"]
        return out
    if isinstance(node, list):
        return [_absolute(v, base) for v in node]
    return node


def _target(root: Mapping[str, Any], ref: str) -> Any:
    """What ``ref`` points at: ``#/…`` in ``root``, ``urn:…#/…`` in the contract's document of that id."""
    base, _, fragment = ref.partition("#")
    doc: Any = load_schema(_names_by_id()[base]) if base else root
    for tok in fragment.lstrip("/").split("/") if fragment.strip("/") else []:
        tok = tok.replace("~1", "/").replace("~0", "~")
        doc = doc[int(tok)] if isinstance(doc, list) else doc[tok]
    return _absolute(doc, base) if base else doc


def _is_ref(node: Any) -> bool:
    if not isinstance(node, Mapping) or not isinstance(node.get("$ref"), str):
        return False
    ref = node["$ref"]
    return ref.startswith("#/") or ref.partition("#")[0] in _names_by_id()


def _resolve(root: Mapping[str, Any], node: Any) -> Any:
    """Follow a ``$ref`` — local (``#/$defs/x``) or into another document of the contract
    (``urn:wirelab:schema:trial-spec:1#/…``) —, merging the node's own keys over its target's."""
    while _is_ref(node):
        target = _target(root, node["$ref"])
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def apply_defaults(name: str, instance: Any) -> Any:
    """A copy of ``instance`` with the defaults of schema ``name`` filled in: every absent property
    with a ``default`` (following ``$ref`` across documents), then inside every object present — the
    twin of the engine's ``contract.ApplyDefaults``. Branches (``if``/``then``) add nothing."""
    root = load_schema(name)

    def fill(node: Any, value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value
        out = dict(value)
        chain, seen = [node], 0
        while _is_ref(chain[-1]) and seen < 8:
            chain.append(_target(root, chain[-1]["$ref"]))
            seen += 1
        for branch in chain:
            for key, prop in (branch.get("properties") or {}).items() if isinstance(branch, Mapping) else ():
                if key not in out:
                    default = (
                        _resolve(root, prop).get("default", MISSING) if isinstance(prop, Mapping) else MISSING
                    )
                    if default is not MISSING:
                        out[key] = json.loads(json.dumps(default))
                if isinstance(out.get(key), Mapping):
                    out[key] = fill(prop, out[key])
        return out

    return fill(root, instance)


def _walk(root: Mapping[str, Any], path: Sequence[Any]) -> Any:
    """The schema node at a jsonschema ``absolute_schema_path`` (which leaves out ``$ref`` hops)."""
    node: Any = root
    for tok in path:
        if isinstance(node, Mapping) and tok not in node:
            node = _resolve(root, node)
        node = node[tok] if isinstance(node, Mapping) else node[int(tok)]
    return node


def _property_names(root: Mapping[str, Any], node: Any) -> list[str]:
    names: set[str] = set()
    seen = 0
    while isinstance(node, Mapping) and seen < 8:
        names.update(node.get("properties", {}))
        if not isinstance(node.get("$ref"), str):
            break
        node = _resolve(root, {"$ref": node["$ref"]})
        seen += 1
    return sorted(names)


_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _field(path: Sequence[Any]) -> str:
    """A path as messages name fields (engine/contract's fieldPath): ``a.b[3].c``; an object's key
    that is not a plain name (empty, a number, with dots or spaces) quoted: ``client[""]``."""
    out = ""
    for tok in path:
        if isinstance(tok, int):
            out += f"[{tok}]"
        elif _PLAIN.fullmatch(str(tok)):
            out += ("." if out else "") + str(tok)
        else:
            out += "[" + json.dumps(str(tok), ensure_ascii=False) + "]"
    return out


def _value_at(instance: Any, path: Sequence[Any]) -> Any:
    for tok in path:
        try:
            instance = instance[tok]
        except (KeyError, IndexError, TypeError):
            return None
    return instance


@dataclasses.dataclass(frozen=True)
class Problem:
    """The first problem of an instance against a schema: the field's path, its value (``MISSING``
    when absent) and what is allowed there."""

    path: tuple[Any, ...]
    value: Any
    allowed: str

    @property
    def field(self) -> str:
        return _field(self.path)

    def message(self, prefix: str = "", *, where: str | None = None) -> str:
        """The one line the engine prints for this problem (its fielderr: ``<field>: got <value>;
        <allowed>``, or ``<field>: <allowed>`` for a missing or unknown field), the field under
        ``prefix`` (``base``, ``grid.shards[1]``) — or named ``where`` (the place a spec wrote it)."""
        if where is None:
            where = ".".join(p for p in (prefix, self.field) if p).replace(".[", "[")
        if self.value is MISSING:
            return f"{where}: {self.allowed}"
        return f"{where}: got {show(self.value)}; {self.allowed}"


MISSING = object()


def problem(name: str, instance: Any, *, root_path: Sequence[str] = ()) -> Problem | None:
    """The first problem of ``instance`` against schema ``name`` (or against the property at
    ``root_path`` of it, e.g. ``("server", "push")`` for one grid value), or None."""
    if not root_path and _valid_by_fields(name, instance):
        return None
    schema = load_schema(name)
    validator = _validator(name)
    if root_path:
        node: Any = schema
        for key in root_path:
            for _ in range(8):
                node = _resolve(schema, node)
                if key in node.get("properties", {}):
                    break
            node = node["properties"][key]
        validator = validator.evolve(schema=node)
    errors = list(validator.iter_errors(instance))
    if not errors:
        return None
    real = [e for e in errors if e.validator != "unevaluatedProperties"]
    # Deepest first; among problems as deep, the first by field path (as engine/contract picks).
    errors = sorted(real or errors, key=lambda e: (-len(e.absolute_path), [str(p) for p in e.absolute_path]))
    e = errors[0]
    path = tuple(e.absolute_path)
    node = e.schema if isinstance(e.schema, Mapping) else {}
    schema_path = list(e.absolute_schema_path)
    if e.validator in ("additionalProperties", "unevaluatedProperties"):
        known = _property_names(schema, node)
        here = _value_at(instance, path)
        extra = sorted(k for k in (here if isinstance(here, Mapping) else {}) if k not in known)
        name_ = extra[0] if extra else "?"
        near = closest(name_, known)
        allowed = (
            f"unknown field; did you mean {near}?" if near else f"unknown field; allowed: {', '.join(known)}"
        )
        return Problem((*path, name_), MISSING, allowed)
    if e.validator == "required":
        if "x-field" in node:
            fpath = (*path, *node["x-field"].split("."))
            return Problem(fpath, _value_at(instance, fpath), node.get("x-allowed", "not allowed here"))
        missing = e.message.split("'")[1] if "'" in e.message else "?"
        prop = _resolve(schema, _resolve(schema, node).get("properties", {}).get(missing, {}))
        allowed = "required"
        if isinstance(prop, Mapping) and isinstance(prop.get("x-allowed"), str):
            allowed = "required: " + prop["x-allowed"].removeprefix("must be ")
        return Problem((*path, missing), MISSING, allowed)
    if e.validator == "uniqueItems":
        items = _value_at(instance, path) or []
        for j, item in enumerate(items):
            if item in items[:j]:
                i = items.index(item)
                return Problem((*path, j), item, f"listed twice (also at [{i}]); each at most once")
    if e.validator == "minItems":
        items = node.get("items") if isinstance(node.get("items"), Mapping) else {}
        return Problem(path, [], f"must list at least one of {describe(items)}")
    for branch in ("then", "else"):
        if branch in schema_path:
            cut = len(schema_path) - 1 - schema_path[::-1].index(branch)
            bnode = _walk(schema, schema_path[: cut + 1])
            if isinstance(bnode, Mapping) and "x-field" in bnode:
                fpath = (*path[:-1], *bnode["x-field"].split("."))
                return Problem(fpath, _value_at(instance, fpath), bnode.get("x-allowed", "not allowed here"))
    if schema_path and schema_path[-1] not in ("anyOf", "oneOf") and "anyOf" in schema_path:
        node = _walk(schema, schema_path[: schema_path.index("anyOf")])
    value = _value_at(instance, path)
    prop = _resolve(schema, node)
    # The property's own words as they are ("closed model only (open: …)"), else "must be …": as the
    # engine's explain says it.
    allowed = prop["x-allowed"] if isinstance(prop.get("x-allowed"), str) else "must be " + describe(prop)
    if isinstance(value, str) and "enum" in node:
        near = closest(value, [v for v in node["enum"] if isinstance(v, str)])
        if near and near != value:
            allowed = f"did you mean {near}? {allowed}"
    return Problem(path, value, allowed)
