"""What a session says: one `[HH:MM:SS] message` line per event, each also a journal record.

The journal is what the TUI's log pane tails, so every line a session prints is
appended there first (kind "log" or a specific kind) and printed from the record, so
the terminal and the journal agree to the second. With `--json` the records
themselves are printed, one per line. Ledger text is made visible (no terminal
escapes) before it is printed.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any, TextIO

from engine.journal import Journal
from engine.textsafe import visible


class Out:
    """Print-and-journal for one session (thread-safe: step workers print too)."""

    def __init__(self, journal: Journal, actor: str, *, json_mode: bool = False, stream: TextIO | None = None, **fields: Any) -> None:
        self.journal = journal
        self.actor = actor
        self.json_mode = json_mode
        self.stream = stream or sys.stdout
        self.fields = fields  # added to every record (session id, OS user)
        self._lock = threading.Lock()

    def say(self, msg: str, *, kind: str = "log", target: str | None = None, rev: int | None = None, **fields: Any) -> dict[str, Any]:
        """Journal `msg` and print it; returns the journal record (with its `seq`)."""
        record = self.journal.append(kind, msg, actor=self.actor, rev=rev, target=target, **self.fields, **fields)
        self._emit(record)
        return record

    def record(self, kind: str, msg: str, *, target: str | None = None, rev: int | None = None, **fields: Any) -> dict[str, Any]:
        """Journal only (metric readings, step output); printed only in --json mode."""
        record = self.journal.append(kind, msg, actor=self.actor, rev=rev, target=target, **self.fields, **fields)
        if self.json_mode:
            self._emit(record)
        return record

    def _emit(self, record: dict[str, Any]) -> None:
        if self.json_mode:
            line = json.dumps(record, ensure_ascii=False)
        else:
            ts = str(record.get("ts", ""))
            clock = ts[11:19] if len(ts) >= 19 else ts
            text = visible(record.get("msg", ""))
            line = f"[{clock}] " + text.replace("\n", "\n" + " " * 11)
        with self._lock:
            try:
                print(line, file=self.stream, flush=True)
            except (BrokenPipeError, ValueError):
                # Whoever read our output went away (a closed pipe); the journal still has it.
                pass
