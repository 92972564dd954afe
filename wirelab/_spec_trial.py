"""One trial spec resolved: validated against the models and the contract's schema, every default
filled in, the network as a canonical profile string (from a string or a table plus the grid's
overrides), the server's implementation table chosen, and its id set. Part of :mod:`wirelab.spec`.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from pydantic import ValidationError

from wirelab import _contract as contract
from wirelab import _facts
from wirelab import _netprofile as netprofile
from wirelab._contract_models import ServerConfig
from wirelab._spec_errors import fmt, raise_problem, raise_validation
from wirelab._spec_hash import config_id
from wirelab._spec_models import FIELDS_SCHEMA, TRIAL_FIELDS, NetworkValue, TrialSpec, submodel
from wirelab.errors import SpecError

__all__ = [
    "check_shards",
    "network_string",
    "network_value_text",
    "resolve_trial",
    "select_impl_table",
    "shards_problem",
]


def network_value_text(value: NetworkValue) -> str:
    if isinstance(value, bool):  # switches (ecn, red_adaptive): true/false as 1/0
        return "1" if value else "0"
    if isinstance(value, float):
        return format(Decimal(repr(value)).normalize(), "f")
    return str(value)


def network_string(
    network: str | Mapping[str, NetworkValue],
    overlay: Mapping[str, NetworkValue] | None = None,
    *,
    path: str = "network",
) -> str:
    """A profile string from the spec form of ``network`` plus grid overrides of single keys.

    A table becomes ``preset`` first, then its keys in :data:`wirelab._netprofile.KEYS` order (both
    directions before one direction), so a per-direction key overrides a general one whatever the order
    in the file. Keys from ``overlay`` replace the table's. A string keeps its text and overlay items
    are appended after it. The result is validated (errors name ``path``).
    """
    overlay = dict(overlay or {})
    if isinstance(network, Mapping):
        table = {**network, **overlay}
        items: list[str] = []
        preset = table.pop("preset", None)
        if preset is not None:
            items.append(str(preset))
        for key in table:
            netprofile.check_key(key, path=path, also=("preset",))
        for key in netprofile.KEYS:
            if key in table:
                try:
                    text = network_value_text(table[key])
                except TypeError:
                    raise SpecError(
                        f'{path}.{key}: {fmt(table[key])} has the wrong type; use a string such as "150ms"',
                        path=f"{path}.{key}",
                        value=table[key],
                    ) from None
                items.append(f"{key}={text}")
        profile = ",".join(items) or "native"
    elif isinstance(network, str):
        text = network.strip()
        extra = network_string({}, overlay, path=path) if overlay else ""
        parts = [p for p in (text, extra) if p and not (p == "native" and extra)]
        profile = ",".join(parts) or "native"
    else:
        raise SpecError(
            f"{path}: {fmt(network)} is neither a profile string nor a table of profile keys",
            path=path,
            value=network,
        )
    netprofile.parse(profile, path=path)
    return profile


def shards_problem(shards: Any, shard_mode: Any) -> str | None:
    """Why ``shards`` and ``shard_mode`` do not go together (``None`` when they do): the schema's rule
    (its ``if``/``then``) and its words."""
    if (
        shards == 0
        and not isinstance(shards, bool)
        and shard_mode not in FIELDS_SCHEMA["then"]["properties"]["shard_mode"]["enum"]
    ):
        return str(FIELDS_SCHEMA["then"]["x-allowed"])
    return None


def check_shards(
    fields: Mapping[str, Any], shards_where: str, mode_where: str, *, mode_default: bool = False
) -> None:
    """The one check across two fields: shards = 0 needs shard_mode tld or domain."""
    shards, mode = fields.get("shards", 1), fields.get("shard_mode", "round-robin")
    problem = shards_problem(shards, mode)
    if problem is None:
        return
    mode_text = "the default" if mode_default else f"at {mode_where}"
    raise SpecError(
        f'{shards_where}: {problem} (shard_mode is "round-robin", {mode_text})',
        path=shards_where,
        value=shards,
    )


def apply_device(fields: dict[str, Any]) -> None:
    """A network profile that starts with a preset carrying a device (Lighthouse's, docs/vitals.md)
    gives the trial that device's ``client.cpu_slowdown`` and ``client.viewport``, each where the
    trial does not set it."""
    first = str(fields.get("network", "")).split(",", 1)[0].strip()
    preset = _facts.presets().get(first)
    if preset is None or preset.device is None:
        return
    client = dict(fields.get("client") or {})  # the base's table is shared by every trial
    for key, value in preset.device.items():
        client.setdefault(key, value)
    fields["client"] = client


def resolve_trial(fields: Mapping[str, Any], *, path: str = "trial") -> dict[str, Any]:
    """Validate a trial spec (as a dict) and return it with every default filled in and its id set
    (and the device of a network preset that carries one, :func:`apply_device`)."""
    fields = dict(fields)
    apply_device(fields)
    check_shards(fields, f"{path}.shards", f"{path}.shard_mode", mode_default="shard_mode" not in fields)
    try:
        spec = TrialSpec.model_validate(dict(fields))
    except ValidationError as e:
        raise_validation(e, path)
    dumped = spec.model_dump(mode="json")
    select_impl_table(dumped["server"])
    dumped["trial_id"] = config_id(dumped)
    resolved = {key: dumped[key] for key in TRIAL_FIELDS}
    found = contract.problem("trial-spec", resolved)
    if found is not None:
        raise_problem(found, path)
    return resolved


def select_impl_table(server: dict[str, Any]) -> None:
    """Keep the table of ``server.impl`` (filled with its defaults) and drop the other implementations'
    tables and an absent ``config``: a table configures its implementation only when that one runs."""
    for name, impl in ServerConfig.IMPL_TABLES.items():
        if impl != server["impl"]:
            server.pop(name, None)
        elif server.get(name) is None:
            table = submodel(ServerConfig.model_fields[name])
            assert table is not None
            server[name] = table().model_dump(mode="json")
    if server.get("config") is None:
        server.pop("config", None)
