"""Ledger text is data: make every control character visible before it reaches a terminal.

This is the one place that decides which characters are dangerous on a terminal: every
C0/C1 control but newline and tab, DEL, the Unicode line and paragraph separators
(U+2028/2029), the bidi marks, embeddings, overrides and isolates ("Trojan Source"),
and the zero-width and invisible characters that hide text (U+200B..U+200D, U+2060..U+2064,
U+180E, U+FEFF), and the characters that draw nothing yet change what runs: the soft
hyphen (U+00AD), the combining grapheme joiner (U+034F), the Hangul fillers (U+115F,
U+1160, U+3164, U+FFA0), the variation selectors (U+FE00..U+FE0F, U+E0100..U+E01EF) and
the tag characters (U+E0000..U+E007F). A target name or note can then never move the
cursor, change colours, set the window title, read backwards or hide text from the
operator, and an approver sees every character of the argv they approve.

Two spellings of the same set: the CLI writes `\\x1b` / `\\u202e` (copy-pastable into a
bug report), the TUI writes one visible cell per C0 control from Unicode's Control
Pictures block (`␛`) and `<U+202E>` for the rest (`pictures=True`).
"""

from __future__ import annotations

import re

# Characters that are never sent to a terminal as they are.
_CODES: tuple[int, ...] = (
    *range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0),  # C0 (but \t \n), DEL, C1
    0x061C, 0x180E,                                             # Arabic letter mark, Mongolian vowel separator
    *range(0x200B, 0x2010),                                     # zero-width space/joiners, LRM, RLM
    0x2028, 0x2029,                                             # line and paragraph separators
    *range(0x202A, 0x202F),                                     # bidi embeddings and overrides
    *range(0x2060, 0x2065), *range(0x2066, 0x206A),             # word joiner, invisible operators, isolates
    0xFEFF,                                                     # zero-width no-break space (BOM)
    0x00AD, 0x034F,                                             # soft hyphen, combining grapheme joiner
    0x115F, 0x1160, 0x3164, 0xFFA0,                             # Hangul fillers (blank, yet letters)
    *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0),           # variation selectors
    *range(0xE0000, 0xE0080),                                   # tag characters (invisible ASCII copies)
)
CONTROL_CODES: frozenset[int] = frozenset(_CODES)


def _ranges(codes: frozenset[int]) -> str:
    """The codes as a character class of ranges (one per run): a class of ~600 single
    characters cost ~27 us a search, this one under 1."""
    runs: list[list[int]] = []
    for code in sorted(codes):
        if runs and code == runs[-1][1] + 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    return "".join(re.escape(chr(a)) + (f"-{re.escape(chr(b))}" if b > a else "") for a, b in runs)


_CONTROL = re.compile(f"[{_ranges(CONTROL_CODES)}]")


def _escape(code: int) -> str:
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _picture(code: int) -> str:
    if code < 0x20:
        return chr(0x2400 + code)  # Control Pictures: one glyph per C0 code, same order
    if code == 0x7F:
        return "␡"
    return f"<U+{code:04X}>"


_ESCAPES = {code: _escape(code) for code in _CODES}
_PICTURES = {code: _picture(code) for code in _CODES}


def visible(text: object, *, pictures: bool = False) -> str:
    """`text` with control characters (but newline and tab) made visible.

    `pictures=False` (the CLI): `\\x1b`, `\\u202e`. `pictures=True` (the TUI): `␛`, `<U+202E>`.
    """
    if text is None:
        return ""
    value = text if isinstance(text, str) else str(text)
    if (value.isascii() and value.isprintable()) or not _CONTROL.search(value):  # the first test: C speed, most text
        return value
    return value.translate(_PICTURES if pictures else _ESCAPES)


def one_line(text: object, width: int | None = None, *, pictures: bool = False) -> str:
    """Visible, on one line (newlines and tabs shown as ⏎ and →), cut to `width` with an ellipsis."""
    raw = "" if text is None else (text if isinstance(text, str) else str(text))
    if raw.isascii() and raw.isprintable():  # no control, no newline, no tab (C speed): most cells at 10,000 rows
        value = raw
    else:
        value = visible(raw.replace("\r\n", "\n"), pictures=pictures).replace("\n", " ⏎ ").replace("\t", " → ")
    if width is not None and len(value) > width:
        value = value[: max(0, width - 1)] + "…"
    return value
