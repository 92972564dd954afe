"""The model: a batch of loads simulated step by step, every configuration at once (docs/predict.md).

For each step (:mod:`._plan`), in the loader's order, over arrays of configurations:

1. **ready**: the latest of the step's dependencies (a completion, or a download's first bytes);
2. a computation waits for the main thread and holds it for its duration;
3. a download waits for its origin's lookup (the first download of an origin starts it: one RTT),
   takes a connection — HTTP/1.x: the most recently idle of the origin's, else a new one while
   fewer than ``max_conns`` exist, else the first to become free; h2/h3: the origin's one, and a
   stream once fewer than ``max_streams`` are open — opening it first if needed (TCP: 1 RTT, TLS 1.3:
   +1, TLS 1.2: +2, QUIC: 1 RTT; each round trip through the gateway's standing queue, the server's
   flight serialised at the bottleneck, a lost handshake packet repaired by its timer);
4. the request crosses the uplink (a FIFO of request bytes), the server holds it ``server_s``;
5. the response leaves in rounds: the connection's congestion window (IW, or what earlier responses
   left it) doubles per round in slow start until the gateway's ceiling, +1 segment per round after
   (``_rounds``); with loss the first loss ends slow start after the data CSA's model expects before
   it, the rest flows at Padhye's throughput, and the first loss costs a fast retransmit or a
   timeout as Padhye's Q says (``_transfer``); the bytes also pass the bottleneck as a FIFO of work,
   so a response ends no earlier than the link could carry everything before it;
6. it completes one one-way delay after its last byte leaves the bottleneck, plus head-of-line
   blocking on TCP (h2: another stream's loss in the last window), plus the loader's own time.

The load's PLT is the last completion (plus the loader's start and end); ToW leaves out what precedes
the first request byte (the first lookup, and the first TCP handshake). With ``explain`` each step's
time is split into the decomposition's parts (:mod:`._vocab`) and the parts of the step that ends the
load are summed along its chain of dependencies.
"""

from __future__ import annotations

import dataclasses
import operator
import typing

import numpy as np

from wirelab._predict._config import PROTOCOL_FAMILY
from wirelab._predict._constants import Constants
from wirelab._predict._gateway import Discipline
from wirelab._predict._plan import Batch
from wirelab._predict._vocab import PARTS

__all__ = ["Result", "simulate"]

_P = {name: i for i, name in enumerate(PARTS)}
INF = np.inf


@dataclasses.dataclass
class Result:
    """Per configuration: PLT and ToW (s), and with ``explain`` the parts of PLT (s, :data:`PARTS` order)."""

    plt: np.ndarray
    tow: np.ndarray
    parts: np.ndarray | None


@dataclasses.dataclass
class _Path:
    """Per-configuration path and protocol constants, as arrays (the baseline's view applied)."""

    rtt: np.ndarray
    d_up: np.ndarray
    d_down: np.ndarray
    extra: np.ndarray  # (O, N) extra RTT per origin
    rate: np.ndarray  # bytes/s down
    rate_up: np.ndarray
    p: np.ndarray  # loss down
    p_up: np.ndarray
    queue: np.ndarray  # bytes
    quic: np.ndarray  # bool
    tls: np.ndarray
    tls12: np.ndarray
    mux: np.ndarray
    iw: np.ndarray  # packets
    pkt: np.ndarray  # payload bytes per packet
    wire: np.ndarray  # wire bytes per payload byte
    round_s: np.ndarray
    req: np.ndarray  # request bytes
    head: np.ndarray  # response head bytes
    keep_alive: np.ndarray
    dns: np.ndarray  # lookups cross the path
    ceil_bytes: np.ndarray  # the window (bytes in flight) at which slow start ends
    ceil_loss: np.ndarray  # ending it there costs a loss
    disciplines: list[tuple[Discipline, np.ndarray]]  # each discipline of the batch, its limited paths


_NUMBERS = (
    *("rtt", "rate_down", "loss_down", "queue_down", "iw"),
    *("delay_up", "delay_down", "rate_up", "loss_up"),
)
_numbers_of = operator.attrgetter(*_NUMBERS)
_flag_key = operator.attrgetter("protocol", "tls_version", "keep_alive", "dns_server")


def _flags(protocol: str, tls_version: str, keep_alive: bool, dns_server: bool) -> tuple[bool, ...]:
    """A configuration's flags: QUIC, TLS, TLS 1.2 over TCP, multiplexed, keep-alive, the lookup
    crosses the path."""
    transport, tls, mux = PROTOCOL_FAMILY[protocol]
    quic = transport == "quic"
    return (quic, tls, tls and tls_version == "1.2" and transport == "tcp", mux, keep_alive, dns_server)


def _path(b: Batch, k: Constants, baseline: bool) -> _Path:
    cs = b.configs
    # one pass over the configurations: each number a contiguous row, each flag a boolean row (the
    # flags once per distinct protocol, TLS version, keep-alive and lookup)
    num = np.array(list(map(_numbers_of, cs)), dtype=np.float64).reshape(len(cs), 9).T.copy()
    keys = list(map(_flag_key, cs))
    of_key = {key: _flags(*key) for key in set(keys)}
    flags = np.array([of_key[key] for key in keys], dtype=bool).reshape(len(cs), 6).T.copy()
    col = dict(zip(_NUMBERS, num, strict=True))
    is_quic, is_tls, is_tls12, is_mux, keep_alive, dns = flags
    quic = is_quic & (not baseline)
    rtt = col["rtt"]
    rate = col["rate_down"]
    extra = np.zeros((b.origins, b.n))
    for j, c in enumerate(cs):
        for o, e in c.origin_extra:
            if o < b.origins:
                extra[o, j] = e
    p = col["loss_down"] * (not baseline)
    queue = col["queue_down"]
    if baseline:
        queue = np.full(b.n, INF)  # Lantern: no gateway queue
    pkt_wire = np.where(quic, k.quic_payload * k.wire_quic, k.mss * k.wire_tcp)
    bdp = np.where(np.isfinite(rate), rate * rtt, INF)
    # the sender leaves slow start by itself: HyStart's delay test (Linux, RFC 9406 in quic-go) once
    # the queue delays it by max(4 ms, min(16 ms, RTT/8)); Linux's ACK-train test once a round's
    # acknowledgements (one per two segments: delayed ACKs), spaced closer than 2 ms, span half the
    # minimum RTT (a window of half the bandwidth-delay product, at least 16 segments)
    eta = np.maximum(0.004, np.minimum(0.016, rtt / 8)) * k.hystart_factor
    delay_exit = np.where(np.isfinite(rate), bdp + eta * rate, INF)
    train = ~quic & np.isfinite(rate) & (2 * pkt_wire / np.where(np.isfinite(rate), rate, 1.0) < 0.002)
    train_exit = np.where(train, np.maximum(16 * pkt_wire, k.ack_train * bdp), INF)
    sender_exit = np.minimum(delay_exit, train_exit)
    signal = np.full(b.n, INF)
    drop = np.zeros(b.n, dtype=bool)
    # each distinct discipline object once (hashing one costs more than its identity), then equal ones
    # merged, in order of first appearance
    objects: dict[int, int] = {}
    distinct: list[Discipline] = []
    for d in map(operator.attrgetter("discipline"), cs):
        if objects.setdefault(id(d), len(objects)) == len(distinct):
            distinct.append(d)
    kinds: dict[Discipline, int] = {}
    merged = np.array([kinds.setdefault(d, len(kinds)) for d in distinct], dtype=np.int64)
    kind = merged[np.array([objects[id(c.discipline)] for c in cs], dtype=np.int64)]
    disciplines = [(d, (kind == j) & np.isfinite(rate)) for d, j in kinds.items()]
    for d, sel in disciplines:
        if sel.any():
            signal[sel], drop[sel] = d.signal(queue[sel], bdp[sel], quic[sel])
    ceil_loss = drop & (signal < sender_exit)
    ceil_bytes = np.minimum(signal, sender_exit)
    if baseline:  # Lantern: the window grows to the bandwidth-delay product, nothing else
        ceil_bytes, ceil_loss = np.maximum(bdp, 1.0), np.zeros(b.n, dtype=bool)
    iw = np.where(quic, k.quic_iw, col["iw"])
    if baseline:
        iw = np.full(b.n, 10.0)
    return _Path(
        rtt=rtt,
        d_up=col["delay_up"],
        d_down=col["delay_down"],
        extra=extra,
        rate=rate,
        rate_up=col["rate_up"],
        p=p,
        p_up=col["loss_up"] * (not baseline),
        queue=queue,
        quic=quic,
        tls=is_tls | quic,
        tls12=is_tls12,
        mux=is_mux,
        iw=iw,
        pkt=np.where(quic, k.quic_payload, k.mss),
        wire=np.where(quic, k.wire_quic, k.wire_tcp),
        round_s=np.where(quic, k.round_s_quic, k.round_s_tcp),
        req=np.where(is_mux, k.request_bytes_mux, k.request_bytes_h1),
        head=np.where(is_mux, k.response_head_mux, k.response_head_h1),
        keep_alive=keep_alive,
        dns=dns,
        ceil_bytes=ceil_bytes,
        ceil_loss=ceil_loss,
        disciplines=disciplines,
    )


