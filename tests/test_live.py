"""Live pages (docs/live.md): the spec's ``url:`` pages and ``allow_internet``, E's live figures from
stored loads, and `wirelab reproduce elkhatib-live --quick` replayed from the recorded live trials."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import wirelab
from wirelab import _facts, analysis, cli
from wirelab import spec as spec_mod
from wirelab._engine import SubprocessEngine
from wirelab.errors import EngineNotFoundError, SpecError
from wirelab.report import write_report
from wirelab.runner import EGRESS_REFUSED_FLAG
from wirelab.testing import FIXTURES_DIR, FixtureEngine

ROOT = Path(__file__).resolve().parent.parent
H3 = "url:https://h3.wirelab.test/L/fixture/"
SLOW = "url:https://slow.wirelab.test/L/fixture/"
LIVE_SPEC = f"""
[sweep]
name = "live"

[base]
protocols = ["h1s", "h2", "h3"]
repetitions = 2

[grid]
page = ["{H3}", "{SLOW}"]
"""


def test_a_spec_cannot_allow_the_internet():
    with pytest.raises(SpecError, match="base.allow_internet: is set by --allow-internet"):
        spec_mod.loads(LIVE_SPEC.replace("repetitions = 2", "repetitions = 2\nallow_internet = true"))
    with pytest.raises(SpecError, match="allow_internet"):
        spec_mod.loads(LIVE_SPEC + "allow_internet = [true, false]\n")


def test_with_internet_keeps_the_trials():
    plan = spec_mod.loads(LIVE_SPEC)
    assert all(t.spec["allow_internet"] is False for t in plan.trials)
    allowed = spec_mod.with_internet(plan)
    assert all(t.spec["allow_internet"] is True for t in allowed.trials)
    # the permission is not part of what is measured: same ids, same experiment
    assert [t.id for t in allowed.trials] == [t.id for t in plan.trials]
    assert allowed.spec_hash == plan.spec_hash
    assert all(t.spec["trial_id"] == t.id for t in allowed.trials)


def test_site_of():
    assert analysis.site_of(H3) == "h3.wirelab.test"
    assert analysis.site_of("url:HTTPS://Example.ORG:8443/x?y") == "example.org"
    assert [
        analysis.live.is_public(p)
        for p in ("url:https://www.example.org/", H3, "url:https://wirelab.test/", "twitter")
    ] == [
        True,
        False,
        False,
        False,
    ]
    assert analysis.site_of("twitter") == "twitter"
    assert analysis.is_live(SLOW) and not analysis.is_live("synthetic:8x4kB")


def _loads() -> pd.DataFrame:
    rows = []
    for page, tows in (
        (H3, {"h1s": [100, 120], "h3": [50, 70]}),
        (SLOW, {"h1s": [400, 400], "h3": [500, 600]}),
    ):
        for proto, values in tows.items():
            for rep, tow in enumerate(values):
                rows.append(
                    {"page": page, "protocol": proto, "repetition": rep, "tow_ms": float(tow), "error": None}
                )
    rows.append({"page": H3, "protocol": "h3", "repetition": 2, "tow_ms": 1.0, "error": "reset"})
    return pd.DataFrame(rows)


def test_site_gains_and_tow():
    gains = analysis.site_gains(_loads(), "h1s", ["h3"], n_boot=200)
    assert list(gains["site"]) == ["h3.wirelab.test", "slow.wirelab.test"]
    h3, slow = gains.to_dict("records")
    # E's gain: (mean(base) − mean(x)) / mean(base) × 100, over loads without error
    assert (h3["base_mean"], h3["mean"], h3["n"]) == (110.0, 60.0, 2)
    assert math.isclose(h3["gain_pct"], 50 / 110 * 100)
    assert math.isclose(slow["gain_pct"], -37.5)
    assert h3["ci_low"] <= h3["gain_pct"] <= h3["ci_high"]
    tow = analysis.site_tow(_loads())
    assert tow == {
        "h3.wirelab.test": {"h1s": [100.0, 120.0], "h3": [50.0, 70.0]},
        "slow.wirelab.test": {"h1s": [400.0, 400.0], "h3": [500.0, 600.0]},
    }


def test_reproduce_elkhatib_live_quick(tmp_path, fixture_engine, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli.app, ["reproduce", "elkhatib-live", "--quick", "--db", "w.db"])
    assert result.exit_code == 0, result.output
    assert [run.spec["page"] for run in fixture_engine.runs] == [H3, SLOW]
    index = tmp_path / "wirelab-report" / "elkhatib-live-quick" / "index.html"
    html = index.read_text()
    assert "Time on Wire per live site" in html
    assert (
        index.parent / "figures" / "elkhatib-live-quick" / "live-cdf-time-on-wire-per-live-site.svg"
    ).is_file()
    # the table of average gain per site: one row per site and compared protocol
    table = html[html.index("Average gain per site") :]
    table = table[: table.index("</table>")]
    rows = re.findall(r"<tr>\s*<td[^>]*>([a-z0-9.-]+\.wirelab\.test)</td>\s*<td[^>]*>([^<]+)</td>", table)
    assert rows == [
        ("h3.wirelab.test", "HTTP/2 vs HTTPS"),
        ("h3.wirelab.test", "HTTP/3 vs HTTPS"),
        ("slow.wirelab.test", "HTTP/2 vs HTTPS"),
        ("slow.wirelab.test", "HTTP/3 vs HTTPS"),
    ]
    # the generic CDF figure is replaced by the per-site one
    assert "Time on Wire distributions" not in html


def test_run_allow_internet_reaches_the_engine(tmp_path, fixture_engine):
    """The flag's plumbing only: the FixtureEngine replays recorded trials of the local internet and
    runs no engine, so nothing is loaded, resolved or sent."""
    spec = tmp_path / "live.toml"
    spec.write_text(LIVE_SPEC)
    runner = CliRunner()
    assert runner.invoke(cli.app, ["run", str(spec), "--db", str(tmp_path / "a.db")]).exit_code == 0
    assert (
        runner.invoke(
            cli.app, ["run", str(spec), "--db", str(tmp_path / "b.db"), "--allow-internet"]
        ).exit_code
        == 0
    )
    sent = [run.spec for run in fixture_engine.runs]
    assert [s["allow_internet"] for s in sent] == [False, False, True, True]


def _real_engine() -> Path:
    candidate = os.environ.get("WIRELAB_E2E_ENGINE") or str(ROOT / "bin" / "wirelab-engine")
    try:
        return SubprocessEngine(candidate).path
    except EngineNotFoundError as e:
        pytest.skip(f"no engine: {e}")


def _main(capsys, *argv: str) -> tuple[int, str]:
    cli.err.width = 200
    code = cli.main(list(argv))
    return code, capsys.readouterr().err


def test_the_engine_takes_the_same_live_pages(tmp_path):
    """LIVE_PREFIX is the engine's: the engine checks the pages Python calls live as live pages (a
    local site passes, an unknown local name is refused as not a site of the local internet)."""
    engine = SubprocessEngine(_real_engine())
    plan = spec_mod.loads(LIVE_SPEC)
    assert all(analysis.is_live(t.spec["page"]) for t in plan.trials)
    engine.check_trials([t.spec for t in plan.trials])
    other = {**plan.trials[0].spec, "page": analysis.live.LIVE_PREFIX + "https://nowhere.wirelab.test/"}
    with pytest.raises(SpecError, match="not a site of the local internet"):
        engine.check_trials([other])


def test_a_public_site_is_refused_before_anything_exists(capsys, tmp_path, off_machine):
    """Through the real engine, without root, and where no route leads off the machine: without
    --allow-internet a public site is one line naming the page, exit 2, no database."""
    engine, db = _real_engine(), tmp_path / "w.db"
    words = "public sites are loaded only with --allow-internet"
    spec = tmp_path / "public.toml"
    spec.write_text(LIVE_SPEC.replace(f'page = ["{H3}", "{SLOW}"]', 'page = ["url:https://example.org/"]'))
    code, err = _main(capsys, "run", str(spec), "--db", str(db), "--engine", str(engine))
    assert code == 2 and err.count("\n") == 1 and words in err and "page" in err, err
    assert not db.exists()
    code, err = _main(capsys, "load", "url:https://192.0.2.1/", "--db", str(db), "--engine", str(engine))
    assert code == 2 and err.count("\n") == 1 and words in err, err
    assert not db.exists()


def test_load_refuses_server_knobs_for_a_live_page(capsys, tmp_path, fake_engine):
    for argv in (["--server", "nginx"], ["--max-streams", "4"], ["--shards", "2"]):
        code, err = _main(
            capsys, "load", H3, *argv, "--db", str(tmp_path / "w.db"), "--engine", str(fake_engine)
        )
        assert code == 2 and err.count("\n") == 1 and "served by its site" in err, (argv, err)
    assert not (tmp_path / "w.db").exists()


def test_load_gap(capsys, tmp_path, fake_engine):
    """`wirelab load --gap-ms` reaches the trial spec; unless given it is 0, and for a public site the
    engine's minimum (a pure function of the page: nothing is run for the public case)."""
    for argv, want in (((), 0), (("--gap-ms", "300"), 300)):
        db = tmp_path / f"w{want}.db"
        code, err = _main(
            capsys,
            "load",
            H3,
            "-p",
            "h1s,h2",
            "-n",
            "1",
            *argv,
            "--db",
            str(db),
            "--engine",
            str(fake_engine),
        )
        assert code == 0, err
        with wirelab.open(db) as results:
            assert [t["gap_ms"] for t in results.trials()["spec"]] == [want]
    public = "url:https://www.example.org/"
    assert cli._default_gap_ms(H3, allow_internet=True) == 0
    assert cli._default_gap_ms(public, allow_internet=True) == _facts.min_public_gap_ms() == 1000
    assert cli._default_gap_ms(public, allow_internet=False) == 0
    assert cli._default_gap_ms("twitter", allow_internet=True) == 0


