"""The canonical emitter: stable key order, the article's look, diff-minimal.

Scalars are written plain when they read back as the same string (for our loader and
for YAML 1.1 tools alike), otherwise as JSON-style double-quoted strings, which YAML
reads identically. A short target is one flow line, `db-17: {state: done, ...}`.
A number read with a spelling of its own (`1.30`, `1e3`) is written as it was read.
A text may be asked for in a style (plain, quoted, literal `|` or folded `>`): the
style a human gave the value it replaces; it is used when the text can be written so.
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from typing import Any

from engine.codec.numbers import spelling
from engine.codec.strict import is_plain_string

# Plain inside a flow mapping: a conservative word, so the fast reader can trust it.
FLOW_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.+/-]*\Z")
# Plain in block context: no indicator first, no ': ' or ' #', no edge spaces.
BLOCK_PLAIN = re.compile(r"[^\s\-?:,\[\]{}#&*!|>'\"%@`](?:[^\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff]*[^\s:])?\Z")
# Characters YAML would fold, strip or refuse inside a double-quoted scalar.
_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")
# Characters that never go out unquoted (YAML refuses raw C0/C1 controls; the BLOCK_PLAIN
# edges alone let one through when it is the first or last character).
_NOT_PLAIN = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")
FLOW_WIDTH = 160
WRAP = 88


@lru_cache(maxsize=65536)
def plain_ok(text: str, flow: bool) -> bool:
    """Can `text` be written without quotes here and read back as the same string?"""
    if flow:
        if not FLOW_PLAIN.match(text):
            return False
    elif _UNSAFE.search(text) or not BLOCK_PLAIN.match(text) or ": " in text or " #" in text or "\t" in text or _NOT_PLAIN.search(text):
        return False
    return is_plain_string(text)


_SURROGATES = re.compile("[\ud800-\udfff]")


def quote(text: str) -> str:
    """A JSON string literal, which is also a YAML double-quoted scalar with the same value."""
    if _SURROGATES.search(text):
        # Undecodable bytes (from a command-line argument, say) have no YAML spelling.
        raise ValueError(f"text {text[:40]!r} holds bytes that are not UTF-8; nothing was written")
    out = json.dumps(text, ensure_ascii=False)
    if _UNSAFE.search(out):
        out = _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", out)
    return out


def scalar(value: Any, flow: bool = True) -> str:
    """One scalar as YAML text."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    text = spelling(value)
    if text is not None:
        return text
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value):
            text = repr(value)
            return text if ("." in text or "e" in text) else text + ".0"
        return quote(repr(value))
    text = str(value)
    return text if plain_ok(text, flow) else quote(text)


def key(name: Any) -> str:
    """A mapping key: plain if it is a safe word, else quoted."""
    return scalar(name if isinstance(name, str) else str(name), flow=True)


def flow(value: Any) -> str:
    """Any value as one line of flow YAML."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{" + ", ".join(f"{key(k)}: {flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    return scalar(value, flow=True)


def _is_container(value: Any) -> bool:
    return isinstance(value, (dict, list, tuple)) and len(value) > 0


def _text_block(text: str, indent: str, literal: bool = False) -> list[str] | None:
    """A multi-line or long string as a `|` or `>` block (`|` always with `literal`),
    or None when quoting is safer."""
    if _UNSAFE.search(text) or "\r" in text or any(ord(c) < 32 and c not in "\n\t" for c in text):
        return None
    body = text.rstrip("\n")
    trailing = len(text) - len(body)
    chomp = {0: "-", 1: ""}.get(trailing)
    # YAML takes a block's indentation from its first line, so that line must be there
    # and must not start with white space (else leading spaces vanish or it will not parse).
    if chomp is None or not body or body[0] in " \t\n":
        return None
    lines = body.split("\n")
    if any(line != line.rstrip() for line in lines):
        return None
    if not literal and len(lines) == 1 and len(body) > WRAP and "  " not in body and "\t" not in body:
        # One long line: fold it at word boundaries, as the article's note is written.
        words, rows, row = body.split(" "), [], ""
        for word in words:
            if row and len(row) + 1 + len(word) > WRAP:
                rows.append(row)
                row = word
            else:
                row = f"{row} {word}" if row else word
        rows.append(row)
        return [">" + chomp] + [indent + r for r in rows]
    if len(lines) == 1 and not literal:
        return None
    return ["|" + chomp] + [(indent + line) if line else "" for line in lines]


def _folded(text: str, indent: str) -> list[str] | None:
    """`text` as a folded (`>`) block: each line wrapped at single spaces, one blank
    line for each line break. None when folding cannot say it exactly."""
    body = text.rstrip("\n")
    chomp = {0: "-", 1: ""}.get(len(text) - len(body))
    if chomp is None or not body or _UNSAFE.search(text) or any(ord(c) < 32 and c != "\n" for c in text):
        return None
    lines = body.split("\n")
    if not lines[0] or any(line != line.strip(" ") or line[:1] == "\t" for line in lines):
        return None
    rows: list[str] = []
    for number, line in enumerate(lines):
        if number:
            rows.append("")
        if not line:
            continue
        if "  " in line or len(line) <= WRAP:
            rows.append(indent + line)
            continue
        row = ""
        for word in line.split(" "):
            if row and len(row) + 1 + len(word) > WRAP:
                rows.append(indent + row)
                row = word
            else:
                row = f"{row} {word}" if row else word
        rows.append(indent + row)
    return [">" + chomp] + rows


def _styled(text: str, style: str | list[str] | None, indent: str) -> list[str] | None:
    """`text` in the style asked for (the first line is what follows `key: `), or None.
    A list is a block scalar's source lines (indicator first), to be indented to here."""
    if isinstance(style, list):
        return [style[0]] + [indent + line if line.strip() else "" for line in style[1:]]
    if style == "|":
        out = _text_block(text, indent, literal=True)
    elif style == ">":
        if "\n" in text.rstrip("\n"):
            # A text with lines of its own reads better as it is: folded would put a
            # blank line between every two of them.
            out = _text_block(text, indent, literal=True)
        else:
            out = _folded(text, indent)
    elif style == '"':
        out = [quote(text)] if not _SURROGATES.search(text) else None
    elif style == "'":
        ok = "\n" not in text and text == text.strip(" ") and not _NOT_PLAIN.search(text) and "\t" not in text
        out = ["'" + text.replace("'", "''") + "'"] if ok and text else None
    else:
        out = [text] if "\n" not in text and plain_ok(text, False) else None
    return out


