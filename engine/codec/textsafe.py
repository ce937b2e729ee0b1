"""Ledger text is data: make every control character visible before it reaches a terminal.

This is the one place that decides which characters are dangerous on a terminal: every
control (Unicode category Cc) but newline and tab, every format character (Cf: the bidi
marks, embeddings, overrides and isolates of "Trojan Source", the zero-width joiners, the
soft hyphen, the BOM, the tag characters and the rarer format controls terminals and Rich
draw as nothing), the line and paragraph separators (Zl, Zp), and the rest of Unicode's
default-ignorable characters, which draw nothing yet change what runs: the combining
grapheme joiner (U+034F), the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0), the Khmer
inherent vowels (U+17B4, U+17B5), the Mongolian free variation selectors (U+180B..U+180F),
the variation selectors (U+FE00..U+FE0F, U+E0100..U+E01EF) and the ranges Unicode keeps
ignorable for the future (U+FFF0..U+FFF8, U+E0000..U+E0FFF). A target name or note can then
never move the cursor, change colours, set the window title, read backwards or hide text
from the operator, and an approver sees every character of the argv they approve. The
ranges are written out (a scan of Unicode's categories at import would cost ~0.2 s in every
process); tests/unit/test_textsafe.py derives them from `unicodedata` again and compares.

Two spellings of the same set: the CLI writes `\\x1b` / `\\u202e` (copy-pastable into a
bug report), the TUI writes one visible cell per C0 control from Unicode's Control
Pictures block (`␛`) and `<U+202E>` for the rest (`pictures=True`). One argument of a command
is one shell word in both (`shell_word`: `$'web-02\\n'`), so it stays one line and can be pasted.
"""

from __future__ import annotations

import re

# Characters that are never sent to a terminal as they are: inclusive ranges.
_RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x0008), (0x000B, 0x001F), (0x007F, 0x009F),      # C0 (but \t \n), DEL, C1
    (0x00AD, 0x00AD), (0x034F, 0x034F),                        # soft hyphen, combining grapheme joiner
    (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD),      # Arabic number signs, letter mark, end of ayah
    (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2),      # Syriac abbreviation mark, Arabic marks
    (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),      # Hangul fillers, Khmer vowels, Mongolian selectors
    (0x200B, 0x200F), (0x2028, 0x202E), (0x2060, 0x206F),      # zero-width, LRM/RLM, separators, bidi, invisibles
    (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),      # Hangul filler, variation selectors, BOM
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFFB),                        # halfwidth filler, interlinear annotations
    (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x13438),  # Kaithi marks, Egyptian format controls
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),                    # shorthand and musical format controls
    (0xE0000, 0xE0FFF),                                        # tags, variation selectors supplement, reserved
)
CONTROL_CODES: frozenset[int] = frozenset().union(*(range(a, b + 1) for a, b in _RANGES))  # half the time of a tuple first


# CONTROL_CODES as one class of ranges (a class of single characters cost ~27 us a search, this one under 1).
CONTROL = re.compile("[" + "".join(re.escape(chr(a)) + (f"-{re.escape(chr(b))}" if b > a else "") for a, b in _RANGES) + "]")


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


class _Table(dict):
    """str.translate's table for CONTROL_CODES, filled as codes are met (4,000 of them)."""

    def __init__(self, spell) -> None:
        super().__init__()
        self.spell = spell

    def __missing__(self, code: int) -> str:
        if code not in CONTROL_CODES:
            raise LookupError(code)  # translate leaves the character as it is
        self[code] = spelled = self.spell(code)
        return spelled


_ESCAPES = _Table(_escape)
_PICTURES = _Table(_picture)


def visible(text: object, *, pictures: bool = False) -> str:
    """`text` with control characters (but newline and tab) made visible.

    `pictures=False` (the CLI): `\\x1b`, `\\u202e`. `pictures=True` (the TUI): `␛`, `<U+202E>`.
    """
    if text is None:
        return ""
    value = text if isinstance(text, str) else str(text)
    if (value.isascii() and value.isprintable()) or not CONTROL.search(value):  # the first test: C speed, most text
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


_WORD_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def shell_word(arg: object) -> str:
    """`arg` as one shell word a person reads and can paste: shlex's quoting where that is
    enough (`'a b'`, `''`), and where the argument holds a newline, a tab or a character of
    CONTROL_CODES, bash's `$'...'` with each of those written as its escape (`$'web-02\\n'`,
    `$'\\u202e'`): one argument is always one line, and two different argvs never read alike."""
    import shlex

    text = "" if arg is None else (arg if isinstance(arg, str) else str(arg))
    if "\n" not in text and "\t" not in text and (text.isascii() and text.isprintable() or not CONTROL.search(text)):
        return shlex.quote(text)
    spelled = "".join(_WORD_ESCAPES.get(c) or (_escape(ord(c)) if ord(c) in CONTROL_CODES else c) for c in text)
    return f"$'{spelled}'"
