"""What the engine last wrote of each target's trust fields, kept beside a file ledger.

`engine.store.outside` diffs a hand-edited file against it. Two files beside the ledger:
- `<ledger>.last-write.targets.json`, every target's fields as of one write:
  `{"v": 2, "key": K, "targets": {name: fields}}`, K being that write's content hash;
- `<ledger>.last-write.targets.jsonl`, one line per later write:
  `{"base": B, "key": K, "set": {name: fields}, "gone": [name]}`.

A write appends its line only when the kept fields end at the very content it started
from (`base`); otherwise (a hand edit, a crash between the ledger and these files, a
file of an older version, a torn line) every target is written anew and the lines start
over. A reader follows the lines from the whole file's key while each line's base is
where the one before ended, so a line left from an earlier start is never applied. Past
COMPACT lines (or LINES_MAX bytes) the whole is written again.

Both are caches of what the ledger and its journal already hold: written without fsync,
never trusted for more than the diff of a hand edit.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import Any

from engine.store.atomic import atomic_write, file_identity
from engine.store.sidecar import SidecarRefused, open_sidecar, read_record

WHOLE = ".last-write.targets.json"
LINES = ".last-write.targets.jsonl"
VERSION = 2
COMPACT = 256  # lines after the whole file before it is written anew
LINES_MAX = 1 << 20  # ... or bytes

_HEAD = re.compile(rb'^\{"v":2,"key":"([0-9a-f]+)"')
# ledger -> (key the kept fields end at, the whole file's identity, the lines' identity, lines, their bytes)
_END: dict[str, tuple[str, Any, Any, int, int]] = {}
_BODY: dict[str, tuple[str, dict[str, str]]] = {}  # ledger -> (key, each target's encoded `"name":{fields}`)


def _lines(ledger_path: str) -> list[bytes]:
    try:
        fd = open_sidecar(ledger_path + LINES, os.O_RDONLY, ledger=ledger_path)
    except SidecarRefused:
        return []
    with os.fdopen(fd, "rb") as fh:
        return fh.read(LINES_MAX * 2).split(b"\n")


def _end(ledger_path: str) -> tuple[str, Any, Any, int, int] | None:
    """Where the kept fields end, read from the files: None when a line cannot be added
    after them (no whole file of this version, or lines that do not follow on from it)."""
    whole = ledger_path + WHOLE
    try:
        fd = open_sidecar(whole, os.O_RDONLY, ledger=ledger_path)
    except SidecarRefused:
        return None
    with os.fdopen(fd, "rb") as fh:
        found = _HEAD.match(fh.read(128))
    if found is None:
        return None
    key, count, size = found.group(1).decode(), 0, 0
    rows = _lines(ledger_path)
    for i, row in enumerate(rows):
        if not row and i == len(rows) - 1:
            break  # the file ends with a newline
        try:
            line = json.loads(row)
        except ValueError:
            return None  # a torn line: a line after it would never be read
        if not isinstance(line, dict) or line.get("base") != key or not isinstance(line.get("key"), str):
            return None  # lines of an earlier start
        key, count, size = line["key"], count + 1, size + len(row) + 1
    return key, file_identity(whole), file_identity(ledger_path + LINES), count, size


def save(ledger_path: str, key: str, base: str | None, entries: dict[str, str | None],
         every: Callable[[], dict[str, str]]) -> None:
    """Keep the fields of the write that made content `key` from content `base`.
    `entries`: the encoded `"name":{fields}` of each target the write touched (None: taken
    out); `every()`: all targets' entries, called only when the whole is written."""
    whole, lines = ledger_path + WHOLE, ledger_path + LINES
    end = _END.get(ledger_path)
    if end is None or end[1] != file_identity(whole) or end[2] != file_identity(lines):
        end = _end(ledger_path)
    body = _BODY.get(ledger_path)
    if body is not None and body[0] == base:
        for name, entry in entries.items():
            if entry is None:
                body[1].pop(name, None)
            else:
                body[1][name] = entry
        _BODY[ledger_path] = (key, body[1])
    else:
        _BODY.pop(ledger_path, None)
    if end is not None and base is not None and end[0] == base and end[3] < COMPACT and end[4] < LINES_MAX:
        gone = [name for name, entry in entries.items() if entry is None]
        row = ('{"base":' + json.dumps(base) + ',"key":' + json.dumps(key) + ',"set":{'
               + ",".join(e for e in entries.values() if e is not None) + '},"gone":' + json.dumps(gone) + "}\n").encode()
        try:
            fd = open_sidecar(lines, os.O_WRONLY | os.O_APPEND | os.O_CREAT, ledger=ledger_path)
            with os.fdopen(fd, "wb") as fh:
                fh.write(row)
        except BaseException:
            _END.pop(ledger_path, None)
            raise
        _END[ledger_path] = (key, end[1], file_identity(lines), end[3] + 1, end[4] + len(row))
        return
    _END.pop(ledger_path, None)
    kept = _BODY.get(ledger_path)
    targets = kept[1] if kept is not None and kept[0] == key else every()
    _BODY[ledger_path] = (key, targets)
    text = '{"v":2,"key":' + json.dumps(key) + ',"targets":{' + ",".join(targets.values()) + "}}"
    atomic_write(whole, text.encode("utf-8"), durable=False, sidecar_of=ledger_path)
    try:
        os.unlink(lines)  # after the whole: lines left by a crash in between do not follow on from its key
    except FileNotFoundError:
        pass
    _END[ledger_path] = (key, file_identity(whole), None, 0, 0)


def load(ledger_path: str) -> dict[str, Any] | None:
    """name -> the fields the engine last wrote, or None when nothing is kept."""
    data = read_record(ledger_path + WHOLE, ledger_path)
    if data is None:
        return None
    if not (data.get("v") == VERSION and isinstance(data.get("key"), str) and isinstance(data.get("targets"), dict)):
        return data  # an older engine's file: every target's fields, and no lines
    targets, key = dict(data["targets"]), data["key"]
    for row in _lines(ledger_path):
        try:
            line = json.loads(row)
        except ValueError:
            break  # the end, or a torn line
        if (not isinstance(line, dict) or line.get("base") != key or not isinstance(line.get("set"), dict)
                or not isinstance(line.get("gone"), list)):
            break  # lines of an earlier start
        targets.update(line["set"])
        for name in line["gone"]:
            targets.pop(name, None)
        key = line.get("key")
    return targets
