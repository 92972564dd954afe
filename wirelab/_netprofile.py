"""The network profile grammar: the Python twin of the engine's ``link/profile``, and the one place the
control plane parses it.

A profile is a comma-separated list of presets and ``key=value`` items, applied left to right
(``docs/profile-grammar.md``)::

    >>> r = parse("rtt=150ms,bw=1mbit,loss=0.5%")
    >>> r["up"]["delay_ns"], r["down"]["rate_bps"], r["down"]["loss"]
    (75000000, 1000000, {'model': 'bernoulli', 'p': 0.005})

:func:`parse` returns the *resolved form*, the JSON object the engine also produces, and raises
:class:`~wirelab.errors.ProfileError` (one line: ``<field>: "<value>" <what is wrong>; <what is
allowed>``) on bad input. Both parsers are held to the same golden cases in
``testdata/netprofile_golden.json`` — the resolved forms, and every error's whole message, its "did
you mean" included (:mod:`wirelab._suggest`, the rule both languages share).

The value parsers (:func:`parse_duration`, :func:`parse_rate`, :func:`parse_loss`,
:func:`parse_queue`, :func:`parse_queue_item`) are public because experiment specs reuse them for
ranges of profile keys;
:func:`check_key`, :func:`check_preset` and :func:`check_value` are the grammar's own checks of a key,
a preset or a value that a spec writes apart from a profile string (a table of keys, a grid axis).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from wirelab import _facts
from wirelab._suggest import closest, did_you_mean
from wirelab.errors import ProfileError

__all__ = [
    "KEYS",
    "PRESETS",
    "check_key",
    "check_preset",
    "check_value",
    "format_duration",
    "format_rate",
    "parse",
    "parse_duration",
    "parse_loss",
    "parse_queue",
    "parse_queue_item",
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
    # Discipline parameters and ECN after every queue item: a later queue= resets its direction's.
    "codel_target",
    "codel_interval",
    "fq_flows",
    "fq_quantum",
    "pie_target",
    "pie_tupdate",
    "pie_alpha",
    "pie_beta",
    "pie_burst",
    "red_min",
    "red_max",
    "red_probability",
    "red_weight",
    "red_adaptive",
    "ecn",
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
#: The keys in the documented order (the engine's): how errors list them.
_DOC_KEYS = _facts.profile_keys()

CONGESTION_CONTROLS = _facts.congestion_controls()
_LIMITS = _facts.profile_limits()
#: TCP+ (study W): tcpplus=N, N connections' worth of windows and backoff on one (docs/tcpplus.md).
MAX_TCPPLUS = _LIMITS["max_tcpplus"]
DEFAULT_QUEUE_PACKETS = _LIMITS["default_queue_packets"]

# Units and limits are the engine's (docs/profile-grammar.md, "Units").
_DURATION_UNITS = _facts.units("duration")
_RATE_UNITS = _facts.units("rate")
_BYTE_RATE_UNITS = _facts.byte_rate_units()
_SIZE_UNITS = _facts.units("size")
_COUNT_UNITS = ("", "p", "pkt", "packets")
_MIN_RATE, _MAX_RATE = _LIMITS["min_rate_bps"], _LIMITS["max_rate_bps"]
_MIN_QUEUE_BYTES, _MAX_QUEUE_BYTES = _LIMITS["min_queue_bytes"], _LIMITS["max_queue_bytes"]
_MAX_QUEUE_PACKETS = _LIMITS["max_queue_packets"]
_MAX_WINDOW, _MAX_ORIGIN = _LIMITS["max_window"], _LIMITS["max_origin"]
_MAX_DURATION_NS = _LIMITS["max_duration_ns"]
_DIGITS = frozenset("0123456789")

#: Queue disciplines (``queue=NAME[:LIMIT]``): name → default limit, default parameters, keys.
DISCIPLINES = _facts.disciplines()
#: Discipline parameter keys: name → kind, range, the resolved form's field, the disciplines, and
#: what an error about its value says is allowed (the engine's words).
DISCIPLINE_KEYS = _facts.discipline_keys()

#: The longest value an error repeats (the engine's maxQuotedValue).
_MAX_QUOTED = 200


def _or_list(items: tuple[str, ...] | list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def _power_of_ten(n: int) -> str:
    """``10^9`` for 1000000000 (the limits as the engine writes them)."""
    text = str(n)
    return f"10^{len(text) - 1}" if text.strip("0") == "1" and text.startswith("1") else text


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
    return format(value.normalize(), "f")


# What each kind of value allows, in the engine's words (link/profile/values.go).
_DURATION_ALLOWED = f"use a number with us, ms or s (e.g. 150ms), at most {format_duration(_MAX_DURATION_NS)}"
_RATE_ALLOWED = (
    f"use a number with {_or_list(list(_RATE_UNITS))} from {format_rate(_MIN_RATE)} to "
    f"{format_rate(_MAX_RATE)} (e.g. 10mbit), or unlimited"
)
_LOSS_ALLOWED = (
    "use a percentage (0.5%) or a fraction (0.005) between 0 and 1, or ge:P:R[:1-H[:1-K]] (e.g. ge:1%:30%)"
)
_GE_ALLOWED = "write ge:P:R[:1-H[:1-K]] as in netem's gemodel (e.g. ge:1%:30%)"
_QUEUE_ALLOWED = (
    "use packets (256, 256p, 256pkt, 256packets), bytes (64kB, 64KiB, 1MB, 1MiB, 150000B, at least "
    f"{_MIN_QUEUE_BYTES}B), both (100/150000B), or infinite"
)
_QUEUE_ZERO = "is zero: a queue that drops everything is not a network"
_QUEUE_PAIR_ALLOWED = "write COUNT/SIZE, e.g. 100/150000B"
_WINDOW_ALLOWED = f"use a whole number of segments from 1 to {_MAX_WINDOW}"
_CC_ALLOWED = f"use {_or_list(CONGESTION_CONTROLS)}"
_TCPPLUS_ALLOWED = (
    f"use a whole number of connections N from 1 to {MAX_TCPPLUS} (TCP+ makes one connection behave like N)"
)
_ORIGIN_ALLOWED = f"use N:DURATION entries separated by / with N from 1 to {_MAX_ORIGIN} (e.g. 2:40ms/3:80ms)"
_PATH_ALLOWED = "give the path of a mahimahi trace file"
_QUEUE_ITEM_ALLOWED = (
    f"use a discipline ({', '.join(DISCIPLINES)}) with an optional :LIMIT, or a drop-tail LIMIT alone: "
    f"packets (256, 256p), bytes (64kB, 64KiB, 1MB, at least {_MIN_QUEUE_BYTES}B), both (100/150000B), "
    "or infinite"
)
_SWITCH_ALLOWED = "use 1 (on) or 0 (off)"
_DOCSIS_BUFFER_ALLOWED = (
    "docsis_pie needs a buffer: give a limit (docsis_pie:100kB) or none (100 ms at the link's rate)"
)


# --------------------------------------------------------------------------------------------------
# Errors, as the engine prints them


def _quote(value: str) -> str:
    """``value`` in double quotes as Go's ``strconv.Quote`` writes it (the engine's messages)."""
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch.isprintable():  # Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols, " "
            out.append(ch)
        elif 0xDC80 <= code <= 0xDCFF:  # a byte of a character the cut split (surrogateescape)
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch in "\a\b\f\n\r\t\v":
            out.append("\\" + "abfnrtv"["\a\b\f\n\r\t\v".index(ch)])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _shown(value: str) -> str:
    """The value as an error repeats it: quoted, cut to the engine's length (bytes)."""
    data = value.encode(errors="surrogateescape")
    if len(data) > _MAX_QUOTED:
        value = data[: _MAX_QUOTED - 3].decode(errors="surrogateescape") + "..."
    return _quote(value)


