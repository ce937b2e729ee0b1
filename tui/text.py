"""Make ledger and journal text safe to show: data, never markup or escapes.

Everything a ledger, a journal or a command's output says reaches a widget
through `safe()` (or `one_line()`), which returns `rich.text.Text`, so nothing
is parsed as console markup, and every control character except newline and
tab is replaced by a visible stand-in (`\\x1b` -> `␛`). A target named
`[red]x` or a note holding `\\x1b]52;...` can then neither restyle the screen
nor send an escape sequence to the operator's terminal.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text


def _build_table() -> dict[int, str]:
    table: dict[int, str] = {}
    # C0 controls: U+2400 "Control Pictures" has one glyph per code, same order.
    for code in range(0x20):
        if code not in (0x09, 0x0A):
            table[code] = chr(0x2400 + code)
    table[0x7F] = "␡"
    # C1 controls (0x9b is a one-byte CSI on some terminals) have no pictures.
    for code in range(0x80, 0xA0):
        table[code] = f"<U+{code:04X}>"
    # Bidi overrides and isolates can make text read differently from what it is
    # ("Trojan Source"); zero-width characters hide text. Show them all.
    for code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200B, 0x200E, 0x200F, 0xFEFF):
        table[code] = f"<U+{code:04X}>"
    return table


_TABLE = _build_table()
_ONE_LINE = {**_TABLE, 0x0A: "⏎", 0x09: " "}


def clean(value: Any) -> str:
    """`value` as a str with every control character (but newline and tab) made visible."""
    if value is None:
        return ""
    return str(value).translate(_TABLE)


def clean_line(value: Any) -> str:
    """Like `clean`, for one-line places (table cells, titles): newline becomes `⏎`."""
    if value is None:
        return ""
    return str(value).translate(_ONE_LINE)


def safe(value: Any, style: str = "") -> Text:
    """Ledger text as a `Text`: never parsed as markup, control characters visible."""
    return Text(clean(value), style=style, end="")


def one_line(value: Any, style: str = "") -> Text:
    """Ledger text for a single line: as `safe`, with newlines shown as `⏎`."""
    return Text(clean_line(value), style=style, end="", no_wrap=True)
