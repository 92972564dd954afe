"""Retransmissions and what the gateway (the emulated bottleneck) did to the loads.

What the engine measures directly (load records, ``docs/trial-contract.md``): ``retransmissions``,
``drops_queue`` (drops at the emulated queue, any cause) and, since the queue disciplines, its
drops by cause (``drops_tail``, ``drops_aqm``, ``drops_overflow``), its ECN ``marks``, how long the
load's packets waited at the gateway (``sojourn_down_p50_ms`` … per direction: the **gateway delay**,
measured) and the flows it dropped packets of (``flows_congested``, ``max_flow_drops``);
``drops_loss`` (the loss model), packets and bytes per direction; per trial, the emulator's largest
queue occupancy (``max_queue_packets``). Loads stored before the gateway columns have NaN there.

**The gateway on the critical path**: the decomposition's ``gateway_ms`` (``docs/why.md``): the time
the load's critical bytes waited in the gateway's queue behind other packets (the loads'
``why_gateway_ms``) — the sojourn percentiles count every packet's wait, this only the wait that
delayed the load; and the retransmissions by kind (``retx_fast``, ``retx_timeout``, ``retx_tlp``,
``retx_spurious``). It replaces the RTT-inflation estimate below, which remains for loads stored
without a decomposition.

What is inferred here (estimates, labelled as such in the report):

- **RTT inflation under load** (from the HAR; only for loads without a decomposition): a load's idle
  round-trip time is the TCP handshake of its first connection (HAR ``connect − ssl``; for QUIC,
  where the handshake carries TLS, ``connect``), made before any data flows. Under load, a request's
  time to first byte (HAR ``wait``) is one RTT plus server time plus the time its response waits in
  the bottleneck queue behind other data. The estimate is ``median(wait of the sub-resources) − idle
  RTT``; the built-in server answers in microseconds, so this is the queueing delay the load's own
  traffic caused.
- **Queueing-delay bound** (from the emulator): ``max_queue_packets × 1500 B × 8 / downlink rate``,
  the longest a full-size packet could have waited in the downlink queue during the trial.
- **Throughput**: response body bytes × 8 / PLT.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from wirelab import _facts
from wirelab.analysis.stats import ok_loads

__all__ = ["GATEWAY_METRICS", "MTU_BYTES", "gateway_effects", "queue_delay_bound_ms", "rtt_inflation"]

MTU_BYTES = 1500

#: The gateway's own per-load measurements (``Results.loads()`` columns, v8), averaged per group by
#: :func:`gateway_effects` when the sweep has them.
GATEWAY_METRICS = (
    "drops_tail",
    "drops_aqm",
    "drops_overflow",
    "marks",
    "sojourn_down_p50_ms",
    "sojourn_down_p95_ms",
    "sojourn_up_p95_ms",
    "flows_congested",
    "max_flow_drops",
)


def rtt_inflation(objects: pd.DataFrame) -> pd.DataFrame:
    """Per load (``trial_id``, ``load_index``): ``idle_rtt_ms``, ``loaded_ttfb_ms``, ``rtt_inflation_ms``.

    ``objects`` is ``Results.objects()`` (or any frame with ``trial_id``, ``load_index``, ``started_ms``,
    ``connect_ms``, ``ssl_ms``, ``wait_ms``). Loads without a handshake or without sub-resources get NaN."""
    keys = ["trial_id", "load_index"]
    cols = [*keys, "idle_rtt_ms", "loaded_ttfb_ms", "rtt_inflation_ms"]
    if objects.empty:
        return pd.DataFrame(columns=cols)
    frame = objects[[*keys, "started_ms", "connect_ms", "ssl_ms", "wait_ms"]].copy()
    if "entry_index" in objects:
        frame["entry_index"] = objects["entry_index"]
        frame = frame.sort_values([*keys, "started_ms", "entry_index"], kind="stable")
    else:
        frame = frame.sort_values([*keys, "started_ms"], kind="stable")
    for col in ("connect_ms", "ssl_ms", "wait_ms"):
        frame[col] = pd.to_numeric(frame[col], errors="coerce")
    handshakes = frame[frame["connect_ms"] > 0].groupby(keys, sort=False).first()
    tcp = handshakes["connect_ms"] - handshakes["ssl_ms"].fillna(0.0)
    idle = tcp.where(tcp > 0, handshakes["connect_ms"]).rename("idle_rtt_ms")
    later = frame[frame.groupby(keys, sort=False).cumcount() > 0]
    ttfb = later.groupby(keys, sort=False)["wait_ms"].median().rename("loaded_ttfb_ms")
    loads = frame[keys].drop_duplicates().set_index(keys)
    out = loads.join(idle).join(ttfb).reset_index()
    out["rtt_inflation_ms"] = out["loaded_ttfb_ms"] - out["idle_rtt_ms"]
    out["load_index"] = out["load_index"].astype(int)
    return out[cols]


def queue_delay_bound_ms(emulator: Mapping[str, Any] | None, spec: Mapping[str, Any] | None) -> float:
    """The emulator's largest downlink queue occupancy as a delay (see the module docstring); NaN when
    the trial has no rate limit or the numbers are missing."""
    try:
        packets = float(emulator["down"]["max_queue_packets"])  # type: ignore[index]
        rate = float(spec["network_resolved"]["down"]["rate_bps"])  # type: ignore[index]
    except (KeyError, TypeError, ValueError):
        return float("nan")
    if rate <= 0:
        return float("nan")
    return packets * MTU_BYTES * 8 / rate * 1000


def gateway_effects(
    loads: pd.DataFrame,
    by: Sequence[str],
    *,
    objects: pd.DataFrame | None = None,
    queue_bounds: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """One row per group of ``by`` (which should include ``protocol``): means per load of
    ``retransmissions``, ``retransmission_pct`` (of all packets), ``drops_queue``, ``drops_loss``,
    ``packets``, ``connections``, ``throughput_mbit``, and of :data:`GATEWAY_METRICS` where the loads
    have them; where the loads have a decomposition the ``gateway_ms`` on their critical path and the
    retransmissions by kind (``retx_fast`` …), else with ``objects`` the estimated
    ``rtt_inflation_ms`` and ``idle_rtt_ms``; with ``queue_bounds`` (trial id → ms), the largest
    ``queue_delay_bound_ms``."""
    ok = ok_loads(loads).copy()
    packets = (ok["packets_down"] + ok["packets_up"]).astype(float)
    ok["packets"] = packets
    ok["retransmission_pct"] = np.where(
        packets > 0, ok["retransmissions"] / packets.where(packets > 0) * 100, np.nan
    )
    plt = ok["plt_ms"].astype(float)
    ok["throughput_mbit"] = np.where(plt > 0, ok["body_bytes"] * 8 / plt.where(plt > 0) / 1000, np.nan)
    metrics = [
        "retransmissions",
        "retransmission_pct",
        "drops_queue",
        "drops_loss",
        "packets",
        "connections",
        "throughput_mbit",
    ]
    metrics += [c for c in GATEWAY_METRICS if c in ok and ok[c].notna().any()]
    measured = "why_gateway_ms" in ok and ok["why_gateway_ms"].notna().any()
    if measured:
        ok["gateway_ms"] = ok["why_gateway_ms"]
        metrics += ["gateway_ms", *(k for k in _facts.retx_keys() if k in ok)]
    elif objects is not None and not objects.empty:
        infl = rtt_inflation(objects)
        ok = ok.merge(infl, on=["trial_id", "load_index"], how="left")
        metrics += ["idle_rtt_ms", "rtt_inflation_ms"]
    by = list(by)
    out = ok.groupby(by, sort=False, dropna=False)[metrics].mean().reset_index()
    out.insert(len(by), "n", ok.groupby(by, sort=False, dropna=False).size().to_numpy())
    if queue_bounds is not None and "trial_id" in ok:
        bound = ok["trial_id"].map(lambda t: queue_bounds.get(t, float("nan")))
        out["queue_delay_bound_ms"] = (
            ok.assign(_b=bound).groupby(by, sort=False, dropna=False)["_b"].max().to_numpy()
        )
    return out