def _name_field(word: str, fallback: str) -> str:
    """``word`` as an error's field when it looks like a name, else ``fallback``."""
    ok = word and all(c.isascii() and (c.isalnum() or c in "_-.") for c in word)
    return word if ok else fallback


class _Fail(Exception):
    """A problem found while parsing, before the spec path is put in front of its field."""

    def __init__(self, field: str, value: str, problem: str, allowed: str):
        super().__init__(field, value, problem, allowed)
        self.field, self.value, self.problem, self.allowed = field, value, problem, allowed

    def error(self, path: str = "", *, at_path: bool = False) -> ProfileError:
        """The one-line error, its field under ``path`` (``base.network.rtt``; ``base.network`` for the
        string as a whole, or for any problem when ``at_path``: a value the spec wrote alone)."""
        field = self.field
        if path:
            field = path if field == "profile" or at_path else f"{path}.{field}"
        message = f"{field}: {_shown(self.value)} {self.problem}"
        if self.allowed:
            message += f"; {self.allowed}"
        return ProfileError(message, field=field, value=self.value)


def _public(parser: Callable[[str, str], Any], default_field: str) -> Callable[..., Any]:
    """A value parser as the public API offers it: ``(text, field)``, raising :class:`ProfileError`."""

    def parse_value(text: str, field: str = default_field) -> Any:
        try:
            return parser(field, _trim(text))
        except _Fail as e:
            raise e.error() from None

    parse_value.__doc__ = parser.__doc__
    return parse_value


