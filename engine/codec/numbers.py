"""Numbers that remember how they were written.

`checkpoint: 1.30` is a float to YAML, but a person wrote the characters `1.30`; a
checkpoint, a target name or a note is text, so the model must read "1.30", never
"1.3". The loaders give every number whose spelling differs from Python's own (`1.30`,
`1e3`, `+5`, `-0`) as a `float`/`int` subclass carrying its source text: arithmetic and
equality are the number's, `str()` is the source text (pydantic's number-to-string
coercion uses it), and the emitter writes that text back. A number written the way
Python would write it stays a plain `int`/`float`.

`same` is equality that also tells `1` from `True` from `1.0` and `1.30` from `1.3`:
what decides whether a value may keep its text or must be written anew.
"""

from __future__ import annotations

from typing import Any


class SrcFloat(float):
    """A float read from text Python would spell differently."""

    __slots__ = ("text",)
    text: str

    def __new__(cls, text: str) -> SrcFloat:
        value = super().__new__(cls, text)
        value.text = text
        return value

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__

    def __reduce__(self):
        return (SrcFloat, (self.text,))


class SrcInt(int):
    """An int read from text Python would spell differently (`+5`, `-0`)."""

    text: str

    def __new__(cls, text: str) -> SrcInt:
        value = super().__new__(cls, text)
        value.text = text
        return value

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__

    def __reduce__(self):
        return (SrcInt, (self.text,))


def make_float(text: str) -> float:
    """The float `text` spells, remembering the spelling when Python's differs. A number
    too big to be finite (`1e999`) is refused (ValueError): an infinite budget or
    timeout is no limit, and nothing in a ledger means infinity."""
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is too big to be a number (it would be infinite)")
    return value if repr(value) == text else SrcFloat(text)


def make_int(text: str) -> int:
    """The int `text` spells, remembering the spelling when Python's differs."""
    value = int(text)
    return value if str(value) == text else SrcInt(text)


def spelling(value: Any) -> str | None:
    """The source text of a number that has one, else None."""
    return value.text if isinstance(value, (SrcFloat, SrcInt)) else None


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same kind all the way down (1, 1.0, True and `1.30`/`1.3` differ)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        if len(a) != len(b) or list(a) != list(b):
            return False
        return all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=False))
    if isinstance(a, (SrcFloat, SrcInt)):
        return a.text == b.text
    if isinstance(a, float) and a != a:
        return b != b  # NaN equals itself here: it is the same value written twice
    return a == b


_PLAIN = frozenset({str, int, float, bool, type(None)})  # leaves that are never a spelled number (exact types)


def holds(value: Any) -> bool:
    """Does `value` hold a number with a spelling anywhere? (A write asks it of every target
    of the file once: plain leaves are passed over without a call each.)"""
    if isinstance(value, dict):
        items: Any = value.values()
    elif isinstance(value, list):
        items = value
    else:
        return isinstance(value, (SrcFloat, SrcInt))
    for item in items:
        if type(item) not in _PLAIN and holds(item):
            return True
    return False
