"""The network profile grammar: the Python twin of the engine's ``link/profile``.

A profile is a comma-separated list of presets and ``key=value`` items, applied left to right
(``docs/profile-grammar.md``)::

    >>> r = parse("rtt=150ms,bw=1mbit,loss=0.5%")
    >>> r["up"]["delay_ns"], r["down"]["rate_bps"], r["down"]["loss"]
    (75000000, 1000000, {'model': 'bernoulli', 'p': 0.005})

:func:`parse` returns the *resolved form*, the JSON object the engine also produces, and raises
:class:`~wirelab.errors.ProfileError` (one line: ``<field>: <value> <what is wrong>; <what is allowed>``)
on bad input. Both parsers are held to the same golden cases in ``testdata/netprofile_golden.json``.

The value parsers (:func:`parse_duration`, :func:`parse_rate`, :func:`parse_loss`,
:func:`parse_queue`) are public because experiment specs reuse them for ranges of profile keys.
"""

from __future__ import annotations

import difflib
import re
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from wirelab import _facts
from wirelab.errors import ProfileError

__all__ = [
    "KEYS",
    "PRESETS",
    "format_duration",
    "format_rate",
    "parse",
    "parse_duration",
    "parse_loss",
    "parse_queue",
    "parse_rate",
]

#: Preset name → (expansion, where its numbers come from), in documented order: the engine's presets
#: (``wirelab-engine profiles ls``, read from the package's copy of the engine's facts).
PRESETS: dict[str, tuple[str, str]] = {p.name: (p.expansion, p.about) for p in _facts.presets().values()}

#: Every key of the grammar, in the canonical order used when a profile is written from a table:
#: settings of both directions first, so that a per-direction key always overrides them.
KEYS: tuple[str, ...] = (
    "rtt",
    "bw",
    "loss",
    "queue",
    "jitter",
    "delay_up",
    "delay_down",
    "bw_up",
    "bw_down",
    "loss_up",
    "loss_down",
    "queue_up",
    "queue_down",
    "jitter_up",
    "jitter_down",
    "trace_up",
    "trace_down",
    "iw",
    "irw",
    "cc",
    "tcpplus",
    "origin_delay",
)

CONGESTION_CONTROLS = _facts.congestion_controls()
_LIMITS = _facts.profile_limits()
#: TCP+ (study W): tcpplus=N, N connections' worth of windows and backoff on one (docs/tcpplus.md).
MAX_TCPPLUS = _LIMITS["max_tcpplus"]
DEFAULT_QUEUE_PACKETS = _LIMITS["default_queue_packets"]

_NUMBER = r"(?:[0-9]+(?:\.[0-9]+)?)"
_NUM_UNIT = re.compile(rf"^({_NUMBER})([A-Za-z%]*)$")
# Units and limits are the engine's (docs/profile-grammar.md, "Units").
_DURATION_UNITS = {name: Decimal(f) for name, f in _facts.units("duration").items()}
_RATE_UNITS = {name: Decimal(f) for name, f in _facts.units("rate").items()}
_BYTE_RATE_UNITS = _facts.byte_rate_units()
_SIZE_UNITS = _facts.units("size")
_COUNT = re.compile(r"^([0-9]+)(p|pkt|packets)?$")
_MIN_RATE, _MAX_RATE = _LIMITS["min_rate_bps"], _LIMITS["max_rate_bps"]
_MIN_QUEUE_BYTES, _MAX_QUEUE_BYTES = _LIMITS["min_queue_bytes"], _LIMITS["max_queue_bytes"]
_MAX_QUEUE_PACKETS = _LIMITS["max_queue_packets"]
_MAX_WINDOW, _MAX_ORIGIN = _LIMITS["max_window"], _LIMITS["max_origin"]
_MAX_DURATION_NS = _LIMITS["max_duration_ns"]
_MAX_DURATION_TEXT = f"{_MAX_DURATION_NS // 10**9}s"


_DURATION_ALLOWED = f"use a number with us, ms or s (e.g. 150ms), from 0 to {_MAX_DURATION_TEXT}"
_PROB_ALLOWED = "use a probability in [0, 1] as a percentage (0.5%) or a fraction (0.005)"
_LOSS_ALLOWED = _PROB_ALLOWED + ", or ge:P:R[:1-H[:1-K]] (Gilbert–Elliott)"
_QUEUE_ALLOWED = (
    f"use a packet count ≥ 1 (64, 64p), a size ≥ {_MIN_QUEUE_BYTES}B (64kB, 64KiB), both (100/150000B), "
    "or infinite"
)


def _round_int(value: Decimal) -> int:
    return int(value.to_integral_value(rounding=ROUND_HALF_UP))