# --------------------------------------------------------------------------------------------------
# Values (the engine's link/profile/values.go and internal/units)


def _trim(s: str) -> str:
    """Spaces and tabs around an item, a key or a value are not part of it."""
    return s.strip(" \t")


def _split_number(s: str) -> tuple[str, str]:
    i = 0
    while i < len(s) and (s[i] in _DIGITS or s[i] == "."):
        i += 1
    return s[:i], s[i:]


def _all_digits(s: str) -> bool:
    return s != "" and all(c in _DIGITS for c in s)


def _exponent(rest: str) -> bool:
    return len(rest) > 1 and rest[0] in "eE" and (rest[1] in _DIGITS or rest[1] in "+-")


def _number_problem(s: str) -> str:
    """Why the number before a value's unit is not a NUMBER (digits, at most one point)."""
    if s.startswith("-"):
        return "is negative"
    if s.startswith("+"):
        return "has a sign (numbers are written without one)"
    number, rest = _split_number(s)
    if number and _exponent(rest):
        return "uses an exponent (write plain decimals: 1000, not 1e3)"
    if number == "":
        return "is not a number"
    return "is not a plain decimal number (digits with at most one point, e.g. 1.5)"


def _number_unit(field: str, whole: str, s: str, allowed: str, prefix: str = "") -> tuple[Decimal, str]:
    """``s`` as a NUMBER and its unit; anything else fails naming ``whole``."""
    number, unit = _split_number(s)
    int_part, point, frac_part = number.partition(".")
    if not _all_digits(int_part) or (point and not _all_digits(frac_part)) or _exponent(unit):
        raise _Fail(field, whole, prefix + _number_problem(s), allowed)
    return Decimal(number), unit


def _round(value: Decimal) -> int:
    return int(value.to_integral_value(rounding=ROUND_HALF_UP))


def _duration(field: str, s: str) -> int:
    """A DURATION (``150ms``, ``1.5s``, ``250us``, a bare zero) → integer nanoseconds."""
    if s == "":
        raise _Fail(field, s, "is empty", _DURATION_ALLOWED)
    d, unit = _number_unit(field, s, s, _DURATION_ALLOWED)
    if unit == "":
        if d == 0:
            return 0
        raise _Fail(field, s, "has no unit", _DURATION_ALLOWED)
    if unit not in _DURATION_UNITS:
        raise _Fail(field, s, f"has an unknown unit {_quote(unit)}", _DURATION_ALLOWED)
    exact = d * _DURATION_UNITS[unit]
    if exact > _MAX_DURATION_NS:
        raise _Fail(field, s, "is too long", _DURATION_ALLOWED)
    return _round(exact)


def _rate(field: str, s: str) -> int:
    """A RATE (``10mbit``, ``64kbit``, ``unlimited``) → integer bits/s, 0 meaning unlimited."""
    if s == "":
        raise _Fail(field, s, "is empty", _RATE_ALLOWED)
    if s == "unlimited":
        return 0
    d, unit = _number_unit(field, s, s, _RATE_ALLOWED)
    if unit == "":
        raise _Fail(field, s, "has no unit", _RATE_ALLOWED)
    lower = unit.lower()
    if lower not in _RATE_UNITS:
        base = lower.removesuffix("/s")
        if base != lower and base in _RATE_UNITS:
            raise _Fail(
                field,
                s,
                f"writes the unit as {_quote(unit)}",
                f"write it without /s: {_or_list(list(_RATE_UNITS))} (e.g. 10{base})",
            )
        if lower in _BYTE_RATE_UNITS:
            raise _Fail(
                field,
                s,
                f"uses {_quote(unit)}, which tc reads as bytes (per second) and others as bits",
                f"write rates in {_or_list(list(_RATE_UNITS))} (e.g. 10mbit), from {format_rate(_MIN_RATE)} "
                f"to {format_rate(_MAX_RATE)}",
            )
        raise _Fail(field, s, f"has an unknown unit {_quote(unit)}", _RATE_ALLOWED)
    exact = d * _RATE_UNITS[lower]
    if exact < _MIN_RATE:
        raise _Fail(field, s, f"is below {format_rate(_MIN_RATE)}", _RATE_ALLOWED)
    if exact > _MAX_RATE:
        raise _Fail(field, s, f"is above {format_rate(_MAX_RATE)}", _RATE_ALLOWED)
    return _round(exact)