def block(value: Any, indent: int = 0, styles: dict[str, Any] | None = None) -> list[str]:
    """A mapping or list in block style (used for everything but targets). `styles`:
    key -> the style its text should be written in, when it can be."""
    pad = " " * indent
    out: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            head = f"{pad}{key(k)}:"
            if styles and isinstance(v, str) and k in styles:
                text = _styled(v, styles[k], pad + "  ")
                if text is not None:
                    out.append(f"{head} {text[0]}")
                    out.extend(text[1:])
                    continue
            if isinstance(v, str) and ("\n" in v or len(v) > WRAP):
                text = _text_block(v, pad + "  ")
                if text is not None:
                    out.append(f"{head} {text[0]}")
                    out.extend(text[1:])
                    continue
            if isinstance(v, dict) and v:
                out.append(head)
                out.extend(block(v, indent + 2, styles))
            elif isinstance(v, (list, tuple)) and v:
                line = f"{head} {flow(v)}"
                if all(not _is_container(i) for i in v) and len(line) <= FLOW_WIDTH and k != "invariants":
                    out.append(line)
                else:
                    out.append(head)
                    out.extend(block(list(v), indent))
            else:
                out.append(f"{head} {scalar(v, flow=False) if not isinstance(v, (dict, list, tuple)) else flow(v)}")
        return out
    if isinstance(value, list):
        for item in value:
            if isinstance(item, dict) and item:
                inner = block(item, indent + 2)
                out.append(f"{pad}- {inner[0][indent + 2:]}")
                out.extend(inner[1:])
            elif isinstance(item, (list, tuple)) and item:
                out.append(f"{pad}- {flow(item)}")
            else:
                out.append(f"{pad}- {scalar(item, flow=False) if not isinstance(item, (dict, list, tuple)) else flow(item)}")
        return out
    return [pad + scalar(value, flow=False)]


def target_lines(name: str, data: dict, indent: int = 2, name_text: str | None = None) -> list[str]:
    """One target: a single flow line when short, else a flow mapping wrapped at its
    commas with continuation lines aligned under the first key, as the article writes db-18.
    `name_text`: the name as a human wrote it (kept when the target is rewritten)."""
    head = f"{' ' * indent}{name_text or key(name)}: {{"
    items = [f"{key(k)}: {flow(v)}" for k, v in data.items()]
    line = head + ", ".join(items) + "}"
    if len(line) <= FLOW_WIDTH:
        return [line]
    pad = " " * len(head)
    rows: list[str] = []
    row = head
    for i, item in enumerate(items):
        piece = item + ("}" if i == len(items) - 1 else ",")
        if row not in (head, pad) and len(row) + 1 + len(piece) > WRAP:
            rows.append(row)
            row = pad + piece
        else:
            row = row + (" " if row not in (head, pad) else "") + piece
    rows.append(row)
    return rows
