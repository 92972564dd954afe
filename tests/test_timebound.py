"""tests/timebound.py: a missed timing bound is retried once; two misses fail with both attempts' evidence."""

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
