"""A model engine for the analysis and report tests: an :class:`wirelab._engine.Engine` whose trials are
computed by a small analytical model of page loads instead of being measured.

Unlike ``wirelab.testing.FixtureEngine`` (which replays one recording whatever the network), this
double answers to the configuration — RTT, bandwidth, loss, gateway queue, initial window, shards,
``max_concurrent_streams``, page size — so that sweeps have the shapes the analysis must find
(HTTP/2 gains with RTT, loses under loss, needs enough streams…). It writes trial directories that
follow ``docs/trial-contract.md`` (validated by the runner) with a HAR per load. Its numbers are a
model for tests, never results: the report only ever shows what a run stored, and these runs exist
only in tests' temporary databases.

Model, per load: DNS (1 RTT per origin), TCP (1 RTT), TLS 1.3 (1 RTT; QUIC's handshake carries it),
the root document, then every sub-resource (flat mode; ``objects`` mode skips the root's parse time).
HTTP/1.x uses up to 6 connections per origin, each slow-starting from the initial window; HTTP/2 and
SPDY one connection per origin with at most ``max_concurrent_streams`` requests in flight; HTTP/3 like
HTTP/2 without head-of-line blocking. Transfers share the bottleneck; a loss costs a round trip (an RTO
while the window is small) and, on a shared TCP connection, stalls every active stream; more in-flight
data than BDP + queue is tail-dropped at the gateway and inflates the RTT meanwhile; an AQM discipline
(``queue=codel`` …) holds the standing queue near 5 ms by dropping early instead (``gateway``: drops by
cause and the time packets waited, as the emulator reports them).
"""

from __future__ import annotations

import json
import math
import random
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from wirelab import _facts
from wirelab import _netprofile as netprofile
from wirelab._contract import validate
from wirelab._engine import SPEC_FILE, Engine, EventCallback, TrialEvent, TrialRun
from wirelab.analysis.sweep import parse_synthetic
from wirelab.errors import ContractError, SpecError

MSS = 1448
STARTED = datetime(2025, 11, 21, 9, 0, 0, tzinfo=UTC)
#: (objects, mean object size) of the engine's corpus pages, from the engine's facts.
PAGES: dict[str, tuple[int, float]] = {
    name: (page.objects, page.total_bytes / page.objects) for name, page in _facts.corpus().items()
}


def page_objects(page: str, *, evil: bool = False) -> list[tuple[str, int]]:
    """(path, size) of each object; unknown pages get 20 objects of 8 kB."""
    synthetic = parse_synthetic(page)
    count, mean = synthetic or PAGES.get(page, (20, 8_000))
    rng = random.Random(page)
    objects = []
    for i in range(count):
        size = int(mean) if synthetic else max(200, int(rng.lognormvariate(0, 0.7) * mean * 0.8))
        kind = "index.html" if i == 0 else f"img/o{i:03d}.png"
        if evil and i in (1, 2):
            kind = f"img/<script>window.__xss={i}</script>{i}.png"
        objects.append(("/" if i == 0 else f"/{kind}", size))
    return objects


class _Conn:
    def __init__(self, cid: int, origin: int, ready: float, iw: int):
        self.id, self.origin, self.free, self.cwnd = cid, origin, ready, iw


