"""The fast reader for the targets block the emitter writes.

A canonical target is one line, `  NAME: {key: value, ...}`, whose values are safe
plain words, numbers, true/false/null or JSON-style strings. Such a line is turned into
JSON by quoting its plain words (outside strings only; each distinct outside-string
segment is translated once and cached) and the whole block is read by one
`json.loads`. Anything else (hand-written layout, comments, multi-line flows, escapes
JSON does not share with YAML) falls back to the strict YAML loader for that target
only. The property tests check the two readers agree on everything the emitter writes.
"""

from __future__ import annotations

import json
import re

from engine.codec.emit import plain_ok

_TOKEN = re.compile(
    r"(?P<punct>[{}\[\],])|(?P<colon>: )|(?P<space> )"
    r"|(?P<num>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?(?![A-Za-z0-9_.+/-]))"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_.+/-]*)"
)
# Raw characters JSON takes as they are but YAML folds or refuses.
_YAML_SPECIAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")
_LITERALS = {"true": "true", "false": "false", "null": "null"}


def _translate(segment: str) -> str | None:
    """One outside-string segment as JSON text, or None if it is not canonical."""
    out = []
    pos = 0
    for m in _TOKEN.finditer(segment):
        if m.start() != pos:
            return None
        pos = m.end()
        kind = m.lastgroup
        text = m.group()
        if kind == "word":
            lit = _LITERALS.get(text)
            if lit is not None:
                out.append(lit)
            elif plain_ok(text, True):
                out.append('"' + text + '"')
            else:
                return None
        else:
            out.append(text)
    if pos != len(segment):
        return None
    return "".join(out)


def _no_dup_pairs(pairs):
    result = dict(pairs)
    if len(result) != len(pairs):
        raise ValueError("duplicate key")
    return result


class FastReader:
    """Reads canonical target lines; keeps a cache of translated segments."""

    def __init__(self) -> None:
        self._segments: dict[str, str | None] = {}

    def value_json(self, rest: str) -> str | None:
        """`{...}` flow text as JSON text, or None when it needs the YAML loader."""
        if not rest.startswith("{") or not rest.endswith("}") or '\\"' in rest:
            return None
        parts = rest.split('"')
        if len(parts) % 2 == 0:
            return None
        cache = self._segments
        for i in range(0, len(parts), 2):
            seg = parts[i]
            out = cache.get(seg, False)
            if out is False:
                out = cache[seg] = _translate(seg)
            if out is None:
                return None
            parts[i] = out
        return '"'.join(parts)

    def read_lines(self, lines: list[str]) -> tuple[dict[str, dict], dict[str, str], list[int]]:
        """Parse canonical lines of a targets block.

        Returns (targets, line text per target, indexes of lines that need YAML).
        Names are in file order; a duplicate name is left for the YAML loader to report.
        """
        names: list[str] = []
        values: list[str] = []
        texts: list[str] = []
        where: list[int] = []
        slow: list[int] = []
        for index, line in enumerate(lines):
            if not line.startswith("  ") or line[2:3] in (" ", "#", ""):
                slow.append(index)
                continue
            if line[2] == '"':
                try:
                    name, end = json.JSONDecoder().raw_decode(line, 2)
                except ValueError:
                    slow.append(index)
                    continue
                if not isinstance(name, str) or line[end : end + 2] != ": ":
                    slow.append(index)
                    continue
                rest = line[end + 2 :]
            else:
                name, sep, rest = line[2:].partition(": ")
                if not sep or not plain_ok(name, True):
                    slow.append(index)
                    continue
            value = self.value_json(rest)
            if value is None or _YAML_SPECIAL.search(line):
                slow.append(index)
                continue
            names.append(name)
            values.append(value)
            texts.append(line)
            where.append(index)
        if not names:
            return {}, {}, slow
        try:
            parsed = json.loads("[" + ",".join(values) + "]", object_pairs_hook=_no_dup_pairs)
        except ValueError:
            parsed = None
        if parsed is None:
            # One bad line spoils the batch: find it line by line.
            return self._one_by_one(lines, names, values, texts, where, slow)
        targets: dict[str, dict] = {}
        line_text: dict[str, str] = {}
        for name, value, text in zip(names, parsed, texts):
            if name in targets:
                return {}, {}, list(range(len(lines)))
            targets[name] = value
            line_text[name] = text
        return targets, line_text, slow

    def _one_by_one(self, lines, names, values, texts, where, slow):
        targets: dict[str, dict] = {}
        line_text: dict[str, str] = {}
        for name, value, text, index in zip(names, values, texts, where):
            try:
                parsed = json.loads(value, object_pairs_hook=_no_dup_pairs)
            except ValueError:
                parsed = None
            if parsed is None or name in targets:
                if name in targets:
                    return {}, {}, list(range(len(lines)))
                slow.append(index)
                continue
            targets[name] = parsed
            line_text[name] = text
        slow.sort()
        return targets, line_text, slow