def _probability(field: str, whole: str, s: str, what: str = "") -> float:
    """A PROB (``0.5%`` or a fraction) in [0, 1]; ``what`` names the part of a larger value."""
    prefix = f"{what} " if what else ""
    if s == "":
        raise _Fail(field, whole, prefix + "is empty", _LOSS_ALLOWED)
    number, shift = (s[:-1], 2) if s.endswith("%") else (s, 0)
    d, unit = _number_unit(field, whole, number, _LOSS_ALLOWED, prefix)
    if unit != "":
        raise _Fail(field, whole, f"{prefix}has an unknown unit {_quote(unit)}", _LOSS_ALLOWED)
    if d > (100 if shift else 1):
        raise _Fail(field, whole, prefix + "is more than 100%", _LOSS_ALLOWED)
    return float(d.scaleb(-shift))


def _loss(field: str, s: str) -> dict[str, Any]:
    """A LOSS (``0.5%``, ``0.005``, ``ge:1%:30%``) → the resolved loss object."""
    if s.startswith("ge:"):
        parts = s[3:].split(":")
        if len(parts) < 2:
            raise _Fail(field, s, "needs at least p and r", _GE_ALLOWED)
        if len(parts) > 4:
            raise _Fail(field, s, f"has {len(parts)} parameters, more than four", _GE_ALLOWED)
        values = [0.0, 0.0, 1.0, 0.0]  # netem's defaults for 1-h (100 %) and 1-k (0 %)
        for i, (part, name) in enumerate(zip(parts, ("p", "r", "1-h", "1-k"), strict=False)):
            values[i] = _probability(field, s, part, f"parameter {name}")
        p, r, one_minus_h, one_minus_k = values
        return {
            "model": "gilbert-elliott",
            "p": p,
            "r": r,
            "one_minus_h": one_minus_h,
            "one_minus_k": one_minus_k,
        }
    p = _probability(field, s, s)
    return {"model": "none"} if p == 0 else {"model": "bernoulli", "p": p}


def _queue(field: str, s: str) -> dict[str, int]:
    """A QUEUE (``256``, ``64kB``, ``100/150000B``, ``infinite``) → ``{"packets": N, "bytes": B}``."""
    if s == "":
        raise _Fail(field, s, "is empty", _QUEUE_ALLOWED)
    if s == "infinite":
        return {"packets": 0, "bytes": 0}
    if s.startswith("-"):
        raise _Fail(field, s, "is negative", _QUEUE_ALLOWED)
    parts = s.split("/")
    if len(parts) > 2:
        raise _Fail(field, s, "has more than one /", _QUEUE_ALLOWED)
    queue = {"packets": 0, "bytes": 0}
    for i, part in enumerate(parts):
        d, unit = _number_unit(field, s, part, _QUEUE_ALLOWED)
        is_size, is_count = unit in _SIZE_UNITS, unit in _COUNT_UNITS
        if not is_count and not is_size:
            raise _Fail(
                field, s, f"has an unknown unit {_quote(unit)} (units are case-sensitive)", _QUEUE_ALLOWED
            )
        if len(parts) == 2 and i == 0 and not is_count:
            raise _Fail(field, s, "has a size before the /", _QUEUE_PAIR_ALLOWED)
        if len(parts) == 2 and i == 1 and not is_size:
            raise _Fail(field, s, "has no size unit after the /", _QUEUE_PAIR_ALLOWED)
        if is_count:
            if d.as_tuple().exponent != 0:  # digits after the point, even zeros
                raise _Fail(field, s, "is not a whole number of packets", _QUEUE_ALLOWED)
            if d == 0:
                raise _Fail(field, s, _QUEUE_ZERO, _QUEUE_ALLOWED)
            if d > _MAX_QUEUE_PACKETS:
                raise _Fail(
                    field, s, f"is more than {_power_of_ten(_MAX_QUEUE_PACKETS)} packets", _QUEUE_ALLOWED
                )
            queue["packets"] = int(d)
            continue
        if d == 0:
            raise _Fail(field, s, _QUEUE_ZERO, _QUEUE_ALLOWED)
        exact = d * _SIZE_UNITS[unit]
        if exact < _MIN_QUEUE_BYTES:
            raise _Fail(field, s, f"is smaller than one {_MIN_QUEUE_BYTES}-byte packet", _QUEUE_ALLOWED)
        if exact > _MAX_QUEUE_BYTES:
            raise _Fail(field, s, f"is more than {_power_of_ten(_MAX_QUEUE_BYTES)} bytes", _QUEUE_ALLOWED)
        if exact != exact.to_integral_value():
            raise _Fail(field, s, "is not a whole number of bytes", _QUEUE_ALLOWED)
        queue["bytes"] = int(exact)
    return queue