def _ss_rounds(
    w: np.ndarray, cap: np.ndarray, path: np.ndarray, *ns: np.ndarray, finite: bool = False
) -> list[np.ndarray]:
    """Rounds to send each n of ``ns`` packets in slow start from window w until the window reaches
    ``cap`` (the slow-start ceiling or the path's ``path`` packets per round, the smaller); then in
    congestion avoidance from there (+1 packet per round), delivering at most ``path`` per round
    (``finite``: every path is rate-limited, so every cap is finite and needs no mask)."""
    w = np.maximum(w, 1.0)
    cap = np.maximum(cap, w)
    r_cap = np.ceil(np.log2(cap / w))
    sent = w * (np.exp2(r_cap) - 1)  # r_cap is whole: exp2 gives 2.0**r_cap's bits, faster
    # (an unbounded cap leaves no packets for after: its stand-in is never taken)
    w_ca = cap if finite else np.where(np.isfinite(cap), cap, 1.0)
    path = np.maximum(path, cap)
    n = ns[0] if len(ns) == 1 else np.array(ns)  # every n at once (elementwise: the same bits)
    # (every cap finite: 1 ≤ w_ca ≤ path already, so _ca_start need not clamp it)
    start = _ca_start(w_ca, path, finite=finite, clamped=finite)
    (ca,) = _ca_rounds(w_ca, path, np.maximum(n - sent, 0.0), start=start)
    before = np.ceil(np.log2(n / w + 1))
    after = r_cap + ca
    out = np.maximum(np.where(n <= sent, before, after), 1.0)
    return [out] if len(ns) == 1 else list(out)


