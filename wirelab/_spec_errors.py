"""The experiment spec's error messages: every problem becomes one :class:`~wirelab.errors.SpecError`
whose line names the dotted path, the value and what is allowed — in the schema's own words where the
contract has them (``x-allowed``), with "did you mean" for a misspelt field. Part of :mod:`wirelab.spec`.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from wirelab import _contract as contract
from wirelab._spec_models import TRIAL_SCHEMA, BaseTrial, ExperimentSpec, SweepInfo, submodel
from wirelab._suggest import did_you_mean
from wirelab.errors import SpecError, cut

__all__ = [
    "fmt",
    "parse_toml",
    "pydantic_problem",
    "raise_problem",
    "raise_validation",
    "refuse_non_finite",
]


def fmt(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, float) else repr(value)
    return cut(text)


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
    **_schema_pattern_words(TRIAL_SCHEMA),
    r"^[a-z0-9][a-z0-9_.-]{0,63}$": "use up to 64 lowercase letters, digits, '-', '_' or '.', "
    "starting with a letter or digit",
}


def _model_tables(model: type[BaseModel], prefix: str) -> dict[str, list[str]]:
    """Dotted path of every table → its field names (for "did you mean" on an unknown field)."""
    tables = {prefix.rstrip("."): list(model.model_fields)}
    for name, info in model.model_fields.items():
        sub = submodel(info)
        if sub is not None:
            tables.update(_model_tables(sub, f"{prefix}{name}."))
    return tables


def pydantic_problem(error: Mapping[str, Any], model_fields: list[str] | None = None) -> str:
    """One error of a pydantic ValidationError as '<problem>; <allowed>'."""
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden":
        name = str(error["loc"][-1]) if error["loc"] else ""
        options = model_fields or []
        hint = did_you_mean(name, options) or (f"fields: {', '.join(options)}" if options else "")
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


def raise_validation(exc: ValidationError, prefix: str, *, value_override: Any = ...) -> None:
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
    problem = pydantic_problem(error, field_names)
    if error["type"] in ("missing", "extra_forbidden"):
        raise SpecError(f"{path}: {problem}", path=path, value=None) from None
    raise SpecError(f"{path}: {fmt(value)} {problem}", path=path, value=value) from None


_TABLES = {
    "": list(ExperimentSpec.model_fields),
    "sweep": list(SweepInfo.model_fields),
    **_model_tables(BaseTrial, "base."),
}


def _field_names(parent: str) -> list[str]:
    return _TABLES.get(parent, [])


def raise_problem(found: contract.Problem, prefix: str) -> None:
    """A schema problem as a SpecError at ``prefix`` (``base``, ``grid.shards[1]``, …), in the words
    and the line the engine prints for it."""
    where = ".".join(p for p in (prefix, found.field) if p).replace(".[", "[")
    value = None if found.value is contract.MISSING else found.value
    raise SpecError(found.message(prefix), path=where, value=value) from None


def refuse_non_finite(value: Any, path: str) -> None:
    """TOML (and Python) allow inf and nan; no field of a spec does: refused here, at the edge."""
    if isinstance(value, float) and not math.isfinite(value):
        raise SpecError(f"{path}: {value!r} is not allowed; use a finite number", path=path, value=value)
    if isinstance(value, Mapping):
        for k, v in value.items():
            refuse_non_finite(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            refuse_non_finite(v, f"{path}[{i}]")


def parse_toml(text: str, origin: str) -> dict[str, Any]:
    """A spec's TOML text as a dict; ``origin`` names the text in a syntax error."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{origin}: TOML syntax error: {e}", path=origin) from None
