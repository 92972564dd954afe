"""The model's constants: what physics and the implementations fix, and the few that are fitted.

Each constant has a default from its source (a kernel default, an RFC, quic-go's code, a measurement
in docs/metrics.md) and a range the fit may move it in. ``wirelab predict fit DB`` writes a file of
fitted values with their provenance (database, sweeps, loads, when, git sha, the fit's error);
the package ships one, ``constants.json``, which :func:`load` reads when no other is given.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from importlib import resources
from pathlib import Path
from typing import Any

from wirelab.errors import UsageError

__all__ = ["FITTED", "Constants", "load", "SHIPPED"]

SHIPPED = "constants.json"


@dataclasses.dataclass(frozen=True)
class Constants:
    """Every constant of the model (seconds, bytes, segments). The docstring of each is its source."""

    # --- the endpoints (fitted) ---
    server_s: float = 0.0008
    """The server's time per request, request received → first byte sent (built-in server)."""
    round_s_tcp: float = 0.0015
    """Endpoint time per round trip over TCP (process wake-ups, TLS crypto): 1–2 ms per RTT
    (docs/metrics.md, "What the checks measure")."""
    round_s_quic: float = 0.004
    """The same over QUIC (quic-go's user-space stack): 3–5 ms per RTT (docs/metrics.md)."""
    client_object_s: float = 0.0003
    """The loader's own time per object (parsing the response, bookkeeping)."""
    load_s: float = 0.0005
    """The loader's time around the first and last packets: PLT − ``tow_first_packet_ms`` is
    0.3–1 ms (docs/metrics.md)."""

    # --- bytes on the wire (fitted where the server's own choices decide them) ---
    tls_flight_bytes: float = 4000.0
    """The server's TLS handshake flight (ServerHello … Finished, the certificate chain)."""
    quic_flight_bytes: float = 4500.0
    """The server's QUIC handshake flight (Initial + Handshake packets)."""
    client_hello_bytes: float = 1800.0
    """The client's first flight (ClientHello with X25519MLKEM768's key share: two packets)."""
    request_bytes_h1: float = 260.0
    """An HTTP/1.1 request head on the wire (Go's request line and headers, TCP/IP headers)."""
    request_bytes_mux: float = 90.0
    """An h2/h3 request (HEADERS with HPACK/QPACK, frame and packet headers)."""
    response_head_h1: float = 180.0
    """An HTTP/1.1 response head (status line, Content-Type, Content-Length, Date, Server)."""
    response_head_mux: float = 45.0
    """An h2/h3 response's HEADERS (HPACK/QPACK) and frame headers."""
    wire_tcp: float = 1500 / 1448
    """IP bytes per payload byte over TCP: 1500-byte packets carrying 1448 (timestamps on)."""
    wire_quic: float = 1.045
    """The same for QUIC (quic-go's packets: short header, AEAD tag; bytes on the wire ÷ body bytes
    in docs/metrics.md's bandwidth check)."""
    mss: float = 1448.0
    """TCP payload per segment."""
    quic_payload: float = 1350.0
    """QUIC payload per packet (quic-go starts at 1280-byte datagrams and probes up to 1452)."""

    # --- congestion control (sources: Linux, RFC 9002, quic-go) ---
    quic_iw: float = 32.0
    """quic-go's initial congestion window, packets (``internal/congestion/cubic_sender.go``)."""
    beta: float = 0.7
    """CUBIC's multiplicative decrease (RFC 9438; quic-go's and Linux's)."""
    hystart_factor: float = 1.0
    """HyStart leaves slow start once the RTT grows by max(4 ms, min(16 ms, RTT/8)) (Linux
    ``tcp_cubic.c``, RFC 9406 for quic-go): the queue delay that ends slow start, × this."""
    ack_train: float = 0.5
    """Linux CUBIC's ACK-train test leaves slow start once a round's ACKs span half the minimum RTT:
    at this share of the bandwidth-delay product (``tcp_cubic.c``: delay_min / 2)."""
    queue_in_rounds: float = 1.0
    """How much of the standing queue each later round of a response waits for, as long as the
    other connections send while it is sent (docs/predict.md §9). A drop-tail queue is a FIFO: its
    physics is 1, not fitted; 0 leaves a response only the link's share (the baseline's view)."""
    window_shares: float = 1.0
    """How the flows through the bottleneck share it (docs/predict.md §9): 1, in proportion to
    their bytes in flight (a FIFO serves what arrives, and a window twice another's brings twice
    as much per round trip); 0, equal shares (processor sharing, the baseline's view). A drop-tail
    queue is a FIFO: 1, not fitted."""
    conserve: float = 1.0
    """Work conservation in issue order: a response ends no earlier than this share of the bytes
    issued before it and its own could cross the link since the load's first request."""
    ceiling_share: float = 1.0
    """How much of the other connections' data in flight counts against a slow start's ceiling
    (0: each connection may grow to the path's; 1: the flows share it as they stand when it starts)."""
    response_window: float = 2.06
    """The congestion-avoidance window at loss rate p is this/√p packets: CUBIC's TCP-friendly
    region with β = 0.7 (RFC 9438: √(3(1+β)/(2(1−β)))); Reno's is √1.5 ≈ 1.22 (Mathis et al.)."""
    detect_share: float = 1.0
    """A slow start's overflow is detected a round after it, when the flows sharing the bottleneck
    fill the pipe: each backs off (× β) from its window's share of this × (BDP + Q), if larger than
    the window at the overflow (0: from the window at the overflow)."""
    padhye_b: float = 2.0
    """Packets acknowledged per ACK in Padhye's throughput formula (delayed ACKs)."""

    # --- loss recovery (fitted multipliers on the RFCs' timers) ---
    fast_rtts: float = 1.25
    """A loss repaired by fast retransmit (3 duplicate ACKs, or RACK's RTT/4 reordering window)
    holds the data behind it this many RTTs."""
    tail_rtts: float = 2.0
    """A tail loss (nothing after it to trigger fast retransmit) waits for the tail-loss probe:
    2 × SRTT (RFC 8985), then the repair."""
    rto_min_s: float = 0.2
    """Linux's minimum retransmission timeout (RTO = SRTT + max(4·RTTVAR, 200 ms))."""
    burst_resend: float = 1.0
    """A burst's dropped tail goes again after the probe at the window that loss leaves (β·w): this
    many rounds per window of dropped packets (SACK recovery, RFC 6675; PRR, RFC 6937)."""
    syn_rto_s: float = 1.0
    """Linux's initial RTO for a SYN or SYN-ACK (TCP_TIMEOUT_INIT, RFC 6298)."""
    quic_pto_s: float = 0.2
    """quic-go's first probe timeout before any RTT sample: 2 × its 100 ms initial RTT."""
    dns_timeout_s: float = 5.0
    """The engine's resolver: 5 s per attempt (``client.DNSResolver``, glibc's default)."""
    recovery_scale: float = 1.0
    """Scales every recovery cost (fitted)."""

    def replace(self, **changes: float) -> Constants:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, float]:
        return dataclasses.asdict(self)


