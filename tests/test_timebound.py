"""tests/timebound.py: a missed timing bound is retried once; two misses fail with both attempts' evidence."""

import ast
from pathlib import Path

import pytest
from timebound import bound, retry


def _attempts(misses: list[bool]):
    runs: list[int] = []

    def attempt(n: int) -> int:
        runs.append(n)
        bound(not misses[n - 1], f"took {10 + n} ms, bound 10 ms")
        return n

    return runs, attempt


def test_met_at_once_runs_once():
    runs, attempt = _attempts([False])
    assert retry(attempt) == 1 and runs == [1]


def test_a_miss_then_a_pass_passes():
    runs, attempt = _attempts([True, False])
    assert retry(attempt) == 2 and runs == [1, 2]


def test_two_misses_fail_with_both_attempts_evidence():
    runs, attempt = _attempts([True, True])
    with pytest.raises(AssertionError) as e:
        retry(attempt)
    assert runs == [1, 2]
    msg = str(e.value)
    for words in (
        "attempt 1 (",
        "took 11 ms, bound 10 ms",
        "attempt 2 (",
        "took 12 ms, bound 10 ms",
        "load average",
    ):
        assert words in msg


def test_another_failure_is_not_retried():
    runs: list[int] = []

    def attempt(n: int) -> None:
        runs.append(n)
        raise AssertionError("wrong status")

    with pytest.raises(AssertionError, match="wrong status"):
        retry(attempt)
    assert runs == [1]


def _timebound_users_unmarked(tests_dir: Path) -> list[str]:
    """The tests of ``tests_dir`` that check a timing bound (call timebound's ``retry``) and are marked
    neither ``clock`` nor ``serial`` nor ``root``, themselves or by their module's ``pytestmark``."""

    def marks(nodes: list[ast.expr]) -> set[str]:
        return {
            n.attr
            for node in nodes
            for n in ast.walk(node)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute) and n.value.attr == "mark"
        }

    found = []
    for path in sorted(tests_dir.glob("test_*.py")):
        tree = ast.parse(path.read_text())
        if not any(isinstance(n, ast.ImportFrom) and n.module == "timebound" for n in tree.body):
            continue
        assigns = [n for n in tree.body if isinstance(n, ast.Assign)]
        module = marks([n.value for n in assigns if "pytestmark" in ast.unparse(n.targets[0])])
        for fn in tree.body:
            if not isinstance(fn, ast.FunctionDef) or not fn.name.startswith("test_"):
                continue
            called = [c.func for c in ast.walk(fn) if isinstance(c, ast.Call)]
            calls = {f.id for f in called if isinstance(f, ast.Name)}
            if "retry" in calls and not (marks(fn.decorator_list) | module) & {"clock", "serial", "root"}:
                found.append(f"{path.name}::{fn.name}")
    return found


def test_every_timing_bound_runs_outside_the_parallel_workers():
    """make test runs the parallel workers at idle priority beside the Go tests, where they may wait
    minutes for a core: a test that checks a timing bound must be marked `clock` (or `serial`, `root`)
    so that it runs in the serial phase. tests/test_timebound.py's own tests check retry, not a clock."""
    tests_dir = Path(__file__).resolve().parent
    unmarked = [t for t in _timebound_users_unmarked(tests_dir) if not t.startswith("test_timebound.py")]
    assert unmarked == [], f"mark these @pytest.mark.clock: {unmarked}"


def test_an_unmarked_timing_bound_is_found(tmp_path):
    (tmp_path / "test_x.py").write_text(
        "import pytest\nfrom timebound import bound, retry\n\n"
        "def test_bare():\n    retry(lambda n: bound(True, ''))\n\n"
        "@pytest.mark.clock\ndef test_marked():\n    retry(lambda n: bound(True, ''))\n\n"
        "def test_no_bound():\n    assert True\n"
    )
    (tmp_path / "test_y.py").write_text(
        "import pytest\nfrom timebound import retry\npytestmark = [pytest.mark.root]\n\n"
        "def test_in_a_root_module():\n    retry(lambda n: None)\n"
    )
    assert _timebound_users_unmarked(tmp_path) == ["test_x.py::test_bare"]
