"""The file journal on disk: its path beside the ledger, one record's line, and the durable append.

The one way a journal line is encoded and written, shared by the journal, its sealed
half and its witness index (which appends with the same guarantees)."""

from __future__ import annotations

import json
import os
from typing import Any

SUFFIX = ".journal.jsonl"
HISTORY_SUFFIX = ".history.jsonl"  # its twin beside the same ledger (engine.store.history)


def journal_path(ledger_path: str) -> str:
    """`ledger.yaml` -> `ledger.yaml.journal.jsonl`, beside the real file."""
    return os.path.realpath(ledger_path) + SUFFIX


def encode(record: dict[str, Any]) -> bytes:
    """One record as one JSON line (UTF-8, compact)."""
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def write_whole(fd: int, data: bytes, *, torn_check: bool = True) -> int:
    """Append `data` at the end of the (locked) file `fd` on a line boundary, fsynced;
    returns the offset it starts at. On any error the file is cut back to where it
    ended, so no fragment of `data` stays, and the error is raised."""
    end = os.lseek(fd, 0, os.SEEK_END)
    prefix = b""
    if torn_check and end > 0 and os.pread(fd, 1, end - 1) != b"\n":
        prefix = b"\n"  # a crash left half a line: never glue a record onto it
    view = memoryview(prefix + data)
    try:
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except OSError:
        try:
            os.ftruncate(fd, end)
        except OSError:
            pass  # the fragment stays: the next append starts on a new line, readers skip it with a warning
        raise
    return end + len(prefix)
