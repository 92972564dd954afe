"""The parts a predicted load time is split into: the decomposition's vocabulary (issue 27, "Why a
protocol wins"), whose one owner will be the engine's ``why.Defs`` exported by ``wirelab-engine
facts``. Until that lands on main this module names the issue's list, in its order; then it reads
the facts instead (and this list goes)."""

from __future__ import annotations

__all__ = ["PARTS"]

#: Keys without the ``_ms`` suffix, in the decomposition's order.
PARTS: tuple[str, ...] = (
    "dns",
    "setup",
    "queueing",
    "server",
    "transfer",
    "gateway",
    "window",
    "recovery",
    "hol",
    "compute",
    "unattributed",
)
