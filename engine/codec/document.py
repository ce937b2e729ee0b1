"""A whole ledger document: split it, read each part the fastest safe way, write it back.

Reading: the leading comment block is kept as the header; the `targets:` block is read
by the fast reader, target by target, with the strict YAML loader for any target that
is not in canonical one-line form; the rest of the document (short) is read by the
strict loader with the targets block blanked out, so every line number stays true.
Writing: canonical order and layout; a target whose data did not change keeps its
line text (one line, or the emitter's wrapped lines) byte for byte.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from engine.codec import emit, strict
from engine.codec.fast import FastReader
from engine.errors import LedgerInvalid

TOP_ORDER = (
    "task",
    "owner_shift",
    "started",
    "environment",
    "revision",
    "paused",
    "session",
    "budget",
    "invariants",
    "approvers",
    "notify",
    "metrics",
    "redact",
    "runbook",
)
TAIL_ORDER = ("targets", "handoff_note", "handoff_note_by", "handoff_note_at")
_TARGETS_HEAD = re.compile(r"targets:[ \t]*(?:#.*)?$")

_reader = FastReader()


@dataclass
class Parsed:
    """What a document holds: its data, its header comment, and per-target line text."""

    data: Any
    header: str = ""
    lines: dict[str, str] = field(default_factory=dict)


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
    """Group the slow lines into (first, last) ranges of neighbouring lines."""
    ranges: list[tuple[int, int]] = []
    for index in slow:
        # Neighbouring slow targets are read in one go: one loader call, not one each.
        if ranges and ranges[-1][1] == index - 1:
            ranges[-1] = (ranges[-1][0], index)
        else:
            ranges.append((index, index))
    return ranges


def parse_document(text: str, path: str, known: dict[str, tuple[str, dict]] | None = None) -> Parsed:
    """Read a ledger's text. Raises LedgerInvalid with file:line:col.

    `known`: target text -> (name, data) from the last read of this ledger; those
    targets are not parsed again."""
    lines = text.split("\n")
    header = _header(lines)
    start = next((i for i, line in enumerate(lines) if _TARGETS_HEAD.match(line)), None)
    if start is None:
        return Parsed(strict.load(text, path), header)
    end = start + 1
    while end < len(lines) and (not lines[end] or lines[end][0] in " #\t"):
        end += 1
    block = lines[start + 1 : end]
    targets, line_text, slow = _reader.read_lines(block, known)
    if slow:
        # Merge in file order; a name met twice is left to the strict loader to report.
        found = _slow_targets(block, start + 1, slow, path)
        fast_names = iter(targets)
        slow_set = set(slow)
        merged: dict[str, Any] = {}
        for index, line in enumerate(block):
            group = found.get(index)
            if group is None and _starts(line) and index not in slow_set:
                group = {(name := next(fast_names)): targets[name]}
            for name, value in (group or {}).items():
                if name in merged:
                    strict.load(text, path)
                    raise _duplicate(name, path, start, block)
                merged[name] = value
        targets = merged
    rest = "\n".join(lines[: start + 1] + [""] * (end - start - 1) + lines[end:])
    data = strict.load(rest, path)
    if not isinstance(data, dict):
        raise LedgerInvalid("the ledger must be a mapping of keys (task:, targets:, ...)", path=path, line=1, column=1)
    data["targets"] = targets
    return Parsed(data, header, line_text)


def _duplicate(name: str, path: str, start: int, block: list[str]) -> LedgerInvalid:
    """The error for a target name met twice (`1` and `"1"` are one name), at its second line."""
    seen = 0
    line = None
    for index, text in enumerate(block):
        if _starts(text) and text[2:].split(":", 1)[0].strip().strip("'\"") == name:
            seen += 1
            if seen == 2:
                line = start + 2 + index
                break
    return LedgerInvalid(f"duplicate target {name!r} (names are text: 1 and \"1\" are the same); remove or rename one",
                         path=path, line=line, column=3 if line else None)


def _starts(line: str) -> bool:
    """Does this line of the targets block begin a target (`  NAME: ...`)?"""
    return line.startswith("  ") and line[2:3] not in (" ", "#", "")


def _slow_targets(block, offset, slow, path) -> dict[int, dict[str, Any]]:
    """Read the non-canonical targets with the strict loader: {first line index: {name: data}}."""
    found: dict[int, dict[str, Any]] = {}
    for first, last in _chunks(block, slow):
        chunk = "\n".join(block[first : last + 1])
        # The chunk's root (NAME: target) stands for the `targets:` mapping, one level down.
        value = strict.load(chunk, path, line_offset=offset + first, depth_offset=1)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise LedgerInvalid(
                "each target must be `NAME: {state: ...}` indented under targets:",
                path=path,
                line=offset + first + 1,
                column=1,
            )
        group: dict[str, Any] = {}
        for name, target in value.items():
            if str(name) in group:  # YAML's 1 and "1" differ; target names do not
                raise _duplicate(str(name), path, offset - 1, block)
            group[str(name)] = target
        found[first] = group
    return found


def emit_document(data: dict, header: str = "", previous: dict[str, str] | None = None, previous_data: dict | None = None) -> tuple[str, dict[str, str]]:
    """Canonical text of a ledger; returns (text, line text per target).

    `previous`/`previous_data` are the line texts and target data of the last read or
    write: a target whose data is unchanged keeps its line as it was.
    """
    out: list[str] = [header.rstrip("\n")] if header.strip() else []
    top = {k: data[k] for k in TOP_ORDER if k in data and data[k] is not None}
    for k, v in data.items():
        # An unknown key is written even when null: the engine never drops what a human wrote.
        if k not in top and k not in TAIL_ORDER and k not in TOP_ORDER:
            top[k] = v
    top_lines = emit.block(top)
    out.extend(top_lines)
    # An empty `targets:` would read back as null in any other YAML tool.
    out.append("targets:" if data.get("targets") else "targets: {}")
    lines: dict[str, str] = {}
    prev = previous or {}
    prev_data = previous_data or {}
    for name, target in (data.get("targets") or {}).items():
        old = prev.get(name)
        if old is not None and prev_data.get(name) == target:
            out.append(old)
            lines[name] = old
            continue
        rows = emit.target_lines(name, target)
        out.extend(rows)
        lines[name] = "\n".join(rows)
    tail = {k: data[k] for k in TAIL_ORDER[1:] if data.get(k) is not None}
    tail_lines = emit.block(tail)
    out.extend(tail_lines)
    _read_back(top_lines, tail_lines, data)
    return "\n".join(out) + "\n", lines


def _read_back(top_lines: list[str], tail_lines: list[str], data: dict) -> None:
    """Read the (short) non-target part back and compare: the engine must never write a
    file it cannot read, or one that reads as something else. Targets are one flow line
    each, JSON-quoted, and covered by the property tests."""
    text = "\n".join([*top_lines, "targets: {}", *tail_lines]) + "\n"
    expected = {k: v for k, v in data.items() if k != "targets"}
    try:
        got = strict.load(text, "<emitted>")
    except LedgerInvalid as err:
        raise ValueError(f"the engine produced YAML it cannot read back ({err}); nothing was written") from None
    got.pop("targets", None)
    if got != expected:
        changed = sorted(k for k in set(got) | set(expected) if got.get(k) != expected.get(k))
        raise ValueError(f"the engine's YAML for {', '.join(changed)} would read back differently; nothing was written")
