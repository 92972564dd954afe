"""The gateway's queue in the model: one class per discipline, registered in :data:`DISCIPLINES`.

A discipline answers two questions for every configuration at once (arrays over configurations):

- :meth:`Discipline.delay` — how long a packet arriving now waits, given the bytes the load's senders
  hold in flight beyond the path's bandwidth-delay product (the standing queue they would build in
  an unbounded FIFO): handshakes, requests and each response's first bytes pay it.
- :meth:`Discipline.burst_drops` — whether a burst (a new response's initial window, sent at once by
  an unpaced sender) loses its tail on arrival: a drop-tail queue drops whatever exceeds it.
- :meth:`Discipline.signal` — the window (bytes in flight) at which a slow-starting sender meets the
  queue's congestion signal (a drop, or an ECN mark), and whether the signal is a loss. A drop-tail
  queue signals only when it overflows: a paced sender (quic-go) overflows it once its window exceeds
  the bandwidth-delay product plus the queue; an unpaced one (Linux TCP) sends two packets per
  acknowledgement in slow start, so each round's burst leaves half its window queued and the queue
  overflows at twice its size already. The sender may leave slow start before (HyStart, in
  :mod:`._sim`).

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

    def signal(self, capacity: Array, bdp: Array, paced: Array) -> tuple[Array, Array]:
        """(the slow-start window, bytes, at which the queue signals congestion; whether the
        signal is a drop)."""
        raise NotImplementedError

    def burst_loss(self, queued: Array, burst: Array, capacity: Array) -> Array:
        """The bytes of a burst of ``burst`` bytes arriving at once, ``queued`` bytes already
        waiting, that the queue drops at arrival (its tail)."""
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class DropTail(Discipline):
    """A FIFO that drops arrivals when full (the link model's ``DropTailQueue``): the standing
    queue is whatever the senders put there, up to its size; its only signal is an overflow."""

    name: str = "droptail"

    def delay(self, excess: Array, capacity: Array, rate: Array) -> Array:
        return np.minimum(np.maximum(excess, 0.0), capacity) / rate

    def signal(self, capacity: Array, bdp: Array, paced: Array) -> tuple[Array, Array]:
        full = bdp + capacity
        burst = 2 * (capacity + MTU)  # half of an unpaced slow-start round's window waits in the queue
        return np.where(paced, full, np.minimum(full, burst)), np.ones_like(capacity, dtype=bool)

    def burst_loss(self, queued: Array, burst: Array, capacity: Array) -> Array:
        # np.clip's bits (the excess is never −0: a difference of positive sizes), without its cost
        return np.minimum(np.maximum(queued + burst - capacity - MTU, 0.0), burst)


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
