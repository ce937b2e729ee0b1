"""The fast reader for the targets block the emitter writes (and, through
engine.codec.fast_block, the block style PyYAML and people write).

A canonical target is one line, `  NAME: {key: value, ...}`, whose values are safe
plain words, numbers, true/false/null or JSON-style strings. Such a line is turned into
JSON by quoting its plain words (outside strings only; each distinct outside-string
segment is translated once and cached) and the whole block is read by one
`json.loads`. A comment after the closing brace is left out of the JSON; blank and
comment-only lines between targets are skipped. Anything else (hand-written layout,
comments inside a flow mapping, escapes JSON does not share with YAML) falls back to
the strict YAML loader for that target only. The property tests check the two readers
agree, comments included. Floats keep their spelling as the strict loader's do.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate, repeat
from operator import itemgetter

from engine.codec.emit import plain_ok
from engine.codec.fast_block import block_json
from engine.codec.numbers import make_float
from engine.codec.strict import MAX_DEPTH, TEXT_KEYS

# `-0` alone is left to the loader: JSON reads it as 0 and would lose its spelling.
_NUMBER = r"(?!-0(?![.eE0-9]))-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?(?![A-Za-z0-9_.+/-])"
_PLAIN_WORD = r"[A-Za-z_][A-Za-z0-9_.+/-]*"
_TOKEN = re.compile(rf"(?P<punct>[{{}}\[\],])|(?P<colon>: )|(?P<space> )|(?P<num>{_NUMBER})|(?P<word>{_PLAIN_WORD})")
# Raw characters JSON takes as they are but YAML folds or refuses.
_YAML_SPECIAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")
_LITERALS = {"true": "true", "false": "false", "null": "null"}
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
# Where a target starts in a targets block: a line indented by exactly two spaces.
_TARGET_START = re.compile(r"\n(?=  [^ ])")
# A comment after a flow mapping's closing brace (no quote in it: see `_uncomment`).
_TRAILING_COMMENT = re.compile(r"\}[ \t]+#[^\"]*\Z")
# A target's own braces sit at depth 3 of the document (root, targets, target), so
# this many levels of brackets in its line reach the strict loader's MAX_DEPTH.
_DEPTH_ROOM = MAX_DEPTH - 2
# The reader lives as long as its process (a TUI watches a ledger for days, and each
# change brings new checkpoints and numbers): a cache this big starts again empty.
CACHE_LIMIT = 1 << 17


# A word or a number is a run of these characters, and every such run is one of them:
# a number's last character may not be followed by one (see `_TOKEN`), a word takes them
# all. So a segment is its runs and what lies between them (its shape).
_RUN = re.compile(r"([A-Za-z0-9_.+/-]+)")  # captured: `split` keeps the runs
_SHAPE = re.compile(r"(?:[{}\[\],]| |: |\x00)*")
_NUM = re.compile(_NUMBER)
_WORD = re.compile(_PLAIN_WORD)


def _run_json(run: str) -> str | None:
    """One word or number as JSON text (outside a text key's value), or None."""
    if _WORD.fullmatch(run):
        lit = _LITERALS.get(run)
        if lit is not None:
            return lit
        return '"' + run + '"' if plain_ok(run, True) else None
    return run if _NUM.fullmatch(run) else None


class _Segments:
    """`_translate` at C speed for the common segment: split at its runs, the text
    between them (its shape) and each distinct run are judged once; a segment with a
    text key in it, or a NUL (the shape's separator), takes `_translate` itself."""

    def __init__(self) -> None:
        self._shapes: dict[str, bool] = {}
        self._runs: dict[str, str] = {}  # canonical runs only: another ends its segment's reading

    def translate(self, segment: str) -> str | None:
        if "\x00" in segment:
            return _translate(segment)
        parts = _RUN.split(segment)  # between, run, between, ..., between
        shape = "\x00".join(parts[0::2])
        ok = self._shapes.get(shape)
        if ok is None:
            ok = self._shapes[shape] = _SHAPE.fullmatch(shape) is not None
        if not ok:
            return None
        runs = parts[1::2]
        if not TEXT_KEYS.isdisjoint(runs):
            return _translate(segment)
        tokens = list(map(self._runs.get, runs))
        if None in tokens:
            if len(self._runs) > CACHE_LIMIT or len(self._shapes) > CACHE_LIMIT:
                self._runs.clear()
                self._shapes.clear()
            for i, run in enumerate(runs):
                if tokens[i] is None:
                    token = _run_json(run)
                    if token is None:
                        return None
                    tokens[i] = self._runs[run] = token
        parts[1::2] = tokens
        return "".join(parts)


def _translate(segment: str) -> str | None:
    """One outside-string segment as JSON text, or None if it is not canonical."""
    out: list[str] = []
    pos = 0
    key = None  # the word before `: `, when the token now is its value
    for m in _TOKEN.finditer(segment):
        if m.start() != pos:
            return None
        pos = m.end()
        kind = m.lastgroup
        text = m.group()
        text_value, key = key in TEXT_KEYS, (out[-1][1:-1] if kind == "colon" and out and out[-1][:1] == '"' else None)
        if kind == "num" and text_value:
            out.append('"' + text + '"')  # a hash or token that looks like a number is text (see TEXT_KEYS)
        elif kind == "word":
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


def _depth(segments: list[str]) -> int:
    """How deeply brackets nest, counting only outside strings."""
    depth = deepest = 0
    for seg in segments:
        for ch in seg:
            if ch in "{[":
                depth += 1
                deepest = max(deepest, depth)
            elif ch in "}]":
                depth -= 1
    return deepest


def neutral(line: str) -> bool:
    """A blank or comment-only line: no data, neither a target nor part of one."""
    stripped = line.lstrip(" \t")
    return not stripped or stripped[0] == "#"


def _uncomment(line: str) -> str:
    """The line without a comment after its closing brace. The brace must be outside
    double-quoted strings (an even number of quotes before it); single quotes never
    reach JSON, so a line holding one goes to the loader whatever this returns."""
    m = _TRAILING_COMMENT.search(line)
    if m is None or line.count('"', 0, m.start()) % 2:
        return line
    return line[: m.start() + 1]


def _loads(text: str):
    return json.loads(text, object_pairs_hook=_no_dup_pairs, parse_float=make_float)


def _no_dup_pairs(pairs):
    result = dict(pairs)
    if len(result) != len(pairs):
        raise ValueError("duplicate key")
    return result


class FastReader:
    """Reads canonical target lines; keeps a cache of translated segments."""

    def __init__(self) -> None:
        self._segments: dict[str, str | None] = {}
        self.by_shape = _Segments()

    def value_json(self, rest: str) -> str | None:
        """`{...}` flow text as JSON text, or None when it needs the YAML loader."""
        if not rest.startswith("{") or not rest.endswith("}") or '\\"' in rest:
            return None
        if _SURROGATE.search(rest):
            return None  # JSON pairs surrogate escapes, YAML refuses them: the loader says so
        parts = rest.split('"')
        if len(parts) % 2 == 0:
            return None
        if rest.count("{") + rest.count("[") > _DEPTH_ROOM and _depth(parts[0::2]) > _DEPTH_ROOM:
            return None  # the strict loader refuses it with its line and column
        cache = self._segments
        if len(cache) > CACHE_LIMIT:
            cache.clear()
        for i in range(0, len(parts), 2):
            seg = parts[i]
            out = cache.get(seg, False)
            if out is False:
                out = cache[seg] = self.by_shape.translate(seg)
            if not isinstance(out, str):  # None: not canonical
                return None
            parts[i] = out
        return '"'.join(parts)

    def read_lines(self, lines: list[str], known: dict[str, tuple[str, dict]] | None = None) -> tuple[dict[str, dict], dict[str, str], list[int], dict[str, tuple[int, int]]]:
        """Parse canonical lines of a targets block.

        Returns (targets, line text per target, indexes of lines that need YAML, first
        and last line index per target). Blank and comment-only lines between targets
        are in none of them. Names are in file order; a duplicate name is left for the
        YAML loader to report. `known` maps a target's text, as read last time, to its
        (name, data): a reader re-reading a big ledger after a small change only parses
        the changed targets.
        """
        names: list[str] = []
        values: list = []
        texts: list[str] = []
        where: list[tuple[int, int]] = []
        slow: list[int] = []
        if known:
            # Split at each line that starts a target (C speed); a piece whose text was
            # read last time is taken as it was, any other piece is scanned line by line.
            pieces = _TARGET_START.split("\n".join(lines))
            hits = list(map(known.get, pieces))
            if None not in hits:
                whole = _all_known(pieces, hits)
                if whole is not None:
                    return whole
            offset = 0
            for piece in pieces:
                count = piece.count("\n") + 1
                hit = known.get(piece)
                if hit is not None:
                    names.append(hit[0])
                    values.append(hit[1])
                    texts.append(piece)
                    where.append((offset, offset + count - 1))
                else:
                    self._scan(piece.split("\n"), offset, names, values, texts, where, slow)
                offset += count
        else:
            self._scan(lines, 0, names, values, texts, where, slow)
        if not names:
            return {}, {}, slow, {}
        todo = [i for i, v in enumerate(values) if isinstance(v, str)]
        try:
            fresh = _loads("[" + ",".join(values[i] for i in todo) + "]")
        except ValueError:
            fresh = None
        if fresh is None:
            # One bad line spoils the batch: find it line by line.
            return self._one_by_one(lines, names, values, texts, where, slow)
        parsed = values
        for i, value in zip(todo, fresh, strict=False):
            parsed[i] = value
        targets: dict[str, dict] = {}
        line_text: dict[str, str] = {}
        spans: dict[str, tuple[int, int]] = {}
        for name, value, text, span in zip(names, parsed, texts, where, strict=False):
            if name in targets:
                return {}, {}, _all_but_neutral(lines), {}
            targets[name] = value
            line_text[name] = text
            spans[name] = span
        return targets, line_text, slow, spans

    def _scan(self, lines, offset, names, values, texts, where, slow) -> None:
        """The line-by-line reading of `lines` (the block's lines from `offset`)."""
        index = -1
        total = len(lines)
        while index + 1 < total:
            index += 1
            line = lines[index]
            if not line.startswith("  ") or line[2:3] in (" ", "#", ""):
                if not neutral(line):
                    slow.append(offset + index)
                continue
            first = index
            if line.endswith(":") and ": " not in line and index + 1 < total and lines[index + 1].startswith("   "):
                index = self._block(lines, index, offset, names, values, texts, where, slow)
                continue
            if index + 1 < total and lines[index + 1].startswith("   "):
                # The emitter wraps a long target at its commas, continuation lines
                # indented deeper: join them back into the one-line form. A break
                # right after a comma is the same as one space in a flow mapping.
                while index + 1 < total and lines[index + 1].startswith("   "):
                    index += 1
                group = lines[first : index + 1]
                if not all(g.endswith(",") for g in group[:-1]) or any(g.lstrip()[:1] in ("#", "") for g in group[1:]):
                    slow.extend(range(offset + first, offset + index + 1))
                    continue
                text = "\n".join(group)
                line = group[0] + " " + " ".join(g.lstrip() for g in group[1:])
            else:
                text = line
            if "#" in line:
                line = _uncomment(line)
            if line[2] == '"':
                try:
                    name, end = json.JSONDecoder().raw_decode(line, 2)
                except ValueError:
                    slow.extend(range(offset + first, offset + index + 1))
                    continue
                if not isinstance(name, str) or line[end : end + 2] != ": ":
                    slow.extend(range(offset + first, offset + index + 1))
                    continue
                rest = line[end + 2 :]
            else:
                name, sep, rest = line[2:].partition(": ")
                if not sep or not plain_ok(name, True):
                    slow.extend(range(offset + first, offset + index + 1))
                    continue
            value = self.value_json(rest)
            if value is None or _YAML_SPECIAL.search(line):
                slow.extend(range(offset + first, offset + index + 1))
                continue
            names.append(name)
            values.append(value)
            texts.append(text)
            where.append((offset + first, offset + index))

    @staticmethod
    def _block(lines, index, offset, names, values, texts, where, slow) -> int:
        """A target in block style (`  NAME:`, its entries on the lines below, as PyYAML
        writes it): read by engine.codec.fast_block, or its lines left for the loader.
        Returns the index of its last line."""
        first, total = index, len(lines)
        while index + 1 < total and lines[index + 1].startswith("   "):
            index += 1
        after = index + 1
        while after < total and neutral(lines[after]) and not lines[after].startswith("   "):
            after += 1
        name = lines[first][2:-1]
        text = "\n".join(lines[first : index + 1])
        value = None
        # A deeper line after a blank one is still this target's: the loader reads it all.
        if not (after < total and lines[after].startswith("   ")) and plain_ok(name, True) and not _YAML_SPECIAL.search(text):
            value = block_json(lines[first + 1 : index + 1])
        if value is None:
            slow.extend(range(offset + first, offset + index + 1))
            return index
        names.append(name)
        values.append(value)
        texts.append(text)
        where.append((offset + first, offset + index))
        return index

    def _one_by_one(self, lines, names, values, texts, where, slow):
        targets: dict[str, dict] = {}
        line_text: dict[str, str] = {}
        spans: dict[str, tuple[int, int]] = {}
        for name, value, text, (first, last) in zip(names, values, texts, where, strict=False):
            if isinstance(value, str):
                try:
                    parsed = _loads(value)
                except ValueError:
                    parsed = None
            else:
                parsed = value  # known from the last read
            if parsed is None or name in targets:
                if name in targets:
                    return {}, {}, _all_but_neutral(lines), {}
                slow.extend(range(first, last + 1))
                continue
            targets[name] = parsed
            line_text[name] = text
            spans[name] = (first, last)
        slow.sort()
        return targets, line_text, slow, spans


_first, _second = itemgetter(0), itemgetter(1)


def _all_known(pieces: list[str], hits: list):
    """`read_lines` when every piece is a target read last time (a re-read of a ledger
    nobody changed since): the same four results, built at C speed (map, zip, accumulate)
    instead of a loop of appends per target; None when a name comes twice (the loop says how)."""
    names = list(map(_first, hits))
    targets = dict(zip(names, map(_second, hits), strict=True))
    if len(targets) != len(names):
        return None
    ends = list(accumulate(map((1).__add__, map(str.count, pieces, repeat("\n")))))  # each piece's end, exclusive
    spans = dict(zip(names, zip([0, *ends[:-1]], map((-1).__add__, ends), strict=True), strict=True))
    return targets, dict(zip(names, pieces, strict=True)), [], spans


def _all_but_neutral(lines: list[str]) -> list[int]:
    """Every line with data: a duplicate name sends the whole block to the loader."""
    return [i for i, line in enumerate(lines) if not neutral(line)]
