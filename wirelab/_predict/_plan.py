"""A load as a sequence of steps: what the loader does, in the order it does it, for one page and mode.

A **step** is a download (a request for one object) or a computation (replay's parse and evaluate
activities, on one main thread). Each step waits for earlier steps — their completion, or a
download's first body bytes — and a download names its origin. The order is the loader's issue order
as far as it does not depend on timing: a flat load requests the root, then everything the root
references at once (object order), then what stylesheets and frames add; ``objects`` requests every
object at once; a replay follows the page's graph in topological order.

Plans of many configurations are padded into one :class:`Batch` (one row per step, one column per
configuration), so the simulation (:mod:`._sim`) runs every configuration of a batch at once, pages
and protocols mixed.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from wirelab._predict._config import Config
from wirelab._predict._pages import PageFacts

__all__ = ["Batch", "Plan", "batch", "plan_of"]


@dataclasses.dataclass(frozen=True)
class Plan:
    """The steps of one page in one mode (independent of the network and protocol)."""

    download: np.ndarray  #: bool per step
    obj: np.ndarray  #: object index (downloads; -1 for computations)
    size: np.ndarray  #: body bytes (downloads)
    origin: np.ndarray  #: origin index (downloads)
    duration: np.ndarray  #: computation seconds before compute_scale
    deps: np.ndarray  #: (steps, D) earlier step indexes, -1 = none
    first_chunk: np.ndarray  #: (steps, D) the dependency waits only for first bytes
    origins: int

    @property
    def steps(self) -> int:
        return len(self.download)


def _topological(n: int, deps: list[list[int]]) -> list[int]:
    """Kahn's order, ties by index (the graph is acyclic: the engine validated it)."""
    import heapq

    indegree = [len(set(d)) for d in deps]
    children: list[list[int]] = [[] for _ in range(n)]
    for i, d in enumerate(deps):
        for j in set(d):
            children[j].append(i)
    ready = [i for i in range(n) if indegree[i] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for c in children[i]:
            indegree[c] -= 1
            if indegree[c] == 0:
                heapq.heappush(ready, c)
    return order


_PLANS: dict[tuple[int, str], Plan] = {}


def plan_of(facts: PageFacts, mode: str) -> Plan:
    """The plan of ``facts`` loaded in ``mode`` (flat, objects, replay), made once per page object."""
    key = (id(facts), mode)
    if key not in _PLANS:
        _PLANS[key] = _make_plan(facts, mode)
    return _PLANS[key]


def _make_plan(facts: PageFacts, mode: str) -> Plan:
    rows: list[tuple[bool, int, float, list[tuple[int, bool]]]] = []  # download, object, duration, deps
    if mode == "replay":
        acts = facts.activities
        order = _topological(len(acts), [list(a.deps) for a in acts])
        position = {a: i for i, a in enumerate(order)}
        for a in order:
            act = acts[a]
            deps = [(position[d], fc) for d, fc in zip(act.deps, act.first_chunk, strict=True)]
            rows.append((act.download, act.object, act.duration_ms / 1000, deps))
    elif mode == "objects":
        rows = [(True, i, 0.0, []) for i in range(facts.objects)]
    else:  # flat: breadth first over the documents, as the engine's flat planner finds them
        step_of = {0: 0}
        rows.append((True, 0, 0.0, []))
        level = [0]
        while level:
            nxt = []
            for doc in level:
                for j in range(facts.objects):
                    if facts.found_by[j] == doc and j not in step_of:
                        step_of[j] = len(rows)
                        rows.append((True, j, 0.0, [(step_of[doc], False)]))
                        nxt.append(j)
            level = nxt
    width = max(1, max(len(r[3]) for r in rows))
    dep_index = np.full((len(rows), width), -1, dtype=np.int64)
    first = np.zeros((len(rows), width), dtype=bool)
    for i, r in enumerate(rows):
        for k, (d, fc) in enumerate(r[3]):
            dep_index[i, k], first[i, k] = d, fc
    obj = np.array([r[1] if r[0] else -1 for r in rows], dtype=np.int64)
    size = np.array([facts.size[r[1]] if r[0] else 0 for r in rows], dtype=np.float64)
    origin = np.array([facts.origin[r[1]] if r[0] else 0 for r in rows], dtype=np.int64)
    return Plan(
        download=np.array([r[0] for r in rows], dtype=bool),
        obj=obj,
        size=size,
        origin=origin,
        duration=np.array([r[2] for r in rows], dtype=np.float64),
        deps=dep_index,
        first_chunk=first,
        origins=facts.origins,
    )


@dataclasses.dataclass(frozen=True)
class Pools:
    """What a plan's connection pools are for one protocol family (per step and per origin)."""

    first_of_origin: np.ndarray  #: bool per step: the origin's first download
    stream_dep: np.ndarray  #: per step: the step whose completion frees a stream (-1: none)
    slot_base: np.ndarray  #: per origin: its first connection slot
    slot_count: np.ndarray  #: per origin: its connection slots

    @property
    def slots(self) -> int:
        return int(self.slot_count.sum())


_POOLS: dict[tuple[int, bool, int, int], Pools] = {}


def pools_of(plan: Plan, multiplexed: bool, max_conns: int, max_streams: int) -> Pools:
    """The pools of ``plan``: HTTP/1.x up to ``max_conns`` connections per origin (as many as it has
    downloads), h2/h3 one with ``max_streams`` streams."""
    key = (id(plan), multiplexed, max_conns if not multiplexed else 0, max_streams if multiplexed else 0)
    if key in _POOLS:
        return _POOLS[key]
    requests = np.bincount(plan.origin[plan.download], minlength=plan.origins)
    per = np.maximum(np.minimum(requests, 1 if multiplexed else max_conns), 1)
    first_of = np.zeros(plan.steps, dtype=bool)
    stream_dep = np.full(plan.steps, -1, dtype=np.int64)
    seen: set[int] = set()
    by_origin: dict[int, list[int]] = {}
    for i in np.flatnonzero(plan.download):
        o = int(plan.origin[i])
        if o not in seen:
            seen.add(o)
            first_of[i] = True
        if multiplexed:
            queue = by_origin.setdefault(o, [])
            if len(queue) >= max_streams:
                stream_dep[i] = queue[len(queue) - max_streams]
            queue.append(int(i))
    out = Pools(first_of, stream_dep, np.concatenate(([0], np.cumsum(per)[:-1])), per)
    _POOLS[key] = out
    return out


def _one_plan(configs: list[Config], key: tuple, members: list[int], p: Plan) -> Batch:
    """The batch of configurations that share one plan, pools and compute scale (``batch``'s key):
    every array the plan's column broadcast to N columns (no copies)."""
    _, _, mux, max_conns, max_streams, compute_scale = key
    n = len(configs)
    pools = pools_of(p, mux, max_conns, max_streams)

    def wide(a: np.ndarray) -> np.ndarray:
        return np.broadcast_to(a[:, None], (a.shape[0], n, *a.shape[1:]))

    return Batch(
        configs=configs,
        kind=wide(np.where(p.download, 0, 1)),
        size=wide(p.size),
        origin=wide(p.origin),
        duration=wide(p.duration * compute_scale),
        deps=wide(p.deps),
        first_chunk=wide(p.first_chunk),
        first_of_origin=wide(pools.first_of_origin),
        stream_dep=wide(pools.stream_dep),
        slot_base=wide(pools.slot_base),
        slot_count=wide(pools.slot_count),
        slots=max(1, pools.slots),
        origins=p.origins,
        steps_of=np.full(n, p.steps, dtype=np.int64),
        one_plan=True,
    )


@dataclasses.dataclass
class Batch:
    """Plans of N configurations padded to one shape: arrays are (steps, N) unless said (read-only:
    a batch of one plan broadcasts the plan's columns)."""

    configs: list[Config]
    kind: np.ndarray  #: 0 download, 1 computation, -1 padding
    size: np.ndarray
    origin: np.ndarray
    duration: np.ndarray  #: seconds, compute_scale applied
    deps: np.ndarray  #: (steps, N, D)
    first_chunk: np.ndarray  #: (steps, N, D)
    first_of_origin: np.ndarray  #: bool: the origin's first download (its lookup starts here)
    stream_dep: np.ndarray  #: multiplexed: the step whose completion frees a stream (-1: none)
    slot_base: np.ndarray  #: (O, N) first connection slot of each origin
    slot_count: np.ndarray  #: (O, N) connection slots of each origin (1 when multiplexed)
    slots: int  #: slots per configuration (the widest)
    origins: int
    steps_of: np.ndarray  #: (N,) real steps per configuration
    one_plan: bool = False  #: every configuration has the same plan, pools and compute scale

    @property
    def n(self) -> int:
        return len(self.configs)


def batch(configs: list[Config], facts: list[PageFacts]) -> Batch:
    """Pad the plans of ``configs`` (their pages' ``facts``, in order) into one batch."""
    n = len(configs)
    # configurations with the same plan, pools and compute scale have the same columns: one write
    # each (as a slice when they are neighbours: a batch of one page and protocol is one slice)
    groups: dict[tuple, list[int]] = {}
    for j, (c, f) in enumerate(zip(configs, facts, strict=True)):
        groups.setdefault(
            (id(f), c.mode, c.multiplexed, c.max_conns, c.max_streams, c.compute_scale), []
        ).append(j)
    plans = {key: plan_of(facts[members[0]], key[1]) for key, members in groups.items()}
    if len(groups) == 1:  # every column the same: read-only views of the plan's own rows
        return _one_plan(configs, *next(iter(groups.items())), next(iter(plans.values())))
    steps = max(p.steps for p in plans.values())
    width = max(p.deps.shape[1] for p in plans.values())
    origins = max(p.origins for p in plans.values())
    kind = np.full((steps, n), -1, dtype=np.int64)
    size = np.zeros((steps, n))
    origin = np.zeros((steps, n), dtype=np.int64)
    duration = np.zeros((steps, n))
    deps = np.full((steps, n, width), -1, dtype=np.int64)
    first = np.zeros((steps, n, width), dtype=bool)
    first_of = np.zeros((steps, n), dtype=bool)
    stream_dep = np.full((steps, n), -1, dtype=np.int64)
    base = np.zeros((origins, n), dtype=np.int64)
    count = np.zeros((origins, n), dtype=np.int64)
    steps_of = np.zeros(n, dtype=np.int64)
    slots = 1
    for key, members in groups.items():
        _, _, mux, max_conns, max_streams, compute_scale = key
        p = plans[key]
        contiguous = members[-1] - members[0] == len(members) - 1
        js = slice(members[0], members[-1] + 1) if contiguous else np.array(members)
        k, w = p.steps, p.deps.shape[1]
        kind[:k, js] = np.where(p.download, 0, 1)[:, None]
        size[:k, js], origin[:k, js] = p.size[:, None], p.origin[:, None]
        duration[:k, js] = (p.duration * compute_scale)[:, None]
        deps[:k, js, :w], first[:k, js, :w] = p.deps[:, None, :], p.first_chunk[:, None, :]
        pools = pools_of(p, mux, max_conns, max_streams)
        first_of[:k, js], stream_dep[:k, js] = pools.first_of_origin[:, None], pools.stream_dep[:, None]
        base[: p.origins, js], count[: p.origins, js] = pools.slot_base[:, None], pools.slot_count[:, None]
        steps_of[js] = k
        slots = max(slots, pools.slots)
    return Batch(
        configs=configs,
        kind=kind,
        size=size,
        origin=origin,
        duration=duration,
        deps=deps,
        first_chunk=first,
        first_of_origin=first_of,
        stream_dep=stream_dep,
        slot_base=base,
        slot_count=count,
        slots=slots,
        origins=origins,
        steps_of=steps_of,
        one_plan=len(groups) == 1,
    )
