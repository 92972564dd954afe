"""The report's section for a probe run (``wirelab probe``, ``docs/probe.md``): the share of contacted
sites announcing vs serving each protocol (a figure and a table), the sites where the two differ, and
one row per site."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pandas as pd

from wirelab._figures import plots
from wirelab._figures.rendering import render, slug
from wirelab._registry import protocol_style
from wirelab.analysis.probes import ANNOUNCEMENTS, gaps, probe_shares
from wirelab.report._build import Cell, FigureBlock, TableBlock
from wirelab.store import PROBE_PROTOCOLS, Results

__all__ = ["ProbeSection", "build_probe_section"]

_BY_LABEL = {
    "alpn": "ALPN",
    "alt-svc": "Alt-Svc",
    "https-rr": "HTTPS record",
    "upgrade": "upgrade",
    "default": "default",
}


@dataclasses.dataclass
class ProbeSection:
    name: str
    anchor: str
    counts: dict[str, str]
    findings: list[str]
    figures: list[FigureBlock]
    tables: list[TableBlock]
    provenance: dict[str, str]


def _count(v: Any) -> str:
    return "—" if pd.isna(v) else str(int(v))


def _share(count: Any, pct: Any) -> str:
    return "—" if pd.isna(count) else f"{int(count)} ({pct:.0f} %)"


def _ms(v: Any) -> str:
    return "" if pd.isna(v) else f"{v:,.1f}"


def _findings(shares: pd.DataFrame, gap: pd.DataFrame, contacted: int) -> list[str]:
    out = []
    for row in shares.to_dict("records"):
        label = protocol_style(row["protocol"]).label
        served = int(row["served"])
        if row["protocol"] == "h1":
            out.append(f"{label}: {served} of {contacted} sites answer on port 80.")
            continue
        sentence = f"{label}: {int(row['announced'])} of {contacted} sites announce it, {served} serve it"
        for kind in ("announced, not served", "served, not announced"):
            mine = gap[(gap["protocol"] == row["protocol"]) & (gap["kind"] == kind)]
            if len(mine):
                names = ", ".join(mine["site"].head(5)) + (" …" if len(mine) > 5 else "")
                sentence += f"; {len(mine)} {kind} ({names})"
        out.append(sentence + ".")
    return out


def build_probe_section(results: Results, run: str, out_dir: Path) -> ProbeSection:
    """Everything the report shows about one probe run; its figure goes to ``out_dir/figures/``."""
    info = results.probe_runs().set_index("run").loc[run]
    protocols = results.probe_protocols(run)
    sites = results.probes(run)
    shares = probe_shares(protocols)
    gap = gaps(protocols)
    contacted = int((sites["addr"] != "").sum())
    counts = {
        "sites": str(len(sites)),
        "contacted": str(contacted),
        "refused": str(int(sites["refused"].notna().sum())),
        "errors": str(int(sites["error"].notna().sum())),
        "where": "local internet"
        if info["local"]
        else ("live (--allow-internet)" if info["allow_internet"] else "lab"),
        "status": str(info["status"]),
        "started": str(info["started_at"]),
    }
    figures = []
    if contacted:
        title = "protocols announced vs served"
        name = slug(f"support-{title}")
        rendered = render(plots.probe_support_figure(shares), name)
        rendered.write(out_dir / "figures" / f"probe-{slug(run)}")
        caption = (
            f"Share of the {contacted} contacted sites that announce each protocol (hatched: ALPN, Alt-Svc, "
            "an HTTPS DNS record or the h2c upgrade) and that serve it (solid: a request over it got a "
            "response). HTTP/1.1 on port 80 has no announcement."
        )
        figures.append(
            FigureBlock(f"fig-probe-{slug(run)}-{name}", title, caption, {"run": run}, rendered, "probe")
        )
    share_rows = []
    for row in shares.to_dict("records"):
        share_rows.append(
            [
                Cell(protocol_style(row["protocol"]).label, f"proto-{row['protocol']}"),
                Cell(str(row["sites"]), "num"),
                Cell(_share(row["announced"], row["announced_pct"]), "num"),
                Cell(_share(row["served"], row["served_pct"]), "num"),
                Cell(_count(row["announced_not_served"]), "num"),
                Cell(_count(row["served_not_announced"]), "num"),
                *(Cell(_count(row[f"by_{a}"]), "num") for a in ANNOUNCEMENTS),
            ]
        )
    tables = [
        TableBlock(
            f"tab-probe-{slug(run)}-shares",
            "Announced vs served, per protocol",
            "Counts of contacted sites (refused and unresolved sites are not counted). A protocol is "
            "announced when a site names it (ALPN, Alt-Svc, HTTPS record, 101 to the h2c upgrade; "
            "'default': an HTTPS record implies http/1.1) and served when a request over it got a response.",
            ["protocol", "sites", "announced", "served", "announced, not served", "served, not announced"]
            + [f"by {_BY_LABEL[a]}" for a in ANNOUNCEMENTS],
            share_rows,
            open=True,
        )
    ]
    site_rows = []
    for s in sites.to_dict("records"):
        s = {k: (None if not isinstance(v, list) and pd.isna(v) else v) for k, v in s.items()}
        cells = [Cell(s["host"], "", s["url"]), Cell(s["addr"] or "—")]
        for p in PROBE_PROTOCOLS:
            if not s["addr"]:
                cells.append(Cell(""))
            elif s[f"{p}_served"]:
                status = s[f"{p}_status"]
                text = str(int(status)) if status is not None else "served"
                cells.append(Cell(text, "num pos", f"served; {s[f'{p}_alpn'] or 'no ALPN'}"))
            elif s[f"{p}_announced"]:
                by = ", ".join(s[f"{p}_announced_by"])
                cells.append(
                    Cell("announced", "neg", f"announced by {by}; {s[f'{p}_error'] or 'no response'}")
                )
            else:
                cells.append(Cell("—", "muted", s[f"{p}_error"] or ""))
        cells += [
            Cell(s["alt_svc"] or ""),
            Cell(s["https_alpn"] or ""),
            Cell(_ms(s["h2_handshake_ms"]), "num"),
            Cell(_ms(s["h3_handshake_ms"]), "num"),
            Cell(s["refused"] or s["error"] or "", "error" if s["refused"] or s["error"] else ""),
        ]
        site_rows.append(cells)
    tables.append(
        TableBlock(
            f"tab-probe-{slug(run)}-sites",
            "Per site",
            "Per protocol: the root document's status when served, 'announced' when announced but not "
            "served, — otherwise (hover a cell for the negotiated ALPN or the error). Handshake times in ms.",
            [
                "site",
                "addr",
                *(protocol_style(p).label for p in PROBE_PROTOCOLS),
                "Alt-Svc",
                "HTTPS alpn",
                "h2 handshake",
                "h3 handshake",
                "note",
            ],
            site_rows,
            open=len(site_rows) <= 50,
        )
    )
    provenance = {"engine arguments": " ".join(info["args"])}
    for k, v in (info["provenance"] or {}).items():
        if isinstance(v, str | int | float):
            provenance[f"control {k}"] = str(v)
    return ProbeSection(
        name=run,
        anchor=f"probe-{slug(run)}",
        counts=counts,
        findings=_findings(shares, gap, contacted) if contacted else ["No site was contacted."],
        figures=figures,
        tables=tables,
        provenance=provenance,
    )