def _fail(field: str, value: str, problem: str, allowed: str) -> ProfileError:
    return ProfileError(f'{field}: "{value}" {problem}; {allowed}', field=field, value=value)


def parse_duration(text: str, field: str = "duration") -> int:
    """A DURATION (``150ms``, ``1.5s``, ``250us``, bare ``0``) → integer nanoseconds."""
    text = text.strip()
    if text == "0":
        return 0
    if text.startswith("-"):
        raise _fail(field, text, "is negative", _DURATION_ALLOWED)
    m = _NUM_UNIT.match(text)
    if not m:
        raise _fail(field, text, "is not a duration", _DURATION_ALLOWED)
    number, unit = m.groups()
    if unit == "":
        raise _fail(field, text, "has no unit", _DURATION_ALLOWED)
    if unit not in _DURATION_UNITS:
        raise _fail(field, text, f'has an unknown unit "{unit}"', _DURATION_ALLOWED)
    exact = Decimal(number) * _DURATION_UNITS[unit]
    if exact > _MAX_DURATION_NS:
        raise _fail(field, text, f"is longer than {_MAX_DURATION_TEXT}", _DURATION_ALLOWED)
    return _round_int(exact)


def parse_rate(text: str, field: str = "bw") -> int:
    """A RATE (``10mbit``, ``64kbit``, ``unlimited``) → integer bits/s, 0 meaning unlimited."""
    text = text.strip()
    if text.lower() == "unlimited":
        return 0
    if text.startswith("-"):
        raise _fail(field, text, "is negative", _RATE_ALLOWED)
    m = _NUM_UNIT.match(text)
    if not m:
        raise _fail(field, text, "is not a rate", _RATE_ALLOWED)
    number, unit = m.groups()
    unit = unit.lower()
    if unit == "":
        raise _fail(field, text, "has no unit", _RATE_ALLOWED)
    if unit in _BYTE_RATE_UNITS:
        raise _fail(field, text, "is in bytes per second, which tc-style tools misread", _RATE_ALLOWED)
    if unit not in _RATE_UNITS:
        raise _fail(field, text, f'has an unknown unit "{unit}"', _RATE_ALLOWED)
    bps = _round_int(Decimal(number) * _RATE_UNITS[unit])
    if bps < _MIN_RATE:
        raise _fail(field, text, f"is below {format_rate(_MIN_RATE)}", _RATE_ALLOWED)
    if bps > _MAX_RATE:
        raise _fail(field, text, f"is above {format_rate(_MAX_RATE)}", _RATE_ALLOWED)
    return bps


def _parse_probability(text: str, field: str, whole: str, allowed: str) -> Decimal:
    text = text.strip()
    if text.startswith("-"):
        raise _fail(field, whole, "is negative", allowed)
    m = _NUM_UNIT.match(text)
    if not m or m.group(2) not in ("", "%"):
        raise _fail(field, whole, "is not a probability", allowed)
    p = Decimal(m.group(1))
    if m.group(2) == "%":
        p /= 100
    if p > 1:
        raise _fail(field, whole, "is outside [0, 1]", allowed)
    return p


def parse_loss(text: str, field: str = "loss") -> dict[str, Any]:
    """A LOSS (``0.5%``, ``0.005``, ``ge:1%:30%``) → the resolved loss object."""
    text = text.strip()
    if text.startswith("ge:"):
        parts = text[3:].split(":")
        if not 2 <= len(parts) <= 4:
            problem = f"has {len(parts)} Gilbert–Elliott parameter(s)"
            raise _fail(field, text, problem, "use ge:P:R[:1-H[:1-K]] (2 to 4)")
        probs = [_parse_probability(p, field, text, _LOSS_ALLOWED) for p in parts]
        probs += [Decimal(1), Decimal(0)][len(probs) - 2 :]
        p, r, one_minus_h, one_minus_k = (float(x) for x in probs)
        return {
            "model": "gilbert-elliott",
            "p": p,
            "r": r,
            "one_minus_h": one_minus_h,
            "one_minus_k": one_minus_k,
        }
    prob = _parse_probability(text, field, text, _LOSS_ALLOWED)
    if prob == 0:
        return {"model": "none"}
    return {"model": "bernoulli", "p": float(prob)}


