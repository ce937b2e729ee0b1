"""A whole ledger document: split it into blocks, read each part the fastest safe way.

Reading: the `targets:` block is read by the fast reader, target by target, with the
strict YAML loader for any target that is not in canonical one-line form; the rest of
the document (short) is read by the strict loader with the targets block blanked out,
so every line number stays true. The text is kept as blocks (see `engine.codec.layout`):
every top-level entry, every target, and the gaps between them, byte for byte, so a
write can replace only what changed (`engine.codec.splice`).
A new document (no text to keep) is written by `engine.codec.canonical`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from engine.codec import layout, numbers, strict
from engine.codec.fast import FastReader, neutral
from engine.codec.layout import GAP, TARGET, TOP
from engine.errors import LedgerInvalid

_TARGETS_HEAD = re.compile(r"targets:[ \t]*(?:#.*)?\r?$")
# The line breaks libyaml counts that `str.split("\n")` does not: looked for with `in` (a
# regex class scans a 1.6 MB ledger in 8 ms, `in` in microseconds; an ASCII text has none).
_OTHER_BREAKS = ("\x85", "\u2028", "\u2029")


def _other_breaks(text: str) -> bool:
    return not text.isascii() and any(mark in text for mark in _OTHER_BREAKS)


_reader = FastReader()


@dataclass
class Parsed:
    """What a document holds (its data) and how it is written (its blocks).

    `blocks`: [kind, key, text] in file order, kind one of layout.GAP/TOP/TARGET; the
    document is their texts joined by newlines. `split`: every target is a block of its
    own (else the whole `targets:` entry is one). `opaque`: the text cannot be split at
    all (a flow mapping at the top), so a write re-emits all of it. `numbered`: targets
    whose data hold a number with a spelling of its own (see `engine.codec.numbers`)."""

    data: Any
    blocks: list[list] = field(default_factory=list)
    split: bool = False
    opaque: bool = False
    indent: int = 2
    crlf: bool = False
    _numbered: set[str] | None = field(default=None, repr=False, compare=False)
    _lines: dict[str, str] | None = field(default=None, repr=False, compare=False)
    _where: dict[str, int] | None = field(default=None, repr=False, compare=False)

    @property
    def numbered(self) -> set[str]:
        """Targets whose data hold a number with a spelling (worked out once, when a
        write needs it: a reader never pays for it)."""
        if self._numbered is None:
            targets = self.data.get("targets") if isinstance(self.data, dict) else None
            self._numbered = {n for n, v in targets.items() if numbers.holds(v)} if isinstance(targets, dict) else set()
        return self._numbered

    @property
    def text(self) -> str:
        return "\n".join([block[2] for block in self.blocks])  # a list: join makes one anyway, faster than from a generator

    @property
    def lines(self) -> dict[str, str]:
        """Target name -> its text, for every target that is a block of its own."""
        if self._lines is None:
            self._lines = {b[1]: b[2] for b in self.blocks if b[0] == TARGET}
        return self._lines

    @property
    def where(self) -> dict[str, int]:
        """Target name -> the index of its block (never changed once made: a write that
        moves blocks makes a new document without it)."""
        if self._where is None:
            self._where = {b[1]: i for i, b in enumerate(self.blocks) if b[0] == TARGET}
        return self._where

    @property
    def header(self) -> str:
        """The comment lines that open the document (kept by a canonical rewrite)."""
        return _header(self.blocks[0][2].split("\n")) if self.blocks and self.blocks[0][0] == GAP else ""




def _header(lines: list[str]) -> str:
    out = []
    for line in lines:
        if line.startswith("#") or not line.strip():
            out.append(line)
        else:
            break
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out) + ("\n" if out else "")


def _chunks(lines: list[str], slow: list[int]) -> list[tuple[int, int]]:
    """Group the slow lines into (first, last) ranges: neighbours, and lines with only
    comments or blank lines between them, are one range (one loader call, and a
    target written over several lines with a comment inside stays whole). A comment
    indented with a tab is never taken into a range: YAML refuses a tab there, and the
    same line between fast targets is read as a comment, so between slow ones (a CRLF
    file's, say) it must be too."""
    ranges: list[tuple[int, int]] = []
    for index in slow:
        if ranges and all(neutral(lines[i]) and lines[i][:1] != "\t" for i in range(ranges[-1][1] + 1, index)):
            ranges[-1] = (ranges[-1][0], index)
        else:
            ranges.append((index, index))
    return ranges


def parse_document(text: str, path: str, known: dict[str, tuple[str, dict]] | None = None) -> Parsed:
    """Read a ledger's text. Raises LedgerInvalid with file:line:col.

    `known`: target text -> (name, data) from the last read of this ledger; those
    targets are not parsed again."""
    lines = text.split("\n")
    crlf = lines[0].endswith("\r")
    if _other_breaks(text):
        # libyaml counts U+2028, U+2029 and NEL as line breaks (YAML 1.1), so its marks
        # name lines this split does not have: read it whole, and write it whole.
        return Parsed(strict.load(text, path), [[GAP, None, text]], opaque=True, crlf=crlf)
    start = next((i for i, line in enumerate(lines) if _TARGETS_HEAD.match(line)), None)
    if start is None:
        root = strict.compose(text, path)
        return _assemble(lines, root, strict.construct(root, path), None, crlf)
    end = start + 1
    while end < len(lines) and (not lines[end] or lines[end][0] in " #\t" or lines[end] == "\r"):  # "\r": a CRLF blank line
        end += 1
    block = lines[start + 1 : end]
    targets, texts, slow, spans = _reader.read_lines(block, known)
    entries: list[tuple[int, int, str, Any, str | None]] = [
        (first, last, name, targets[name], texts[name]) for name, (first, last) in spans.items()]
    if slow:
        try:
            entries.extend(_slow_targets(block, start + 1, slow, path, end == len(lines)))
        except LedgerInvalid as piece_error:
            # A piece that does not parse alone may be one cut wrongly (a quoted value's
            # next line that starts with `#` looks like a comment): the whole file says.
            try:
                root = strict.compose(text, path)
            except LedgerInvalid:
                raise piece_error from None  # the file is wrong there: the piece's error names the place
            return Parsed(strict.construct(root, path), [[GAP, None, text]], opaque=True, crlf=crlf)
        entries.sort(key=lambda entry: entry[0])  # stable: a chunk's targets keep their order
        merged: dict[str, Any] = {}
        for _, _, name, value, _ in entries:
            if name in merged:
                strict.load(text, path)
                raise _duplicate(name, path, start, block)
            merged[name] = value
        targets = merged
    rest = "\n".join(lines[: start + 1] + [""] * (end - start - 1) + lines[end:])
    root = strict.compose(rest, path)
    data = strict.construct(root, path)
    if not isinstance(data, dict):
        raise LedgerInvalid("the ledger must be a mapping of keys (task:, targets:, ...)", path=path, line=1, column=1)
    data["targets"] = targets
    return _assemble(lines, root, data, (start, entries), crlf)


def _duplicate(name: str, path: str, start: int, block: list[str]) -> LedgerInvalid:
    """The error for a target name met twice (`1` and `"1"` are one name), at its second line."""
    seen = 0
    line = None
    for index, text in enumerate(block):
        if text.startswith("  ") and text[2:3] not in (" ", "#", "") and text[2:].split(":", 1)[0].strip().strip("'\"") == name:
            seen += 1
            if seen == 2:
                line = start + 2 + index
                break
    return LedgerInvalid(f"duplicate target {name!r} (names are text: 1 and \"1\" are the same); remove or rename one",
                         path=path, line=line, column=3 if line else None)


def _slow_targets(block, offset, slow, path, ends_file: bool) -> list[tuple[int, int, str, Any, None]]:
    """Read the non-canonical targets with the strict loader: (first, last line in the
    block, name, data, None) each. `ends_file`: the block's last line is the file's last,
    with no line break after it."""
    found: list[tuple[int, int, str, Any, None]] = []
    for first, last in _chunks(block, slow):
        # A piece ends as it does in the file: with its last line's break, and the blank lines
        # after it. A block scalar there keeps them as the whole file's reading does (`|`
        # its last break, `|+` the blank lines too).
        end = last + 1
        while end < len(block) and block[end] in ("", "\r"):
            end += 1
        tail = "" if ends_file and end == len(block) else "\n"
        text = "\n".join(block[first:end]) + tail
        # The chunk's root (NAME: target) stands for the `targets:` mapping, one level down.
        node = strict.compose(text, path, line_offset=offset + first, depth_offset=1)
        value = strict.construct(node, path, line_offset=offset + first)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise LedgerInvalid(
                "each target must be `NAME: {state: ...}` indented under targets:",
                path=path,
                line=offset + first + 1,
                column=1,
            )
        spans = layout.entry_spans(node, text.split("\n"), 0, None)
        if spans is None or len(spans) != len(value):
            # Not one target per line range: no span for any of them (the entry is
            # rewritten whole if one changes).
            found.extend((first, last, str(name), target, None) for name, target in value.items())
            continue
        for (a, b, name), target in zip(spans, value.values(), strict=False):
            found.append((first + a, first + b, str(name), target, None))
    return found


def _assemble(lines: list[str], root, data: Any, region, crlf: bool) -> Parsed:
    """Cut the text into blocks: gaps, top-level entries and (with `region`: the targets
    head's line, and (first, last, name, data, text or None) per target, lines counted
    from the head's next) targets."""
    spans = layout.entry_spans(root, lines)
    if spans is None or not isinstance(data, dict):
        return Parsed(data, [[GAP, None, "\n".join(lines)]], opaque=True, crlf=crlf)
    split = False
    if region is not None:
        head, entries = region
        split = _entries_fit(entries, data.get("targets"), lines, head + 1)
    blocks: list[list] = []
    at = 0

    def cut(first: int, last: int, kind: str, key: str | None, text: str | None = None) -> bool:
        nonlocal at
        if first < at:
            return False
        if first > at:
            blocks.append([GAP, None, "\n".join(lines[at:first])])
        blocks.append([kind, key, "\n".join(lines[first : last + 1]) if text is None else text])
        at = last + 1
        return True

    for first, last, key in spans:
        if key == "targets" and region is not None:
            if split:
                cut(first, first, TOP, key)
                at = _cut_targets(blocks, lines, at, head + 1, entries)
                continue
            # The targets entry as one block: up to its last target's last line.
            last = max([head] + [head + 1 + e[1] for e in entries])
        if not cut(first, last, TOP, key):
            return Parsed(data, [[GAP, None, "\n".join(lines)]], opaque=True, crlf=crlf)
    if at < len(lines):
        blocks.append([GAP, None, "\n".join(lines[at:])])
    indent = 2
    if split and entries:
        line = lines[head + 1 + entries[0][0]]
        indent = len(line) - len(line.lstrip(" "))
    return Parsed(data, blocks, split=split, indent=indent, crlf=crlf)


def _cut_targets(blocks: list[list], lines: list[str], at: int, offset: int, entries: list) -> int:
    """`cut` of each target's lines (`entries`, lines counted from `offset`), in a loop of its
    own (10,000 calls of `cut` were a third of a re-read's `_assemble`); returns where it ended."""
    for a, b, name, _, text in entries:
        first = offset + a
        if first < at:
            continue
        if first > at:
            blocks.append([GAP, None, "\n".join(lines[at:first])])
        at = offset + b + 1
        blocks.append([TARGET, name, "\n".join(lines[first:at]) if text is None else text])
    return at


def _entries_fit(entries: list, targets: Any, lines: list[str], offset: int) -> bool:
    """Is every target one span of lines, in order, all at one indentation, none
    overlapping? (The fast reader's are at two spaces by construction.)"""
    if not isinstance(targets, dict) or len(entries) != len(targets):
        return False
    if any(e[2] != name for e, name in zip(entries, targets, strict=False)):
        return False
    columns = {2 if e[4] is not None else len(lines[offset + e[0]]) - len(lines[offset + e[0]].lstrip(" ")) for e in entries}
    if len(columns) > 1 or 0 in columns:
        return False
    return all(a[1] < b[0] for a, b in zip(entries, entries[1:], strict=False))