#: The constants the fit moves, with their ranges (the rest are physics or an implementation's).
FITTED: dict[str, tuple[float, float]] = {
    "server_s": (0.0, 0.02),
    "round_s_tcp": (0.0, 0.02),
    "round_s_quic": (0.0, 0.03),
    "client_object_s": (0.0, 0.005),
    "tls_flight_bytes": (1500.0, 9000.0),
    "quic_flight_bytes": (1500.0, 9000.0),
    "hystart_factor": (0.25, 4.0),
    "ceiling_share": (0.0, 1.0),
    "ack_train": (0.25, 2.0),
    "fast_rtts": (0.5, 4.0),
    "response_window": (0.8, 6.0),
    "tail_rtts": (1.0, 6.0),
    "burst_resend": (0.0, 4.0),
    "recovery_scale": (0.2, 5.0),
}


@dataclasses.dataclass(frozen=True)
class ConstantsFile:
    """A constants file: the values and where they came from."""

    constants: Constants
    baseline: Constants
    provenance: dict[str, Any]


def _parse(data: dict[str, Any], where: str) -> ConstantsFile:
    names = {f.name for f in dataclasses.fields(Constants)}
    for key in ("model", "baseline"):
        bad = sorted(set(data.get(key, {})) - names)
        if bad:
            raise UsageError(
                f"{where}: {key}.{bad[0]}: not a constant of the model; constants: {', '.join(sorted(names))}"
            )
    return ConstantsFile(
        Constants(**data.get("model", {})), Constants(**data.get("baseline", {})), data.get("provenance", {})
    )


@functools.cache
def _shipped() -> ConstantsFile:
    text = resources.files("wirelab._predict").joinpath(SHIPPED).read_text(encoding="utf-8")
    return _parse(json.loads(text), SHIPPED)


def load(path: str | Path | None = None) -> ConstantsFile:
    """The constants in ``path`` (a ``wirelab predict fit --out`` file), else the shipped ones."""
    if path is None:
        return _shipped()
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise UsageError(f"--constants: {path}: {e}") from None
    return _parse(data, str(path))
