"""The command line: every error is one line (bad input exits 2); commands work end to end against the
engine stand-in (tests/fake_engine.py) through the real SubprocessEngine."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import wirelab.cli as cli
from wirelab import __version__, _cli_run
from wirelab.cli import main

ROOT = Path(__file__).resolve().parent.parent


def run_cli(capsys, *argv):
    cli.out.width = cli.err.width = 160  # wide enough that rich does not wrap what the tests look for
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_version(capsys):
    code, out, _ = run_cli(capsys, "--version")
    assert code == 0 and out.strip() == f"wirelab {__version__}"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run"], "wirelab run: Missing argument"),
        (["run", "/nonexistent.toml"], "wirelab: /nonexistent.toml: does not exist"),
        (["run", "SPEC", "--parallel", "x"], "wirelab run: Invalid value for '--parallel'"),
        (["frobnicate"], "wirelab: No such command 'frobnicate'"),
        (["load", "twitter", "--net", "rtt=150"], 'wirelab: --net: rtt: "150" has no unit'),
        (["load", "twitter", "--proto", "h1s,h4"], 'wirelab: --proto: "h4" is not a protocol'),
        (["load", "twitter", "--proto", "h2,h2"], 'wirelab: --proto: "h2,h2" must list each protocol once'),
        (["load", "twitter", "-n", "0"], "wirelab load: Invalid value for '-n' / '--repetitions'"),
        (["load", "twitter", "--waterfall", "h3"], 'wirelab: --waterfall: "h3" is not one of --proto'),
        (
            ["profiles", "show", "cabel"],
            'wirelab: profile: cabel: "cabel" is not a known preset; did you mean cable?',
        ),
        (["results", "ls", "--db", "/nonexistent/x.db"], "wirelab: --db: /nonexistent/x.db does not exist"),
        (["results", "export", "demo", "--format", "xlsx"], 'wirelab: --format: "xlsx" is not a format'),
        (["spec", "check", "BAD"], 'wirelab: base.network.rtt: "150" has no unit'),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, argv, expected):
    bad = tmp_path / "bad.toml"
    bad.write_text('[sweep]\nname = "x"\n[base]\npage = "twitter"\nnetwork = "rtt=150"\n')
    argv = [str(bad) if a in ("BAD", "SPEC") else a for a in argv]
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith(expected), err
    assert out == ""


def test_option_bounds_and_defaults_are_their_owners(capsys, monkeypatch):
    """`load -n`/`--shards` take the contract's range, `probe --help` quotes the engine's defaults:
    both read from their owner, so a change there shows here."""
    from wirelab import _facts
    from wirelab._contract_models import TrialSpecFields

    reps = TrialSpecFields.model_fields["repetitions"]
    most = next(m.le for m in reps.metadata if hasattr(m, "le"))
    code, _, err = run_cli(capsys, "load", "twitter", "-n", str(most + 1))
    assert code == 2 and err.startswith("wirelab load: Invalid value for '-n'") and str(most) in err, err
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run_cli(capsys, "probe", "--help")
    assert code == 0
    facts = _facts.probe_defaults()
    for key in ("concurrency", "rate", "timeout", "max_sites", "max_duration"):
        assert f"(default {facts[key]})" in out, key
    for bound in (
        f"1–{facts['concurrency_max']}",
        f"at most {facts['rate_max_per_s']}/s",
        facts["timeout_range"],
        f"1–{facts['max_sites_max']}",
        facts["max_duration_range"],
    ):
        assert bound in out, bound


def test_bad_spec_via_run_also_exits_2(capsys, tmp_path, fake_engine):
    bad = tmp_path / "bad.toml"
    bad.write_text('[sweep]\nname = "x"\n[base]\npage = "twitter"\n[grid]\nshards = [1, 100]\n')
    code, _, err = run_cli(
        capsys, "run", str(bad), "--engine", str(fake_engine), "--db", str(tmp_path / "w.db")
    )
    assert code == 2 and err == "wirelab: grid.shards[1]: 100 is out of range; it must be ≤ 64\n"
    assert not (tmp_path / "w.db").exists()


def test_no_engine_is_one_line(capsys, tmp_path, demo_spec, monkeypatch):
    monkeypatch.setattr("wirelab._engine.repo_engine", lambda: tmp_path / "none")
    monkeypatch.setenv("PATH", str(tmp_path))
    code, _, err = run_cli(capsys, "run", str(demo_spec), "--db", str(tmp_path / "w.db"))
    assert code == 2 and err.count("\n") == 1 and "wirelab-engine not found" in err and "make build" in err


def test_run_results_and_export(capsys, tmp_path, demo_spec, fake_engine):
    db = tmp_path / "w.db"
    code, out, err = run_cli(
        capsys, "run", str(demo_spec), "--db", str(db), "--engine", str(fake_engine), "-j", "2"
    )
    assert code == 0, err
    assert "sweep demo: 6/6 trials complete (36 loads planned); this run: 6 trials, 36 loads" in out
    assert "--parallel 2" in out
    code, out, _ = run_cli(capsys, "run", str(demo_spec), "--db", str(db), "--engine", str(fake_engine))
    assert code == 0 and "resumed: 6 trials were already complete" in out and "this run: 0 trials" in out
    code, out, _ = run_cli(capsys, "results", "ls", "--db", str(db))
    assert code == 0 and "demo" in out and "36/36" in out
    code, out, _ = run_cli(capsys, "results", "show", "demo", "--db", str(db))
    assert code == 0 and "6/6 trials complete" in out and "h2 vs h1s" in out
    # 80 columns: every row keeps its gain, and its configuration folds rather than being cut
    cli.out.width = 80
    code = main(["results", "show", "demo", "--db", str(db)])
    narrow = capsys.readouterr().out
    assert code == 0 and max(len(line) for line in narrow.splitlines()) <= 80
    rows = [line for line in narrow.splitlines() if line.startswith("│") and "%" in line]
    assert len(rows) == 6
    assert "…" not in narrow
    for fmt in ("csv", "parquet"):
        target = tmp_path / f"loads.{fmt}"
        code, out, _ = run_cli(
            capsys, "results", "export", "demo", "--format", fmt, "--out", str(target), "--db", str(db)
        )
        assert code == 0 and "wrote 36 rows" in out
        df = pd.read_csv(target) if fmt == "csv" else pd.read_parquet(target)
        assert len(df) == 36 and {"network.rtt_ms", "tow_ms", "protocol"} <= set(df.columns)
    code, out, _ = run_cli(
        capsys,
        "results",
        "export",
        "demo",
        "-f",
        "csv",
        "--table",
        "objects",
        "-o",
        str(tmp_path / "o.csv"),
        "--db",
        str(db),
    )
    assert code == 0 and "wrote 1026 rows" in out


def test_failed_trial_exits_1(capsys, tmp_path, fake_engine):
    spec = tmp_path / "h3.toml"
    spec.write_text('[sweep]\nname = "h3"\n[base]\npage = "twitter"\nprotocols = ["h1s", "h3"]\n')
    code, out, _ = run_cli(
        capsys, "run", str(spec), "--db", str(tmp_path / "w.db"), "--engine", str(fake_engine)
    )
    assert code == 1
    assert "failed: " in out and "the engine refused the trial spec" in out and "has no h3 loads" in out


def test_load_prints_table_and_waterfall(capsys, tmp_path, fake_engine):
    code, out, err = run_cli(
        capsys,
        "load",
        "twitter",
        "--proto",
        "h1s,h2",
        "--net",
        "rtt=100ms,bw=10mbit",
        "-n",
        "3",
        "--db",
        str(tmp_path / "w.db"),
        "--engine",
        str(fake_engine),
    )
    assert code == 0, err
    assert "ToW gain vs h1s" in out and "baseline" in out
    h2_row = next(line for line in out.splitlines() if line.strip().startswith("│ h2") or " h2 " in line)
    assert "%" in h2_row
    assert "waterfall: h2 repetition" in out and "█" in out and "receive" in out
    # rows name objects by path, without the load's /L/<token>/ prefix
    assert "/css/o1.css" in out and "/L/" not in out
    assert "stored as sweep load-" in out


def test_load_leaves_the_servers_defaults_to_the_library(capsys, tmp_path, monkeypatch):
    """`wirelab load --server X` passes server = { impl = X } and nothing else: the library holds every
    rule (a knob X cannot set defaults to its own, docs/server.md), so it is `wirelab.load` exactly."""
    calls = []

    def fake_load(page, **kwargs):
        calls.append(kwargs)
        raise SystemExit(0)

    monkeypatch.setattr(cli.api, "load", fake_load)
    for server in ("caddy", "nginx"):
        with pytest.raises(SystemExit):
            main(["load", "twitter", "--server", server, "--db", str(tmp_path / "w.db")])
    assert [c["server"] for c in calls] == [{"impl": "caddy"}, {"impl": "nginx"}]
    with pytest.raises(SystemExit):
        main(["load", "twitter", "--server", "caddy", "--max-streams", "0", "--db", str(tmp_path / "w.db")])
    assert calls[-1]["server"] == {"impl": "caddy", "max_concurrent_streams": 0}


def test_demo_prints_summary_and_report(capsys, tmp_path, fake_engine, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # the real report is tested in tests/test_reproduce.py and tests/test_report.py; here the demo's
    # call of it is replaced to check what the demo prints
    calls = []
    monkeypatch.setattr(
        cli, "write_report", lambda db, sweep: calls.append((db, sweep)) or tmp_path / "r.html"
    )
    code, out, err = run_cli(capsys, "demo", "--engine", str(fake_engine))
    assert code == 0, err
    assert (tmp_path / "wirelab.db").exists() and calls == [(Path("wirelab.db"), "demo")]
    assert "sweep demo: 6/6 trials complete" in out and f"report: {tmp_path / 'r.html'}" in out
    # the per-configuration summary: median ToW per protocol and h2's gain over h1s, per RTT
    assert "h2 vs h1s" in out and out.count("complete") >= 6 and "network.rtt=200ms" in out


def test_pages_profiles_spec(capsys, tmp_path, fake_engine, demo_spec):
    code, out, _ = run_cli(capsys, "pages", "ls", "--engine", str(fake_engine))
    assert code == 0 and "twitter" in out and "youtube" in out
    code, out, _ = run_cli(capsys, "pages", "show", "youtube", "--engine", str(fake_engine))
    assert code == 0 and "50 objects" in out
    code, _, err = run_cli(capsys, "pages", "show", "nope", "--engine", str(fake_engine))
    assert code == 2 and err.count("\n") == 1 and "'nope' is not a page" in err
    code, out, _ = run_cli(capsys, "profiles", "ls")
    assert code == 0 and "elkhatib-default" in out and "3gfast" in out
    code, out, _ = run_cli(capsys, "profiles", "show", "dsl,loss=1%")
    assert code == 0 and json.loads(out)["down"]["loss"] == {"model": "bernoulli", "p": 0.01}
    code, out, _ = run_cli(capsys, "spec", "schema")
    assert code == 0 and json.loads(out)["title"] == "wirelab experiment spec"
    code, out, _ = run_cli(capsys, "spec", "check", str(demo_spec))
    assert code == 0 and "demo: 6 trials, 36 loads" in out
    code, out, _ = run_cli(capsys, "spec", "check", str(demo_spec), "--json")
    assert code == 0 and len(json.loads(out)) == 6


def test_every_command_has_help(capsys):
    for argv in (
        ["--help"],
        ["run", "--help"],
        ["load", "--help"],
        ["demo", "--help"],
        ["shell", "--help"],
        ["pages", "ls", "--help"],
        ["pages", "show", "--help"],
        ["pages", "record", "--help"],
        ["pages", "import-har", "--help"],
        ["pages", "mirror", "--help"],
        ["profiles", "ls", "--help"],
        ["results", "export", "--help"],
        ["spec", "check", "--help"],
        ["worker", "--help"],
        ["cluster", "up", "--help"],
        ["reproduce", "--help"],
    ):
        code, out, _ = run_cli(capsys, *argv)
        assert code == 0 and "Usage:" in out, argv


@pytest.mark.clock
def test_shell_replaces_itself_with_the_engine(tmp_path, fake_engine):
    env = {**os.environ, "WIRELAB_ENGINE": str(fake_engine)}
    done = subprocess.run(
        [sys.executable, "-m", "wirelab.cli", "shell", "--net", "cable", "--", "echo", "hi"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 3, done.stderr  # the stand-in's `shell` exits 3
    assert json.loads(done.stdout) == {"shell": ["--net", "cable", "--", "echo", "hi"]}


def test_help_paragraphs_are_not_broken_where_the_source_wraps(capsys):
    """Docstrings wrap at 100 columns in the source; on screen a paragraph flows as one."""
    code, out, _ = run_cli(capsys, "load", "--help")
    assert code == 0
    assert "the ToW gain of each protocol over the first" in out
    doc = "One\n    two.\n\n    - a\n    - b\n      c"
    assert _cli_run._reflow(doc) == "One two.\n\n- a\n- b\n  c"


def test_stored_strings_cannot_drive_the_terminal(capsys, tmp_path, demo_spec):
    """A sweep description holding terminal escapes (OSC title, CSI clear screen, the 8-bit CSI) and
    rich markup is printed escaped, as written — by results show and results ls — and so is an
    error message echoing the user's escape sequence."""
    import wirelab
    from wirelab.testing import FixtureEngine

    spec = tmp_path / "demo.toml"
    hostile = r"\u001b]0;pwned\u0007 \u001b[2J [bold]x[/bold] \u009b31m \u202eevil"
    spec.write_text(
        demo_spec.read_text().replace('description = "h1s vs h2', f'description = "{hostile} h1s vs h2', 1)
    )
    db = tmp_path / "w.db"
    wirelab.run(spec, db=db, engine=FixtureEngine())
    outputs = {}
    for args in (["results", "show", "demo"], ["results", "ls"]):
        code, out, err = run_cli(capsys, *args, "--db", str(db))
        assert code == 0, err
        assert not set(out + err) & {"\x1b", "\x07", "\x9b", "\u202e"}, repr(out)
        outputs[args[1]] = " ".join(out.split())
    assert r"\x1b]0;pwned\x07 \x1b[2J [bold]x[/bold] \x9b31m \u202eevil" in outputs["show"]
    code, out, err = run_cli(capsys, "results", "show", "x\x1b[2Jy", "--db", str(db))
    assert code == 2 and "\x1b" not in err and r"x\x1b[2Jy" in err, repr(err)


