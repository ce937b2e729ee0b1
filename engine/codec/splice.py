"""Writing a change into a document without touching anything else.

The store says what the model held before and after the change (`Change`: the
top-level data, and the targets that may have changed). Only an entry or target whose
data differs is written again: canonically, spliced in where it was (a new one at its
place in the canonical order, a new target after the last one). Everything else keeps
its text byte for byte: comments, blank lines, quoting, spelling, layout.

A rewritten entry's value is `patch`ed from what the human wrote: a value that did not
change keeps its source form (`1.30`, a shell-string `run:`), and a default the human
left out (`retries: 0`) is not written unless it changed. Its comments move, in order,
to the lines above it; a comment at the end of its first line stays there. A new note
is written in the style of the one it replaces when its text allows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from engine.codec import emit, layout, numbers
from engine.codec.canonical import ORDER, TOP_ORDER, canonical, read_back
from engine.codec.document import Parsed
from engine.codec.layout import GAP, TARGET, TOP
from engine.codec.numbers import same

MISSING: Any = object()


@dataclass
class Change:
    """What the model held before and after a change, as plain data.

    `top_*`: every top-level key but `targets`. `targets_*`: name -> data for the
    targets the change may have touched (a name missing after was removed; one missing
    before was added, in `targets_after`'s order)."""

    top_before: dict
    top_after: dict
    targets_before: dict
    targets_after: dict


def patch(raw: Any, before: Any, after: Any) -> Any:
    """`after`, keeping `raw`'s form wherever the model's value did not change.

    `raw` is what the document says, `before`/`after` the model's view of it before and
    after. A key the human left out whose (default) value did not change stays out."""
    if same(before, after):
        return raw
    if isinstance(after, dict) and isinstance(raw, dict) and isinstance(before, dict):
        out = {}
        for key, value in after.items():
            if key in raw:
                out[key] = patch(raw[key], before.get(key, MISSING), value)
            elif key in before and same(before[key], value):
                continue  # a default the human never wrote
            else:
                out[key] = value
        return out
    if isinstance(after, list) and isinstance(raw, list) and isinstance(before, list) and len(raw) == len(before):
        return [patch(raw[i], before[i], value) if i < len(raw) else value for i, value in enumerate(after)]
    return after


class _Doc:
    """The blocks being edited, with an index of where each entry is."""

    def __init__(self, parsed: Parsed) -> None:
        self.blocks = list(parsed.blocks)
        self.cr = "\r" if parsed.crlf else ""
        self.indent = parsed.indent
        self.shifted = False  # a block was added or taken out: indexes of the old blocks no longer hold

    def find(self, kind: str, key: str) -> int | None:
        for i, block in enumerate(self.blocks):
            if block[0] == kind and block[1] == key:
                return i
        return None

    def rows(self, rows: list[str]) -> str:
        return "\n".join(row + self.cr for row in rows)

    def replace(self, at: int, rows: list[str], pad: str) -> str:
        """Put `rows` where block `at` is; its comments go above, its first line's stays.
        Returns the block's new text."""
        first, moved = layout.comments(self.blocks[at][2])
        if first is not None:
            rows = [rows[0] + first] + rows[1:]
        new = [[self.blocks[at][0], self.blocks[at][1], self.rows(rows)]]
        if moved:
            new.insert(0, [GAP, None, self.rows([pad + c for c in moved])])
            self.shifted = True
        self.blocks[at : at + 1] = new
        return new[-1][2]

    def remove(self, at: int, pad: str) -> None:
        """Take block `at` out; the comments in it stay where it was."""
        first, moved = layout.comments(self.blocks[at][2])
        kept = ([first.lstrip(" \t")] if first else []) + moved
        self.blocks[at : at + 1] = [[GAP, None, self.rows([pad + c for c in kept])]] if kept else []
        self.shifted = True

    def insert_top(self, key: str, rows: list[str]) -> None:
        """A new top-level entry: after the nearest entry before it in canonical order,
        else before the nearest one after it, else at the end."""
        block = [TOP, key, self.rows(rows)]
        self.shifted = True
        # An unknown key's place is after the known ones above the targets, as in a new document.
        rank = ORDER.index(key) if key in ORDER else len(TOP_ORDER)
        tops = {b[1]: i for i, b in enumerate(self.blocks) if b[0] == TOP}
        before = [k for k in ORDER[:rank] if k in tops]
        if before:
            at = tops[before[-1]] + 1
            if before[-1] == "targets":
                at = 1 + max((i for i, b in enumerate(self.blocks) if b[0] == TARGET), default=at - 1)
            self.blocks.insert(at, block)
            return
        after = [k for k in ORDER[rank + 1 :] if k in tops]
        if after:
            self.blocks.insert(tops[after[0]], block)
            return
        at = len(self.blocks)
        if self.blocks and self.blocks[-1][0] == GAP and self.blocks[-1][2] == "":
            at -= 1  # before the final newline
        self.blocks.insert(at, block)

    def insert_target(self, name: str, rows: list[str]) -> str:
        """A new target after the last; returns its text."""
        last = max((i for i, b in enumerate(self.blocks) if b[0] == TARGET), default=None)
        if last is None:
            last = self.find(TOP, "targets")
        assert last is not None  # a ledger being written has its `targets:` entry (_rewrite_targets makes it)
        text = self.rows(rows)
        self.blocks.insert(last + 1, [TARGET, name, text])
        self.shifted = True
        return text


def _styles(parsed: Parsed, key: str, change: Change) -> dict[str, Any] | None:
    """The text style a rewritten note keeps: the old note's; and for the previous
    note, when the note moved there in this write, the old note's very lines."""
    if key not in ("handoff_note", "previous_note"):
        return None
    old = {b[1]: b[2].replace("\r\n", "\n") for b in parsed.blocks if b[0] == TOP and b[1] in ("handoff_note", "previous_note")}
    if key == "handoff_note":
        return {"handoff_note": layout.value_style(old["handoff_note"])} if "handoff_note" in old else None
    if "handoff_note" in old and not same(change.top_before.get("handoff_note", MISSING), change.top_after.get("handoff_note", MISSING)):
        source = layout.block_source(old["handoff_note"])
        if source is None:
            return {"text": layout.value_style(old["handoff_note"])}
        cut = min((len(line) - len(line.lstrip(" ")) for line in source[1:] if line.strip()), default=0)
        return {"text": [source[0]] + [line[cut:] for line in source[1:]]}
    if "previous_note" in old:
        return {"text": layout.value_style(old["previous_note"], ("text",))}
    return None


_BARE_HEAD = re.compile(r"^targets:[ \t]*(#.*)?(\r?)$")


def _no_targets_left(doc: _Doc) -> None:
    """The last target went: a bare `targets:` reads as null, and the ledger would no longer
    load; it becomes `targets: {}`, as a new document writes it (a comment on it stays)."""
    at = doc.find(TOP, "targets")
    if at is None:
        return
    text = doc.blocks[at][2]
    head, _, rest = text.partition("\n")
    bare = _BARE_HEAD.match(head)
    if bare is not None:
        comment, cr = bare.group(1), bare.group(2)
        doc.blocks[at] = [TOP, "targets", "targets: {}" + (f" {comment}" if comment else "") + cr + ("\n" + rest if rest else "")]


_BLOCK_SCALAR = re.compile(r":[ \t]+[|>][-+0-9]*[ \t]*(?:#.*)?$")  # `note: |` (and `|-`, `>2`, a comment after)


def _ends_in_place(doc: _Doc, key: str, rows: list[str], parsed: Parsed) -> None:
    """A block scalar written for `key` (`handoff_note: |`, in `rows`) runs on over every
    more-indented line after it: a person's indented comment right below would be read back
    as part of its text. Such a write is refused (ValueError, naming the line), never made."""
    if not any(_BLOCK_SCALAR.search(row) for row in rows):
        return  # the usual write (`revision: 12`): no look through the blocks
    at = doc.find(TOP, key)
    if at is None or at + 1 >= len(doc.blocks):
        return
    below = doc.blocks[at + 1]
    after = below[2].split("\n")[0]
    if after[:1] in (" ", "\t") and after.strip():
        # The line below is the file's own (the engine writes no indented line there): where it is now.
        line = 1
        for block in parsed.blocks:
            if block is below:
                break
            line += block[2].count("\n") + 1
        raise ValueError(f"`{key}` would take in the indented line {line} below it ({after.strip()!r}) as part of its "
                         "text; move that comment to the start of its line, then try again")


def _top_rows(key: str, value: Any, styles) -> list[str]:
    """An entry's lines, read back before they are used; a style that does not read
    back exactly is dropped for the canonical one."""
    if styles:
        rows = emit.block({key: value}, styles=styles)
        try:
            read_back("\n".join(rows), {key: value})
            return rows
        except ValueError:
            pass
    rows = emit.block({key: value})
    read_back("\n".join(rows), {key: value})
    return rows


def _spelling(name: str, old: str) -> str | None:
    """How `old` (a target's text) spells its name when not as the engine would, else None.
    The engine's own spelling is seen on the first line without composing the text (a
    write at 10,000 targets does this for every target it changes)."""
    ours = emit.key(name)
    head = old.lstrip(" ")
    if head.startswith(ours + ":") and head[len(ours) + 1 : len(ours) + 2] in ("", " ", "\n", "\r"):
        return None
    spelled = layout.key_source(old.replace("\r\n", "\n"))
    return None if spelled == ours else spelled


def _target_rows(name: str, value: Any, indent: int, old: str | None = None) -> list[str]:
    """A target's lines; its name spelled as in `old` (its text before) when that reads the same."""
    spelled = _spelling(name, old) if old is not None else None
    if spelled is not None:
        rows = emit.target_lines(name, value, indent, spelled)
        try:
            read_back("\n".join(rows), {name: value}, depth=1)
            return rows
        except ValueError:
            pass
    rows = emit.target_lines(name, value, indent)
    read_back("\n".join(rows), {name: value}, depth=1)
    return rows


def _changed(before: dict, after: dict) -> list[str]:
    return [k for k in dict.fromkeys([*before, *after]) if not same(before.get(k, MISSING), after.get(k, MISSING))]


def splice(parsed: Parsed, change: Change) -> Parsed:
    """The document after `change`; raises ValueError when part of it would not read
    back as the data it stands for (nothing is written then)."""
    data = dict(parsed.data)
    old_targets = data.get("targets") or {}
    targets = dict(old_targets)
    numbered = set(parsed.numbered)
    changed = _changed(change.targets_before, change.targets_after)
    for name in changed:
        after = change.targets_after.get(name, MISSING)
        numbered.discard(name)
        if after is MISSING:
            targets.pop(name, None)
            continue
        targets[name] = patch(targets.get(name, MISSING), change.targets_before.get(name, MISSING), after)
        if numbers.holds(targets[name]):
            numbered.add(name)
    if any((n in targets) != (n in old_targets) for n in changed):  # only a changed name can come or go
        # As they were; a new one after them, in the model's order.
        order = [n for n in old_targets if n in targets] + [n for n in change.targets_after if n in targets and n not in old_targets]
        targets = {n: targets[n] for n in order}
    tops = [k for k in _changed(change.top_before, change.top_after) if k != "targets"]
    for key in tops:
        after = change.top_after.get(key, MISSING)
        if after is MISSING:
            data.pop(key, None)
        else:
            data[key] = patch(data.get(key, MISSING), change.top_before.get(key, MISSING), after)
    data["targets"] = targets
    if parsed.opaque:
        return _whole(parsed, data)
    doc = _Doc(parsed)
    split = parsed.split and bool(parsed.where)
    lines: dict[str, str] | None = None  # the new document's target texts, when known without a look at every block
    if changed and split:
        lines = dict(parsed.lines)
        for name, text in _splice_targets(doc, changed, targets, parsed.where).items():
            if text is None:
                lines.pop(name, None)
            else:
                lines[name] = text
    elif changed:
        _rewrite_targets(doc, targets)
        split = True
    else:
        lines = dict(parsed.lines)  # no target changed: every target's block is as it was
    if changed and not targets:
        _no_targets_left(doc)
    styles = {key: _styles(parsed, key, change) for key in tops}
    for key in tops:
        at = doc.find(TOP, key)
        if key not in data:
            if at is not None:
                doc.remove(at, "")
            continue
        rows = _top_rows(key, data[key], styles[key])
        if at is None:
            doc.insert_top(key, rows)
        else:
            doc.replace(at, rows, "")
        _ends_in_place(doc, key, rows, parsed)
    if doc.blocks and doc.blocks[-1] is not parsed.blocks[-1] and doc.blocks[-1][0] != GAP:
        # A block the engine wrote ends the file: it ends with a newline (a block
        # scalar's last line break is its text's).
        doc.blocks.append([GAP, None, ""])
    out = Parsed(data, doc.blocks, split=split, indent=doc.indent, crlf=parsed.crlf)
    out._numbered = numbered
    out._lines = lines
    if not doc.shifted and parsed._where is not None:
        out._where = parsed._where  # every block is where it was (an ending added after them moves none)
    return out


def _splice_targets(doc: _Doc, changed: list[str], targets: dict, where: dict[str, int]) -> dict[str, str | None]:
    """Each changed target where it was (last first, so earlier places stay put); new
    ones after the last. `where`: the index of each target's block in `doc` as it comes.
    Returns each changed target's new text (None: taken out)."""
    pad = " " * doc.indent
    written: dict[str, str | None] = {}
    for name in sorted((n for n in changed if n in where), key=where.__getitem__, reverse=True):
        if name in targets:
            written[name] = doc.replace(where[name], _target_rows(name, targets[name], doc.indent, doc.blocks[where[name]][2]), pad)
        else:
            doc.remove(where[name], pad)
            written[name] = None
    for name in changed:  # a new target is among the changed, in the order `targets` has them
        if name in targets and name not in where:
            written[name] = doc.insert_target(name, _target_rows(name, targets[name], doc.indent))
    return written


def _rewrite_targets(doc: _Doc, targets: dict) -> None:
    """The `targets:` entry was not one block per target (a flow mapping, or empty):
    write it anew, one block per target; its comments go above it."""
    doc.indent = 2
    doc.shifted = True
    at = doc.find(TOP, "targets")
    if at is None:
        doc.insert_top("targets", ["targets:"])
        at = doc.find(TOP, "targets")
    assert at is not None  # inserted just above
    doc.replace(at, ["targets:" if targets else "targets: {}"], "")
    at = doc.find(TOP, "targets")
    assert at is not None  # replaced, not removed (its comments may have moved above it)
    doc.blocks[at + 1 : at + 1] = [[TARGET, n, doc.rows(_target_rows(n, t, 2))] for n, t in targets.items()]


def _whole(parsed: Parsed, data: dict) -> Parsed:
    """A document with no entries to tell apart is written anew, canonically, keeping
    its opening comments."""
    new = canonical(data, parsed.header)
    for kind, key, text in new.blocks:
        if kind == TOP and key != "targets":
            read_back(text, {key: data[key]})
        elif kind == TARGET:
            read_back(text, {key: data["targets"][key]}, depth=1)
    return new