def _whole(field: str, s: str, high: int, allowed: str) -> int:
    """A whole number from 1 to ``high`` (iw, irw, tcpplus)."""
    if s == "":
        raise _Fail(field, s, "is empty", allowed)
    if not _all_digits(s):
        raise _Fail(field, s, "is not a whole number", allowed)
    if len(s.lstrip("0")) > len(str(high)) or not 1 <= int(s) <= high:
        raise _Fail(field, s, "is out of range", allowed)
    return int(s)


def _cc(field: str, s: str) -> str:
    if s not in CONGESTION_CONTROLS:
        raise _Fail(field, s, "is not a supported congestion control", _CC_ALLOWED)
    return s


def _origin_delay(field: str, s: str) -> dict[str, int]:
    """N:DURATION ("/" N:DURATION)* → extra RTT (ns) per origin, keyed by the origin as a string."""
    if s == "":
        raise _Fail(field, s, "is empty", _ORIGIN_ALLOWED)
    out: dict[str, int] = {}
    for entry in s.split("/"):
        n, sep, duration = entry.partition(":")
        if not sep:
            raise _Fail(field, s, f"has an entry {_quote(entry)} without a colon", _ORIGIN_ALLOWED)
        if not _all_digits(n):
            raise _Fail(field, s, f"has an origin {_quote(n)} that is not a whole number", _ORIGIN_ALLOWED)
        origin = int(n) if len(n.lstrip("0")) <= 3 else _MAX_ORIGIN + 1
        if not 1 <= origin <= _MAX_ORIGIN:
            raise _Fail(
                field, s, f"names origin {n} (origins are numbered from 1 to {_MAX_ORIGIN})", _ORIGIN_ALLOWED
            )
        if str(origin) in out:
            raise _Fail(field, s, f"names origin {origin} twice", _ORIGIN_ALLOWED)
        try:
            out[str(origin)] = _duration(field, duration)
        except _Fail as e:
            problem = f"has a delay {_quote(duration)} for origin {origin} that {e.problem}"
            raise _Fail(field, s, problem, _ORIGIN_ALLOWED) from None
    return out


def _trace_path(field: str, s: str) -> str:
    if s == "":
        problem = "is an empty path"
    elif any(unicodedata.category(c) == "Cc" for c in s):
        problem = "contains a control character"
    elif "," in s:
        problem = "contains a comma, which a profile string cannot carry"
    elif _trim(s) != s:
        problem = "has blanks around it, which a profile string cannot carry"
    else:
        return s
    raise _Fail(field, s, problem, _PATH_ALLOWED)


def _starts_numeric(s: str) -> bool:
    return s != "" and (s[0] in _DIGITS or s[0] in "-+.")


def _queue_item(field: str, s: str) -> tuple[dict[str, Any], dict[str, int]]:
    """A QUEUE item (``256``, ``codel``, ``fq_codel:2000``, ``red:64kB``) → (the discipline's resolved
    form with its default parameters, the limit)."""
    name, colon, limit = s.partition(":")
    if name not in DISCIPLINES:
        # A word that is not a limit: an unknown discipline when a limit follows it or it looks like
        # a discipline's name, else the limit's own error ("is not a number").
        near = closest(name, DISCIPLINES) is not None
        if (colon and not _starts_numeric(name)) or (near and not _starts_numeric(s)):
            allowed = did_you_mean(name, DISCIPLINES) + _QUEUE_ITEM_ALLOWED
            raise _Fail(field, s, f"names an unknown discipline {_quote(name)}", allowed)
        return {"name": "droptail"}, _queue(field, s)
    info = DISCIPLINES[name]
    queue = dict(info["default_limit"])
    if colon:
        try:
            queue = _queue(field, limit)
        except _Fail as e:
            raise _Fail(field, s, "has a limit that " + e.problem, e.allowed) from None
        if name == "docsis_pie" and queue == {"packets": 0, "bytes": 0}:
            raise _Fail(field, s, "has no buffer size", _DOCSIS_BUFFER_ALLOWED)
    return dict(info["defaults"]), queue


def _switch(field: str, s: str, allowed: str = _SWITCH_ALLOWED) -> bool:
    if s in ("0", "1"):
        return s == "1"
    raise _Fail(field, s, "is empty" if s == "" else "is not 0 or 1", allowed)


