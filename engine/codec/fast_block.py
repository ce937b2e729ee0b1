"""The fast reader for a target written in block style, as PyYAML and people write it.

    db-00002:
      state: done
      checkpoint: 3/5D9DC9F8
      last_action: cutover done, app pointed at pg16 primary
      approvals:
      - by: alice
        hash: 8d116ece1738f7d9

Its lines are turned into one JSON text, read in the same `json.loads` as the
canonical one-line targets (engine.codec.fast). Only a plain subset is taken: keys
that are names (`[A-Za-z_][A-Za-z0-9_-]*`), one scalar per line (plain, single-quoted,
double-quoted without escapes, `[]`, `{}`), nested mappings and sequences of scalars
or mappings, nothing deeper than MAX_NESTING. Anything else (a comment, a `#` at all,
a value over two lines, a block scalar, a tab, trailing space, an anchor, a tag, a
number JSON spells differently) gives None: the strict loader reads that target, as
before, and says where it is wrong. The property tests check both readers agree on
what PyYAML writes and on what people write by hand.
"""

from __future__ import annotations

import json
import re

from engine.codec.emit import plain_ok
from engine.codec.strict import FLOAT, INT, NULL, TEXT_KEYS

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
# A number JSON reads with the value and spelling the strict loader gives it (`-0` keeps its sign there only).
_NUM = re.compile(r"(?!-0(?![.eE0-9]))-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?\Z")
# Every spelling strict.BOOL types (a plain word, not a quoted one).
_LITERAL = {"true": "true", "True": "true", "TRUE": "true", "false": "false", "False": "false", "FALSE": "false"}
MAX_NESTING = 8  # deeper than a ledger's targets go; the strict loader keeps the real limit


class _NotPlain(Exception):
    """The lines leave the subset: the strict loader reads them."""


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _scalar(text: str, key: str | None) -> str:
    """One scalar's JSON text."""
    first = text[0]
    if first == "'":
        inner = text[1:-1]
        if len(text) < 2 or text[-1] != "'" or "'" in inner.replace("''", ""):
            raise _NotPlain
        return json.dumps(inner.replace("''", "'"), ensure_ascii=False)
    if first == '"':
        if len(text) < 2 or text[-1] != '"' or '"' in text[1:-1] or "\\" in text:
            raise _NotPlain
        return text  # no escapes: the same string in JSON
    if text in ("[]", "{}"):
        return text
    literal = _LITERAL.get(text)
    if literal is not None:
        return literal
    if NULL.match(text):
        return "null"
    if INT.match(text) or FLOAT.match(text):
        if not _NUM.match(text):
            raise _NotPlain  # `+5`, `.5`, `5.`, `-0`: numbers JSON does not spell
        return json.dumps(text) if key in TEXT_KEYS else text  # a hash that looks like a number is text
    if not plain_ok(text, False):
        raise _NotPlain
    return json.dumps(text, ensure_ascii=False)


_ENTRIES: dict[str, tuple[str, str | None] | None] = {}  # `key: value` -> (key, value's JSON or None: on the next lines)


def _entry(entry: str) -> tuple[str, str | None]:
    """One `key: value` (or `key:`) line's key and value, worked out once per distinct line:
    a fleet's lines repeat (`state: done`, `by: alice`)."""
    if entry in _ENTRIES:
        found = _ENTRIES[entry]
    else:
        if len(_ENTRIES) > 100_000:
            _ENTRIES.clear()
        key, sep, rest = entry.partition(": ")
        found = None
        if sep or entry.endswith(":"):
            key = key if sep else entry[:-1]
            try:
                found = (key, _scalar(rest, key) if sep else None) if _KEY.match(key) else None
            except _NotPlain:
                pass
        _ENTRIES[entry] = found
    if found is None:
        raise _NotPlain
    return found


class _Lines:
    """The target's body lines; the first entry of a sequence item sits after its `- `."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.at = 0

    def peek(self) -> str | None:
        return self.lines[self.at] if self.at < len(self.lines) else None


def _value_after_key(src: _Lines, indent: int, depth: int) -> str:
    """What follows a `key:` that ends its line: a nested mapping or sequence, or null."""
    nxt = src.peek()
    if nxt is None:
        return "null"
    deeper = _indent(nxt)
    if deeper == indent and nxt[indent:].startswith("- "):
        return _sequence(src, indent, depth + 1)  # PyYAML's style: the items under their key, not indented
    if deeper > indent:
        if nxt[deeper:].startswith("- "):
            return _sequence(src, deeper, depth + 1)
        return _mapping(src, deeper, depth + 1)
    return "null"


def _mapping(src: _Lines, indent: int, depth: int, first: str | None = None) -> str:
    """The entries at `indent` (the first one may be given: it followed a `- `)."""
    if depth > MAX_NESTING:
        raise _NotPlain
    pairs: list[str] = []
    keys: set[str] = set()
    while True:
        if first is not None:
            entry, first = first, None
        else:
            line = src.peek()
            if line is None or _indent(line) != indent or line[indent:].startswith("- "):
                break
            entry = line[indent:]
            src.at += 1
        key, value = _entry(entry)
        if key in keys:
            raise _NotPlain  # a duplicate: the strict loader says where
        keys.add(key)
        if value is None:
            value = _value_after_key(src, indent, depth)
        else:
            nxt = src.peek()
            if nxt is not None and _indent(nxt) > indent:
                raise _NotPlain  # the value goes on over the next line
        pairs.append(f'"{key}":{value}')
    return "{" + ",".join(pairs) + "}"


def _sequence(src: _Lines, indent: int, depth: int) -> str:
    """The `- ` items at `indent`: scalars, or mappings whose first entry follows the dash."""
    if depth > MAX_NESTING:
        raise _NotPlain
    items: list[str] = []
    while True:
        line = src.peek()
        if line is None or _indent(line) != indent or not line[indent:].startswith("- "):
            break
        rest = line[indent + 2:]
        src.at += 1
        if rest[:1] in ("", " ", "-", "?", "#"):
            raise _NotPlain
        key, sep, _ = rest.partition(": ")
        if (sep or rest.endswith(":")) and _KEY.match(key if sep else rest[:-1]):
            items.append(_mapping(src, indent + 2, depth + 1, first=rest))
            continue
        items.append(_scalar(rest, None))
        nxt = src.peek()
        if nxt is not None and _indent(nxt) > indent:
            raise _NotPlain
    return "[" + ",".join(items) + "]"


def block_json(body: list[str]) -> str | None:
    """A target's body lines (all indented past its name, which ends its own line) as
    JSON text, or None when they leave the plain subset this reads."""
    if not body or "#" in "".join(body) or any("\t" in line or line.endswith(" ") for line in body):
        return None
    src = _Lines(body)
    try:
        indent = _indent(body[0])
        if body[0][indent:].startswith("- "):
            return None  # a target that is a list: the model refuses it, with the strict loader's line
        value = _mapping(src, indent, 1)
    except _NotPlain:
        return None
    return value if src.at == len(body) else None
