"""The one "did you mean" rule of every error that names an unknown name (a profile key or preset,
a spec field, an enum value, an experiment), the twin of the engine's ``internal/suggest``; both are
held to ``testdata/suggest_golden.json``. The rule is written down in ``docs/bad-input.md``:

1. the case of ASCII letters does not count (``BW`` → ``bw``);
2. the candidate at the smallest optimal-string-alignment distance (insertions, deletions,
   substitutions and swaps of two adjacent characters, one each), if that distance is at most
   :data:`MAX_DISTANCE` and smaller than the unknown name's length;
3. ties go to the candidate sharing the longest prefix with the name (``h2s`` → ``h2``, not
   ``h1s``), then to the earlier candidate;
4. a name longer than :data:`MAX_NAME` bytes gets no suggestion.

    >>> closest("rttt", ["rtt", "bw"])
    'rtt'
    >>> did_you_mean("BW", ["rtt", "bw"])
    'did you mean bw? '
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["MAX_DISTANCE", "MAX_NAME", "closest", "did_you_mean"]

#: The largest distance at which an unknown name is answered with a candidate.
MAX_DISTANCE = 2
#: Longer names (bytes of UTF-8) are not compared: an unknown name can be the user's whole value.
MAX_NAME = 64

_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _distance(a: str, b: str) -> int:
    """The optimal string alignment distance of a and b (Levenshtein plus adjacent swaps)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[len(b)]


def _common_prefix(a: str, b: str) -> int:
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate the rule names for ``word``, or None."""
    if len(word.encode()) > MAX_NAME:
        return None
    lower = word.translate(_LOWER)
    best, best_key = None, (MAX_DISTANCE + 1, 0)
    for candidate in candidates:
        c = candidate.translate(_LOWER)
        if abs(len(c) - len(lower)) > MAX_DISTANCE:
            continue  # the distance is at least the difference in length
        d = _distance(lower, c)
        key = (d, -_common_prefix(lower, c))
        if d <= MAX_DISTANCE and d < len(word) and key < best_key:
            best, best_key = candidate, key
    return best


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """``"did you mean X? "`` for the candidate the rule names, or ``""``."""
    near = closest(word, candidates)
    return f"did you mean {near}? " if near is not None else ""
