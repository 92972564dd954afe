"""Display registry: one name, colour, marker and line style per protocol (and per HAR phase and per
ratio class), used by every figure and the HTML report so that a protocol looks the same everywhere
(like Pantheon's registry of schemes).

Colours are the Okabe–Ito palette (distinguishable with the common colour-vision deficiencies);
markers differ too, so figures survive greyscale printing.
"""

from __future__ import annotations

import dataclasses

__all__ = [
    "BUSY_FALLBACK",
    "BUSY_GAUGES",
    "CLASS_STYLES",
    "DISCIPLINE_LABELS",
    "DROP_CAUSES",
    "PART_COLOURS",
    "PHASE_ORDER",
    "PHASE_STYLES",
    "PROTOCOL_STYLES",
    "PhaseStyle",
    "ProtocolStyle",
    "discipline_label",
    "part_colour",
    "protocol_style",
]


@dataclasses.dataclass(frozen=True)
class ProtocolStyle:
    """How one protocol is drawn."""

    name: str  #: the protocol's id in specs and load records (``h2``)
    label: str  #: short display name (``HTTP/2``)
    description: str  #: one line: what it is
    colour: str  #: matplotlib/CSS colour
    marker: str  #: matplotlib marker


PROTOCOL_STYLES: dict[str, ProtocolStyle] = {
    s.name: s
    for s in (
        ProtocolStyle("h1", "HTTP/1.1", "HTTP/1.1 cleartext (study E's HTTP)", "#E69F00", "s"),
        ProtocolStyle("h1s", "HTTPS", "HTTP/1.1 over TLS (study E's HTTPS)", "#D55E00", "o"),
        ProtocolStyle("h2", "HTTP/2", "HTTP/2 over TLS (SPDY's standard successor)", "#0072B2", "^"),
        ProtocolStyle(
            "h2c", "HTTP/2 cleartext", "HTTP/2 without TLS (study W's SPDY client)", "#56B4E9", "v"
        ),
        ProtocolStyle("h3", "HTTP/3", "HTTP/3 over QUIC", "#009E73", "D"),
        ProtocolStyle("spdy3", "SPDY/3.1", "SPDY/3.1 over TLS", "#CC79A7", "P"),
    )
}

_FALLBACK_COLOURS = ("#000000", "#999999", "#F0E442", "#8C564B")


def protocol_style(name: str) -> ProtocolStyle:
    """The style of ``name``; an unknown protocol gets a neutral style (never an error)."""
    style = PROTOCOL_STYLES.get(name)
    if style is not None:
        return style
    colour = _FALLBACK_COLOURS[sum(map(ord, name)) % len(_FALLBACK_COLOURS)]
    return ProtocolStyle(name, name, name, colour, "x")


@dataclasses.dataclass(frozen=True)
class PhaseStyle:
    """How one HAR timing phase is drawn (stacked bars, waterfalls)."""

    name: str  #: column stem: ``connect`` is the TCP part only (HAR's connect minus ssl)
    label: str
    colour: str
    description: str


#: Phases in the order of a request's life; ``connect`` means the TCP (or QUIC) handshake without TLS.
PHASE_ORDER: tuple[str, ...] = ("blocked", "dns", "connect", "ssl", "send", "wait", "receive")

PHASE_STYLES: dict[str, PhaseStyle] = {
    s.name: s
    for s in (
        PhaseStyle("blocked", "blocked", "#BBBBBB", "queued in the client: no connection or stream free"),
        PhaseStyle("dns", "dns", "#44AA99", "DNS lookup across the emulated path"),
        PhaseStyle("connect", "connect", "#DDCC77", "TCP handshake (HAR connect minus ssl)"),
        PhaseStyle("ssl", "ssl", "#AA4499", "TLS handshake"),
        PhaseStyle("send", "send", "#88CCEE", "sending the request"),
        PhaseStyle("wait", "wait", "#CC6677", "waiting for the first byte of the response"),
        PhaseStyle("receive", "receive", "#332288", "receiving the response body"),
    )
}


#: The colour of each part of the load decomposition (``docs/why.md``), by its key; the parts, their
#: labels and their order are the engine's (``wirelab._facts.why_parts``). Related to the HAR phases'
#: where a part continues one (dns, setup ~ connect, queueing ~ blocked, server ~ wait, transfer ~
#: receive).
PART_COLOURS: dict[str, str] = {
    "dns_ms": "#44AA99",
    "setup_ms": "#DDCC77",
    "queueing_ms": "#BBBBBB",
    "server_ms": "#CC6677",
    "transfer_ms": "#332288",
    "gateway_ms": "#88CCEE",
    "window_ms": "#117733",
    "recovery_ms": "#882255",
    "hol_ms": "#AA4499",
    "compute_ms": "#999933",
    "unattributed_ms": "#E8E8E8",
}


def part_colour(key: str) -> str:
    """The colour of a decomposition part (a fallback for a part the engine added since)."""
    return PART_COLOURS.get(key, _FALLBACK_COLOURS[sum(map(ord, key)) % len(_FALLBACK_COLOURS)])


#: W's ratio classes (s = PLT_x / PLT_baseline): key → (label template, colour). ``{x}`` and ``{base}``
#: are filled with the protocols' display names.
CLASS_STYLES: dict[str, tuple[str, str]] = {
    "better": ("{x} better", "#0072B2"),
    "equal": ("equal", "#BBBBBB"),
    "worse": ("{base} better", "#D55E00"),
}


#: The gauge of each server under test that counts its busy workers (a load test's "busy workers vs
#: VUs", study N's thread starvation): the engine's name for it in a server sample's ``gauges``
#: (``wirelab-engine servers ls``, "status") → how to say it. Servers not listed have no such gauge:
#: their process tree's threads stand in.
BUSY_GAUGES: dict[str, tuple[str, str]] = {
    "apache": ("busy_workers", "busy workers (mod_status)"),
    "nginx": ("active", "active connections (stub_status)"),
    "caddy": ("requests_in_flight", "requests in flight (metrics)"),
}
#: What stands in for a busy gauge on servers without one.
BUSY_FALLBACK = ("threads", "threads of the server's processes")


#: Display names of the gateway's queue disciplines (the names of ``queue=NAME``), in the engine's
#: order (``wirelab-engine profiles ls``).
DISCIPLINE_LABELS: dict[str, str] = {
    "droptail": "drop-tail",
    "codel": "CoDel",
    "fq_codel": "FQ-CoDel",
    "pie": "PIE",
    "docsis_pie": "DOCSIS-PIE",
    "red": "RED",
}


def discipline_label(queue: str) -> str:
    """How a ``queue`` value is shown: ``256`` → ``drop-tail 256``, ``fq_codel`` → ``FQ-CoDel``,
    ``codel:2000`` → ``CoDel 2000``; anything else as it is."""
    text = str(queue)
    name, _, limit = text.partition(":")
    if name in DISCIPLINE_LABELS:
        return f"{DISCIPLINE_LABELS[name]} {limit}".strip()
    if text[:1].isdigit() or text == "infinite":
        return f"drop-tail {text}"
    return text


#: The gateway's drop causes (load columns) with their display names and hatches, in stacking order.
DROP_CAUSES: tuple[tuple[str, str, str], ...] = (
    ("drops_tail", "tail", ""),
    ("drops_aqm", "AQM", "////"),
    ("drops_overflow", "overflow", "...."),
)
