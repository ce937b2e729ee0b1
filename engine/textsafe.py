"""Ledger text is data: make every control character visible before it reaches a terminal.

Newline and tab stay (callers that need one line fold them); every other C0/C1 control,
DEL, and the Unicode line/paragraph separators and bidi overrides are shown as `\\xNN`
or `\\uNNNN`, so a target name or note can never move the cursor, change colours, set
the window title or hide text from the operator.
"""

from __future__ import annotations

import re

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200e\u200f\ufeff]")


def _show(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: object) -> str:
    """`text` with control characters (but newline and tab) made visible."""
    value = text if isinstance(text, str) else str(text)
    return _CONTROL.sub(_show, value)