def _parse_size(text: str, field: str, whole: str) -> int:
    m = _NUM_UNIT.match(text)
    if not m or m.group(2) not in _SIZE_UNITS:
        raise _fail(field, whole, "is not a queue size", _QUEUE_ALLOWED)
    exact = Decimal(m.group(1)) * _SIZE_UNITS[m.group(2)]
    if exact != exact.to_integral_value():
        raise _fail(field, whole, "is not a whole number of bytes", _QUEUE_ALLOWED)
    size = int(exact)
    if size > _MAX_QUEUE_BYTES:
        raise _fail(field, whole, f"is larger than {_MAX_QUEUE_BYTES} bytes", _QUEUE_ALLOWED)
    if size < _MIN_QUEUE_BYTES:
        raise _fail(field, whole, f"holds less than one {_MIN_QUEUE_BYTES}-byte packet", _QUEUE_ALLOWED)
    return size


def _parse_count(text: str, field: str, whole: str) -> int:
    m = _COUNT.match(text)
    if not m:
        raise _fail(field, whole, "is not a packet count", _QUEUE_ALLOWED)
    count = int(m.group(1))
    if count < 1:
        raise _fail(field, whole, "drops every packet", _QUEUE_ALLOWED)
    if count > _MAX_QUEUE_PACKETS:
        raise _fail(field, whole, f"is more than {_MAX_QUEUE_PACKETS} packets", _QUEUE_ALLOWED)
    return count


def parse_queue(text: str, field: str = "queue") -> dict[str, int]:
    """A QUEUE (``256``, ``64kB``, ``100/150000B``, ``infinite``) → ``{"packets": N, "bytes": B}``."""
    text = text.strip()
    if text == "infinite":
        return {"packets": 0, "bytes": 0}
    if text.startswith("-"):
        raise _fail(field, text, "is negative", _QUEUE_ALLOWED)
    if "/" in text:
        count, _, size = text.partition("/")
        return {"packets": _parse_count(count, field, text), "bytes": _parse_size(size, field, text)}
    if _COUNT.match(text):
        return {"packets": _parse_count(text, field, text), "bytes": 0}
    m = _NUM_UNIT.match(text)
    if m and m.group(2) in _SIZE_UNITS:
        return {"packets": 0, "bytes": _parse_size(text, field, text)}
    raise _fail(field, text, "is not a queue", _QUEUE_ALLOWED)


def _parse_int(text: str, field: str, low: int, high: int) -> int:
    text = text.strip()
    allowed = f"use an integer from {low} to {high}"
    if not re.fullmatch(r"[0-9]+", text):
        raise _fail(field, text, "is not an integer", allowed)
    n = int(text)
    if not low <= n <= high:
        raise _fail(field, text, "is out of range", allowed)
    return n


def _parse_origin_delay(text: str, field: str) -> dict[str, int]:
    allowed = f"use N:DURATION[/N:DURATION…] with origins N from 1 to {_MAX_ORIGIN} (e.g. 2:40ms/3:80ms)"
    out: dict[str, int] = {}
    for part in text.strip().split("/"):
        origin, sep, duration = part.partition(":")
        if not sep or not re.fullmatch(r"[0-9]+", origin.strip()):
            raise _fail(field, text, "is not a list of origin delays", allowed)
        n = int(origin)
        if not 1 <= n <= _MAX_ORIGIN:
            raise _fail(field, text, f"names origin {n}", allowed)
        if str(n) in out:
            raise _fail(field, text, f"gives origin {n} twice", allowed)
        try:
            out[str(n)] = parse_duration(duration, field)
        except ProfileError:
            raise _fail(field, text, f'has a bad duration "{duration}"', allowed) from None
    return out


def _direction() -> dict[str, Any]:
    return {
        "delay_ns": 0,
        "jitter_ns": 0,
        "rate_bps": 0,
        "trace": None,
        "loss": {"model": "none"},
        "queue": {"packets": DEFAULT_QUEUE_PACKETS, "bytes": 0},
    }


def _apply(state: dict[str, Any], key: str, value: str, field: str) -> None:
    up, down = state["up"], state["down"]
    both = (up, down)
    base, _, side = key.partition("_")
    targets = {"up": (up,), "down": (down,), "": both}.get(side, both)
    if key == "rtt":
        ns = parse_duration(value, field)
        up["delay_ns"], down["delay_ns"] = ns // 2, ns - ns // 2
    elif base == "delay":
        for d in targets:
            d["delay_ns"] = parse_duration(value, field)
    elif base == "bw":
        # A rate and a trace both serve the direction's queue: the later one wins.
        for d in targets:
            d["rate_bps"] = parse_rate(value, field)
            d["trace"] = None
    elif base == "loss":
        for d in targets:
            d["loss"] = parse_loss(value, field)
    elif base == "queue":
        for d in targets:
            d["queue"] = parse_queue(value, field)
    elif base == "jitter":
        for d in targets:
            d["jitter_ns"] = parse_duration(value, field)
    elif base == "trace":
        if value.strip() == "":
            raise _fail(field, value, "is an empty path", "give the path of a mahimahi trace file")
        targets[0]["trace"] = value.strip()
        targets[0]["rate_bps"] = 0
    elif key in ("iw", "irw"):
        state[key] = _parse_int(value, field, 1, _MAX_WINDOW)
    elif key == "cc":
        if value.strip() not in CONGESTION_CONTROLS:
            raise _fail(field, value, "is not a congestion control", "use " + ", ".join(CONGESTION_CONTROLS))
        state["cc"] = value.strip()
    elif key == "tcpplus":
        state["tcpplus"] = _parse_int(value, field, 1, MAX_TCPPLUS)
    elif key == "origin_delay":
        state["origin_extra_rtt_ns"] = _parse_origin_delay(value, field)
    else:  # pragma: no cover - KEYS and this function are kept in step by the golden tests
        raise AssertionError(key)


