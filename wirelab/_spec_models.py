"""The experiment spec's models (``docs/spec.md``): ``[sweep]``, ``[base]`` (a trial spec whose page may
come from the grid and whose network may be a table), a range axis, the whole spec; the plan it expands
into; what the contract's schema says about protocols, shards and the trial fields' order; the dotted
paths a grid may set. Part of :mod:`wirelab.spec`, which is the public face of these names.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated, Any, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from wirelab import _contract as contract
from wirelab import _netprofile as netprofile
from wirelab._contract_models import TrialSpecFields, TrialSpecOwnFields
from wirelab.errors import ProfileError

__all__ = [
    "FIELDS_SCHEMA",
    "FIELD_PATHS",
    "GRID_PATHS",
    "MAX_SHARDS",
    "MAX_WORKER_REPEATS",
    "PROTOCOLS",
    "SHARD_MODES",
    "TRIAL_FIELDS",
    "TRIAL_SCHEMA",
    "BaseTrial",
    "ExperimentSpec",
    "NetworkValue",
    "Plan",
    "PlannedTrial",
    "RangeSpec",
    "SweepInfo",
    "TrialSpec",
    "experiment_json_schema",
    "model_paths",
    "show_value",
    "submodel",
]


TRIAL_SCHEMA = contract.load_schema("trial-spec")
FIELDS_SCHEMA = TRIAL_SCHEMA["$defs"]["fields"]

#: the contract's protocols, in its order (the schema's enum)
PROTOCOLS: tuple[str, ...] = tuple(FIELDS_SCHEMA["properties"]["protocols"]["items"]["enum"])
SHARD_MODES: tuple[str, ...] = tuple(FIELDS_SCHEMA["properties"]["shard_mode"]["enum"])
#: The most origins a page may be sharded over; ``shards = 0`` means one per top-level-domain group
#: (``shard_mode = "tld"``) or per domain (``"domain"``), as many as the page has.
MAX_SHARDS: int = FIELDS_SCHEMA["properties"]["shards"]["maximum"]
MAX_WORKER_REPEATS = 100  #: [sweep] repeat_on_each_worker: at most this many trials per worker


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, validate_default=True)


# The trial spec's knobs are the generated models of the contract's schema (wirelab/_contract_models.py,
# `python -m wirelab._codegen`): ServerConfig, ClientConfig, CaptureConfig and the implementation
# tables. What pydantic cannot say (write_chunk_bytes' gap, protocols listed twice, shards = 0 with
# round-robin) the schema says, and resolve_trial and the grid's value checks ask it.
_TrialFields = TrialSpecFields


class TrialSpec(TrialSpecFields, TrialSpecOwnFields):
    """One trial as the engine receives it (``schemas/trial-spec.schema.json``)."""

    @field_validator("network")
    @classmethod
    def _profile(cls, v: str) -> str:
        try:
            netprofile.parse(v)
        except ProfileError as e:
            raise ValueError(str(e)) from None
        return v


#: Trial spec fields in the order of docs/trial-contract.md (and of every dumped spec): the schema's.
TRIAL_FIELDS: tuple[str, ...] = tuple(FIELDS_SCHEMA["properties"])

NetworkValue = str | int | float


class BaseTrial(_TrialFields):
    """``[base]``: a trial spec whose ``page`` may come from the grid and whose ``network`` may be a table."""

    page: Annotated[str | None, *TrialSpecOwnFields.model_fields["page"].metadata] = Field(
        None, description="as in the trial spec; required here or in the grid"
    )
    network: str | dict[str, NetworkValue] = Field(
        "native",
        description="a profile string, or a table of profile keys ({rtt = '150ms', bw = '1mbit'}) "
        "with an optional 'preset'",
    )


class SweepInfo(_Model):
    """``[sweep]``: what the experiment is called."""

    name: str = Field(
        pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$",
        description="names the sweep in the database and its results directory",
    )
    description: str = Field("", description="free text shown with the results")
    repeat_on_each_worker: int = Field(
        0,
        ge=0,
        le=MAX_WORKER_REPEATS,
        description="on a cluster (--cluster): also run the first configuration this many times on every "
        "worker, so the report can compare the baseline protocol's ToW across workers "
        "(docs/distributed.md); ignored on one machine",
    )
    thresholds: list[str] = Field(
        default_factory=list,
        max_length=100,
        description='budgets checked after the run on the sweep\'s loads, e.g. "h3.lcp_p75_ms < 2500" or '
        '"h2.tow_median_ms < 0.9 * h1s.tow_median_ms" (docs/spec.md, docs/vitals.md); a failed one makes '
        "wirelab run exit 1",
    )


class RangeSpec(_Model):
    """A grid axis written as a range: arithmetic (``step``) or geometric (``factor``), both ends included."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)
    from_: NetworkValue = Field(alias="from", description="first value")
    to: NetworkValue = Field(description="last value (included when the steps land on it)")
    step: NetworkValue | None = Field(None, description="increment, in the field's units")
    factor: float | int | None = Field(None, description="multiplier (> 1) for a geometric range")