def test_results_waterfall_draws_any_stored_load(capsys, tmp_path, demo_spec, fake_engine):
    db = tmp_path / "w.db"
    assert run_cli(capsys, "run", str(demo_spec), "--db", str(db), "--engine", str(fake_engine))[0] == 0
    import wirelab

    with wirelab.open(db) as results:
        loads = results.loads("demo")
    trial = loads["trial_id"].iloc[0]
    mine = loads[(loads["trial_id"] == trial) & (loads["protocol"] == "h2")].sort_values("plt_ms")
    median = mine.iloc[(len(mine) - 1) // 2]
    # without LOAD: the protocol's median-PLT load, as the report picks it
    code, out, err = run_cli(
        capsys, "results", "waterfall", "demo", trial, "--protocol", "h2", "--db", str(db)
    )
    assert code == 0, err
    assert f"h2 repetition {int(median['repetition'])}, median-PLT load {int(median['load_index'])}" in out
    with wirelab.open(db) as results:
        n = len(results.objects("demo", trial_id=trial, load_index=int(median["load_index"])))
    assert out.count("/") >= n  # one row (a path) per object
    # a named load, also drawn as the report draws it
    svg = tmp_path / "w.svg"
    code, out, err = run_cli(
        capsys, "results", "waterfall", "demo", trial, "0", "-o", str(svg), "--db", str(db)
    )
    assert code == 0, err
    assert ", load 0 " in out and svg.read_text().lstrip().startswith("<?xml") and "<svg" in svg.read_text()
    # bad input: one line naming what and what is allowed, nothing written
    cases = [
        (["nope"], 'TRIAL: "nope" is not a trial of sweep demo with stored loads; its trials: '),
        ([trial, "99"], f"LOAD: 99 is not a load of trial {trial}; use 0–"),
        ([trial, "--protocol", "h3"], '--protocol: "h3" was not loaded in trial'),
        ([trial, "0", "--protocol", "h2"], "--protocol: give it only without LOAD"),
        (
            [trial, "0", "-o", str(tmp_path / "w.txt")],
            "w.txt: not a figure file; use a name ending in .svg, .png or .pdf",
        ),
        ([trial, "0", "-o", str(tmp_path / "none" / "w.svg")], "--out "),
    ]
    for args, words in cases:
        code, _, err = run_cli(capsys, "results", "waterfall", "demo", *args, "--db", str(db))
        assert code == 2 and err.count("\n") == 1 and words in err, (args, err)
    assert not (tmp_path / "w.txt").exists() and not (tmp_path / "none").exists()


def test_help_texts_keep_their_brackets():
    """Help is rendered with rich markup: a spec table named in brackets (``[load.target]``) would be
    read as a style and vanish from ``--help``; it must be escaped (``\\[load.target]``)."""
    import typer.main
    from rich.markup import RE_TAGS
    from rich.style import Style

    def texts(cmd):
        yield cmd.name, cmd.help or ""
        for p in cmd.params:
            yield f"{cmd.name} {p.name}", getattr(p, "help", None) or ""
        for sub in getattr(cmd, "commands", {}).values():
            yield from texts(sub)

    eaten = []
    for where, text in texts(typer.main.get_command(cli.app)):
        for m in RE_TAGS.finditer(text):  # what rich reads as a tag
            escapes, tag = m.group(2), m.group(3)
            if len(escapes) % 2 or tag.startswith("/"):
                continue  # escaped (\\[…]), or a closing tag
            try:
                Style.parse(tag)  # a real style ([bold], [dim]) is meant as markup
            except Exception:
                eaten.append(f"{where}: {m.group(1)}")
    assert not eaten, "unescaped brackets rich would swallow: " + "; ".join(eaten)