def _load(spec: dict[str, Any], protocol: str, rng: random.Random, evil: bool) -> tuple[dict, list[dict]]:
    net = netprofile.parse(spec.get("network", "native"))
    rtt = (net["up"]["delay_ns"] + net["down"]["delay_ns"]) / 1e6 * rng.uniform(0.97, 1.1)
    rate = (net["down"]["rate_bps"] or 1_000_000_000) * rng.uniform(0.8, 1.0)  # cross traffic
    loss_model = net["down"]["loss"]
    p_loss = loss_model.get("p", 0.0) if loss_model["model"] == "bernoulli" else 0.0
    queue = net["down"]["queue"]["packets"] or 256
    aqm = net["down"].get("discipline", {}).get("name", "droptail") != "droptail"
    iw = net.get("iw") or 10
    bdp = max(1.0, rate * rtt / 1000 / 8 / 1500)
    streams = spec["server"]["max_concurrent_streams"]
    known = _facts.corpus().get(spec["page"])
    shards = spec.get("shards", 1) or (known.shard_origins.get(spec.get("shard_mode", ""), 1) if known else 1)
    per_origin = spec["client"]["max_connections_per_origin"]
    objects = page_objects(spec["page"], evil=evil)
    tls = protocol in ("h1s", "h2", "spdy3")
    mux = protocol in ("h2", "h2c", "spdy3", "h3")
    j = lambda x: x * rng.uniform(0.96, 1.04)  # noqa: E731
    if aqm:  # early drops keep about 5 ms of packets queued
        queue = max(2, int(rate * 0.005 / 8 / 1500))
    counters = {"retrans": 0, "timeouts": 0, "drops_queue": 0, "drops_loss": 0, "max_queue": 0}
    sojourns: list[float] = []
    last_transfer: dict[str, float] = {}  # the components of the latest transfer (its decomposition)
    entries: list[dict] = []

    def ser(size: float, share: float) -> float:
        return size * 8 / (rate / max(1.0, share)) * 1000

    def transfer(conn: _Conn, size: int, share: float, active_flows: int) -> tuple[float, float]:
        """(receive time, stall added to other streams of the connection)."""
        segments = math.ceil(size / MSS)
        inflight = active_flows * min(conn.cwnd, bdp)
        excess = inflight - bdp - queue
        counters["max_queue"] = max(counters["max_queue"], int(min(queue, max(0.0, inflight - bdp))))
        q_delay = min(queue, max(0.0, inflight - bdp)) * 1500 * 8 / rate * 1000
        sojourns.append(q_delay)
        rounds, sent, cw = 0, 0, conn.cwnd
        while sent < segments:
            sent += cw
            cw = min(cw * 2, max(bdp, 4) * 2)
            rounds += 1
        conn.cwnd = cw
        time = max(0, rounds - 1) * (rtt + q_delay) + ser(size, share)
        stall = 0.0
        lost = sum(1 for _ in range(segments) if rng.random() < p_loss)
        dropped = max(0, int(excess * 0.15)) if excess > 0 and rounds > 1 else 0
        for _ in range(lost + dropped):
            timeout = conn.cwnd < 4
            penalty = max(200.0, 2 * rtt) if timeout else rtt
            counters["timeouts"] += int(timeout)
            time += penalty
            stall += penalty
            conn.cwnd = max(2, conn.cwnd // 2)
        counters["drops_loss"] += lost
        counters["drops_queue"] += dropped
        counters["retrans"] += lost + dropped
        last_transfer.clear()
        last_transfer.update(
            window_ms=max(0, rounds - 1) * rtt,
            gateway_ms=q_delay * max(1, rounds),
            recovery_ms=stall,
            transfer_ms=ser(size, share),
        )
        return time + q_delay, stall

    def entry(path, origin, conn, start, blocked, dns, tcp, ssl, wait, receive):
        send = j(0.05)
        entries.append(
            {
                "path": path,
                "origin": origin,
                "conn": conn.id,
                "start": start,
                "receive_parts": dict(last_transfer),
                "timings": {
                    "blocked": round(blocked, 3),
                    "dns": round(dns, 3) if dns else -1,
                    "connect": round(tcp + ssl, 3) if tcp or ssl else -1,
                    "ssl": round(ssl, 3) if ssl else -1,
                    "send": round(send, 3),
                    "wait": round(wait, 3),
                    "receive": round(receive, 3),
                },
            }
        )
        return start + blocked + dns + tcp + ssl + send + wait + receive

    handshake_tcp = j(rtt + 0.3)
    handshake_tls = j(rtt + 0.8) if tls else 0.0
    if protocol == "h3":
        handshake_tcp, handshake_tls = j(rtt + 0.9), 0.0
    dns_done: dict[int, float] = {1: j(rtt + 0.2)}
    conns: list[_Conn] = [_Conn(1, 1, 0.0, iw)]
    root_path, root_size = objects[0]
    wait = j(rtt + 0.5)
    recv, _ = transfer(conns[0], root_size + 300, 1, 1)
    root_end = entry(
        root_path, 1, conns[0], 0.0, j(0.2), dns_done[1], handshake_tcp, handshake_tls, wait, recv
    )
    conns[0].free = root_end
    first_request = dns_done[1] + handshake_tcp + handshake_tls
    t0 = root_end + (j(2.0) if spec["client"]["mode"] != "objects" else 0.0)
    rest = objects[1:]
    n_active = min(len(rest), (per_origin if not mux else streams) * shards) or 1
    for n, (path, size) in enumerate(rest):
        origin = 1 + n % shards
        dns = 0.0
        if origin not in dns_done:
            dns_done[origin] = j(rtt + 0.2)
            dns = dns_done[origin]
        mine = [c for c in conns if c.origin == origin]
        tcp = ssl = 0.0
        if mux:
            if not mine:
                conn = _Conn(len(conns) + 1, origin, t0, iw)
                conns.append(conn)
                tcp, ssl = handshake_tcp, handshake_tls
                mine = [conn]
            conn = mine[0]
            slots = conn.__dict__.setdefault("slots", [t0] * min(streams, 1000))
            k = min(range(len(slots)), key=lambda i: slots[i])
            start = max(t0, slots[k]) + 0.01 * n
            blocked = max(0.0, slots[k] - t0)
            wait = j(rtt + 0.4)
            # one pipe per connection: responses are serialised on it (interleaving does not change
            # when the last byte arrives); a loss on TCP stalls everything behind it, on QUIC one stream
            ready = start + tcp + ssl + dns + wait
            link_free = conn.__dict__.get("link_free", 0.0)
            recv, stall = transfer(conn, size + 120, 1, len(conns))
            done = max(ready, link_free) + recv
            conn.__dict__["link_free"] = done - (stall if protocol == "h3" else 0.0)
            end = entry(path, origin, conn, t0, blocked, dns, tcp, ssl, wait, done - ready)
            slots[k] = end
        else:
            free = [c for c in mine if c.free <= t0]
            if free:
                conn = free[0]
            elif len(mine) < per_origin:
                conn = _Conn(len(conns) + 1, origin, t0, iw)
                conns.append(conn)
                tcp, ssl = handshake_tcp, handshake_tls
            else:
                conn = min(mine, key=lambda c: c.free)
            blocked = max(0.0, conn.free - t0) + j(0.05)
            wait = j(rtt + 0.4)
            busy = min(n_active, len(conns))
            recv, _ = transfer(conn, size + 300, busy, busy)
            conn.free = entry(path, origin, conn, t0, blocked, dns, tcp, ssl, wait, recv)
        t0 += 0.02
    ends = []
    for e in entries:
        ends.append(e["start"] + sum(max(0.0, v) for k, v in e["timings"].items() if k != "ssl"))
    plt = max(ends)
    body = sum(s for _, s in objects)
    n_conns = len(conns)
    packets_down = math.ceil(body / MSS) + 3 * n_conns + len(objects) + counters["retrans"]
    packets_up = packets_down // 2 + len(objects) + 3 * n_conns
    phases = dict.fromkeys(("dns", "connect", "ssl", "send", "wait", "receive", "blocked"), 0.0)
    for e in entries:
        for k, v in e["timings"].items():
            phases[k] += max(0.0, v)
    why, why_path = _decompose(entries, ends, rtt)
    record = {
        "why": why,
        "why_path": why_path,
        "retx_fast": counters["retrans"] - counters["timeouts"],
        "retx_timeout": counters["timeouts"],
        "retx_tlp": 0,
        "retx_spurious": 0,
        "tow_ms": round(plt - first_request, 3),
        "tow_first_packet_ms": round(plt - 0.2, 3),
        "plt_ms": round(plt, 3),
        "bytes_down": body + 40 * packets_down + (4200 if tls else 0) * n_conns,
        "bytes_up": 60 * packets_up + 300 * len(objects),
        "packets_down": packets_down,
        "packets_up": packets_up,
        "retransmissions": counters["retrans"],
        "drops_queue": counters["drops_queue"],
        "drops_loss": counters["drops_loss"],
        "connections": n_conns,
        "tls_handshakes": n_conns if tls or protocol == "h3" else 0,
        "tls_resumed": 0,
        "objects": len(objects),
        "body_bytes": body,
        "pushed_bytes": 0,
        "pushes_used": 0,
        "pushes_unused": 0,
        "phases_ms": {k: round(v, 3) for k, v in phases.items()},
        "gateway": _gateway(counters["drops_queue"], aqm, sorted(sojourns) or [0.0]),
        "_max_queue": counters["max_queue"],
    }
    return record, entries


def _gateway(drops: int, aqm: bool, sojourns: list[float]) -> dict:
    """The load record's ``gateway``: the queue's drops by the discipline's cause, the sojourn percentiles."""

    def rank(q: float) -> float:
        return round(sojourns[min(len(sojourns) - 1, math.ceil(q * len(sojourns)) - 1)], 3)

    down = {
        "drops_tail": 0 if aqm else drops,
        "drops_aqm": drops if aqm else 0,
        "drops_overflow": 0,
        "marks": 0,
        "sojourn_ms": {"p50": rank(0.5), "p95": rank(0.95), "p99": rank(0.99), "max": rank(1.0)},
    }
    up = {
        **down,
        "drops_tail": 0,
        "drops_aqm": 0,
        "sojourn_ms": dict.fromkeys(("p50", "p95", "p99", "max"), 0.0),
    }
    flow = {
        "proto": "tcp",
        "client": "10.0.0.1:40000",
        "server": "10.0.0.2:443",
        "packets": 100,
        "drops": drops,
        "marks": 0,
    }
    return {
        "up": up,
        "down": down,
        "flows": 1,
        "flows_congested": int(drops > 0),
        "max_flow_drops": drops,
        "congested_flows": [flow] if drops else [],
    }


def _decompose(entries: list[dict], ends: list[float], rtt: float) -> tuple[dict, list]:
    """A model of the engine's decomposition (docs/why.md): the last request to end and the root
    before it, each phase charged to the part it stands for, the receive phase split in the
    proportions of its transfer's components; parts summing to tow_first_packet_ms (the first packet
    leaves after the root's 0.2 ms of blocked)."""
    keys = [p.key for p in _facts.why_parts()]
    parts = dict.fromkeys(keys, 0.0)
    path: list[list] = []

    def charge(frm: float, to: float, key: str, req: int) -> None:
        if to > frm:
            parts[key] += to - frm
            path.append([round(frm, 3), round(to, 3), key, req])

    def life(i: int, frm: float) -> None:
        e, t = entries[i], entries[i]["timings"]
        at = e["start"]
        for phase, key in (
            ("blocked", "queueing_ms"),
            ("dns", "dns_ms"),
            ("connect", "setup_ms"),
            ("send", "transfer_ms"),
        ):
            d = max(0.0, t[phase])
            charge(max(at, frm), max(at + d, frm), key, i)
            at += d
        wait = max(0.0, t["wait"])
        charge(at, at + min(wait, rtt), "transfer_ms", i)
        charge(at + min(wait, rtt), at + wait, "server_ms", i)
        at += wait
        comp = e.get("receive_parts") or {"transfer_ms": 1.0}
        total = sum(comp.values()) or 1.0
        receive = max(0.0, t["receive"])
        for key, v in comp.items():
            d = receive * v / total
            charge(at, at + d, key, i)
            at += d

    last = max(range(len(entries)), key=lambda k: ends[k])
    first_packet = 0.2
    life(0, first_packet)
    if last != 0:
        charge(ends[0], entries[last]["start"], "compute_ms", -1)
        life(last, entries[last]["start"])
    path.sort(key=lambda s: s[0])
    return {k: round(v, 3) for k, v in parts.items()}, path


def _iso(t: datetime) -> str:
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def write_trial(spec: dict[str, Any], out: Path, *, evil: bool = False) -> list[dict]:
    """Compute the trial and write its directory; returns the load records."""
    (out / "har").mkdir(parents=True, exist_ok=True)
    rng = random.Random(f"{spec['trial_id']}:{spec.get('seed', 1)}")
    sequence = [(p, r) for r in range(spec["repetitions"]) for p in spec["protocols"]]
    t = STARTED
    records, max_queue = [], 0
    with open(out / "loads.jsonl", "w") as f:
        for index, (protocol, rep) in enumerate(sequence):
            record, entries = _load(spec, protocol, rng, evil)
            max_queue = max(max_queue, record.pop("_max_queue"))
            har_name = f"har/{index}-{protocol}-{rep}.har"
            scheme = "http" if protocol in ("h1", "h2c") else "https"
            har_entries = []
            for e in sorted(entries, key=lambda e: e["start"]):
                host = "www" if e["origin"] == 1 else f"s{e['origin']}"
                har_entries.append(
                    {
                        "startedDateTime": _iso(t + timedelta(milliseconds=e["start"])),
                        "time": round(sum(max(0.0, v) for k, v in e["timings"].items() if k != "ssl"), 3),
                        "request": {
                            "method": "GET",
                            "url": f"{scheme}://{host}.wirelab.test{e['path']}",
                            "httpVersion": protocol,
                            "cookies": [],
                            "headers": [],
                            "queryString": [],
                            "headersSize": -1,
                            "bodySize": 0,
                        },
                        "response": {
                            "status": 200,
                            "statusText": "",
                            "httpVersion": protocol,
                            "cookies": [],
                            "headers": [],
                            "content": {"size": 1, "mimeType": "image/png"},
                            "redirectURL": "",
                            "headersSize": -1,
                            "bodySize": -1,
                        },
                        "cache": {},
                        "timings": e["timings"],
                        "connection": str(e["conn"]),
                        "_protocol": protocol,
                    }
                )
            har = {
                "log": {
                    "version": "1.2",
                    "creator": {"name": "tests/model_engine.py", "version": "model"},
                    "pages": [
                        {
                            "startedDateTime": _iso(t),
                            "id": "page_0",
                            "title": f"{spec['page']} over {protocol}",
                            "pageTimings": {"onLoad": record["plt_ms"]},
                        }
                    ],
                    "entries": har_entries,
                }
            }
            (out / har_name).write_text(json.dumps(har))
            full = {
                "trial_id": spec["trial_id"],
                "index": index,
                "protocol": protocol,
                "repetition": rep,
                "started_at": _iso(t),
                **record,
                "har": har_name,
                "pcap": None,
                "client": {},
                "error": None,
            }
            records.append(full)
            f.write(json.dumps(full) + "\n")
            t += timedelta(milliseconds=record["plt_ms"] + 50)
    resolved = dict(spec)
    resolved["network_resolved"] = netprofile.parse(spec.get("network", "native"))
    direction = {"packets": 0, "bytes": 0, "drops_queue": 0, "drops_loss": 0, "max_queue_packets": 0}
    trial = {
        "contract": 1,
        "spec": resolved,
        "provenance": {
            "engine_version": "model (tests/model_engine.py)",
            "git_sha": "0" * 12,
            "go_version": "none",
            "kernel": "none",
            "cpu": "none",
            "hostname": "test",
            "started_at": _iso(STARTED),
            "ended_at": _iso(t),
            "command": ["model_engine", "trial"],
        },
        "emulator": {
            "lateness_us": {"p50": 10.0, "p99": 50.0, "max": 200.0},
            "device_drops": 0,
            "up": dict(direction),
            "down": {
                **direction,
                "packets": sum(r["packets_down"] for r in records),
                "bytes": sum(r["bytes_down"] for r in records),
                "drops_queue": sum(r["drops_queue"] for r in records),
                "drops_loss": sum(r["drops_loss"] for r in records),
                "max_queue_packets": max_queue,
            },
        },
        "loads": len(records),
        "errors": 0,
    }
    (out / "trial.json").write_text(json.dumps(trial))
    return records


class _Run(TrialRun):
    def __init__(self, spec: dict, out_dir: Path, on_event: EventCallback, evil: bool):
        self.trial_id, self.out_dir = spec["trial_id"], out_dir
        self._code: int | None = None
        self._done = threading.Event()

        def main() -> None:
            on_event(TrialEvent(self.trial_id, "ready", {"event": "ready"}))
            try:
                write_trial(spec, out_dir, evil=evil)
                self._code, tail = 0, ""
            except Exception as e:  # a bug in the model must fail the trial, not hang the runner
                self._code, tail = 1, f"model_engine: {e!r}"
            self._done.set()
            on_event(TrialEvent(self.trial_id, "exit", returncode=self._code, stderr_tail=tail))

        threading.Thread(target=main, daemon=True).start()

    def poll(self) -> int | None:
        return self._code if self._done.is_set() else None

    def interrupt(self) -> None:
        pass

    def kill(self) -> None:
        pass

    def wait(self, timeout: float | None = None) -> int | None:
        return self._code if self._done.wait(timeout) else None


class ModelEngine(Engine):
    """See the module docstring. ``evil=True`` puts ``<script>`` into two object URLs of every HAR."""

    name = "ModelEngine"

    def __init__(self, *, evil: bool = False):
        self.evil = evil

    def version(self) -> str:
        return "model (tests/model_engine.py)"

    def commands(self) -> set[str]:
        return {"trial", "version"}

    def check_trials(self, specs: Sequence[Mapping[str, Any]]) -> None:
        for i, spec in enumerate(specs):
            try:
                validate("trial-spec", dict(spec), what="spec")
            except ContractError as e:
                error = SpecError(str(e), path=str(e).split(":", 1)[0])
                error.index = i  # type: ignore[attr-defined]
                raise error from None

    def start_trial(self, spec: dict[str, Any], out_dir: Path, on_event: EventCallback) -> TrialRun:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / SPEC_FILE).write_text(json.dumps(spec))
        return _Run(spec, out_dir, on_event, self.evil)

    def pages_ls(self) -> list[dict[str, Any]]:
        return [{"name": n, "objects": c} for n, (c, _) in PAGES.items()]

    def pages_show(self, name: str) -> dict[str, Any]:
        return {"name": name, "objects": [{"path": p, "size": s} for p, s in page_objects(name)]}

    def gc(self) -> str:
        return "gc: nothing to remove"

    def shell_argv(self, args: Sequence[str]) -> list[str]:
        raise NotImplementedError