def _param(key: str, s: str) -> Any:
    """A discipline parameter's value (link/profile/discipline.go's paramKeys)."""
    spec = DISCIPLINE_KEYS[key]
    kind, low, high, allowed = spec["kind"], spec["min"], spec["max"], spec["allowed"]
    if kind == "duration":
        try:
            ns = _duration(key, s)
        except _Fail as e:
            raise _Fail(key, s, e.problem, allowed) from None
        if not low <= ns <= high:
            raise _Fail(key, s, "is out of range", allowed)
        return ns
    if kind == "probability":
        try:
            p = _probability(key, s, s)
        except _Fail as e:
            raise _Fail(key, s, e.problem, allowed) from None
        if p == 0:
            raise _Fail(key, s, "is zero", allowed)
        return p
    if kind == "switch":
        return _switch(key, s, allowed)
    if s == "":
        raise _Fail(key, s, "is empty", allowed)
    if kind == "int":
        if not _all_digits(s):
            raise _Fail(key, s, "is not a whole number", allowed)
        n = int(s) if len(s.lstrip("0")) <= 9 else high + 1
        if not low <= n <= high:
            raise _Fail(key, s, "is out of range", allowed)
        return n
    d, unit = _number_unit(key, s, s, allowed)
    if kind == "sixteenths":  # PIE's alpha and beta: Linux counts them in sixteenths
        if unit != "":
            raise _Fail(key, s, f"has an unknown unit {_quote(unit)}", allowed)
        if d == 0 or d * 16 > high:
            raise _Fail(key, s, "is out of range", allowed)
        if d * 16 != (d * 16).to_integral_value():
            raise _Fail(key, s, "is not a multiple of 1/16", allowed)
        return float(d)
    assert kind == "size", kind
    if unit not in _SIZE_UNITS:
        problem = (
            "has no unit" if unit == "" else f"has an unknown unit {_quote(unit)} (units are case-sensitive)"
        )
        raise _Fail(key, s, problem, allowed)
    exact = d * _SIZE_UNITS[unit]
    if not low <= exact <= high:
        raise _Fail(key, s, "is out of range", allowed)
    if exact != exact.to_integral_value():
        raise _Fail(key, s, "is not a whole number of bytes", allowed)
    return int(exact)


def _go_duration(ns: int) -> str:
    """A duration as the engine's messages write it (link/profile's formatDuration: 1500ms, 250us)."""
    if ns == 0:
        return "0"
    if ns % 1_000_000_000 == 0:
        return f"{ns // 1_000_000_000}s"
    if ns >= 1_000_000:
        return _format_decimal(Decimal(ns).scaleb(-6)) + "ms"
    return _format_decimal(Decimal(ns).scaleb(-3)) + "us"


def _format_size(n: int) -> str:
    """Bytes in the largest unit that divides them (the engine's units.FormatSize)."""
    for unit in ("MB", "MiB", "kB", "KiB"):
        if n and n % _SIZE_UNITS[unit] == 0:
            return f"{n // _SIZE_UNITS[unit]}{unit}"
    return f"{n}B"


def _format_param(key: str, value: Any) -> str:
    """A parameter's value as the engine writes it in a message."""
    kind = DISCIPLINE_KEYS[key]["kind"]
    if kind == "duration":
        return _go_duration(value)
    if kind == "size":
        return _format_size(value)
    if kind == "switch":
        return "1" if value else "0"
    if kind == "int":
        return str(value)
    return _format_decimal(Decimal(repr(float(value))))  # strconv.FormatFloat(v, 'f', -1, 64)


parse_duration = _public(_duration, "duration")
parse_rate = _public(_rate, "bw")
parse_loss = _public(_loss, "loss")
parse_queue = _public(_queue, "queue")
parse_queue_item = _public(_queue_item, "queue")


# --------------------------------------------------------------------------------------------------
# Profiles (the engine's link/profile/profile.go)


def _directions(state: dict[str, Any], key: str) -> tuple[dict[str, Any], ...]:
    """The directions a key sets: ``<name>_up``, ``<name>_down`` or, without a side, both."""
    side = key.rpartition("_")[2]
    return {"up": (state["up"],), "down": (state["down"],)}.get(side, (state["up"], state["down"]))


def _set_rtt(state: dict[str, Any], field: str, value: str) -> None:
    ns = _duration(field, value)
    state["up"]["delay_ns"], state["down"]["delay_ns"] = ns // 2, ns - ns // 2  # an odd ns goes down


def _per_direction(
    name: str, parse_value: Callable[[str, str], Any]
) -> Callable[[dict[str, Any], str, str], None]:
    def apply(state: dict[str, Any], key: str, value: str) -> None:
        parsed = parse_value(key, value)
        for d in _directions(state, key):
            d[name] = parsed
            if name == "rate_bps":  # a rate and a trace both serve the queue: the later one wins
                d["trace"] = None
            elif name == "trace":
                d["rate_bps"] = 0

    return apply


