"""The one control-character helper: which characters never reach a terminal, in both spellings."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.codec.textsafe import CONTROL_CODES, one_line, visible

HIDDEN = {
    "\u200b": "zero-width space", "\u200c": "zero-width non-joiner", "\u200d": "zero-width joiner",
    "\u2060": "word joiner", "\ufeff": "zero-width no-break space", "\u2028": "line separator",
    "\u2029": "paragraph separator", "\u202e": "right-to-left override", "\u2066": "left-to-right isolate",
    "\u200f": "right-to-left mark", "\u061c": "arabic letter mark", "\x1b": "escape", "\x9b": "one-byte CSI",
    "\x7f": "delete", "\r": "carriage return",
}


@pytest.mark.parametrize("char", sorted(HIDDEN), ids=lambda c: HIDDEN[c])
def test_every_dangerous_character_is_made_visible_in_both_spellings(char: str) -> None:
    """Each one is replaced, in the CLI's spelling (\\x1b, \\u200b) and the TUI's (␛, <U+200B>)."""
    assert ord(char) in CONTROL_CODES
    escaped, pictured = visible(f"a{char}b"), visible(f"a{char}b", pictures=True)
    assert char not in escaped and char not in pictured
    code = ord(char)
    assert escaped == f"a\\x{code:02x}b" if code < 0x100 else escaped == f"a\\u{code:04x}b"
    if code < 0x20:
        assert pictured == f"a{chr(0x2400 + code)}b"
    elif code != 0x7F:
        assert pictured == f"a<U+{code:04X}>b"


def test_newline_tab_and_ordinary_text_pass_through() -> None:
    """Newline, tab, accents, CJK and emoji are text, not controls."""
    text = "Zürich\t数据库\n😀 [bold]x[/]"
    assert visible(text) == text and visible(text, pictures=True) == text


def test_one_line_folds_newlines_and_cuts() -> None:
    """One-line places show newlines as ⏎ and cut with an ellipsis."""
    assert one_line("a\r\nb\tc", pictures=True) == "a ⏎ b → c"
    assert one_line("x" * 10, 5) == "xxxx…"
    assert visible(None) == "" and one_line(None) == ""


@settings(max_examples=400, deadline=None)
@given(st.text(st.characters(max_codepoint=0x3000)) | st.text("ab \t\r\n\x1b\x7f~", max_size=12),
       st.none() | st.integers(0, 20), st.booleans())
def test_one_line_is_visible_with_newlines_and_tabs_folded(text: str, width: int | None, pictures: bool) -> None:
    """The printable-ASCII shortcut gives what the full path gives, for every text."""
    value = visible(text.replace("\r\n", "\n"), pictures=pictures).replace("\n", " ⏎ ").replace("\t", " → ")
    if width is not None and len(value) > width:
        value = value[: max(0, width - 1)] + "…"
    assert one_line(text, width, pictures=pictures) == value


def test_the_ranges_are_every_character_unicode_says_draws_nothing() -> None:
    """CONTROL_CODES is Cc (but newline and tab), Cf, Zl and Zp, and the rest of Unicode's
    Default_Ignorable_Code_Point (the combining grapheme joiner, the Hangul fillers, the Khmer
    inherent vowels, the Mongolian and other variation selectors, the reserved ranges): derived
    here from this Python's Unicode database, so a character a new Unicode adds to those
    categories fails this test until the written-out ranges take it."""
    import unicodedata

    derived = {code for code in range(0x110000) if unicodedata.category(chr(code)) in ("Cc", "Cf", "Zl", "Zp")}
    derived -= {0x09, 0x0A}
    ignorable = {0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0, 0x2065, *range(0x180B, 0x1810),
                 *range(0xFE00, 0xFE10), *range(0xFFF0, 0xFFF9), *range(0xE0000, 0xE1000)}
    missing = sorted((derived | ignorable) - CONTROL_CODES)
    assert missing == [], [f"U+{code:04X} {unicodedata.name(chr(code), '?')}" for code in missing]
    extra = sorted(CONTROL_CODES - derived - ignorable)
    assert extra == [], [f"U+{code:04X}" for code in extra]
    for code in (0x180B, 0x17B4, 0x206A, 0xFFF9, 0x1BCA0, 0x1D173, 0x13430, 0xE0041):  # what a review found drawn as nothing
        assert visible(f"cutover{chr(code)}") != f"cutover{chr(code)}"
