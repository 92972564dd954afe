"""Stable ids: a configuration's id is a hash of its resolved trial spec (the network as its resolved
form, so equivalent profile strings give the same id), a plan's hash one of the set of its ids — the same
experiment has the same hash, however its spec is written — and a configuration's repeats on a cluster
worker are named after the worker's. Part of :mod:`wirelab.spec`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from wirelab import _netprofile as netprofile
from wirelab._contract_models import CaptureConfig, ClientConfig, NginxConfig
from wirelab._spec_models import PlannedTrial

__all__ = ["canonical", "config_id", "plan_hash", "worker_repeats"]

# Trial-spec fields added after configurations were first stored, per section (a dotted path for a
# nested table): left out of the id at their default (the schema's, as the generated models hold it),
# so that a sweep stored before them keeps its ids and resumes without running again. A new field with
# a default joins its section here. (server.nginx's keepalive_requests is in the id: configurations
# have been stored with it since it came, and leaving it out now would change theirs.)
_ADDED_LATER: dict[str, tuple[type[Any], tuple[str, ...]]] = {
    "client": (ClientConfig, ("view", "h3", "cpu_slowdown", "viewport")),
    "capture": (CaptureConfig, ("screenshots",)),
    "server.nginx": (NginxConfig, ("keepalive_timeout_s", "reuseport", "open_file_cache")),
}


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def config_id(spec: Mapping[str, Any]) -> str:
    """Stable id of a configuration: hash of the resolved trial spec without ``trial_id``, with the
    network as its resolved object (so equivalent profile strings give the same id)."""
    # allow_internet is the command line's permission (--allow-internet), not part of what is measured.
    body = {k: v for k, v in spec.items() if k not in ("trial_id", "network_resolved", "allow_internet")}
    body["network"] = netprofile.parse(spec.get("network", "native"))
    # Keys added to the resolved form later are left out at their default, so that a configuration
    # keeps its id across versions (a sweep stored before them resumes without running again).
    network = body["network"]
    if network.get("tcpplus") == 0:
        del network["tcpplus"]
    if network.get("ecn") is False:
        del network["ecn"]
    for side in ("up", "down"):
        if network[side].get("discipline") == {"name": "droptail"}:
            del network[side]["discipline"]
    for path, (model, keys) in _ADDED_LATER.items():
        *outer, section = path.split(".")
        parent: Any = body
        for name in outer:  # copied on the way down: the caller's spec is never changed
            if not isinstance(parent.get(name), dict):
                parent = None
                break
            parent[name] = dict(parent[name])
            parent = parent[name]
        part = parent.get(section) if parent is not None else None
        if isinstance(part, dict):
            fields = model.model_fields
            parent[section] = {k: v for k, v in part.items() if not (k in keys and v == fields[k].default)}
    return "c" + hashlib.sha256(canonical(body).encode()).hexdigest()[:15]


def plan_hash(trial_ids: Iterable[str]) -> str:
    """The hash of a plan: of the set of its configurations' ids (order and spelling do not matter)."""
    return hashlib.sha256(canonical(sorted(trial_ids)).encode()).hexdigest()[:16]


def worker_repeats(trial: PlannedTrial, worker: str, k: int) -> list[PlannedTrial]:
    """``[sweep] repeat_on_each_worker = k`` on the cluster worker named ``worker``: ``k`` trials of the
    configuration ``trial``, ids ``<trial id>-w<8 hex of the worker's name>-<i>`` (stable per worker, so a
    rerun resumes them)."""
    tag = hashlib.sha256(worker.encode()).hexdigest()[:8]
    out = []
    for i in range(1, k + 1):
        trial_id = f"{trial.id}-w{tag}-{i}"
        out.append(dataclasses.replace(trial, id=trial_id, spec={**trial.spec, "trial_id": trial_id}))
    return out