def _recorded(tmp_path: Path, page: str, edit) -> FixtureEngine:
    """A FixtureEngine whose one recording is live-h3's, with ``page`` and ``edit`` applied to its
    trial.json — a trial as the engine would write it for another live page; replaying it runs
    nothing, resolves nothing and sends nothing."""
    fixtures = tmp_path / "fixtures"
    recording = fixtures / "trials" / "live-edited"
    shutil.copytree(FIXTURES_DIR / "trials" / "live-h3", recording)
    trial = json.loads((recording / "trial.json").read_text())
    trial["spec"]["page"] = page
    edit(trial)
    (recording / "trial.json").write_text(json.dumps(trial))
    return FixtureEngine(fixtures)


def test_a_public_sites_trial_is_stored_and_reported(tmp_path):
    """A trial of a public site as the engine writes it (egress far side "host", no server under
    test) is stored and drawn like the local internet's: its site gets its ToW panel and gain rows.
    No --allow-internet is involved (see _recorded)."""
    public = "url:https://www.example.org/"

    def as_public(trial):
        trial["spec"].update(gap_ms=2000, network="native")
        del trial["provenance"]["server"]
        trial["provenance"]["namespaces"] = " ".join(trial["provenance"]["namespaces"].split()[:2])
        trial["egress"] = {
            "far": "host",
            "admitted": ["93.184.215.14"],
            "refused_by_policy": 0,
            "refused_packets": 0,
        }

    spec = tmp_path / "public.toml"
    spec.write_text(LIVE_SPEC.replace(f'page = ["{H3}", "{SLOW}"]', f'page = ["{public}"]'))
    db = tmp_path / "w.db"
    summary = wirelab.run(spec, db=db, engine=_recorded(tmp_path, public, as_public))
    assert summary.ok and not summary.fidelity_warnings
    with wirelab.open(db) as results:
        [stored] = results.trials("live")["provenance"]
        assert "server" not in stored
        assert set(analysis.site_of(p) for p in results.loads("live")["page"]) == {"www.example.org"}
    html = write_report(db, ["live"], tmp_path / "out").read_text()
    table = html[html.index("Average gain per site") :]
    assert re.search(r"<td[^>]*>www\.example\.org</td>\s*<td[^>]*>HTTP/3 vs HTTPS</td>", table)


def test_packets_the_router_refused_flag_the_trial(tmp_path):
    """trial.json's egress.refused_packets > 0 flags the trial (egress_refused) and the run says so."""

    def refused(trial):
        trial["egress"]["refused_packets"] = 3

    spec = tmp_path / "live.toml"
    spec.write_text(LIVE_SPEC.replace(f'page = ["{H3}", "{SLOW}"]', f'page = ["{H3}"]'))
    db = tmp_path / "w.db"
    summary = wirelab.run(spec, db=db, engine=_recorded(tmp_path, H3, refused))
    assert [o.flags for o in summary.completed] == [[EGRESS_REFUSED_FLAG]]
    assert "egress warning: 1 of 1 live trials sent packets the egress router rejected" in "\n".join(
        summary.lines()
    )
    with wirelab.open(db) as results:
        assert list(results.trials("live")["fidelity_flags"]) == [[EGRESS_REFUSED_FLAG]]
