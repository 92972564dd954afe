"""Protocol support from probe records (``wirelab probe``, ``docs/probe.md``): per protocol, how many
sites announce it (ALPN, Alt-Svc, DNS HTTPS records, the h2c upgrade) and how many serve it (a request
over it got a response), and the gap between the two.

Input is :meth:`wirelab.store.Results.probe_protocols` (one row per site and protocol). Only sites the
probe contacted count (``addr`` not empty): refused and unresolved sites are reported apart.
"""

from __future__ import annotations

import pandas as pd

from wirelab import _contract as contract
from wirelab.store import PROBE_PROTOCOLS

__all__ = ["ANNOUNCEMENTS", "gaps", "probe_shares"]

#: how a protocol can be announced, in report order (the probe record's ``announced_by`` values)
ANNOUNCEMENTS: tuple[str, ...] = tuple(
    contract.load_schema("probe-record")["$defs"]["fields"]["announced_by"]["items"]["enum"]
)


def probe_shares(protocols: pd.DataFrame) -> pd.DataFrame:
    """One row per run and protocol: ``sites`` (contacted), ``announced`` and ``served`` (counts),
    ``announced_pct`` and ``served_pct`` (of ``sites``), ``announced_not_served``,
    ``served_not_announced`` and ``by_<announcement>`` counts. ``announced`` and the columns derived
    from it are None for h1, which has no way of being announced."""
    rows = []
    contacted = protocols[protocols["addr"] != ""]
    runs = list(dict.fromkeys(protocols["run"]))
    for run in runs:
        mine = contacted[contacted["run"] == run]
        for proto in PROBE_PROTOCOLS:
            p = mine[mine["protocol"] == proto]
            n = len(p)
            served = int(p["served"].sum())
            row: dict[str, object] = {"run": run, "protocol": proto, "sites": n, "served": served}
            row["served_pct"] = 100.0 * served / n if n else None
            if proto == "h1":
                row.update(
                    announced=None, announced_pct=None, announced_not_served=None, served_not_announced=None
                )
                row.update({f"by_{a}": None for a in ANNOUNCEMENTS})
            else:
                ann = p["announced"].astype(bool)
                srv = p["served"].astype(bool)
                announced = int(ann.sum())
                row["announced"] = announced
                row["announced_pct"] = 100.0 * announced / n if n else None
                row["announced_not_served"] = int((ann & ~srv).sum())
                row["served_not_announced"] = int((~ann & srv).sum())
                for a in ANNOUNCEMENTS:
                    row[f"by_{a}"] = int(p["announced_by"].map(lambda by, a=a: a in by).sum())
            rows.append(row)
    return pd.DataFrame(rows)


def gaps(protocols: pd.DataFrame) -> pd.DataFrame:
    """The sites that announce a protocol without serving it, or serve it unannounced: run, site,
    protocol, ``kind`` (``announced, not served`` or ``served, not announced``), announced_by, error."""
    p = protocols[(protocols["addr"] != "") & (protocols["protocol"] != "h1")]
    ann = p["announced"].astype(bool)
    srv = p["served"].astype(bool)
    out = p[ann != srv][["run", "site_index", "site", "protocol", "announced_by", "error"]].copy()
    out.insert(
        4, "kind", ["announced, not served" if a else "served, not announced" for a in ann[ann != srv]]
    )
    return out.reset_index(drop=True)