def _ca_start(
    w: np.ndarray, cap: np.ndarray, finite: bool = False, clamped: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What :func:`_ca_span`'s rounds from window w share whatever their n: the rounds until the
    window reaches the path, 2w − 1 and its square, and the packets those rounds carry (``finite``:
    every cap is finite, no mask; ``clamped``: 1 ≤ w ≤ cap already)."""
    if not clamped:
        w = np.minimum(np.maximum(w, 1.0), cap)
    grow = cap - w  # rounds until the window reaches the path
    b = 2 * w - 1
    upto = grow * w + grow * (grow - 1) / 2  # packets those rounds carry
    if not finite:
        upto = np.where(np.isfinite(cap), upto, INF)
    return grow, b, upto, b * b


def _ca_span(
    w: np.ndarray,
    cap: np.ndarray,
    n: np.ndarray,
    start: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Rounds (a real number) to send n packets in congestion avoidance from window w: the window
    grows one packet per round (the rounds carry w, w + 1, …) until it reaches the path's ``cap``
    packets per round, and the rounds carry ``cap`` from then on (``start``: :func:`_ca_start`'s
    terms of w and cap, when the caller has them)."""
    grow, b, upto, bb = _ca_start(w, cap) if start is None else start
    past = np.where(n > upto, grow + (n - np.minimum(upto, n)) / cap, 0.0)
    return np.where(n <= upto, (np.sqrt(bb + 8 * n) - b) / 2, past)


def _ca_rounds(
    w: np.ndarray,
    cap: np.ndarray,
    *ns: np.ndarray,
    start: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> list[np.ndarray]:
    """Rounds to send each n of ``ns`` packets in congestion avoidance from window w (``_ca_span``,
    whole rounds)."""
    start = _ca_start(w, cap) if start is None else start
    n = ns[0] if len(ns) == 1 else np.array(ns)  # every n at once (elementwise: the same bits)
    out = np.maximum(np.ceil(_ca_span(w, cap, n, start)), 1.0)
    return [out] if len(ns) == 1 else list(out)


def _padhye(
    p: np.ndarray, rtt: np.ndarray, rto: np.ndarray, wmax: np.ndarray, b: float, kw: float
) -> np.ndarray:
    """Padhye et al.'s throughput (packets/s) at loss rate p > 0, capped by wmax/rtt, with the
    congestion-avoidance window kw/√p of the sender's response function (Reno with delayed ACKs:
    √(3/2b); CUBIC in its TCP-friendly region, β = 0.7: √(3(1+β)/(2(1−β))) ≈ 2.06)."""
    q = np.maximum(p, 1e-9)
    denom = rtt * np.sqrt(q) / kw + rto * np.minimum(1.0, 3 * np.sqrt(3 * b * q / 8)) * q * (1 + 32 * q**2)
    return np.minimum(wmax / rtt, 1.0 / denom)


class _TimeoutShare:
    """Padhye's Q(p, ·) for fixed loss rates p (what depends on p alone computed once)."""

    def __init__(self, p: np.ndarray) -> None:
        self.q = np.clip(p, 1e-9, 0.999)
        self.q3 = (1 - self.q) ** 3
        self.a = 1 - self.q3
        self.keep = 1 - self.q

    def __call__(self, w: np.ndarray, need: np.ndarray | None = None) -> np.ndarray:
        """Q at windows w; with ``need``, only where it holds (elsewhere 1, a stand-in the caller
        multiplies by zero)."""
        w = np.maximum(w, 1.0)
        if SHORTCUTS:  # Q = 1 at w ≤ 3: the two pows only where w > 3 (elementwise: the same bits)
            small = w <= 3 if need is None else (w <= 3) | ~need
            few = int(small.sum())
            if few == w.shape[0]:
                return np.ones(few)
            if 2 * few >= w.shape[0]:  # gathering pays when at most half need the pows
                out = np.ones(w.shape[0])
                big = np.flatnonzero(~small)
                out[big] = self._q(w[big], self.q3[big], self.a[big], self.keep[big])
                return out
        return np.where(w <= 3, 1.0, self._q(w, self.q3, self.a, self.keep))

    @staticmethod
    def _q(w: np.ndarray, q3: np.ndarray, a: np.ndarray, keep: np.ndarray) -> np.ndarray:
        num = (1 + q3 * (1 - keep ** np.maximum(w - 3, 0))) * a
        return np.minimum(1.0, num / (1 - keep**w))


def _median_delay(costs: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The delay a typical (median) load suffers from rare events of several kinds, each kind with
    its cost and its expected count per load (rows), every event on the load's critical path.

    The load is as late as its costliest event. With the kinds sorted by cost, the chance that an
    event costing at least c_j happens is P_j = 1 − exp(−Σ_{i ≤ j} λ_i) (Poisson); a median load
    carries that cost when P_j ≥ ½. The step is smoothed with w(P) = 3P² − 2P³ — the chance that the
    median of three loads has the event — so the delay is Σ_j (c_j − c_{j+1}) · w(P_j)."""
    order = np.argsort(-costs, axis=0)
    c = np.take_along_axis(costs, order, axis=0)
    lam = np.cumsum(np.take_along_axis(counts, order, axis=0), axis=0)
    prob = 1 - np.exp(-lam)
    w = 3 * prob**2 - 2 * prob**3
    steps = c - np.vstack([c[1:], np.zeros((1, c.shape[1]))])
    return (steps * w).sum(axis=0)


def _rowsum(a: np.ndarray, lo: int = 0, m: int | None = None) -> np.ndarray:
    """Σ over the first axis of ``a`` (slots × configurations), added in the order NumPy's own
    pairwise sum adds a contiguous row (``np.add.reduce``: below 8 terms one by one, up to 128 in
    eight interleaved partial sums, beyond that halves), so the per-slot state can be kept slot by
    slot (each slot's row contiguous, a sum a few vector additions) and still give the very sums a
    (configurations × slots) layout's ``sum(axis=1)`` gives."""
    m = a.shape[0] - lo if m is None else m
    if m < 8:
        out = a[lo] + 0.0
        for j in range(lo + 1, lo + m):
            out = out + a[j]
        return out
    if m <= 128:
        r = [a[lo + j] + 0.0 for j in range(8)]
        j = 8
        while j < m - m % 8:
            for u in range(8):
                r[u] += a[lo + j + u]
            j += 8
        out = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for u in range(lo + j, lo + m):
            out = out + a[u]
        return out
    half = m // 2
    half -= half % 8
    return _rowsum(a, lo, half) + _rowsum(a, lo + half, m - half)


def _pick(mask: np.ndarray | None, a: np.ndarray, b: np.ndarray | float) -> np.ndarray:
    """``np.where(mask, a, b)``; ``a`` when there is no mask (every configuration takes it)."""
    return a if mask is None else np.where(mask, a, b)


@typing.overload
def _if(mask: np.ndarray | None, a: np.ndarray, b: np.ndarray) -> np.ndarray: ...
@typing.overload
def _if(mask: np.ndarray | None, a: float, b: np.ndarray) -> np.ndarray | float: ...
def _if(mask: np.ndarray | None, a: np.ndarray | float, b: np.ndarray) -> np.ndarray | float:
    """``np.where(mask, a, b)``; ``b`` when there is no mask (no configuration takes ``a``), ``a`` when
    the mask is :data:`_ALL` (every configuration takes it)."""
    if mask is None:
        return b
    return a if mask is _ALL else np.where(mask, a, b)


#: A mask that holds for every configuration (:func:`_if` takes ``a``).
_ALL = np.ones(0, dtype=bool)


class _At:
    """A step's own connection slot in every configuration: read and written through flat indexes
    (slot · n + configuration), or as one row when it is the same slot in every configuration."""

    __slots__ = ("at", "row")

    def __init__(self, at: np.ndarray | None, row: int | None) -> None:
        self.at, self.row = at, row

    def take(self, a: np.ndarray) -> np.ndarray:
        if self.row is None:
            assert self.at is not None
            return a.take(self.at)
        return a[self.row].copy()

    def put(self, a: np.ndarray, v: np.ndarray | float) -> None:
        if self.row is None:
            assert self.at is not None
            a.put(self.at, v)
        else:
            a[self.row] = v


def _one_run(mask: np.ndarray) -> tuple[int, int] | None:
    """(lo, hi) when ``mask`` holds on exactly the columns lo … hi − 1, else None."""
    on = np.flatnonzero(mask)
    if len(on) == 0 or on[-1] - on[0] != len(on) - 1:
        return None
    return int(on[0]), int(on[-1]) + 1


def _same_columns(b: Batch, pa: _Path) -> list[tuple[int, int]] | None:
    """Runs of neighbouring columns (lo, hi) whose responses are the same packets at every step — one
    plan's sizes, one packet size and response head (``_run`` puts a batch's configurations of one
    transport and pool kind side by side) — or None when the batch has more than a few runs."""
    if not b.one_plan:
        return None
    cuts = np.flatnonzero((pa.pkt[1:] != pa.pkt[:-1]) | (pa.head[1:] != pa.head[:-1])) + 1
    if len(cuts) > 7:
        return None
    bounds = [0, *cuts.tolist(), b.n]
    return list(zip(bounds[:-1], bounds[1:], strict=True))


#: Take the shortcuts: the state-independent terms of every step at once, and what a homogeneous
#: batch allows (one queue discipline for all; only multiplexed pools). False: step by step and the
#: general path always (a test holds both to the same results, bit for bit).
SHORTCUTS = True


def simulate(b: Batch, k: Constants, *, baseline: bool = False, explain: bool = False) -> Result:
    """Simulate every configuration of ``b``. ``baseline``: the Lantern-style view (no loss, IW 10,
    h3 as h2 over TCP and TLS, no gateway queue)."""
    n, S = b.n, b.slots
    pa = _path(b, k, baseline)
    cols = np.arange(n)
    cols2 = cols[:, None]
    steps = b.kind.shape[0]
    done = np.zeros((steps, n))
    first = np.zeros((steps, n))
    parts = np.zeros((steps, n, len(PARTS))) if explain else None
    pred = np.full((steps, n), -1, dtype=np.int64) if explain else None

    # connection slots: (slot, configuration), a slot's row contiguous; a step's own slot is read
    # and written through flat indexes (slot · n + configuration)
    c_open = np.zeros((S, n), dtype=bool)
    c_free = np.full((S, n), -INF)  # client: when it can take a request (multiplexed: handshake done)
    c_send = np.full((S, n), -INF)  # bottleneck: when the connection's last byte given so far leaves
    c_cwnd = np.zeros((S, n))  # packets
    c_ss = np.ones((S, n))  # chance it is still in slow start
    c_infl = np.zeros((S, n))  # bytes it keeps in flight while it sends (its window, or its data)
    x_start = np.zeros((S, n))  # its current transfer at the bottleneck: first byte …
    x_bytes = np.zeros((S, n))  # … and bytes (multiplexed: everything it was given since it was idle)
    dns_done = np.full((b.origins, n), -INF)
    dns_started = np.zeros((b.origins, n), dtype=bool)
    up_backlog = np.zeros(n)  # request bytes waiting for the uplink at up_time
    up_time = np.zeros(n)
    wire_total = np.zeros(n)  # every response byte (the bottleneck's own bound on the load)
    main_free = np.zeros(n)
    first_data = np.full(n, INF)  # when the first request data left (ToW's start)
    # rare events whose timers are long (a lost DNS query: 5 s; a lost SYN: 1 s; a lost handshake
    # packet: the RTO or QUIC's PTO): their expected count per load, for the load-level delay
    rare_dns, rare_syn, rare_hs = np.zeros(n), np.zeros(n), np.zeros(n)
    scale = k.recovery_scale
    limited = np.isfinite(pa.rate)
    bdp = np.where(limited, pa.rate * pa.rtt, INF)
    groups = [(d, m) for d, m in pa.disciplines if m.any()]
    # one discipline for every limited path: no masks (the unlimited paths' values are not used)
    whole = SHORTCUTS and len(groups) == 1 and bool(groups[0][1].all())
    all_mux = SHORTCUTS and bool(pa.mux.all())
    # masks that hold for every configuration of the batch are None (_pick: all take the first
    # value); masks that hold for none are None too where _if reads them (all take the second)
    lim_mask = None if SHORTCUTS and limited.all() else limited
    all_limited = lim_mask is None  # every path rate-limited: every per-round cap is finite
    up_mask = None if SHORTCUTS and np.isfinite(pa.rate_up).all() else np.isfinite(pa.rate_up)
    any_quic = bool(pa.quic.any())
    tcp_mux = pa.mux & ~pa.quic  # h2 over TCP: head-of-line blocking behind another stream's loss
    tcp_mux_m = None if SHORTCUTS and not tcp_mux.any() else tcp_mux
    tcp_run = _one_run(tcp_mux) if SHORTCUTS else None
    no_mux = SHORTCUTS and not pa.mux.any()
    # steps whose origin is the same in every configuration (a batch of one plan: all of them), and
    # origins whose connection slots are the same rows in every configuration: the step's state is
    # then read and written as rows, not gathered and scattered through indexes
    # per step: does any configuration compute, download; does every configuration download
    # (a batch of one plan: every column is the first one, so its first column answers)
    kind_c, origin_c, deps_c, first_c, sd_c, base_c, count_c = (
        (a[:, :1] if b.one_plan else a)
        for a in (b.kind, b.origin, b.deps, b.first_chunk, b.stream_dep, b.slot_base, b.slot_count)
    )
    any_comp, any_dl, all_dl = (
        (kind_c == 1).any(axis=1).tolist(),
        (kind_c == 0).any(axis=1).tolist(),
        (kind_c == 0).all(axis=1).tolist(),
    )
    origin_rows = np.where((origin_c == b.origin[:, :1]).all(axis=1), b.origin[:, 0], -1)
    one_origin: list[int] = origin_rows.tolist() if SHORTCUTS else [-1] * steps
    # steps whose dependencies are the same in every configuration: the rows they wait for (a
    # completion, or first bytes), and the step whose completion frees a stream
    same_deps = (deps_c == b.deps[:, :1]).all(axis=(1, 2))
    same_deps &= (first_c == b.first_chunk[:, :1]).all(axis=(1, 2))
    dep_rows = [
        [(d, fc) for d, fc in zip(b.deps[i, 0].tolist(), b.first_chunk[i, 0].tolist(), strict=True) if d >= 0]
        if SHORTCUTS and same_deps[i] and not explain
        else None
        for i in range(steps)
    ]
    # does any step wait for a download's first bytes (replay's first chunks): else no step's first
    # bytes are kept
    reads_first = not SHORTCUTS or bool(first_c.any())
    sd_rows = np.where((sd_c == b.stream_dep[:, :1]).all(axis=1), b.stream_dep[:, 0], -2)
    one_sd: list[int] = sd_rows.tolist() if SHORTCUTS else [-2] * steps
    same_slots = ((base_c == b.slot_base[:, :1]) & (count_c == b.slot_count[:, :1])).all(axis=1).tolist()

    def per_group(fn: str, *args: np.ndarray) -> np.ndarray:
        """The discipline's ``fn`` over every limited path, each path's own discipline."""
        if whole:
            return getattr(groups[0][0], fn)(*args)
        out = np.zeros(n)
        for d, m in groups:
            out[m] = getattr(d, fn)(*(a[m] for a in args))
        return out

    pkt_bytes = pa.pkt * pa.wire
    # the pipe, packets: what the flows through the bottleneck hold when its queue is full (0: no
    # overflow there)
    pipe = np.where(np.isfinite(bdp + pa.queue), (bdp + pa.queue) / pkt_bytes, 0.0)
    offs = np.arange(int(b.slot_count.max()))
    p, p_up = pa.p, pa.p_up
    p_rt = 1 - (1 - p) * (1 - p_up)
    hs_loss = 1 - (1 - np.maximum(p, p_up)) ** np.where(pa.quic, 5.0, 4.0)
    flight = np.where(pa.quic, k.quic_flight_bytes, k.tls_flight_bytes)
    tls_rounds = np.where(pa.tls12, 2.0, 1.0) * pa.tls
    hello = k.client_hello_bytes / pa.rate_up
    some = p > 0
    some_m = None if SHORTCUTS and some.all() else some
    dns_m = None if SHORTCUTS and pa.dns.all() else pa.dns
    closes = ~pa.mux & ~pa.keep_alive  # HTTP/1.x without keep-alive: a connection per request
    closes_m = None if SHORTCUTS and not closes.any() else closes
    fifo_share = 0.0 if baseline else k.queue_in_rounds  # Lantern: the link shared fairly, no FIFO
    window_shares = 0.0 if baseline else k.window_shares

    def standing(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(the gateway's queueing delay for a packet arriving at t, bytes in flight per slot at t,
        and in all)."""
        per_slot = c_infl * (c_send > t)
        total = _rowsum(per_slot)
        return per_group("delay", total - bdp, pa.queue, pa.rate), per_slot, total

    # what does not depend on the connections' state: once per distinct response size, once per
    # origin, or a row per step (arrays of every step at once, steps × configurations, cost more in
    # fresh memory than the rows' own operations)

    def random_loss(npk: np.ndarray, p: np.ndarray, some_m: np.ndarray | None) -> tuple[np.ndarray, ...]:
        """Random loss in a response of npk packets at loss rate p: the chance of a first loss, CSA's
        packets before it, the packets after it, the further loss events among them, β to their
        number and the window's mean decay over them (5. below); the chance of no loss, and the
        further loss events × the recovery scale."""
        P1 = _pick(some_m, 1 - (1 - p) ** npk, 0.0)
        d_ss = _pick(some_m, np.minimum(npk, P1 * (1 - p) / np.maximum(p, 1e-9) + 1), npk)
        rest = np.maximum(npk - d_ss, 0.0)
        m = rest * p
        beta_m = k.beta**m
        decay = np.where(m > 1e-6, (1 - beta_m) / (np.maximum(m, 1e-6) * np.log(1 / k.beta)), 1.0)
        return P1, d_ss, rest, m, beta_m, decay, 1 - P1, scale * m

    def packets(body: np.ndarray, pkt: np.ndarray) -> np.ndarray:
        """A response's packets."""
        return np.maximum(np.ceil(body / pkt), 1.0)

    runs = _same_columns(b, pa) if SHORTCUTS else None
    loss_tables: list[tuple[np.ndarray, list[int]]] = []
    loss_all = None
    loss_buf = np.empty((8, n))
    if runs is not None:  # once per distinct response size (in packets) of each run of columns
        for lo, hi in runs:
            sizes, row_of = np.unique(packets(b.size[:, lo] + pa.head[lo], pa.pkt[lo]), return_inverse=True)
            some_run = None if some_m is None else some_m[lo:hi]
            table = np.empty((len(sizes), 8, hi - lo))  # (sizes, terms, run)
            # a few sizes at a time: temporaries of at most 64 kB (larger ones cost fresh pages)
            chunk = max(1, 8192 // (hi - lo))
            for r in range(0, len(sizes), chunk):
                terms = random_loss(sizes[r : r + chunk, None], p[lo:hi], some_run)
                for j, term in enumerate(terms):
                    table[r : r + chunk, j] = term
            loss_tables.append((table, row_of.tolist()))
    elif SHORTCUTS:  # every step at once
        loss_all = random_loss(packets(b.size + pa.head, pa.pkt), p, some_m)

    def loss_terms(i: int, npk: np.ndarray) -> tuple[np.ndarray, ...] | np.ndarray:
        """Step i's random-loss terms (:func:`random_loss`) for its responses of npk packets."""
        if loss_tables:
            if len(loss_tables) == 1:
                table, row_of = loss_tables[0]
                return table[row_of[i]]
            # into one buffer, reused step by step (nothing keeps its rows past the step)
            assert runs is not None
            for (lo, hi), (table, row_of) in zip(runs, loss_tables, strict=True):
                loss_buf[:, lo:hi] = table[row_of[i]]
            return loss_buf
        if loss_all is not None:
            return tuple(a[i] for a in loss_all)
        return random_loss(npk, p, some_m)

    w_star = np.where(some, k.response_window / np.sqrt(np.maximum(p, 1e-9)), INF)

    def way(i: int) -> tuple[np.ndarray, ...]:
        """The path's terms at step i's origin (its extra RTT): RTT, a round trip as the endpoints
        see it, the one-way delays, the idle time after which the window restarts (RFC 5681 §4.1:
        an RTO), the per-round delivery cap (packets), the RTO, the request's recovery and a first
        loss's cost when a timer repairs it. Computed once per origin where the step's origin is
        the same in every configuration (``routes``)."""
        o1 = one_origin[i]
        extra = pa.extra[o1] if o1 >= 0 else pa.extra[b.origin[i], cols]
        rtt = pa.rtt + extra
        rtt_r = rtt + pa.round_s  # a round trip as the endpoints see it
        rtt_e = rtt_r
        d_up, d_down = pa.d_up + extra / 2, pa.d_down + extra / 2
        idle_after = np.maximum(k.rto_min_s + rtt, rtt)
        cap = np.maximum(_pick(lim_mask, pa.rate * rtt_e / pkt_bytes, INF), 1.0)
        rto = np.maximum(k.rto_min_s + rtt_r, 2 * rtt_r)
        req_rec = scale * p_up * k.tail_rtts * rtt_r
        tail_wait = k.tail_rtts * rtt_e + p * rto
        return rtt, rtt_r, d_up, d_down, idle_after, cap, rto, req_rec, tail_wait

    routes: dict[int, tuple[np.ndarray, ...]] = {}
    all_open: set[int] = set()  # origins (one in every configuration) whose connections are all open
    w_star_finite = np.isfinite(w_star)
    ceil_pkts = pa.ceil_bytes / pkt_bytes
    dns_retries = p_rt / np.maximum(1 - p_rt, 1e-9)
    timeout_share = _TimeoutShare(p)
    zeros = np.zeros(n)

    for i in range(steps):
        kind = b.kind[i]
        # 1. ready: the latest dependency
        rows = dep_rows[i]
        if rows is not None:  # the same in every configuration: rows
            ready = np.zeros(n)
            if rows:
                ready = (first if rows[0][1] else done)[rows[0][0]]
                for d, fc in rows[1:]:
                    ready = np.maximum(ready, (first if fc else done)[d])
                ready = np.maximum(ready, 0.0)
        else:
            dep = b.deps[i]
            valid = dep >= 0
            dj = np.where(valid, dep, 0)
            times = np.where(b.first_chunk[i], first[dj, cols2], done[dj, cols2])
            times = np.where(valid, times, -INF)
            ready = np.maximum(times.max(axis=1), 0.0)
            if explain:
                assert pred is not None
                pred[i] = np.where(valid.any(axis=1), dj[cols, times.argmax(axis=1)], -1)

        # 2. computations: one main thread
        comp = kind == 1
        if any_comp[i]:
            start = np.maximum(ready, main_free)
            end = start + b.duration[i]
            main_free = np.where(comp, end, main_free)
            done[i] = np.where(comp, end, done[i])
            first[i] = np.where(comp, end, first[i])
            if explain:
                assert parts is not None
                parts[i, :, _P["queueing"]] = np.where(comp, start - ready, 0)
                parts[i, :, _P["compute"]] = np.where(comp, end - start, 0)
        dl = kind == 0
        if not any_dl[i]:
            continue
        dl_mask = None if SHORTCUTS and all_dl[i] else dl  # every configuration downloads here: no masks

        o = b.origin[i]
        o1 = one_origin[i]
        if o1 < 0 or o1 not in routes:
            route = routes[o1] = way(i)
        else:
            route = routes[o1]
        rtt, rtt_r, d_up, d_down, idle_after, cap, rto, req_rec, tail_wait = route
        q_ready = None  # the standing queue when the step is ready: for a lookup or a handshake
        oi = (o, cols) if o1 < 0 else o1  # the step's origin in each configuration, as an index

        # 3a. the lookup: the origin's first download starts it, the others wait for it
        starts = dl & pa.dns & ~dns_started[oi]
        if not SHORTCUTS or starts.any():  # (no lookup starts here: nothing changes)
            q_ready = standing(ready)[0]
            lookup = rtt_r + q_ready
            rare_dns += np.where(starts, dns_retries, 0.0)
            dns_done[oi] = np.where(starts, ready + lookup, dns_done[oi])
            dns_started[oi] |= starts
        t_dns = np.maximum(ready, _pick(dns_m, dns_done[oi], -INF))

        # 3b. a connection: the most recently idle, else a new one, else the first to be free
        base = b.slot_base[oi]
        row = None  # the step's slot, when it is one row for every configuration
        if all_mux:  # one connection per origin
            slot = base
            if o1 >= 0 and same_slots[o1]:
                row = int(base[0])
        elif o1 >= 0 and same_slots[o1]:  # the origin's slots are the same rows everywhere
            lo = int(base[0])
            f = c_free[lo : lo + int(b.slot_count[o1, 0])]
            op = c_open[lo : lo + f.shape[0]]
            free_now = f <= t_dns
            # one argmax of a key per slot: the idle one free last, else the first fresh one
            # (1 against 0), else the first free again (−f: argmax is argmin's first minimum)
            if o1 in all_open:  # every connection of the origin open in every configuration: none fresh
                key = np.where(free_now.any(axis=0), np.where(free_now, f, -INF), -f)
            else:
                idle = free_now & op
                fresh = free_now & ~op
                key = np.where(
                    idle.any(axis=0), np.where(idle, f, -INF), np.where(fresh.any(axis=0), fresh, -f)
                )
            choice = key.argmax(axis=0)
            slot = base + (choice if no_mux else np.where(pa.mux, 0, choice))
        else:
            count = b.slot_count[o, cols]
            idx = base[:, None] + np.minimum(offs[None, :], np.maximum(count[:, None] - 1, 0))
            mine = offs[None, :] < count[:, None]
            f = c_free[idx, cols2]
            op = c_open[idx, cols2]
            free_now = mine & (f <= t_dns[:, None])
            idle = free_now & op
            fresh = free_now & ~op
            choice = np.where(
                idle.any(axis=1),
                np.where(idle, f, -INF).argmax(axis=1),
                np.where(fresh.any(axis=1), fresh.argmax(axis=1), np.where(mine, f, INF).argmin(axis=1)),
            )
            slot = idx[cols, np.where(pa.mux, 0, choice)]
        at = _At(slot * n + cols if row is None else None, row)
        s_open, s_free = at.take(c_open), at.take(c_free)
        if all_mux:
            t_conn = t_dns
        elif no_mux:
            t_conn = np.maximum(t_dns, s_free)
        else:
            t_conn = np.where(pa.mux, t_dns, np.maximum(t_dns, s_free))  # HTTP/1.x: wait for it
        opening = dl & ~s_open
        if SHORTCUTS and not opening.any():  # no handshake here: the connections' state stands
            q_hs = setup = np.zeros(n)
            ready_conn = s_free
        else:
            # handshakes, each round trip through the standing queue; a lost packet waits for its timer
            if q_ready is None:  # (no connection's state has changed since the step was ready)
                q_ready = standing(ready)[0]
            q_hs = np.where(opening, q_ready, 0.0)
            rt_hs = rtt_r + q_hs
            tcp = np.where(pa.quic, 0.0, rt_hs)
            # the server's flight crosses the bottleneck beside the other connections' bytes (shared)
            t_flight = t_conn + tcp
            span = np.maximum(c_send - x_start, 1e-9)
            left = x_bytes * np.minimum(np.maximum((c_send - t_flight) / span, 0.0), 1.0)
            flight_link = (flight + _rowsum(np.minimum(left, flight))) / pa.rate
            tls = tls_rounds * rt_hs + pa.tls * (hello + flight_link)
            rare_syn += np.where(opening & ~pa.quic, p_rt, 0.0)
            rare_hs += np.where(opening & pa.tls, hs_loss, 0.0)
            setup = tcp + tls
            ready_conn = np.where(opening, t_conn + setup, s_free)
            first_data = np.where(opening, np.minimum(first_data, t_conn + tcp), first_data)
            at.put(c_open, s_open | dl)
            if SHORTCUTS and closes_m is None and o1 >= 0 and same_slots[o1] and not all_mux:
                lo = int(b.slot_base[o1, 0])
                if c_open[lo : lo + int(b.slot_count[o1, 0])].all():  # (and stay so: none closes)
                    all_open.add(o1)
            hs_flight = opening & pa.tls
            at.put(x_start, np.where(hs_flight, t_flight, at.take(x_start)))
            at.put(x_bytes, np.where(hs_flight, flight, at.take(x_bytes)))
            at.put(c_send, np.where(hs_flight, t_flight + flight_link, at.take(c_send)))
            wire_total = np.where(hs_flight, wire_total + flight, wire_total)
            if not no_mux:
                at.put(c_free, np.where(dl & pa.mux, ready_conn, s_free))
            at.put(c_cwnd, np.where(opening, pa.iw, at.take(c_cwnd)))
            at.put(c_ss, np.where(opening, 1.0, at.take(c_ss)))
        t_conn_ok = np.maximum(t_conn, ready_conn)
        # h2/h3: a stream
        sd1 = one_sd[i]
        if sd1 == -1:  # no stream to wait for in any configuration
            t_send = t_conn_ok
        elif sd1 >= 0:  # the same in every configuration
            t_send = np.maximum(t_conn_ok, done[sd1])
        else:
            sd = b.stream_dep[i]
            t_send = np.where(sd >= 0, np.maximum(t_conn_ok, done[np.maximum(sd, 0), cols]), t_conn_ok)
        first_data = _pick(dl_mask, np.minimum(first_data, t_send), first_data)

        # 4. the request: the uplink drains its backlog at its rate (a request met out of time
        # order finds it undrained); then the server
        waiting = _pick(
            up_mask,
            np.maximum(up_backlog - np.maximum(t_send - up_time, 0.0) * pa.rate_up, 0.0),
            0.0,
        )
        up_backlog = _pick(dl_mask, waiting + pa.req, up_backlog)
        up_time = _pick(dl_mask, np.maximum(up_time, t_send), up_time)
        t_srv = t_send + (waiting + pa.req) / pa.rate_up + d_up + req_rec + k.server_s

        # 5. the response in rounds
        body = b.size[i] + pa.head
        npk = packets(body, pa.pkt)
        P1, d_ss, rest, _, beta_m, decay, no_loss, scale_m = loss_terms(i, npk)
        wbytes = body * pa.wire
        prev_send = at.take(c_send)
        busy = pa.mux & (prev_send > t_srv)  # the connection's sender carries on with earlier streams
        busy_m = None if SHORTCUTS and (no_mux or not busy.any()) else busy
        # every stream behind another (h2/h3 past the first response, mostly): no fresh response's
        # rounds, tail drop, restart or lead to compute
        all_busy = SHORTCUTS and busy_m is not None and bool(busy.all())
        if all_busy:
            busy_m = _ALL
        s = _if(busy_m, prev_send, t_srv)
        q_s, per_slot, in_flight = standing(s)
        own_infl = at.take(per_slot)
        others = (in_flight - own_infl) / pkt_bytes
        rtt_e = rtt_r
        cwnd = at.take(c_cwnd)
        if all_busy:  # no connection idle
            w0 = cwnd
        else:
            idle_long = ~busy & ~opening & ((s - prev_send) > idle_after)
            restart = not SHORTCUTS or idle_long.any()
            w0 = np.where(idle_long, np.minimum(cwnd, pa.iw), cwnd) if restart else cwnd
        ceil_pk = np.maximum(w0, ceil_pkts - k.ceiling_share * others)
        ss = at.take(c_ss)
        ca = 1 - ss  # the chance it is in congestion avoidance
        w0_1 = np.maximum(w0, 1.0)
        ca_start = _ca_start(w0, cap, finite=all_limited)
        if not all_busy:  # a fresh response's rounds (a busy connection's are below)
            cap_ss = np.minimum(cap, ceil_pk)
            both = np.array((npk, d_ss))  # the response's packets and those before the first loss
            r_ss, ss_before = _ss_rounds(w0, cap_ss, cap, both, finite=all_limited)[0]
            r_ca, ca_before = _ca_rounds(w0, cap, both, start=ca_start)[0]
            rounds = ss * r_ss + ca * r_ca
        if busy_m is not None:  # a busy connection's rounds
            w_sent = np.maximum(np.minimum(w0, cap), 1.0)
            n_frac = body / pa.pkt  # a busy connection packs small responses into full segments
            # … and carries on from its window: doubling per round in slow start, one packet more per
            # round in congestion avoidance (the rounds' packets w, w + 1, … add up to n_frac)
            r_cont = ss * np.log2(1 + n_frac / w_sent) + ca * _ca_span(w0, cap, n_frac, ca_start)
            rounds = r_cont if all_busy else np.where(busy, r_cont, rounds)
        w_npk = w0 + npk
        hit = np.isfinite(ceil_pk) & (w_npk >= ceil_pk)
        w_clean = ss * np.minimum(w_npk, ceil_pk) + ca * (w0 + npk / w0_1)
        # the gateway's ceiling reached in slow start: a loss there (a queue below HyStart's threshold)
        ovf_at = pa.ceil_loss & hit
        ovf = np.where(ovf_at, ss, 0.0) if not SHORTCUTS or ovf_at.any() else np.zeros(n)
        # a fresh response's first window leaves an unpaced sender at once: a queue already holding
        # others' data may drop its tail (repaired after the tail-loss probe)
        if all_busy:  # (only a fresh response's first window)
            dropped = np.zeros(n)
        else:
            burst_bytes = np.minimum(w0, npk) * pkt_bytes
            dropped = per_group("burst_loss", q_s * pa.rate, burst_bytes, pa.queue)
            if not SHORTCUTS or any_quic or busy_m is not None or dl_mask is not None:
                dropped = np.where(pa.quic | busy | ~dl, 0.0, dropped)
        tail = (dropped > 0).astype(np.float64)
        # the probe reveals the holes; the lost packets go again at the reduced window
        resend = k.burst_resend * dropped / pkt_bytes / np.maximum(k.beta * w0, 1.0)
        # random loss: CSA's slow start until the first loss, Padhye's throughput after it; the
        # first loss repaired by fast retransmit, or by a timer (Padhye's Q)
        if all_busy:
            r_before = rounds * d_ss / npk
        else:
            r_before = ss * ss_before + ca * ca_before
            r_before = r_before - 1 if busy_m is None else np.where(busy, rounds * d_ss / npk, r_before - 1)
        # the window when the first loss comes, then the window's decay towards the loss rate's
        # steady state W* = kw/√p: ×β per loss event, one every 1/p packets (CUBIC's β = 0.7)
        w_at = np.minimum(
            ss * np.minimum(w0 + d_ss, ceil_pk) + ca * (w0 + d_ss / w0_1),
            np.maximum(ceil_pk, w0),
        )
        start_w = k.beta * w_at
        above = w_star_finite & (start_w > w_star)
        if not SHORTCUTS or above.any():
            w_star_above = np.where(above, w_star, 0)
            w_avg = np.where(above, w_star + (start_w - w_star_above) * decay, start_w)
            w_after = np.where(above, w_star + (start_w - w_star_above) * beta_m, start_w)
        else:  # no window above W*: no decay
            w_avg, w_after = start_w, start_w.copy()
        per_round = np.maximum(np.minimum(w_avg, cap), 1.0)
        Q = timeout_share(np.minimum(w_at, npk))
        first_loss = scale * (Q * tail_wait + (1 - Q) * k.fast_rtts * rtt_e)
        # (Q where later losses are expected: none in a response sent before its expected first)
        later = scale_m * timeout_share(np.minimum(w_avg, npk), scale_m > 0) * rto
        t_clean = _if(busy_m, rounds, rounds - 1) * rtt_e
        t_loss = r_before * rtt_e + first_loss + rest / per_round * rtt_e + later
        lossy = (
            P1 * np.maximum(t_loss - t_clean, 0.0)
            + ovf * scale * k.fast_rtts * rtt_e
            + tail * scale * (k.tail_rtts + resend) * rtt_r
        )
        w_loss = _pick(some_m, np.maximum(w_after, 2.0), w_clean)
        # an overflow of the ceiling is seen a round later, when the flows' windows fill the pipe
        # (BDP + Q): each backs off from its share of it, in proportion to its window
        share = w_clean / np.maximum(w_clean + others, 1.0)
        w_ovf = np.maximum(w_clean, share * pipe * k.detect_share)
        cut = np.maximum(ovf, tail)
        w_end = (
            no_loss * (1 - cut) * w_clean
            + P1 * w_loss
            + no_loss * k.beta * (ovf * w_ovf + np.maximum(tail - ovf, 0.0) * w_clean)
        )
        ovf = cut
        ss_end = ss * no_loss * (1 - ovf) * ~hit
        # the bottleneck, shared: each other connection's bytes still to send delay this response
        # by as many of them as it sends itself (processor sharing); a fresh response's first bytes
        # wait behind the standing queue
        lead = _if(busy_m, 0.0, q_s)
        clean_bytes = w_clean * pkt_bytes
        window_bytes = np.minimum(wbytes, clean_bytes)  # the response's last window, bytes
        remaining = x_bytes * np.minimum(
            np.maximum((c_send - s) / np.maximum(c_send - x_start, 1e-9), 0.0), 1.0
        )
        at.put(remaining, 0.0)
        # the bottleneck, a FIFO: the flows' shares of the link follow their bytes in flight (a window
        # twice another's sends twice as much per round trip through the same queue); equal shares
        # (processor sharing) at window_shares = 0, the baseline's view
        if window_shares:
            others_infl = per_slot.copy()
            at.put(others_infl, 0.0)
            own_w = np.maximum(window_bytes, pkt_bytes)
            weight = (1 - window_shares) + window_shares * others_infl / own_w
            served = _rowsum(np.minimum(remaining, wbytes * weight))
        else:
            served = _rowsum(np.minimum(remaining, wbytes))
        link = (wbytes + served) / pa.rate
        last_round = _if(busy_m, 0.0, window_bytes / pa.rate)
        # the drop-tail queue is a FIFO: each later round of this response waits behind the standing
        # queue again, as long as the other connections have bytes to keep it standing (what they
        # send while this response is sent bounds the total wait)
        windowed = np.maximum(lead, last_round) + t_clean + lossy
        if fifo_share:
            windowed = windowed + fifo_share * np.minimum(
                _if(busy_m, rounds, rounds - 1) * q_s, served / pa.rate
            )
        wire_total = _pick(dl_mask, wire_total + wbytes, wire_total)
        # work conservation: in issue order, a response ends no earlier than the link could carry
        # everything issued before it and itself since the load's first request
        e = np.maximum(s + np.maximum(windowed, link), first_data + k.conserve * wire_total / pa.rate)

        # 6. completion: one-way delay, head-of-line blocking behind another stream's loss on one
        # TCP connection, the loader's own time
        if tcp_mux_m is None or busy_m is None:  # no h2 over TCP here, or no stream behind another
            hol = zeros
        elif tcp_run is not None:  # h2 over TCP in one run of columns: only there
            lo, hi = tcp_run
            blocked = scale * (
                1 - (1 - p[lo:hi]) ** np.maximum(own_infl[lo:hi] / pkt_bytes[lo:hi] - npk[lo:hi], 0)
            )
            hol = np.zeros(n)
            hol[lo:hi] = blocked * k.fast_rtts * rtt_e[lo:hi]
            if not all_busy:
                hol[lo:hi] = np.where(busy[lo:hi], hol[lo:hi], 0.0)
        else:
            hol = np.where(
                tcp_mux & busy,
                scale * (1 - (1 - p) ** np.maximum(own_infl / pkt_bytes - npk, 0)) * k.fast_rtts * rtt_e,
                0.0,
            )
        c_done = e + d_down + hol + k.client_object_s
        done[i] = _pick(dl_mask, c_done, done[i])
        if reads_first:
            first_bytes = np.minimum(wbytes, pkt_bytes) / pa.rate  # a response's first packet on the link
            first[i] = _pick(dl_mask, s + lead + first_bytes + d_down, first[i])
        if dl_mask is None and busy_m is None:  # every configuration starts a transfer here
            at.put(x_start, s)
        elif not all_busy:  # (every transfer goes on: none starts)
            at.put(x_start, np.where(dl & ~busy, s, at.take(x_start)))
        if busy_m is None and dl_mask is None:  # every transfer starts here (+0.0: the same bits)
            xb = wbytes
        else:
            xb = at.take(x_bytes)
            xb = _pick(dl_mask, wbytes + (xb if all_busy else np.where(busy, xb, 0.0)), xb)
        at.put(x_bytes, xb)
        at.put(c_send, _pick(dl_mask, e, prev_send))
        at.put(c_cwnd, _pick(dl_mask, np.maximum(w_end, 1.0), cwnd))
        at.put(c_ss, _pick(dl_mask, ss_end, ss))
        infl = window_bytes if xb is wbytes else np.minimum(xb, clean_bytes)
        at.put(c_infl, infl if dl_mask is None else np.where(dl_mask, infl, at.take(c_infl)))
        if not all_mux:  # HTTP/1.x: the connection is free once the response is in, or closed
            if no_mux and dl_mask is None:
                at.put(c_free, c_done)
            else:
                at.put(c_free, np.where(dl & ~pa.mux, c_done, at.take(c_free)))
            if closes_m is not None:
                at.put(c_open, at.take(c_open) & ~(dl & closes_m))

        if explain:
            assert parts is not None
            own = np.zeros((n, len(PARTS)))
            hs_gate = (tls_rounds + ~pa.quic) * q_hs
            own[:, _P["dns"]] = t_dns - ready
            own[:, _P["queueing"]] = np.maximum(t_conn - t_dns, 0) + (t_send - t_conn_ok)
            own[:, _P["setup"]] = np.where(opening, setup - hs_gate, np.maximum(ready_conn - t_conn, 0))
            own[:, _P["server"]] = k.server_s
            gate = np.where(windowed >= link, lead, np.minimum(lead, link))
            rec = np.where(windowed >= link, np.minimum(lossy, windowed - lead), 0.0)
            moving = np.where(
                windowed >= link, np.minimum(wbytes / pa.rate, windowed - lead - rec), link - gate
            )
            own[:, _P["gateway"]] = np.where(opening, hs_gate, 0) + gate
            own[:, _P["recovery"]] = req_rec + rec
            own[:, _P["window"]] = np.maximum(e - s - gate - rec - moving, 0)
            own[:, _P["hol"]] = hol
            own[:, _P["compute"]] = k.client_object_s
            # the rest: the request's and the last bytes' way, other streams first on the connection
            own[:, _P["transfer"]] = (c_done - ready) - own.sum(axis=1)
            parts[i] = np.where(dl[:, None], own, parts[i])

    hs_cost = np.where(
        pa.quic, k.quic_pto_s, np.maximum(k.tail_rtts * (pa.rtt + pa.round_s), k.rto_min_s + pa.rtt)
    )
    rare = scale * _median_delay(
        np.stack([np.full(n, k.dns_timeout_s), np.full(n, k.syn_rto_s), hs_cost]),
        np.stack([rare_dns, rare_syn, rare_hs]),
    )
    # every step after the load's start is as late (one delay, on its critical path)
    if explain:
        done = done + rare
        last = np.where(b.kind >= 0, done, -INF)
        last_done = last.max(axis=0)
    else:  # the latest step's time, then the delay (rounding is monotonic: the same bits)
        real = done if b.one_plan and SHORTCUTS else np.where(b.kind >= 0, done, -INF)
        last_done = real.max(axis=0) + rare
    # no load ends before the bottleneck could carry its bytes after its first request
    floor = first_data + pa.rtt + wire_total / pa.rate
    plt = np.maximum(last_done, floor) + k.load_s
    tow = plt - np.where(np.isfinite(first_data), first_data, 0.0) - k.load_s
    out_parts = None
    if explain:
        assert parts is not None and pred is not None
        out_parts = np.zeros((n, len(PARTS)))
        end_step = last.argmax(axis=0)
        for j in range(n):
            step = int(end_step[j])
            while step >= 0:
                out_parts[j] += parts[step, j]
                step = int(pred[step, j])
        out_parts[:, _P["transfer"]] += np.maximum(floor - last_done, 0)
        out_parts[:, _P["compute"]] += k.load_s
        out_parts[:, _P["recovery"]] += rare
    return Result(plt=plt, tow=tow, parts=out_parts)
