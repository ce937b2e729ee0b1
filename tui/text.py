"""Ledger and journal text as widgets get it: data, never markup or escapes.

Which characters are dangerous is decided once, by the engine's helper
(`engine.api.visible`, the same one the CLI uses); this module only spells them
the TUI's way (one picture per control: `\\x1b` -> `␛`, `<U+202E>` for bidi and
zero-width characters) and wraps the result in `rich.text.Text`, so nothing is
parsed as console markup. A target named `[red]x` or a note holding
`\\x1b]52;...` can neither restyle the screen nor reach the terminal.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from engine.api import one_line as _one_line
from engine.api import shell_word, visible


def clean(value: Any) -> str:
    """`value` as a str with every control character (but newline and tab) made visible."""
    return visible(value, pictures=True)


def argument(value: Any) -> str:
    """One argument of a command as one shell word: quoted, and a newline or control inside it
    written as its escape (`$'web-02\\n'`), so it is one line and reads as what runs."""
    return shell_word(value)


def clean_line(value: Any) -> str:
    """Like `clean`, for one-line places (table cells, titles): newline becomes `⏎`, tab `→`."""
    return _one_line(value, pictures=True)


def safe(value: Any, style: str = "") -> Text:
    """Ledger text as a `Text`: never parsed as markup, control characters visible."""
    return Text(clean(value), style=style, end="")


def one_line(value: Any, style: str = "") -> Text:
    """Ledger text for a single line: as `safe`, with newlines shown as `⏎`."""
    return Text(clean_line(value), style=style, end="", no_wrap=True)