def _suggest(word: str, options: list[str]) -> str:
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f"did you mean {close[0]}? " if close else ""


def _items(profile: str) -> list[str]:
    return [item.strip() for item in profile.split(",")]


def parse(profile: str, *, path: str = "") -> dict[str, Any]:
    """Parse a profile string into the resolved form of ``docs/profile-grammar.md``.

    ``path`` is the dotted path of the profile in a spec (``base.network``); errors then name
    ``base.network.rtt`` instead of ``rtt``.
    """

    def field(name: str) -> str:
        return f"{path}.{name}" if path else name

    state: dict[str, Any] = {
        "up": _direction(),
        "down": _direction(),
        "iw": 0,
        "irw": 0,
        "cc": "cubic",
        "tcpplus": 0,
        "origin_extra_rtt_ns": {},
    }
    if profile.strip() == "":
        return state
    items = _items(profile)
    for position, item in enumerate(items, 1):
        if item == "":
            raise _fail(
                path or "profile",
                "",
                f"is an empty item (item {position} of {profile!r})",
                "separate items with single commas",
            )
        if "=" not in item:
            if item in PRESETS:
                for sub in (s for s in _items(PRESETS[item][0]) if s):
                    key, _, value = sub.partition("=")
                    _apply(state, key, value, field(key))
                continue
            if item in KEYS:
                problem = "is a key without a value, not a preset"
                raise _fail(field(item), item, problem, f"write {item}=VALUE")
            raise ProfileError(
                f'{field(item)}: "{item}" is not a preset; {_suggest(item, list(PRESETS))}'
                f"presets: {', '.join(PRESETS)}",
                field=field(item),
                value=item,
            )
        key, _, value = item.partition("=")
        key = key.strip()
        if key not in KEYS:
            raise ProfileError(
                f'{field(key)}: "{key}" is not a profile key; '
                f"{_suggest(key, list(KEYS))}keys: {', '.join(KEYS)}",
                field=field(key),
                value=key,
            )
        _apply(state, key, value.strip(), field(key))
    if state["tcpplus"] and state["cc"] != "cubic":
        # wl_cubicp<N> is cubic with TCP+'s backoff: it replaces cc on the server's routes.
        raise _fail(
            field("tcpplus"),
            str(state["tcpplus"]),
            f"cannot be combined with cc={state['cc']}",
            "TCP+ is cubic with a smaller backoff (wl_cubicp<N>): use cc=cubic (the default) or drop tcpplus",
        )
    return state


def format_duration(ns: int) -> str:
    """Nanoseconds → the shortest exact DURATION (``150ms``, ``1.5s``, ``250us``, ``0``)."""
    if ns == 0:
        return "0"
    for unit in ("s", "ms", "us"):
        value = Decimal(ns) / _DURATION_UNITS[unit]
        if value >= 1 or unit == "us":
            return _format_decimal(value) + unit
    raise AssertionError(ns)  # pragma: no cover


def format_rate(bps: int) -> str:
    """Bits/s → the shortest exact RATE (``10mbit``, ``1.5mbit``, ``64kbit``, ``unlimited``)."""
    if bps == 0:
        return "unlimited"
    for unit in ("gbit", "mbit", "kbit", "bit"):
        value = Decimal(bps) / _RATE_UNITS[unit]
        if value >= 1:
            return _format_decimal(value) + unit
    raise AssertionError(bps)  # pragma: no cover


def _format_decimal(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return text


_RATE_ALLOWED = (
    f"use a number with bit, kbit, mbit or gbit (e.g. 10mbit) from {format_rate(_MIN_RATE)} to "
    f"{format_rate(_MAX_RATE)}, or unlimited"
)
