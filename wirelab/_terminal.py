"""Strings from stored data (sweep names and descriptions, page names, URLs, a probed site's Server
header, errors) made safe to print: a database or a remote site must not drive the user's terminal.

Control characters — C0 (including ESC, which starts every terminal escape sequence), DEL, C1 (the
8-bit CSI and OSC among them) — and the Unicode bidirectional overrides are shown escaped
(``\\x1b``, ``\\n``, ``\\u202e``); :func:`shown` also escapes rich's markup, so a stored ``[bold]``
prints as written.
"""

from __future__ import annotations

import re

from rich.markup import escape

__all__ = ["controls_escaped", "shown"]

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    c = match.group()
    if c in _NAMED:
        return _NAMED[c]
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_UNSAFE_BUT_WHITESPACE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def controls_escaped(text: str, *, keep_whitespace: bool = False) -> str:
    """``text`` with every control character and bidirectional override shown as an escape
    (``keep_whitespace``: tab, line feed and carriage return stay, as in an HTML page)."""
    return (_UNSAFE_BUT_WHITESPACE if keep_whitespace else _UNSAFE).sub(_escape, text)


def shown(value: object) -> str:
    """``value`` as text for a rich markup string or a table cell: control characters and rich markup
    escaped."""
    return escape(controls_escaped(str(value)))
