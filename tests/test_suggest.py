"""The one "did you mean" rule (docs/bad-input.md) against the cases the engine's twin is held to."""

import json
from pathlib import Path

import pytest

from wirelab._suggest import closest, did_you_mean

GOLDEN = json.loads((Path(__file__).parent.parent / "testdata" / "suggest_golden.json").read_text())["cases"]


@pytest.mark.parametrize("case", GOLDEN, ids=[c["word"][:20] or "<empty>" for c in GOLDEN])
def test_golden(case):
    assert (closest(case["word"], case["candidates"]) or "") == case["want"]


def test_did_you_mean_reads_as_the_engines():
    assert did_you_mean("rttt", ["rtt", "bw"]) == "did you mean rtt? "
    assert did_you_mean("zzzz", ["rtt", "bw"]) == ""