def _setting(name: str, parse_value: Callable[[str, str], Any]) -> Callable[[dict[str, Any], str, str], None]:
    def apply(state: dict[str, Any], field: str, value: str) -> None:
        state[name] = parse_value(field, value)

    return apply


_delay = _per_direction("delay_ns", _duration)
_bw = _per_direction("rate_bps", _rate)
_loss_key = _per_direction("loss", _loss)


def _queue_key(state: dict[str, Any], key: str, value: str) -> None:
    """The queue of the key's directions: its discipline, with that discipline's default parameters
    (parameter keys apply after it), and its limit."""
    discipline, queue = _queue_item(key, value)
    for d in _directions(state, key):
        d["queue"], d["discipline"] = dict(queue), dict(discipline)


def _set_param(state: dict[str, Any], key: str, value: str) -> None:
    """A discipline parameter, in every direction whose discipline takes it."""
    parsed = _param(key, value)
    spec = DISCIPLINE_KEYS[key]
    hit = [d for d in (state["up"], state["down"]) if d["discipline"]["name"] in spec["disciplines"]]
    if not hit:
        names = spec["disciplines"]
        raise _Fail(
            key,
            value,
            f"applies to queue={' or queue='.join(names)}, which neither direction uses",
            f"set queue={names[0]} before it (items apply left to right)",
        )
    for d in hit:
        d["discipline"][spec["field"]] = parsed


_jitter = _per_direction("jitter_ns", _duration)
_trace = _per_direction("trace", _trace_path)

#: Each key and how it sets the profile being built.
_APPLY: dict[str, Callable[[dict[str, Any], str, str], None]] = {
    "rtt": _set_rtt,
    "delay_up": _delay,
    "delay_down": _delay,
    "bw": _bw,
    "bw_up": _bw,
    "bw_down": _bw,
    "loss": _loss_key,
    "loss_up": _loss_key,
    "loss_down": _loss_key,
    "queue": _queue_key,
    "queue_up": _queue_key,
    "queue_down": _queue_key,
    **dict.fromkeys(DISCIPLINE_KEYS, _set_param),
    "ecn": _setting("ecn", _switch),
    "jitter": _jitter,
    "jitter_up": _jitter,
    "jitter_down": _jitter,
    "trace_up": _trace,
    "trace_down": _trace,
    "iw": _setting("iw", lambda f, v: _whole(f, v, _MAX_WINDOW, _WINDOW_ALLOWED)),
    "irw": _setting("irw", lambda f, v: _whole(f, v, _MAX_WINDOW, _WINDOW_ALLOWED)),
    "cc": _setting("cc", _cc),
    "tcpplus": _setting("tcpplus", lambda f, v: _whole(f, v, MAX_TCPPLUS, _TCPPLUS_ALLOWED)),
    "origin_delay": _setting("origin_extra_rtt_ns", _origin_delay),
}
assert set(_APPLY) == set(KEYS) == set(_DOC_KEYS), "the grammar's keys are the engine's"


def _unknown_key(key: str, also: tuple[str, ...] = ()) -> _Fail:
    if key in PRESETS:
        return _Fail(key, key, "is a preset, not a key", f"write the preset alone (e.g. {key},rtt=50ms)")
    keys = (*also, *_DOC_KEYS)
    allowed = did_you_mean(key, keys) + f"keys are {', '.join(keys)}"
    return _Fail(_name_field(key, "profile"), key, "is not a known key", allowed)


def _unknown_preset(name: str) -> _Fail:
    presets = ", ".join(PRESETS)
    if name in _APPLY:
        allowed = f"write {name}=VALUE (a bare name must be a preset: {presets})"
        return _Fail(name, name, "is a key without a value", allowed)
    # A bare word is compared with the presets first, then with the keys (rt → rtt=VALUE).
    allowed = f"presets are {presets}"
    if (near := closest(name, PRESETS)) is not None:
        allowed = f"did you mean {near}? {allowed}"
    elif (near := closest(name, _DOC_KEYS)) is not None:
        allowed = f"did you mean {near}=VALUE? {allowed}"
    return _Fail(_name_field(name, "profile"), name, "is not a known preset", allowed)


def check_key(key: str, *, path: str = "", also: tuple[str, ...] = ()) -> None:
    """Refuse ``key`` unless it is a key of the grammar (or one of ``also``, listed first), as
    :func:`parse` would: a spec's table of profile keys (``also``: its ``preset``)."""
    if key not in _APPLY and key not in also:
        raise _unknown_key(key, also).error(path) from None


