"""The parts a predicted load time is split into: the decomposition's vocabulary (issue 27, "Why a
protocol wins"). Its one owner is the engine's ``why.Defs``, exported by ``wirelab-engine facts``
into ``wirelab/_engine_facts.json`` (``make facts``) and read here through
:func:`wirelab._facts.why_parts` — so a prediction's parts and a load record's ``why_*`` columns
carry the same keys in the same order. A part the simulation names that the engine drops fails at
import (``_sim``'s index lookups), not silently."""

from __future__ import annotations

from wirelab._facts import why_parts

__all__ = ["PARTS"]

#: The decomposition's keys without the ``_ms`` suffix (``setup``, ``queueing`` …), in its order.
PARTS: tuple[str, ...] = tuple(p.key.removesuffix("_ms") for p in why_parts())