class ExperimentSpec(_Model):
    """A whole experiment spec file."""

    sweep: SweepInfo
    base: BaseTrial = Field(default_factory=BaseTrial)
    grid: dict[str, Any] = Field(
        default_factory=dict,
        description="axes: dotted base-field paths → list of values or a range; [[grid.zip]] groups "
        "axes that move together",
    )


@dataclasses.dataclass(frozen=True)
class PlannedTrial:
    """One configuration of a sweep."""

    id: str  #: stable id: a hash of the resolved spec without ids (``config_id``)
    index: int  #: position in the plan (0-based)
    params: dict[str, Any]  #: grid coordinates: dotted path → value as written or generated
    spec: dict[str, Any]  #: the complete trial spec, ``trial_id`` = ``id``

    @property
    def loads(self) -> int:
        return len(self.spec["protocols"]) * self.spec["repetitions"]

    @property
    def label(self) -> str:
        """``network.rtt=20ms page=twitter`` (or the page alone when there is no grid)."""
        if not self.params:
            return f"page={self.spec['page']}"
        return " ".join(f"{k}={show_value(v)}" for k, v in self.params.items())


@dataclasses.dataclass(frozen=True)
class Plan:
    """An expanded experiment spec."""

    name: str
    description: str
    spec_hash: str  #: hash of the set of resolved trial specs: same hash = same experiment
    trials: tuple[PlannedTrial, ...]
    spec: dict[str, Any]  #: the validated experiment spec (JSON-compatible)
    source: str = ""  #: the TOML text it came from, when it came from a file

    @property
    def loads(self) -> int:
        return sum(t.loads for t in self.trials)

    @property
    def axes(self) -> list[str]:
        return list(self.trials[0].params) if self.trials else []


def show_value(value: Any) -> str:
    """A grid value as labels show it: a string as it is, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))


def submodel(info: Any) -> type[BaseModel] | None:
    """The model a field holds (``ServerConfig``, or ``ApacheConfig`` of ``ApacheConfig | None``), if any."""
    for candidate in (info.annotation, *get_args(info.annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def model_paths(model: type[BaseModel] | None = None, prefix: str = "") -> dict[str, Any]:
    """Dotted path → pydantic FieldInfo, for every field a grid may set (not contract/trial_id), through
    nested tables (``server.apache.mpm``)."""
    paths: dict[str, Any] = {}
    for name, info in (model or BaseTrial).model_fields.items():
        sub = submodel(info)
        if sub is not None and name != "network":
            paths.update(model_paths(sub, f"{prefix}{name}."))
        else:
            paths[f"{prefix}{name}"] = info
    return paths


FIELD_PATHS = model_paths()
_NETWORK_PATHS = {f"network.{k}" for k in (*netprofile.KEYS, "preset")}
GRID_PATHS: tuple[str, ...] = (*FIELD_PATHS, *sorted(_NETWORK_PATHS))


def experiment_json_schema() -> dict[str, Any]:
    """JSON Schema of an experiment spec (``wirelab spec schema``)."""
    schema = ExperimentSpec.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "wirelab experiment spec"
    schema["description"] = (
        "An experiment: [sweep] names it, [base] is a trial spec (docs/trial-contract.md) whose network may "
        "be a table of profile keys, [grid] maps dotted base-field paths to lists or ranges; [[grid.zip]] "
        "groups axes that move together. See docs/spec.md."
    )
    schema["properties"]["grid"] = {
        "type": "object",
        "description": ExperimentSpec.model_fields["grid"].description,
        "properties": {
            "zip": {
                "type": "array",
                "items": {"type": "object", "additionalProperties": {"$ref": "#/$defs/GridAxis"}},
            }
        },
        "additionalProperties": {"$ref": "#/$defs/GridAxis"},
        "propertyNames": {"enum": [*GRID_PATHS, "zip", "server", "client", "capture", "network"]},
    }
    schema.setdefault("$defs", {})["GridAxis"] = {
        "anyOf": [
            {"type": "array", "minItems": 1, "description": "the axis' values"},
            {"$ref": "#/$defs/RangeSpec"},
            {"type": "object", "description": "nested table: dotted paths written as TOML tables"},
        ]
    }
    return schema
