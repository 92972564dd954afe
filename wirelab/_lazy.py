"""Names a package gives on first use (PEP 562): ``wirelab`` and ``wirelab.analysis`` import the
module that defines a public name only when it is asked for, so that importing the package (the CLI
does) does not load pandas, scipy or scikit-learn for names it never uses."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def getter(namespace: dict[str, Any], where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for the package whose globals are ``namespace``: a name of ``where``
    (name → the module defining it) is imported from that module and kept in ``namespace``."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
