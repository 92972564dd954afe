"""Generates ``wirelab/_contract_models.py`` — the pydantic models of the trial spec — from the one
definition of the trial spec, the contract's JSON Schema (``schemas/trial-spec.schema.json``, which
the engine validates its input against).

Run ``python -m wirelab._codegen`` after changing the schema; ``tests/test_contract_models.py``
fails while the committed file is not what this module generates.

What pydantic cannot say about a field (``anyOf`` gaps, ``uniqueItems``, the ``if``/``then`` across
fields) stays in the schema, which :mod:`wirelab._contract` checks with ``jsonschema`` after the model.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from wirelab._paths import schemas_dir

__all__ = ["generate", "main", "OUTPUT"]

OUTPUT = Path(__file__).resolve().parent / "_contract_models.py"

#: class name of each object of the trial spec (by property path)
_CLASS_NAMES = {
    (): "TrialSpecFields",
    ("server",): "ServerConfig",
    ("client",): "ClientConfig",
    ("capture",): "CaptureConfig",
}
#: top-level fields an experiment's [base] does not share with the trial spec as they are
_OWN_FIELDS = ("contract", "trial_id", "page", "network")


def _class_name(path: tuple[str, ...]) -> str:
    if path in _CLASS_NAMES:
        return _CLASS_NAMES[path]
    return path[-1].replace("_", " ").title().replace(" ", "") + "Config"


def _resolve(doc: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """``node`` merged with what its local ``$ref`` points at (the node's own keys win)."""
    ref = node.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return node
    target: Any = doc
    for tok in ref[2:].split("/"):
        target = target[tok]
    merged = dict(_resolve(doc, target))
    merged.update({k: v for k, v in node.items() if k != "$ref"})
    return merged


def _literal(values: list[Any]) -> str:
    return "Literal[" + ", ".join(json.dumps(v) for v in values) + "]"


def _bounds(prop: dict[str, Any]) -> tuple[Any, Any]:
    """Outer bounds, also across anyOf branches (the gap between them is the schema's to check)."""
    nodes = [prop, *prop.get("anyOf", [])]
    lows = [n[k] for n in nodes for k in ("minimum", "const") if k in n]
    highs = [n[k] for n in nodes for k in ("maximum", "const") if k in n]
    return (min(lows) if lows else None), (max(highs) if highs else None)


class _Gen:
    def __init__(self, doc: dict[str, Any]):
        self.doc = doc
        self.classes: list[str] = []

    def annotation(self, path: tuple[str, ...], prop: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """(type annotation, Field keyword arguments) of one property."""
        prop = _resolve(self.doc, prop)
        kw: dict[str, Any] = {}
        if "enum" in prop:
            return _literal(prop["enum"]), kw
        if "const" in prop:
            return _literal([prop["const"]]), kw
        typ = prop.get("type")
        if typ == "object":
            name = self.model(path, prop)
            return name, kw
        if typ == "array":
            items = _resolve(self.doc, prop.get("items", {}))
            inner = _literal(items["enum"]) if "enum" in items else "Any"
            if "minItems" in prop:
                kw["min_length"] = prop["minItems"]
            return f"list[{inner}]", kw
        if typ in ("integer", "number"):
            lo, hi = _bounds(prop)
            if lo is not None:
                kw["ge"] = lo
            if "exclusiveMinimum" in prop:
                kw["gt"] = prop["exclusiveMinimum"]
            if hi is not None:
                kw["le"] = hi
            return ("int" if typ == "integer" else "float"), kw
        if typ == "boolean":
            return "bool", kw
        if typ == "string":
            if "minLength" in prop:
                kw["min_length"] = prop["minLength"]
            if "pattern" in prop:
                kw["pattern"] = prop["pattern"]
            return "str", kw
        raise ValueError(f"trial-spec schema: {'.'.join(path)}: no Python type for {prop}")

    def model(self, path: tuple[str, ...], node: dict[str, Any], skip: tuple[str, ...] = ()) -> str:
        node = _resolve(self.doc, node)
        name = _class_name(path)
        lines = [f"class {name}(_Model):"]
        doc = node.get("description") or f"``{'.'.join(path)}``"
        lines.append(f'    """{doc}"""')
        lines.append("")
        required = set(node.get("required", []))
        impl_tables: dict[str, str] = {}
        cannot_set: dict[str, dict[str, Any]] = {}
        for key, raw in node.get("properties", {}).items():
            if key in skip:
                continue
            prop = _resolve(self.doc, raw)
            ann, kw = self.annotation((*path, key), prop)
            description = prop.get("description", "")
            args = []
            if "x-impl" in prop:
                impl_tables[key] = prop["x-impl"]
                if "x-cannot-set" in prop:
                    cannot_set[prop["x-impl"]] = prop["x-cannot-set"]
                ann = f"{ann} | None"
                args.append("None")
            elif prop.get("type") == "object":
                args.append(f"default_factory={ann}")
            elif "default" in prop:
                args.append(repr(prop["default"]))
            elif key in required:
                pass
            else:
                ann = f"{ann} | None"
                args.append("None")
            args += [f"{k}={v!r}" for k, v in kw.items()]
            if description:
                args.append(f"description={description!r}")
            lines.append(f"    {key}: {ann} = Field({', '.join(args)})")
        if impl_tables:
            lines.append("")
            lines.append(
                "    #: the implementation tables (``x-impl``): field name → the server.impl it configures"
            )
            lines.append(f"    IMPL_TABLES: ClassVar[dict[str, str]] = {impl_tables!r}")
        if cannot_set:
            impl_default = _resolve(self.doc, node["properties"]["impl"])["default"]
            lines += [
                "",
                "    #: per implementation, the common knobs it cannot set, each with the value that stands",
                "    #: for its own behaviour (``x-cannot-set``): their default when it is ``impl``, and the",
                "    #: only value it accepts",
                f"    CANNOT_SET: ClassVar[dict[str, dict[str, Any]]] = {cannot_set!r}",
                "",
                '    @model_validator(mode="before")',
                "    @classmethod",
                "    def _own_defaults(cls, data: Any) -> Any:",
                '        """A common knob the chosen implementation cannot set, left out, is its own."""',
                "        if not isinstance(data, dict):",
                "            return data",
                f'        impl = data.get("impl", {impl_default!r})',
                "        own = cls.CANNOT_SET.get(impl, {}) if isinstance(impl, str) else {}",
                "        missing = {k: v for k, v in own.items() if k not in data}",
                "        return {**data, **missing} if missing else data",
            ]
        self.classes.append("\n".join(lines))
        return name


def generate(schema: dict[str, Any] | None = None) -> str:
    """The text of ``_contract_models.py`` for the given (default: the repository's) trial-spec schema."""
    if schema is None:
        schema = json.loads((schemas_dir() / "trial-spec.schema.json").read_text())
    gen = _Gen(schema)
    fields = schema["$defs"]["fields"]
    gen.model((), fields, skip=_OWN_FIELDS)
    own = {k: fields["properties"][k] for k in _OWN_FIELDS}
    spec_node = {
        "description": "One trial as the engine receives it (``schemas/trial-spec.schema.json``).",
        "properties": own,
        "required": [k for k in schema.get("required", []) if k in own],
    }
    _CLASS_NAMES[("<spec>",)] = "TrialSpecOwnFields"
    gen.model(("<spec>",), spec_node)
    header = (
        '"""The trial spec\'s models, generated from ``schemas/trial-spec.schema.json`` by\n'
        "``python -m wirelab._codegen``. Do not edit: change the schema and regenerate.\n\n"
        "``TrialSpecFields`` are the fields an experiment's ``[base]`` shares with the trial spec;\n"
        "``TrialSpecOwnFields`` the trial spec's own (``contract``, ``trial_id``, ``page``, ``network``).\n"
        '"""\n\n'
        "from __future__ import annotations\n\n"
        "from typing import Any, ClassVar, Literal\n\n"
        "from pydantic import BaseModel, ConfigDict, Field, model_validator\n\n"
        '__all__ = ["CONTRACT_MODELS", "TrialSpecFields", "TrialSpecOwnFields"]\n\n\n'
        "class _Model(BaseModel):\n"
        '    model_config = ConfigDict(extra="forbid", strict=True, validate_default=True)\n'
    )
    names = [c.split("(", 1)[0].removeprefix("class ") for c in gen.classes]
    footer = "\n\n#: every generated model, by class name\nCONTRACT_MODELS: dict[str, type[_Model]] = {\n"
    footer += "".join(f"    {n!r}: {n},\n" for n in names) + "}\n"
    # Any is used by untyped array items only; keep the import used.
    body = "\n\n\n".join(gen.classes)
    text = header + "\n\n" + body + "\n" + footer
    if "Any" not in body:
        text = text.replace(
            "from typing import Any, ClassVar, Literal", "from typing import ClassVar, Literal"
        )
    if "ClassVar" not in body:
        text = text.replace("ClassVar, ", "")
    if "@model_validator" not in body:
        text = text.replace(", model_validator", "")
    return text


def main() -> None:
    text = generate()
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