def check_preset(name: str, *, path: str = "") -> None:
    """Refuse ``name`` unless it is a preset, as :func:`parse` refuses a bare item; the error names
    ``path`` (a spec's ``network.preset``)."""
    if name not in PRESETS:
        raise _unknown_preset(name).error(path, at_path=True) from None


def check_value(key: str, value: str, *, path: str) -> None:
    """Refuse ``value`` unless :func:`parse` takes it for ``key`` (a grid axis of one profile key);
    the error names ``path``."""
    try:
        if key in DISCIPLINE_KEYS:  # the value alone: the queue it applies to is another key's
            _param(key, _trim(value))
        else:
            _APPLY[key](_native(), key, _trim(value))
    except _Fail as e:
        raise e.error(path, at_path=True) from None


def _native() -> dict[str, Any]:
    def direction() -> dict[str, Any]:
        return {
            "delay_ns": 0,
            "jitter_ns": 0,
            "rate_bps": 0,
            "trace": None,
            "loss": {"model": "none"},
            "queue": {"packets": DEFAULT_QUEUE_PACKETS, "bytes": 0},
            "discipline": {"name": "droptail"},
        }

    return {
        "up": direction(),
        "down": direction(),
        "iw": 0,
        "irw": 0,
        "cc": "cubic",
        "tcpplus": 0,
        "origin_extra_rtt_ns": {},
        "ecn": False,
    }


def _apply(state: dict[str, Any], profile: str) -> None:
    if _trim(profile) == "":
        return
    items = profile.split(",")
    for position, raw in enumerate(items, 1):
        item = _trim(raw)
        if item == "":
            raise _Fail(
                "profile",
                profile,
                f"has an empty item (item {position} of {len(items)})",
                "separate items with single commas (each item is KEY=VALUE or a preset name)",
            )
        key, sep, value = item.partition("=")
        if not sep:
            if item not in PRESETS:
                raise _unknown_preset(item)
            _apply(state, PRESETS[item][0])
            continue
        key, value = _trim(key), _trim(value)
        if key == "":
            raise _Fail("profile", item, "has no key before =", "write KEY=VALUE, e.g. rtt=100ms")
        if key not in _APPLY:
            raise _unknown_key(key)
        _APPLY[key](state, key, value)


def parse(profile: str, *, path: str = "") -> dict[str, Any]:
    """Parse a profile string into the resolved form of ``docs/profile-grammar.md``.

    ``path`` is the dotted path of the profile in a spec (``base.network``); errors then name
    ``base.network.rtt`` instead of ``rtt`` (and ``base.network`` for the string as a whole).
    """
    state = _native()
    try:
        _apply(state, profile)
        if state["tcpplus"] and state["cc"] != "cubic":
            # wl_cubicp<N> is cubic with TCP+'s backoff: it replaces cc on the server's routes.
            raise _Fail(
                "tcpplus",
                str(state["tcpplus"]),
                f"cannot be combined with cc={state['cc']}",
                "TCP+ is cubic with a smaller backoff (wl_cubicp<N>): use cc=cubic (the default) "
                "or drop tcpplus",
            )
        _check_disciplines(state)
    except _Fail as e:
        raise e.error(path) from None
    return state


def _check_disciplines(state: dict[str, Any]) -> None:
    """What needs the whole profile (link/profile's checkDisciplines and checkShared): RED's thresholds
    in order, CoDel's target below its interval, and one value per parameter key across the
    directions (a key sets every direction that takes it)."""
    for d in (state["up"]["discipline"], state["down"]["discipline"]):
        if d["name"] == "red" and d["min_bytes"] and d["max_bytes"] and d["min_bytes"] >= d["max_bytes"]:
            problem = f"is not below red_max {_format_size(d['max_bytes'])}"
            raise _Fail("red_min", _format_size(d["min_bytes"]), problem, "RED needs red_min < red_max")
        if d["name"] in ("codel", "fq_codel") and d["target_ns"] >= d["interval_ns"]:
            raise _Fail(
                "codel_target",
                _go_duration(d["target_ns"]),
                f"is not below codel_interval {_go_duration(d['interval_ns'])}",
                "CoDel's target must be shorter than its interval (defaults 5ms and 100ms)",
            )
    up, down = state["up"]["discipline"], state["down"]["discipline"]
    for key, spec in DISCIPLINE_KEYS.items():
        both = up["name"] in spec["disciplines"] and down["name"] in spec["disciplines"]
        if both and up[spec["field"]] != down[spec["field"]]:
            raise _Fail(
                key,
                _format_param(key, up[spec["field"]]),
                f"is the up direction's, and {_format_param(key, down[spec['field']])} the down direction's",
                f"{key} sets both directions: write it after the queue items it applies to",
            )
