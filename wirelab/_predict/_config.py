"""A configuration as the model sees it: a trial spec and one protocol → the path, the knobs, the page.

Every value comes from where it is owned: the profile from the grammar's parser
(:mod:`wirelab._netprofile`), the spec's fields and defaults from the trial contract's schema
(:func:`wirelab._contract.apply_defaults`), the page from the engine (:mod:`._pages`). What the model
cannot represent is refused here, one line naming the field.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wirelab import _netprofile as netprofile
from wirelab._predict import _gateway as gateway
from wirelab.errors import ProfileError, UsageError

__all__ = ["Config", "configs_of", "PROTOCOL_FAMILY"]

#: Per protocol: (transport, TLS, multiplexed). spdy3 is modelled as h2 (one TLS connection per origin).
PROTOCOL_FAMILY: dict[str, tuple[str, bool, bool]] = {
    "h1": ("tcp", False, False),
    "h1s": ("tcp", True, False),
    "h2c": ("tcp", False, True),
    "h2": ("tcp", True, True),
    "spdy3": ("tcp", True, True),
    "h3": ("quic", True, True),
}


@dataclasses.dataclass(frozen=True)
class Config:
    """One (trial spec, protocol) pair, resolved to what the model computes with (SI units)."""

    protocol: str
    page: tuple[str, int, int, str]  #: (name, seed, shards, shard mode): the engine's page
    mode: str  #: flat, objects, replay
    rtt: float  #: round-trip propagation delay (s)
    delay_up: float
    delay_down: float
    origin_extra: tuple[tuple[int, float], ...]  #: (origin index, extra RTT s)
    rate_down: float  #: bytes/s (inf: unlimited)
    rate_up: float
    loss_down: float  #: mean loss probability per packet
    loss_up: float
    queue_down: float  #: bytes
    queue_up: float
    discipline: gateway.Discipline
    iw: int  #: TCP initial window, segments (TCP+ multiplied in)
    tcpplus: int
    cc: str
    tls_version: str
    keep_alive: bool
    max_conns: int  #: HTTP/1.x connections per origin
    max_streams: int  #: h2/h3 streams per connection
    dns_server: bool  #: the lookup crosses the path
    compute_scale: float
    server_impl: str
    client_impl: str

    @property
    def transport(self) -> str:
        return PROTOCOL_FAMILY[self.protocol][0]

    @property
    def tls(self) -> bool:
        return PROTOCOL_FAMILY[self.protocol][1]

    @property
    def multiplexed(self) -> bool:
        return PROTOCOL_FAMILY[self.protocol][2]


def _mean_loss(loss: Mapping[str, Any]) -> float:
    """The stationary loss probability of a resolved loss model (Gilbert–Elliott: the bad state's
    share times its loss, plus the good state's)."""
    model = loss.get("model", "none")
    if model == "bernoulli":
        return float(loss["p"])
    if model == "gilbert-elliott":
        p, r = float(loss["p"]), float(loss["r"])
        bad = p / (p + r) if p + r > 0 else 0.0
        return bad * float(loss.get("one_minus_h", 1.0)) + (1 - bad) * float(loss.get("one_minus_k", 0.0))
    return 0.0


def _trace_rate(path: str, field: str) -> float:
    """A mahimahi trace's mean rate in bytes/s: 1500-byte opportunities over the trace's period."""
    try:
        stamps = [int(line) for line in Path(path).read_text().split() if line.strip()]
    except (OSError, ValueError) as e:
        raise UsageError(f'{field}: "{path}" cannot be read as a mahimahi trace ({e})') from None
    if not stamps or stamps[-1] <= 0:
        raise UsageError(f'{field}: "{path}" has no delivery opportunities; a trace lists them in ms')
    return len(stamps) * 1500 / (stamps[-1] / 1000)


def _rate(direction: Mapping[str, Any], field: str) -> float:
    if direction.get("trace"):
        return _trace_rate(direction["trace"], field)
    bps = int(direction.get("rate_bps") or 0)
    return bps / 8 if bps else math.inf


def network(profile: str, field: str = "network") -> dict[str, Any]:
    """The resolved profile, or a one-line error naming ``field``."""
    try:
        return netprofile.parse(profile, path=field)
    except ProfileError as e:
        raise UsageError(str(e)) from None


def configs_of(
    spec: Mapping[str, Any], protocols: list[str] | None = None, engine: Any = None
) -> list[Config]:
    """The configurations of one trial spec (defaults applied), one per protocol. A server or loader
    other than the built-in ones is asked of the engine first (``trial --check``: does it serve, and
    load, each protocol?)."""
    from wirelab import _contract

    found = _contract.problem("trial-spec", {"contract": _contract.CONTRACT_VERSION, **spec})
    if found is not None:
        where = found.field.replace(".[", "[")
        if found.value is _contract.MISSING:
            raise UsageError(f"{where}: {found.allowed}")
        raise UsageError(f"{where}: {_contract.show(found.value)} is not allowed; {found.allowed}")
    spec = _contract.apply_defaults("trial-spec", dict(spec))
    page = spec["page"]
    if not isinstance(page, str) or not page:
        raise UsageError("page: required; a corpus, synthetic, generated or imported page")
    if page.startswith("url:"):
        raise UsageError(
            f"page: {page!r} is a live page; the model needs the page's objects, which only a load "
            "discovers — predict a corpus, synthetic, generated or imported page"
        )
    server, client = spec.get("server") or {}, spec.get("client") or {}
    if server.get("impl", "builtin") != "builtin" or client.get("impl", "engine") != "engine":
        if engine is None:
            from wirelab._engine import SubprocessEngine

            engine = SubprocessEngine()
        engine.check_trials([{**spec, "contract": _contract.CONTRACT_VERSION, "trial_id": "c" + "0" * 15}])
    if server.get("push", "none") != "none":
        raise UsageError(
            f'server.push: "{server["push"]}": the model does not predict server push yet; use none'
        )
    net = network(spec.get("network") or "native")
    up, down = net["up"], net["down"]
    tcpplus = int(net.get("tcpplus") or 0)
    iw = int(net.get("iw") or 0) or 10
    mode = client.get("mode", "flat")
    impl = client.get("impl", "engine")
    if impl == "chromium":
        mode = "replay"  # Chromium follows the page's graph and computes; the engine's replay is its model
    streams = int(server.get("max_concurrent_streams", 100)) or 100
    out = []
    for proto in protocols or spec["protocols"]:
        if proto not in PROTOCOL_FAMILY:
            raise UsageError(f'protocols: "{proto}" is not a protocol; use {", ".join(PROTOCOL_FAMILY)}')
        out.append(
            Config(
                protocol=proto,
                page=(
                    page,
                    int(spec.get("seed", 1)),
                    int(spec.get("shards", 1)),
                    spec.get("shard_mode", "round-robin"),
                ),
                mode=mode,
                rtt=(up["delay_ns"] + down["delay_ns"]) / 1e9,
                delay_up=up["delay_ns"] / 1e9,
                delay_down=down["delay_ns"] / 1e9,
                origin_extra=tuple(
                    sorted((int(k) - 1, v / 1e9) for k, v in net["origin_extra_rtt_ns"].items())
                ),
                rate_down=_rate(down, "network.trace_down"),
                rate_up=_rate(up, "network.trace_up"),
                loss_down=_mean_loss(down["loss"]),
                loss_up=_mean_loss(up["loss"]),
                queue_down=gateway.queue_bytes(down),
                queue_up=gateway.queue_bytes(up),
                discipline=gateway.discipline_of(down),
                iw=iw * max(1, tcpplus),
                tcpplus=tcpplus,
                cc=net.get("cc", "cubic"),
                tls_version=str(server.get("tls_version", "1.3")),
                keep_alive=bool(server.get("keep_alive", True)),
                max_conns=int(client.get("max_connections_per_origin", 6)),
                max_streams=streams,
                dns_server=client.get("dns", "server") == "server",
                compute_scale=float(client.get("compute_scale", 1.0)),
                server_impl=server.get("impl", "builtin"),
                client_impl=impl,
            )
        )
    return out
