"""The control plane's half of the bad-input corpus (docs/bad-input.md; the engine's half is
engine/cmd/wirelab-engine/badinput_test.go): every case is a user's mistake and must exit 2 with one
line on stderr naming the field, print nothing on stdout, and leave nothing behind — no database, no
trial directory, no other file. Cases the engine alone can refuse (page files, traces) reach it
through ``wirelab-engine trial --check`` before anything is created; they need the built engine."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

import wirelab.cli as cli
from wirelab._paths import repo_engine
from wirelab.cli import main

GOOD_PAGE = """{"name":"p","seed":1,"origins":[{"host":"s1.wirelab.test"}],"objects":[
  {"id":"root","path":"/index.html","origin":0,"size":2000,"type":"html","content_type":"text/html"},
  {"id":"a","path":"/a.js","origin":0,"size":500,"type":"js","content_type":"application/javascript"}]}"""


def spec(base: str = "", grid: str = "", sweep: str = 'name = "bad"') -> str:
    return f'[sweep]\n{sweep}\n[base]\npage = "twitter"\nprotocols = ["h2"]\n{base}\n[grid]\n{grid}\n'


LONG = "x" * 200_000
#: as a file's content in a case: the file is a FIFO (named pipe) with no writer — reading it would block
FIFO = "<fifo>"

#: (id, TOML, extra files {name: content, "->target" = a link}, the field the line must name)
SPEC_CASES: list[tuple[str, str, dict[str, str], str]] = [
    ("toml syntax", "[sweep\nname=1", {}, "TOML syntax error"),
    ("no sweep table", '[base]\npage = "twitter"\n', {}, "sweep"),
    ("sweep name missing", spec(sweep=""), {}, "sweep.name"),
    ("sweep name bad characters", spec(sweep='name = "a/b"'), {}, "sweep.name"),
    ("sweep name 200 kB", spec(sweep=f'name = "{LONG}"'), {}, "sweep.name"),
    ("unknown top-level table", spec() + "[extra]\nx = 1\n", {}, "extra"),
    ("base unknown field", spec('pages = "x"'), {}, "base.pages"),
    ("base unknown field 200 kB", spec(f"{LONG} = 1"), {}, "base."),
    ("page a number", spec().replace('page = "twitter"', "page = 3"), {}, "base.page"),
    ("protocol unknown", spec().replace('["h2"]', '["h4"]'), {}, "base.protocols"),
    ("protocols empty", spec().replace('["h2"]', "[]"), {}, "base.protocols"),
    ("repetitions zero", spec("repetitions = 0"), {}, "base.repetitions"),
    ("repetitions a string", spec('repetitions = "3"'), {}, "base.repetitions"),
    ("repetitions inf", spec("repetitions = inf"), {}, "base.repetitions"),
    ("gap_ms nan", spec("gap_ms = nan"), {}, "base.gap_ms"),
    ("gap_ms -inf", spec("gap_ms = -inf"), {}, "base.gap_ms"),
    ("gap_ms negative", spec("gap_ms = -1.0"), {}, "base.gap_ms"),
    ("order unknown", spec('order = "sideways"'), {}, "base.order"),
    ("seed negative", spec("seed = -1"), {}, "base.seed"),
    ("shard_mode unknown", spec('shard_mode = "random"'), {}, "base.shard_mode"),
    ("client timeout inf", spec("[base.client]\ntimeout_s = inf"), {}, "base.client.timeout_s"),
    ("client impl unknown", spec('[base.client]\nimpl = "firefox"'), {}, "base.client.impl"),
    ("client mode unknown", spec('[base.client]\nmode = "eager"'), {}, "base.client.mode"),
    ("client unknown field", spec('[base.client]\nimp = "x"'), {}, "base.client.imp"),
    ("server unknown field", spec('[base.server]\npushh = "all"'), {}, "base.server.pushh"),
    (
        "server streams too many",
        spec("[base.server]\nmax_concurrent_streams = 1001"),
        {},
        "max_concurrent_streams",
    ),
    ("server impl unknown", spec('[base.server]\nimpl = "lighttpd"'), {}, "base.server.impl"),
    ("server push level", spec('[base.server]\npush = "dependency-level:1001"'), {}, "base.server.push"),
    ("server table unknown knob", spec("[base.server.nginx]\nworker_proceses = 2"), {}, "worker_proceses"),
    ("capture unknown field", spec("[base.capture]\npcaps = true"), {}, "base.capture.pcaps"),
    ("network rtt no unit", spec('network = "rtt=150"'), {}, "base.network"),
    ("network unknown key", spec('network = "rt=10ms"'), {}, "base.network"),
    ("network table bad value", spec('network = { rtt = "fast" }'), {}, "rtt"),
    ("network table inf", spec("network = { loss = inf }"), {}, "base.network.loss"),
    ("network loss 150%", spec('network = "loss=150%"'), {}, "base.network"),
    ("grid unknown path", spec(grid='"client.speed" = [1, 2]'), {}, "grid"),
    ("grid empty list", spec(grid="repetitions = []"), {}, "grid.repetitions"),
    ("grid value inf", spec(grid="gap_ms = [1.0, inf]"), {}, "grid.gap_ms[1]"),
    ("grid value nan", spec(grid='"network.rtt" = [nan]'), {}, "grid.network.rtt[0]"),
    ("grid bad protocol", spec(grid='protocols = [["h2"], ["h9"]]'), {}, "protocols"),
    (
        "grid range step zero",
        spec(grid='"network.rtt" = { from = "10ms", to = "20ms", step = "0ms" }'),
        {},
        "grid",
    ),
    ("grid zip lengths differ", spec(grid="[[grid.zip]]\nrepetitions = [1, 2]\ngap_ms = [1.0]"), {}, "zip"),
    # Refused only by the engine (trial --check), before anything exists.
    ("page file missing", spec().replace('page = "twitter"', 'page = "{dir}/none.json"'), {}, "page"),
    (
        "page file size zero",
        spec().replace('page = "twitter"', 'page = "{dir}/p.json"'),
        {"p.json": GOOD_PAGE.replace('"size":500', '"size":0')},
        "objects[1].size",
    ),
    (
        "page file duplicate id",
        spec().replace('page = "twitter"', 'page = "{dir}/p.json"'),
        {"p.json": GOOD_PAGE.replace('"id":"a"', '"id":"root"')},
        "objects[1].id",
    ),
    (
        "page file link out of root_dir",
        spec().replace('page = "twitter"', 'page = "{dir}/p.json"'),
        {
            "p.json": GOOD_PAGE.replace('"seed":1,', '"seed":1,"root_dir":"site",').replace(
                '"id":"a",', '"id":"a","file":"a.js",'
            ),
            "secret": "s" * 500,
            "site/a.js": "->../secret",
        },
        "objects[1].file",
    ),
    ("synthetic page malformed", spec().replace('"twitter"', '"synthetic:lotsx1kB"'), {}, "page"),
    ("trace file missing", spec('network = "rtt=10ms,trace_down={dir}/none"'), {}, "trace_down"),
    ("trace file garbage", spec('network = "rtt=10ms,trace_down={dir}/t"'), {"t": "fast\n"}, "trace_down"),
    ("trace file empty", spec('network = "rtt=10ms,trace_up={dir}/t"'), {"t": ""}, "trace_up"),
    ("trace file a directory", spec('network = "rtt=10ms,trace_down={dir}"'), {}, "trace_down"),
    # Special files a spec names: refused without blocking or reading a device (docs/bad-input.md).
    (
        "page file a FIFO",
        spec().replace('page = "twitter"', 'page = "{dir}/p.json"'),
        {"p.json": FIFO},
        "a FIFO",
    ),
    ("page file a character device", spec().replace('page = "twitter"', 'page = "/dev/zero"'), {}, "page"),
    ("trace file a FIFO", spec('network = "rtt=10ms,trace_down={dir}/t"'), {"t": FIFO}, "trace_down"),
    ("trace file a character device", spec('network = "rtt=10ms,trace_up=/dev/urandom"'), {}, "trace_up"),
    (
        "server config a FIFO",
        spec('[base.server]\nimpl = "nginx"\nconfig = "{dir}/c"'),
        {"c": FIFO},
        "server.config",
    ),
    (
        "server config a character device",
        spec('[base.server]\nimpl = "nginx"\nconfig = "/dev/zero"'),
        {},
        "server.config",
    ),
    (
        "server config over 1 MiB",
        spec('[base.server]\nimpl = "nginx"\nconfig = "{dir}/c"'),
        {"c": "#\n" * 600_000},
        "at most 1 MiB",
    ),
    # Unbounded numbers (the contract's maxima) and a page file that is not JSON, named.
    ("gap_ms over an hour", spec("gap_ms = 3600001.0"), {}, "base.gap_ms"),
    ("client timeout a day", spec("[base.client]\ntimeout_s = 86400"), {}, "base.client.timeout_s"),
    ("client compute_scale 1e300", spec("[base.client]\ncompute_scale = 1e300"), {}, "compute_scale"),
    (
        "page file not JSON names it",
        spec().replace('page = "twitter"', 'page = "{dir}/p.json"'),
        {"p.json": "not json"},
        '"{dir}/p.json"',
    ),
    ("page name with terminal escapes", spec().replace('"twitter"', '"\\u001b[2J\\u009b1m"'), {}, "\\x1b[2J"),
]


def _set_up(directory: Path, files: dict[str, str]) -> None:
    for name, content in sorted(files.items()):
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content == FIFO:
            os.mkfifo(path)
        elif content.startswith("->"):
            path.symlink_to(content[2:])
        else:
            path.write_text(content.replace("{dir}", str(directory)))


def _tree(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    cli.out.width = cli.err.width = 160
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _engine_or_skip() -> Path:
    engine = repo_engine()
    if not engine.is_file():
        pytest.skip("needs the built engine (make build): the engine's own check refuses these")
    return engine


@pytest.mark.parametrize(
    ("toml", "files", "field"), [c[1:] for c in SPEC_CASES], ids=[c[0] for c in SPEC_CASES]
)
def test_bad_spec_creates_nothing(capsys, tmp_path, toml, files, field):
    engine = _engine_or_skip()
    _set_up(tmp_path, files)
    spec_path = tmp_path / "bad.toml"
    spec_path.write_text(toml.replace("{dir}", str(tmp_path)))
    before = _tree(tmp_path)
    db = tmp_path / "w.db"
    code, out, err = _run(capsys, "run", str(spec_path), "--db", str(db), "--engine", str(engine))
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("wirelab: "), err[:300]
    assert len(err) < 1000, f"values must be cut: {len(err)} bytes"
    assert field.replace("{dir}", str(tmp_path)) in err, err
    assert not _CONTROLS.search(err[:-1]), f"a control character in {err!r}"
    assert out == ""
    assert _tree(tmp_path) == before, "something was created"


_CONTROLS = __import__("re").compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.mark.parametrize(
    ("toml", "files", "field"), [c[1:] for c in SPEC_CASES], ids=[c[0] for c in SPEC_CASES]
)
def test_spec_check_and_run_agree(capsys, tmp_path, toml, files, field):
    """`wirelab spec check` runs the validation `wirelab run` runs before it creates anything: on every
    case of the corpus both refuse with the same line (and exit 2), and neither creates anything."""
    engine = _engine_or_skip()
    _set_up(tmp_path, files)
    spec_path = tmp_path / "bad.toml"
    spec_path.write_text(toml.replace("{dir}", str(tmp_path)))
    before = _tree(tmp_path)
    check = _run(capsys, "spec", "check", str(spec_path), "--engine", str(engine))
    run = _run(capsys, "run", str(spec_path), "--db", str(tmp_path / "w.db"), "--engine", str(engine))
    assert check[0] == run[0] == 2, (check, run)
    assert check[2] == run[2], (check[2], run[2])
    assert _tree(tmp_path) == before


def test_spec_check_accepts_what_run_accepts(capsys, demo_spec):
    """A good spec: spec check exits 0 and says what it checked (run then runs it: tests/test_e2e_root)."""
    engine = _engine_or_skip()
    code, out, err = _run(capsys, "spec", "check", str(demo_spec), "--engine", str(engine))
    assert code == 0 and err == "", err
    assert "checked as wirelab run checks it" in " ".join(out.split()) and "6 distinct trial spec" in out


@pytest.fixture(scope="module")
def results_db(tmp_path_factory) -> Path:
    """A database holding the demo sweep (replayed by the fixture engine), copied by cases that need one."""
    import wirelab
    from wirelab.testing import FixtureEngine

    db = tmp_path_factory.mktemp("db") / "w.db"
    wirelab.run(Path(__file__).parent.parent / "experiments" / "demo.toml", db=db, engine=FixtureEngine())
    return db


def _corrupt_db(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.executemany("INSERT INTO t VALUES (?)", [("x" * 1000,)] * 50)
    conn.commit()
    conn.close()
    data = bytearray(path.read_bytes())
    data[4096 + 10 : 4096 + 60] = b"\xff" * 50  # the second page: a b-tree page's header
    path.write_bytes(bytes(data))


#: (id, argv with {dir} and {spec}, files, setup, the text the line must hold)
CLI_CASES = [
    ("db is a directory", ["run", "{spec}", "--db", "{dir}/d"], {"d/x": "x"}, None, "{dir}/d"),
    (
        "db is another file",
        ["run", "{spec}", "--db", "{dir}/f.db"],
        {"f.db": "not a database\n" * 100},
        None,
        "f.db",
    ),
    ("db is corrupt", ["run", "{spec}", "--db", "{dir}/c.db"], {}, "corrupt", "c.db"),
    ("db's directory is a file", ["run", "{spec}", "--db", "{dir}/file/w.db"], {"file": "x"}, None, "w.db"),
    (
        "engine missing",
        ["run", "{spec}", "--db", "{dir}/w.db", "--engine", "{dir}/none"],
        {},
        None,
        "--engine",
    ),
    (
        "engine a directory",
        ["run", "{spec}", "--db", "{dir}/w.db", "--engine", "{dir}"],
        {},
        None,
        "--engine",
    ),
    ("spec a directory", ["run", "{dir}", "--db", "{dir}/w.db"], {}, None, "{dir}"),
    ("spec not text", ["run", "{dir}/b.toml", "--db", "{dir}/w.db"], {"b.toml": "\udcff"}, None, "b.toml"),
    ("parallel zero", ["run", "{spec}", "--db", "{dir}/w.db", "--parallel", "0"], {}, None, "--parallel"),
    ("results ls: db a directory", ["results", "ls", "--db", "{dir}/d"], {"d/x": "x"}, None, "{dir}/d"),
    (
        "results ls: db another file",
        ["results", "ls", "--db", "{dir}/f.db"],
        {"f.db": "nope" * 100},
        None,
        "f.db",
    ),
    ("results ls: db missing", ["results", "ls", "--db", "{dir}/none.db"], {}, None, "--db"),
    ("results show: db corrupt", ["results", "show", "x", "--db", "{dir}/c.db"], {}, "corrupt", "c.db"),
    (
        "spec check: inf",
        ["spec", "check", "{dir}/i.toml"],
        {"i.toml": spec("gap_ms = inf")},
        None,
        "base.gap_ms",
    ),
    # Special files as the spec itself.
    ("run: spec a FIFO", ["run", "{dir}/s.toml", "--db", "{dir}/w.db"], {"s.toml": FIFO}, None, "a FIFO"),
    ("spec check: spec a FIFO", ["spec", "check", "{dir}/s.toml"], {"s.toml": FIFO}, None, "a FIFO"),
    (
        "loadtest: spec a FIFO",
        ["loadtest", "{dir}/s.toml", "--db", "{dir}/w.db"],
        {"s.toml": FIFO},
        None,
        "FIFO",
    ),
    (
        "run: spec a character device",
        ["run", "/dev/zero", "--db", "{dir}/w.db"],
        {},
        None,
        "character device",
    ),
    ("run: spec over 16 MiB", ["run", "{dir}/s.toml"], {"s.toml": "#" * (16 << 20) + "\n"}, None, "16 MiB"),
    # Output paths: checked before any work (docs/bad-input.md, "Files and paths").
    (
        "export: csv into a missing directory",
        ["results", "export", "demo", "-f", "csv", "-o", "{dir}/none/x.csv", "--db", "{dir}/w.db"],
        {},
        "db",
        "--out {dir}/none/x.csv: cannot be written: its directory {dir}/none does not exist",
    ),
    (
        "export: parquet into a missing directory",
        ["results", "export", "demo", "-f", "parquet", "-o", "{dir}/none/x.parquet", "--db", "{dir}/w.db"],
        {},
        "db",
        "--out",
    ),
    (
        "export: onto a directory",
        ["results", "export", "demo", "-f", "csv", "-o", "{dir}/d", "--db", "{dir}/w.db"],
        {"d/keep": "x"},
        "db",
        "--out {dir}/d: is a directory",
    ),
    (
        "export: onto a FIFO",
        ["results", "export", "demo", "-f", "csv", "-o", "{dir}/f", "--db", "{dir}/w.db"],
        {"f": FIFO},
        "db",
        "is a FIFO",
    ),
    (
        "report: -o an existing file",
        ["report", "-o", "{dir}/f", "--db", "{dir}/w.db"],
        {"f": "x"},
        "db",
        "is a file",
    ),
    (
        "report: -o in a missing directory",
        ["report", "-o", "{dir}/none/deep", "--db", "{dir}/w.db"],
        {},
        "db",
        "its directory {dir}/none does not exist",
    ),
    (
        "probe: --out without --export",
        ["probe", "--out", "{dir}/p.csv", "h1.wirelab.test", "--db", "{dir}/w.db"],
        {},
        None,
        "--out",
    ),
    (
        "probe: --export into a missing directory",
        ["probe", "--run", "x", "--export", "csv", "--out", "{dir}/none/p.csv", "--db", "{dir}/w.db"],
        {},
        "db",
        "--out",
    ),
    (
        "probe: a probing option with --run",
        ["probe", "--run", "x", "--export", "csv", "--concurrency", "4", "--db", "{dir}/w.db"],
        {},
        "db",
        "--concurrency",
    ),
    (
        "import-har: --out in a missing directory",
        ["pages", "import-har", "{dir}/x.har", "--out", "{dir}/none/p.json"],
        {"x.har": "{}"},
        None,
        "--out {dir}/none/p.json",
    ),
    (
        "mirror: --out onto a directory",
        ["pages", "mirror", "{dir}/site", "--out", "{dir}/site"],
        {"site/index.html": "<p>"},
        None,
        "--out {dir}/site: is a directory",
    ),
    (
        "import-har: a FIFO",
        ["pages", "import-har", "{dir}/x.har", "--out", "{dir}/p.json"],
        {"x.har": FIFO},
        None,
        "FIFO",
    ),
    ("run: --db in a missing directory", ["run", "{spec}", "--db", "{dir}/none/w.db"], {}, None, "--db"),
    # Non-finite and unbounded numbers; options that mean something only with another.
    (
        "load: --gap-ms inf",
        ["load", "twitter", "--gap-ms", "inf", "--db", "{dir}/w.db"],
        {},
        None,
        "--gap-ms",
    ),
    (
        "load: --gap-ms nan",
        ["load", "twitter", "--gap-ms", "nan", "--db", "{dir}/w.db"],
        {},
        None,
        "--gap-ms",
    ),
    (
        "load: --gap-ms 1e9",
        ["load", "twitter", "--gap-ms", "1e9", "--db", "{dir}/w.db"],
        {},
        None,
        "0–3600000",
    ),
    ("load: --max-streams 1001", ["load", "twitter", "--max-streams", "1001"], {}, None, "--max-streams"),
    ("load: -n 0", ["load", "twitter", "-n", "0"], {}, None, "1–10000"),
    ("run: --parallel 65", ["run", "{spec}", "--db", "{dir}/w.db", "--parallel", "65"], {}, None, "1–64"),
    ("run: --parallel 1e6", ["run", "{spec}", "--parallel", "1000000"], {}, None, "--parallel"),
    (
        "run: --retries without --cluster",
        ["run", "{spec}", "--db", "{dir}/w.db", "--retries", "3"],
        {},
        None,
        "--retries",
    ),
    (
        "run: --artifacts without --cluster",
        ["run", "{spec}", "--db", "{dir}/w.db", "--artifacts", "remote"],
        {},
        None,
        "--artifacts: only means something with --cluster",
    ),
    (
        "run: --wait-workers without --cluster",
        ["run", "{spec}", "--wait-workers", "5"],
        {},
        None,
        "--wait-workers",
    ),
    (
        "run: --wait-workers inf",
        ["run", "{spec}", "--cluster", "tcp://127.0.0.1:9", "--wait-workers", "inf"],
        {},
        None,
        "finite",
    ),
    (
        "run: --retries -1",
        ["run", "{spec}", "--cluster", "tcp://127.0.0.1:9", "--retries", "-1"],
        {},
        None,
        "0–10",
    ),
    (
        "run: --parallel with --cluster",
        ["run", "{spec}", "--cluster", "tcp://127.0.0.1:9", "-j", "2"],
        {},
        None,
        "--parallel",
    ),
    (
        "reproduce: --retries without --cluster",
        ["reproduce", "elkhatib-rtt", "--retries", "1"],
        {},
        None,
        "--retries",
    ),
    ("worker: --slots 0", ["worker", "--scheduler", "tcp://127.0.0.1:9", "--slots", "0"], {}, None, "1–64"),
    (
        "worker: --slots 1000",
        ["worker", "--scheduler", "tcp://127.0.0.1:9", "--slots", "1000"],
        {},
        None,
        "--slots",
    ),
    ("cluster up: --port 70000", ["cluster", "up", "--port", "70000"], {}, None, "0–65535"),
    ("cluster up: --workers -1", ["cluster", "up", "--workers", "-1"], {}, None, "--workers"),
    ("cluster up: --slots without --workers", ["cluster", "up", "--slots", "2"], {}, None, "--slots"),
    ("cluster up: --calibrate without --workers", ["cluster", "up", "--calibrate"], {}, None, "--calibrate"),
]


@pytest.mark.parametrize(
    ("argv", "files", "setup", "want"), [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES]
)
def test_bad_paths_create_nothing(capsys, tmp_path, results_db, argv, files, setup, want):
    engine = _engine_or_skip()
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content == FIFO:
            os.mkfifo(path)
        elif "\udcff" in content:
            path.write_bytes(b"\xff\xfe[sweep]\n")
        else:
            path.write_text(content)
    if setup == "corrupt":
        _corrupt_db(tmp_path / "c.db")
    if setup == "db":
        shutil.copyfile(results_db, tmp_path / "w.db")
    good = tmp_path / "good.toml"
    good.write_text(spec())
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    names = _tree(tmp_path)
    argv = [a.replace("{dir}", str(tmp_path)).replace("{spec}", str(good)) for a in argv]
    if "--engine" not in argv and argv[0] == "run":
        argv += ["--engine", str(engine)]
    code, out, err = _run(capsys, *argv)
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert want.replace("{dir}", str(tmp_path)) in err, err
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before, "a file was created or modified"
    assert _tree(tmp_path) == names, "something was created"


def test_corpus_size():
    """At least 150 cases across both front ends (the engine's table holds the rest)."""
    engine_cases = (Path(__file__).parent.parent / "engine/cmd/wirelab-engine/badinput_test.go").read_text()
    go = engine_cases.count('Case("') + engine_cases.count("{name: ")
    assert go + len(SPEC_CASES) + len(CLI_CASES) >= 150, (go, len(SPEC_CASES), len(CLI_CASES))
