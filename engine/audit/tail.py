"""Reading a file journal's end and one record by its offset, without reading it whole.

The journal's head (its last whole record) is what the next record chains to and what
the ledger's last-write record names; a record is found at its `seq` (its byte offset)
to check that the named head is still there. Both read backwards or forwards in growing
windows: a record may be megabytes (a step's output tail).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from engine.audit.chain import GENESIS, link_of
from engine.host.digests import sha256

# The end of a line `chain.sealed_line` wrote: its place, after its canonical bytes.
_PLACE = re.compile(rb',"seq":(0|[1-9][0-9]{0,18}),"chain":"([0-9a-f]{64})"\}\n\Z')


def head_gone(path: str, head: dict[str, Any] | None) -> bool:
    """Is the record `head` ({seq, chain}, as a last-write record names it) no longer in
    the journal at `path`?"""
    if not isinstance(head, dict) or not isinstance(head.get("seq"), int):
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return True
    try:
        at = record_at(fd, head["seq"], os.fstat(fd).st_size)
    finally:
        os.close(fd)
    return at is None or link_of(at) != head.get("chain")


def journal_head(path: str) -> dict[str, Any] | None:
    """{seq, chain} of the journal's last record (what the last-write record names), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        last = last_link(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)
    return {"seq": last[0], "chain": last[1]} if last else None


def last_link(fd: int, end: int) -> tuple[int, str] | None:
    """(offset, link) of the journal's last record before byte `end`: a sealed line checked
    by its bytes (`sealed_tail`), else the last whole record decoded; None when there is none."""
    sealed = sealed_tail(fd, end)
    if sealed is not None:
        return sealed[0], sealed[2]
    last = last_record(fd, end)
    return (last[1], link_of(last[0])) if last else None


def sealed_tail(fd: int, end: int) -> tuple[int, int, str] | None:
    """(offset, seq, chain) of the journal's last line when it is a sealed line
    (`chain.sealed_line`) whose bytes hash to its `chain`: the last record checked without
    decoding it (a whole ledger's record is megabytes). None for anything else (an older
    layout, a torn, changed or damaged end): the caller reads the end as JSON
    (`last_record`) and judges that."""
    found = _last_line(fd, end)
    if found is None:
        return None
    start, line = found
    place = _PLACE.search(line, max(0, len(line) - 128))
    if place is None:
        return None
    body = sha256(memoryview(line)[: place.start()])
    body.update(b"}")
    chain = place.group(2).decode("ascii")
    if body.hexdigest() != chain:
        return None
    return start, int(place.group(1)), chain


def _last_line(fd: int, end: int) -> tuple[int, bytes] | None:
    """(offset, bytes) of the whole line that ends the file at `end`, or None when the
    file does not end with a newline, reading backwards in growing windows."""
    if end <= 0 or os.pread(fd, 1, end - 1) != b"\n":
        return None
    window = 64 * 1024
    while True:
        start = max(0, end - window)
        data = os.pread(fd, end - start, start)
        begin = data.rfind(b"\n", 0, len(data) - 1) + 1
        if begin > 0 or start == 0:
            return start + begin, data[begin:]
        window *= 4


def record_at(fd: int, seq: int, end: int) -> dict[str, Any] | None:
    """The record whose line starts at byte `seq`, or None."""
    if seq < 0 or seq >= end or (seq > 0 and os.pread(fd, 1, seq - 1) != b"\n"):
        return None
    size = 64 * 1024
    while True:
        data = os.pread(fd, size, seq)
        stop = data.find(b"\n")
        if stop >= 0 or seq + len(data) >= end:
            try:
                record = json.loads(data[: stop if stop >= 0 else len(data)])
            except ValueError:
                return None
            return record if isinstance(record, dict) else None
        size *= 4


def link_before(fd: int, end: int) -> str:
    """What a record appended at `end` names as its `prev`: the last record's link."""
    last = last_link(fd, end)
    return last[1] if last else GENESIS


def last_record(fd: int, end: int) -> tuple[dict[str, Any], int] | None:
    """The last whole JSON record before byte `end` and its offset (a torn or damaged
    last line is skipped, as readers skip it), reading backwards in growing windows."""
    window = 64 * 1024
    while end > 0:
        start = max(0, end - window)
        data = os.pread(fd, end - start, start)
        stop = data.rfind(b"\n")
        while stop >= 0:
            begin = data.rfind(b"\n", 0, stop) + 1
            if begin == 0 and start > 0:
                break  # this line may start before the window: widen it
            try:
                record = json.loads(data[begin:stop])
            except ValueError:
                record = None
            if isinstance(record, dict):
                return record, start + begin
            stop = begin - 1
        if start == 0:
            return None
        window *= 4
    return None
