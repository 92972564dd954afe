"""The gateway's queue in the model: one class per discipline, registered in :data:`DISCIPLINES`.

A discipline answers two questions for every configuration at once (arrays over configurations):

- :meth:`Discipline.delay` — how long a packet arriving now waits, given the bytes the load's senders
  hold in flight beyond the path's bandwidth-delay product (the standing queue they would build in
  an unbounded FIFO): handshakes, requests and each response's first bytes pay it.
- :meth:`Discipline.ceiling` — how far a slow-starting sender's window can grow past the path's
  bandwidth-delay product before the queue signals congestion (a drop, or an ECN mark), and whether
  that signal is a loss. A drop-tail queue signals only when it overflows; Linux's CUBIC leaves slow
  start earlier by itself once the queueing delay it measures exceeds HyStart's threshold
  (``hystart_bytes``), so it meets the overflow only in queues smaller than that.

The profile names the discipline (``queue=256``: drop-tail; ``queue=codel`` … once the link model has
them: issue 30); a discipline the model does not know yet is refused with one line.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from wirelab.errors import UsageError

__all__ = ["DISCIPLINES", "Discipline", "DropTail", "discipline_of"]

MTU = 1500

Array = np.ndarray


@dataclasses.dataclass(frozen=True)
class Discipline:
    """A queue discipline's behaviour as the model sees it (vectorised over configurations)."""

    #: The name in the profile's resolved form (``discipline.name``; drop-tail when absent).
    name: str = "droptail"

    def delay(self, excess: Array, capacity: Array, rate: Array) -> Array:
        """Seconds a packet arriving now waits: ``excess`` bytes beyond the pipe's bandwidth-delay
        product are in flight, the queue holds ``capacity`` bytes, the bottleneck serves ``rate``
        bytes/s."""
        raise NotImplementedError

    def ceiling(self, capacity: Array, hystart_bytes: Array) -> tuple[Array, Array]:
        """(bytes beyond the bandwidth-delay product a slow start reaches, whether reaching it
        costs a loss)."""
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class DropTail(Discipline):
    """A FIFO that drops arrivals when full (the link model's ``DropTailQueue``): the standing
    queue is whatever the senders put there, up to its size; slow start ends at HyStart's delay
    threshold, or at the overflow when the queue is smaller."""

    name: str = "droptail"

    def delay(self, excess: Array, capacity: Array, rate: Array) -> Array:
        return np.minimum(np.maximum(excess, 0.0), capacity) / rate

    def ceiling(self, capacity: Array, hystart_bytes: Array) -> tuple[Array, Array]:
        overflow = capacity < hystart_bytes
        return np.where(overflow, capacity, hystart_bytes), overflow


#: Every discipline the model knows, by the name the profile's resolved form gives it.
DISCIPLINES: dict[str, Discipline] = {d.name: d for d in (DropTail(),)}


def discipline_of(direction: dict[str, Any], field: str = "network.queue") -> Discipline:
    """The discipline of one direction of a resolved profile (drop-tail when it names none)."""
    name = (direction.get("discipline") or {}).get("name", "droptail")
    if name not in DISCIPLINES:
        raise UsageError(
            f'{field}: "{name}" is a queue discipline the prediction model does not model yet; '
            f"it models {', '.join(DISCIPLINES)}"
        )
    return DISCIPLINES[name]


def queue_bytes(direction: dict[str, Any]) -> float:
    """The queue's capacity in bytes: its packet limit in MTU-sized packets, its byte limit, the
    smaller of the two (infinite for ``queue=infinite``)."""
    q = direction["queue"]
    limits = [float(q["packets"]) * MTU] if q.get("packets") else []
    limits += [float(q["bytes"])] if q.get("bytes") else []
    return min(limits) if limits else float("inf")
