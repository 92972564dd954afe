"""Figures: every plotting function renders PNG and SVG from small tables, in the registry's colours."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_hex

from wirelab import analysis
from wirelab._figures import plots
from wirelab._figures.rendering import Rendered, render
from wirelab._registry import PHASE_ORDER, PHASE_STYLES, PROTOCOL_STYLES, discipline_label, protocol_style
from wirelab.report._build import _mpl
from wirelab.spec import PROTOCOLS
from wirelab.testing import FIXTURES_DIR as FIXTURES


def test_registry_has_one_distinct_style_per_protocol():
    assert set(PROTOCOL_STYLES) == set(PROTOCOLS)
    colours = [s.colour.lower() for s in PROTOCOL_STYLES.values()]
    markers = [s.marker for s in PROTOCOL_STYLES.values()]
    assert len(set(colours)) == len(colours) and len(set(markers)) == len(markers)
    assert set(PHASE_STYLES) == set(PHASE_ORDER)
    assert protocol_style("h9").label == "h9"  # unknown protocols still draw


def test_report_css_uses_the_registrys_protocol_colours():
    """The report's stylesheet names each protocol's colour too (chips, tables): the same ones."""
    import re
    from pathlib import Path

    css = (Path(__file__).resolve().parent.parent / "wirelab/report/templates/report.css").read_text()
    declared = {m[0]: m[1].lower() for m in re.findall(r"--([a-z0-9]+):\s*(#[0-9A-Fa-f]{6})", css)}
    for name, style in PROTOCOL_STYLES.items():
        assert declared.get(name) == style.colour.lower(), (name, declared.get(name), style.colour)


def _svg_has(rendered: Rendered, colour: str) -> bool:
    return colour.lower() in rendered.svg.lower()


def _check(rendered: Rendered) -> None:
    assert rendered.png.startswith(b"\x89PNG") and len(rendered.png) > 5000
    assert rendered.svg.lstrip().startswith("<?xml") and "<svg" in rendered.svg


def gains_table() -> pd.DataFrame:
    rows = []
    for page, base in (("twitter", 5.0), ("youtube", 20.0)):
        for rtt in (20.0, 100.0, 200.0):
            g = base + rtt / 10
            rows.append(
                {
                    "page": page,
                    "network.rtt_ms": rtt,
                    "protocol": "h2",
                    "baseline": "h1s",
                    "gain_pct": g,
                    "ci_low": g - 3,
                    "ci_high": g + 3,
                    "significant": rtt > 50,
                }
            )
    return pd.DataFrame(rows)


def test_gain_figure_uses_the_protocol_colour(tmp_path):
    fig = plots.gain_figure(gains_table(), "network.rtt_ms", x_label="RTT (ms)", series=["page"])
    rendered = render(fig, "gain")
    _check(rendered)
    for i in range(2):  # two pages: two shades of HTTP/2's colour
        assert _svg_has(rendered, to_hex(plots.shade(protocol_style("h2").colour, i, 2)))
    one = render(
        plots.gain_figure(gains_table()[gains_table()["page"] == "twitter"], "network.rtt_ms", x_label="RTT"),
        "one",
    )
    assert _svg_has(one, protocol_style("h2").colour)
    files = rendered.write(tmp_path)
    assert [p.name for p in files] == ["gain.png", "gain.svg"] and all(p.stat().st_size for p in files)


def test_category_gain_figure_puts_each_arrangement_in_order():
    arrangements = ["one origin", "per top-level domain", "per domain"]
    rows = [
        {
            "sharding": a,
            "page": page,
            "protocol": proto,
            "baseline": "h1",
            "gain_pct": g,
            "ci_low": g - 4,
            "ci_high": g + 4,
            "significant": g > 10,
        }
        for proto, shift in (("h2c", 0.0), ("spdy3", -5.0))
        for page, base in (("twitter", 5.0), ("nytimes", 20.0))
        for a, g in zip(
            reversed(arrangements), (base + shift, base - 10 + shift, base - 20 + shift), strict=True
        )
    ]
    fig = plots.category_gain_figure(
        pd.DataFrame(rows), "sharding", categories=arrangements, x_label="sharding", series=["page"]
    )
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == ["one origin", "per top-level\ndomain", "per domain"]
    rendered = render(fig, "gain-per")
    _check(rendered)
    for i in range(2):  # two pages: two shades of each protocol's colour
        assert _svg_has(rendered, to_hex(plots.shade(protocol_style("h2c").colour, i, 2)))
        assert _svg_has(rendered, to_hex(plots.shade(protocol_style("spdy3").colour, i, 2)))


def test_main_effects_figure_with_a_categorical_factor():
    rows = [
        {"rtt": rtt, "sharding": a, "protocol": "h2c", "gain_pct": rtt / 10 + k}
        for rtt in (20.0, 200.0)
        for k, a in enumerate(("one origin", "per domain"))
        for _ in range(2)
    ]
    effects = analysis.main_effects(pd.DataFrame(rows), ["rtt", "sharding"])
    assert set(effects.loc[effects["factor"] == "sharding", "level"]) == {"one origin", "per domain"}
    assert set(effects.loc[effects["factor"] == "rtt", "level"]) == {20.0, 200.0}
    fig = plots.main_effects_figure(
        effects,
        [("rtt", "RTT (ms)", False), ("sharding", "sharding", False)],
        baseline="h1",
        categories={"sharding": ["per domain", "one origin"]},
    )
    panel = fig.axes[1]
    assert [t.get_text() for t in panel.get_xticklabels()] == ["per domain", "one origin"]
    # the line follows the given order: per domain (gain +1) first, then one origin (+0)
    ys = panel.get_lines()[0].get_ydata()
    assert list(ys) == pytest.approx([12.0, 11.0])
    _check(render(fig, "effects-cat"))


def test_text_from_data_is_not_mathtext():
    table = gains_table().assign(page=_mpl("cost $5 and $6"))
    _check(render(plots.gain_figure(table, "network.rtt_ms", x_label="RTT", series=["page"]), "m"))


def test_cdf_and_ratio_figures():
    rng = np.random.default_rng(0)
    panels = [("twitter, RTT 20 ms", {"h1s": rng.normal(900, 30, 20), "h2": rng.normal(800, 30, 20)})]
    cdf = render(plots.cdf_figure(panels), "cdf")
    _check(cdf)
    assert _svg_has(cdf, protocol_style("h1s").colour) and _svg_has(cdf, protocol_style("h2").colour)
    ratios = pd.DataFrame({"protocol": ["h2"] * 5, "s": [0.5, 0.8, 0.95, 1.05, 1.3]})
    _check(render(plots.ratio_cdf_figure(ratios, baseline="h1s"), "ratio"))


def test_heatmap_and_multiplex_figures():
    grid = pd.DataFrame(
        [
            {"streams": s, "rtt": r, "gain_pct": (s - 4) * r / 100}
            for s in (1, 2, 4, 8, 16)
            for r in (50.0, 150.0, 250.0)
        ]
    )
    boundary = pd.DataFrame({"rtt": [50.0, 150.0, 250.0], "m": [8.0, 8.0, 8.0]})
    fig = plots.heatmap_figure(
        grid, x="streams", y="rtt", x_label="streams", y_label="RTT (ms)", boundary=boundary, trend=(8.0, 0.0)
    )
    _check(render(fig, "heatmap"))
    points = pd.DataFrame({"page": ["a", "b", "c"], "r": [7.0, 50.0, 133.0], "m": [2.0, 12.0, 33.0]})
    fit = analysis.fit_m_vs_r(points)
    _check(render(plots.multiplex_figure(points, slope=fit.slope, r2=fit.r2), "m"))


def test_phase_gateway_scenario_figures():
    shares = pd.DataFrame(
        [
            {
                "group": g,
                "protocol": p,
                "dns": 0.1,
                "connect": 0.2,
                "ssl": 0.1 if p == "h1s" else 0.0,
                "wait": 0.3,
                "receive": 0.3 if p == "h1s" else 0.4,
            }
            for g in ("20 ms", "200 ms")
            for p in ("h1s", "h2")
        ]
    )
    phases = render(plots.phase_figure(shares, group="group", protocols=["h1s", "h2"]), "phases")
    _check(phases)
    assert _svg_has(phases, PHASE_STYLES["ssl"].colour)
    table = pd.DataFrame(
        [
            {"x": x, "protocol": p, "retransmissions": x * 2, "drops_queue": x, "rtt_inflation_ms": 10 * x}
            for x in (0.0, 1.0, 2.0)
            for p in ("h1s", "h2")
        ]
    )
    _check(render(plots.gateway_figure(table, "x", x_label="loss (%)"), "gw"))
    stats = pd.DataFrame(
        [
            {"scenario": s, "protocol": p, "mean": 1000.0, "ci_low": 900.0, "ci_high": 1100.0}
            for s in ("high latency", "high loss")
            for p in ("h1", "h2")
        ]
    )
    thr = stats.assign(throughput_mbit=5.0)
    _check(
        render(
            plots.scenario_figure(
                stats, scenario="scenario", protocols=["h1", "h2"], metric_label="PLT (ms)", throughput=thr
            ),
            "sc",
        )
    )


def test_discipline_figure_and_labels():
    assert [discipline_label(q) for q in ("256", "64kB", "codel", "fq_codel:2000", "pie", "weird")] == [
        "drop-tail 256",
        "drop-tail 64kB",
        "CoDel",
        "FQ-CoDel 2000",
        "PIE",
        "weird",
    ]
    table = pd.DataFrame(
        [
            {
                "queue": q,
                "cfg": c,
                "protocol": p,
                "gain_pct": 5.0,
                "sojourn_down_p95_ms": 100.0 if q == "256" else 8.0,
                "drops_tail": 3.0 if q == "256" else 0.0,
                "drops_aqm": 0.0 if q == "256" else 2.0,
                "drops_overflow": 0.0,
                "retransmissions": 4.0,
            }
            for q in ("256", "codel", "fq_codel")
            for c in ("1 Mbit/s", "8 Mbit/s")
            for p in ("h1s", "h2")
        ]
    )
    panels = [
        ("gain_pct", "gain"),
        ("sojourn_down_p95_ms", "delay"),
        ("drops", "drops"),
        ("retransmissions", "re"),
    ]
    fig = render(
        plots.discipline_figure(
            table, discipline="queue", column="cfg", protocols=["h1s", "h2"], panels=panels
        ),
        "d",
    )
    _check(fig)
    assert _svg_has(fig, protocol_style("h2").colour)
    pooled = table[table["cfg"] == "1 Mbit/s"]
    _check(
        render(
            plots.discipline_figure(
                pooled, discipline="queue", column=None, protocols=["h2"], panels=panels[:1]
            ),
            "d1",
        )
    )


def test_tree_figure():
    data = pd.DataFrame({"rtt": [20.0, 20.0, 200.0, 200.0] * 3, "loss": [0.0, 2.0] * 6})
    data["cls"] = np.where(data["rtt"] > 100, "better", "worse")
    tree = analysis.fit_tree(data, ["rtt", "loss"])
    fig = plots.tree_figure(
        tree, names={"rtt": "RTT"}, class_names={"better": "h2 better", "worse": "h1 better"}
    )
    _check(render(fig, "tree"))


def test_waterfall_lanes_pack_requests_of_a_connection():
    objects = [
        {
            "url": "https://www.wirelab.test/",
            "connection": "1",
            "started_ms": 0,
            "time_ms": 100,
            "wait_ms": 100,
        },
        {
            "url": "https://www.wirelab.test/a",
            "connection": "1",
            "started_ms": 100,
            "time_ms": 50,
            "wait_ms": 50,
        },
        {
            "url": "https://www.wirelab.test/b",
            "connection": "1",
            "started_ms": 120,
            "time_ms": 50,
            "wait_ms": 50,
        },
        {
            "url": "https://www.wirelab.test/c",
            "connection": "2",
            "started_ms": 100,
            "time_ms": 80,
            "connect_ms": 30,
            "ssl_ms": 10,
            "wait_ms": 50,
        },
    ]
    lanes = plots._lanes(objects)
    assert [conn for conn, _ in lanes] == ["1", "2"]
    assert [len(row) for row in lanes[0][1]] == [2, 1]  # / then /a on one row; /b overlaps /a
    segments = dict(plots._segments(objects[3]))
    assert segments["connect"] == 20 and segments["ssl"] == 10  # HAR connect includes ssl
    _check(render(plots.waterfall_figure(objects), "wf"))


@pytest.mark.parametrize(("index", "count"), [(0, 1), (0, 3), (2, 3)])
def test_shades_keep_the_hue(index, count):
    base = protocol_style("h2").colour
    shade = plots.shade(base, index, count)
    assert all(0 <= c <= 1 for c in shade)
    if count == 1:
        assert shade == pytest.approx(tuple(int(base[i : i + 2], 16) / 255 for i in (1, 3, 5)))


def test_waterfall_from_a_recorded_har():
    har = json.loads((FIXTURES / "trials" / "youtube" / "har" / "1-h2-0.har").read_text())
    rendered = render(plots.waterfall_from_har(har, title="youtube over h2"), "har")
    _check(rendered)
    assert _svg_has(rendered, PHASE_STYLES["receive"].colour)
    with pytest.raises(ValueError, match="no entries"):
        plots.waterfall_from_har({"log": {"entries": []}})


def test_filmstrip_shows_each_loads_frame_on_screen_at_every_change(tmp_path):
    """docs/vitals.md: one column per moment a load's picture changed (thinned to at most ten, first
    and last kept); each cell is the frame on screen then."""
    from PIL import Image

    from wirelab.store import Frame

    assert plots.filmstrip_columns([[(0, 0), (200, 50), (400, 100)], [(0, 0), (300, 100)]]) == [
        0,
        200,
        300,
        400,
    ]
    many = [[(float(t), 0.0) for t in range(0, 2000, 100)]]
    cols = plots.filmstrip_columns(many, max_columns=5)
    assert cols[0] == 0 and cols[-1] == 1900 and len(cols) == 5
    assert plots._on_screen([Frame(0, 0, tmp_path), Frame(300, 100, tmp_path)], 299).time_ms == 0

    def frame(name, colour, t, progress, mode="RGB"):
        path = tmp_path / f"{name}.jpg"
        Image.new(mode, (40, 30), colour).save(path)
        return Frame(time_ms=t, progress=progress, path=path)

    strips = [
        ("h2", "HTTP/2", [frame("w2", 255, 0, 0, "L"), frame("a", (200, 0, 0), 250, 100)]),
        (
            "h3",
            "HTTP/3",
            [frame("w3", 255, 0, 0, "L"), frame("b", (0, 0, 200), 180, 40), frame("c", (0, 0, 90), 320, 100)],
        ),
    ]
    fig = plots.filmstrip_figure(strips)
    axes = fig.axes
    assert len(axes) == 2 * 4  # the moments 0, 180, 250, 320
    assert [a.get_title() for a in axes[:4]] == ["0.00 s", "0.18 s", "0.25 s", "0.32 s"]
    # h2 at 180 ms still shows its blank frame (0 %); h3 at 250 ms its 40 % frame
    assert axes[1].get_xlabel() == "0 %" and axes[4 + 2].get_xlabel() == "40 %"
    r = render(fig, "filmstrip")
    assert r.png.startswith(b"\x89PNG") and "<svg" in r.svg
