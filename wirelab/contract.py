"""The trial contract (``docs/trial-contract.md``): its version, its JSON Schemas and validation.

The schemas live in ``schemas/`` at the repository root, shared with the engine's tests:
``trial-spec.schema.json`` (input of ``wirelab-engine trial``), ``load-record.schema.json`` (one line
of ``loads.jsonl``) and ``trial-result.schema.json`` (``trial.json``).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from wirelab._paths import schemas_dir
from wirelab.errors import ContractError

__all__ = [
    "CONTRACT_VERSION",
    "SCHEMA_NAMES",
    "load_schema",
    "validate",
]

CONTRACT_VERSION = 1
SCHEMA_NAMES = ("trial-spec", "load-record", "trial-result")


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    """The parsed JSON Schema ``schemas/<name>.schema.json``."""
    if name not in SCHEMA_NAMES:
        raise ValueError(f"unknown schema {name!r}; known: {', '.join(SCHEMA_NAMES)}")
    path: Path = schemas_dir() / f"{name}.schema.json"
    return json.loads(path.read_text())


@functools.cache
def _validator(name: str) -> Any:
    import jsonschema  # imported on first use: it is slow to import
    from referencing import Registry, Resource

    registry: Registry = Registry()
    for other in SCHEMA_NAMES:
        schema = load_schema(other)
        registry = registry.with_resource(schema["$id"], Resource.from_contents(schema))
    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, registry=registry)


def _where(error: Any) -> str:
    parts = []
    for p in error.absolute_path:
        parts.append(f"[{p}]" if isinstance(p, int) else (("." if parts else "") + str(p)))
    return "".join(parts) or "(top level)"


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
