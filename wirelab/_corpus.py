"""Generated corpora as the control plane sees them (docs/pages.md, "Generated corpora"): names only.

The engine owns the page model, the profiles and the generator; a corpus page is named so that the
engine builds it from the name alone (``web200:17``, ``gen:PROFILE:SEED:COUNT:INDEX``). This module
knows the named corpora's sizes from ``wirelab-engine facts`` (:mod:`wirelab._facts`), expands a grid
value naming a corpus into its pages (all of them, or a seeded sample), and tells a corpus page's
corpus and index from its name — never a distribution.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from wirelab import _facts
from wirelab.errors import SpecError

__all__ = [
    "CORPUS_PREFIX",
    "CorpusRef",
    "corpus_of",
    "expand_page_value",
    "is_corpus_value",
    "resolve_corpus",
    "sample_indices",
]

#: A page axis value ``corpus:NAME`` stands for every page of the corpus NAME.
CORPUS_PREFIX = "corpus:"

_GEN_CORPUS = re.compile(r"^gen:([a-z0-9.-]+):([0-9]+):([0-9]+)$")
_NAMED_PAGE = re.compile(r"^([a-z][a-z0-9-]*):([0-9]+)$")
_GEN_PAGE = re.compile(r"^(gen:[a-z0-9.-]+:[0-9]+:[0-9]+):([0-9]+)$")
_MAX_PAGES = 100_000  # the engine's page.MaxCorpusPages


class CorpusRef:
    """A generated corpus by name: a named corpus (``web200``) or ``gen:PROFILE:SEED:COUNT``."""

    def __init__(self, name: str, profile: str, seed: int, count: int) -> None:
        self.name, self.profile, self.seed, self.count = name, profile, seed, count

    def page(self, index: int) -> str:
        """The name of page ``index`` (1-based)."""
        return f"{self.name}:{index}"

    def __repr__(self) -> str:
        return f"CorpusRef({self.name!r}, {self.profile!r}, seed={self.seed}, count={self.count})"


def resolve_corpus(name: str, where: str = "corpus") -> CorpusRef:
    """The corpus ``name`` names, or a :class:`SpecError` at ``where`` listing what is allowed."""
    named = _facts.generated_corpora()
    if name in named:
        c = named[name]
        return CorpusRef(name, c.profile, c.seed, c.count)
    m = _GEN_CORPUS.match(name) if isinstance(name, str) else None
    if m:
        profile, seed, count = m.group(1), int(m.group(2)), int(m.group(3))
        if profile not in _facts.page_profiles():
            raise SpecError(
                f"{where}: {name!r} names the profile {profile!r}; "
                f"profiles: {', '.join(_facts.page_profiles())}",
                path=where,
                value=name,
            )
        if not 1 <= count <= _MAX_PAGES or seed > 2**53 - 1:
            raise SpecError(
                f"{where}: {name!r}: a corpus has 1–{_MAX_PAGES} pages and a seed below 2^53",
                path=where,
                value=name,
            )
        return CorpusRef(name, profile, seed, count)
    raise SpecError(
        f"{where}: {name!r} is not a generated corpus; corpora: {', '.join(named)} "
        "or gen:PROFILE:SEED:COUNT (docs/pages.md)",
        path=where,
        value=name,
    )


def sample_indices(corpus: CorpusRef, size: int, seed: int) -> list[int]:
    """A seeded sample of ``size`` page indices (1-based, ascending): the pages whose
    sha256(corpus, seed, index) are smallest — the same sample in any language and version."""

    def key(i: int) -> bytes:
        return hashlib.sha256(f"wirelab sample v1\0{corpus.name}\0{seed}\0{i}".encode()).digest()

    return sorted(sorted(range(1, corpus.count + 1), key=key)[:size])


def is_corpus_value(value: Any) -> bool:
    """Whether a page axis value stands for a corpus (``"corpus:web200"`` or a table with ``corpus``)."""
    return (isinstance(value, str) and value.startswith(CORPUS_PREFIX)) or (
        isinstance(value, Mapping) and "corpus" in value
    )


def expand_page_value(value: Any, where: str) -> list[Any]:
    """The pages a page axis value stands for: ``"corpus:web200"`` → every page, ``{corpus = "web200",
    sample = 50, seed = 1}`` → a seeded sample; any other value is itself."""
    if isinstance(value, str) and value.startswith(CORPUS_PREFIX):
        corpus = resolve_corpus(value[len(CORPUS_PREFIX) :], where)
        return [corpus.page(i) for i in range(1, corpus.count + 1)]
    if not isinstance(value, Mapping) or "corpus" not in value:
        return [value]
    unknown = sorted(set(value) - {"corpus", "sample", "seed"})
    if unknown:
        raise SpecError(
            f"{where}.{unknown[0]}: unknown key; a corpus value has corpus, sample and seed",
            path=f"{where}.{unknown[0]}",
            value=unknown[0],
        )
    name = value["corpus"]
    if not isinstance(name, str):
        raise SpecError(f"{where}.corpus: {name!r} is not a corpus name", path=f"{where}.corpus", value=name)
    corpus = resolve_corpus(name, f"{where}.corpus")
    sample, seed = value.get("sample", corpus.count), value.get("seed", 1)
    for key, v, low, high in (("sample", sample, 1, corpus.count), ("seed", seed, 0, 2**63 - 1)):
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
            raise SpecError(
                f"{where}.{key}: {v!r} must be an integer {low}–{high}"
                + (f" (the corpus {name} has {corpus.count} pages)" if key == "sample" else ""),
                path=f"{where}.{key}",
                value=v,
            )
    return [corpus.page(i) for i in sample_indices(corpus, sample, seed)]


def corpus_of(page: str) -> tuple[str, int] | None:
    """(corpus, index) of a generated corpus page's name (``web200:17`` → ``("web200", 17)``), else None."""
    if not isinstance(page, str):
        return None
    m = _GEN_PAGE.match(page)
    if m:
        return m.group(1), int(m.group(2))
    m = _NAMED_PAGE.match(page)
    if m and m.group(1) in _facts.generated_corpora():
        return m.group(1), int(m.group(2))
    return None
