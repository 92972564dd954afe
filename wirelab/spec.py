"""Experiment specs: a base trial and a grid, expanded into trial specs (``docs/spec.md``).

An experiment spec is TOML::

    [sweep]
    name = "rtt"
    [base]
    page = "twitter"
    protocols = ["h1s", "h2"]
    network = { bw = "1mbit", rtt = "150ms" }
    [grid]
    "network.rtt" = { from = "10ms", to = "490ms", step = "40ms" }

:func:`load` reads and validates one and :func:`expand` turns it into a :class:`Plan`: one
:class:`PlannedTrial` per grid point, each a complete trial spec (valid against
``schemas/trial-spec.schema.json``) with a stable id derived from its content. Every error is a
:class:`~wirelab.errors.SpecError` whose one-line message names the dotted path, the value and what is
allowed.

This module is the public face; the work is done, one job each, by private modules:

- ``_spec_models``: the models (``ExperimentSpec`` and its tables, ``TrialSpec``, ``Plan``), the
  contract's facts they use and the paths a grid may set;
- ``_spec_trial``: one trial spec resolved (defaults, the network's profile string, its id);
- ``_spec_grid``: grid expansion (axes, ranges, zip groups, the product) and ``numeric_params``; the grid's
  machinery over a field table (``GridFields``, ``parse_grid``, ``grid_points``), which a load test's
  ``[load]`` shares (``wirelab._loadplan``);
- ``_spec_errors``: the one-line messages;
- ``_spec_hash``: configuration ids, plan hashes and a configuration's repeats on a cluster worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from wirelab._contract_models import CaptureConfig, ClientConfig, ServerConfig
from wirelab._spec_errors import parse_toml, raise_validation, refuse_non_finite
from wirelab._spec_grid import (
    MAX_TRIALS,
    TRIAL_GRID,
    GridFields,
    expand,
    grid_points,
    network_kind,
    numeric_params,
    parse_grid,
    with_internet,
)
from wirelab._spec_hash import config_id, worker_repeats
from wirelab._spec_models import (
    GRID_PATHS,
    MAX_SHARDS,
    MAX_WORKER_REPEATS,
    PROTOCOLS,
    SHARD_MODES,
    TRIAL_FIELDS,
    BaseTrial,
    ExperimentSpec,
    Plan,
    PlannedTrial,
    RangeSpec,
    SweepInfo,
    TrialSpec,
    experiment_json_schema,
)
from wirelab._spec_trial import network_string, resolve_trial
from wirelab._userpath import read_spec_text

__all__ = [
    "GRID_PATHS",
    "MAX_SHARDS",
    "MAX_TRIALS",
    "MAX_WORKER_REPEATS",
    "PROTOCOLS",
    "SHARD_MODES",
    "TRIAL_FIELDS",
    "TRIAL_GRID",
    "BaseTrial",
    "CaptureConfig",
    "ClientConfig",
    "ExperimentSpec",
    "GridFields",
    "Plan",
    "PlannedTrial",
    "RangeSpec",
    "ServerConfig",
    "SweepInfo",
    "TrialSpec",
    "config_id",
    "expand",
    "experiment_json_schema",
    "from_dict",
    "grid_points",
    "load",
    "loads",
    "network_kind",
    "network_string",
    "numeric_params",
    "parse_grid",
    "resolve_trial",
    "with_internet",
    "worker_repeats",
]


def loads(text: str, *, origin: str = "spec") -> Plan:
    """Parse, validate and expand TOML text. ``origin`` names the text in syntax errors."""
    return from_dict(parse_toml(text, origin), source=text)


def from_dict(data: Mapping[str, Any], *, source: str = "") -> Plan:
    """Validate and expand an experiment spec given as a dict (the TOML's structure)."""
    refuse_non_finite(data, "")
    try:
        spec = ExperimentSpec.model_validate(dict(data))
    except ValidationError as e:
        raise_validation(e, "")
    return expand(spec, source=source)


def load(path: str | Path) -> Plan:
    """Read, validate and expand an experiment spec file."""
    return loads(read_spec_text(path), origin=str(path))
