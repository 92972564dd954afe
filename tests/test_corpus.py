"""Corpus sweeps (docs/pages.md, "Generated corpora"): a page axis naming a generated corpus expands to
its pages or a seeded sample; the report's corpus section (wins with CIs, PLT-ratio CDFs over pages,
the decision tree over page features, every page listed). The sweeps come from tests/model_engine.py."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

import wirelab
from wirelab import _corpus, _facts, spec
from wirelab.analysis import corpus as corp
from wirelab.analysis import load_sweep
from wirelab.errors import SpecError
from wirelab.report import write_report

sys.path.insert(0, str(Path(__file__).parent))
from model_engine import ModelEngine  # noqa: E402
from timebound import bound, retry  # noqa: E402

HEAD = '[sweep]\nname = "c"\n[base]\nprotocols = ["h1", "h2"]\n[grid]\n'


def test_named_corpora_come_from_the_engine():
    web = _facts.generated_corpora()["web200"]
    assert (web.profile, web.seed, web.count) == ("httparchive-2024-desktop", 1, 200)
    assert "httparchive-2014" in _facts.page_profiles()


def test_corpus_axis_expands_to_every_page():
    plan = spec.loads(HEAD + 'page = "corpus:web200"\n"network.rtt" = ["20ms", "100ms"]\n')
    pages = [t.spec["page"] for t in plan.trials]
    assert len(plan.trials) == 400 and pages[0] == "web200:1" and pages[-1] == "web200:200"
    assert len(set(pages)) == 200 and len({t.id for t in plan.trials}) == 400


def test_corpus_sample_is_seeded_and_stable():
    text = HEAD + 'page = { corpus = "web200", sample = 50, seed = 1 }\n'
    a = [t.spec["page"] for t in spec.loads(text).trials]
    b = [t.spec["page"] for t in spec.loads(text).trials]
    c = [t.spec["page"] for t in spec.loads(text.replace("seed = 1", "seed = 2")).trials]
    assert a == b and len(a) == 50 and len(set(a)) == 50 and a != c
    # the documented algorithm: the pages whose sha256(corpus, seed, index) are smallest
    assert _corpus.sample_indices(_corpus.resolve_corpus("web200"), 5, 1) == [71, 82, 113, 125, 194]
    mixed = [
        t.spec["page"]
        for t in spec.loads(HEAD + 'page = ["twitter", "corpus:gen:httparchive-2014:3:4"]\n').trials
    ]
    assert mixed == ["twitter", *(f"gen:httparchive-2014:3:4:{i}" for i in range(1, 5))]


@pytest.mark.parametrize(
    ("grid", "words"),
    [
        ('page = "corpus:web300"', "grid.page[0]: 'web300' is not a generated corpus"),
        ('page = { corpus = "web200", sample = 500 }', "grid.page[0].sample: 500 must be an integer 1–200"),
        ('page = { corpus = "web200", smaple = 5 }', "grid.page[0].smaple: unknown key"),
        ('page = "corpus:gen:httparchive-1999:1:5"', "profiles: httparchive-2014"),
    ],
)
def test_bad_corpus_values_name_the_field(grid, words):
    with pytest.raises(SpecError) as e:
        spec.loads(HEAD + grid + "\n")
    assert words in str(e.value) and "\n" not in str(e.value)


@pytest.mark.clock
def test_planning_a_200_page_grid_is_quick():
    # a bound with a wide margin (the benchmark, scripts/bench_corpus.py, prints the figure): a
    # regression that made planning quadratic would blow it
    def attempt(n: int) -> None:
        start = time.perf_counter()
        plan = spec.loads(HEAD + 'page = "corpus:web200"\n')
        assert len(plan.trials) == 200
        took = time.perf_counter() - start
        bound(took < 30, f"a 200-page grid planned in {took:.1f} s, want < 30 s")

    retry(attempt)  # a timing bound (tests/timebound.py)


@pytest.fixture(scope="module")
def corpus_report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("corpus")
    db = tmp / "wirelab.db"
    text = (
        '[sweep]\nname = "real-pages"\n[base]\nprotocols = ["h1", "h2", "h3"]\nrepetitions = 3\n'
        'network = { bw = "10mbit" }\n[grid]\npage = { corpus = "web200", sample = 24, seed = 1 }\n'
        '"network.rtt" = ["20ms", "200ms"]\n'
    )
    wirelab.run(text, db=db, engine=ModelEngine(), parallel=2)
    index = write_report(db, None, tmp / "out")
    return db, index


def test_win_shares_have_intervals(corpus_report):
    db, _index = corpus_report
    sd = load_sweep(wirelab.open(db), "real-pages")
    shares = corp.win_shares(sd.loads, sd.configs, ["network.rtt_ms"], sd.protocols)
    for _rtt, g in shares.groupby("network.rtt_ms"):
        assert g["pages"].eq(24).all() and g["wins"].sum() == 24
        assert ((g["ci_low"] <= g["share"]) & (g["share"] <= g["ci_high"])).all()
        assert ((g["ci_low"] >= 0) & (g["ci_high"] <= 1)).all()
    features = corp.page_features(sd.loads, sd.objects, sd.baseline)
    assert len(features) == 48 and features["page_objects"].gt(0).all()


def test_report_has_the_corpus_section(corpus_report):
    _db, index = corpus_report
    html = index.read_text()
    assert "Share of pages each protocol wins" in html
    assert html.count("PLT ratio over pages") >= 2
    assert "Pages won" in html and "Every page" in html
    figures = {p.name for p in (index.parent / "figures" / "real-pages").iterdir()}
    assert any(n.startswith("corpus-wins") for n in figures)
    assert sum(n.startswith("corpus-ratio-cdf") and n.endswith(".svg") for n in figures) == 2
    for page in ("web200:71", "web200:82"):  # every page is listed
        assert page in html


ENGINE = Path(__file__).resolve().parent.parent / "bin" / "wirelab-engine"
needs_engine = pytest.mark.skipif(not ENGINE.exists(), reason="needs bin/wirelab-engine (make build)")


def _cli(capsys, *args: str) -> tuple[int, str]:
    from wirelab import cli

    cli.out.width = cli.err.width = 160
    code = cli.main([*args, "--engine", str(ENGINE)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@needs_engine
def test_cli_lists_a_corpus_and_draws_its_figure(tmp_path, capsys):
    code, output = _cli(capsys, "pages", "ls", "--corpus", "web200", "--figure", str(tmp_path))
    assert code == 0, output
    assert "web200:200" in output and "p10 / median / p90" in output
    assert (tmp_path / "corpus-web200.png").stat().st_size > 10_000
    code, _ = _cli(
        capsys,
        "pages",
        "generate",
        "--like",
        "httparchive-2014",
        "--count",
        "3",
        "--out",
        str(tmp_path / "g"),
        "--json",
    )
    assert code == 0 and len(list((tmp_path / "g").glob("*.json"))) == 3


@needs_engine
def test_cli_import_exit_codes(tmp_path, capsys):
    src = tmp_path / "in"
    src.mkdir()
    (src / "junk.bin").write_bytes(b"\x00junk")
    code, output = _cli(capsys, "pages", "import", str(src), "--out", str(tmp_path / "out"))
    assert code == 2 and "no page imported" in output and "junk.bin" in output
    (src / "home.har").write_text(
        '{"log":{"entries":[{"startedDateTime":"2026-01-01T00:00:00Z","time":3,"request":{"method":"GET",'
        '"url":"https://a.example/"},"response":{"status":200,"headers":[],"content":{"size":5000,'
        '"mimeType":"text/html"}},"timings":{"wait":3}}]}}'
    )
    code, output = _cli(capsys, "pages", "import", str(src), "--out", str(tmp_path / "out"))
    assert code == 0, output
    assert "imported home.har (har)" in output and "skipped junk.bin" in output
    assert (tmp_path / "out" / "home.json").exists()
