"""What a session says: one `[HH:MM:SS] message` line per event, each also a journal record.

The journal is what the TUI's log pane tails, so every line a session prints is
appended there first (kind "log" or a specific kind) and printed from the record, so
the terminal and the journal agree to the second. With `--json` the records
themselves are printed, one per line. Ledger text is made visible (no terminal
escapes) before it is printed.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, TextIO

from engine.audit.journal import Journal, JournalWriteError, make_record
from engine.codec.jsontext import json_line
from engine.codec.textsafe import visible
from engine.codec.timefmt import now_iso
from engine.errors import HandoffError
from engine.host import console

# How much a session prints, set once by the CLI (`-q`, `-v`): -1 only what a person must
# see (warnings, errors, refusals, drift, pauses, how it ended), 0 every line, 1 also the
# records it only journals (metric readings, step output). The journal gets all of them.
VERBOSITY = 0
LOUD = frozenset({"warning", "error", "refusal", "discrepancy", "paused", "planner_unavailable", "drift", "lease_lost",
                  "lease_takeover", "page_failed", "fenced", "handoff", "session_end",
                  "still_running"})  # the answer to a second Ctrl-C: a person asked, even under -q


class Out:
    """Print-and-journal for one session (thread-safe: step workers print too)."""

    def __init__(self, journal: Journal, actor: str, *, json_mode: bool = False, stream: TextIO | None = None, **fields: Any) -> None:
        self.journal = journal
        self.actor = actor
        self.json_mode = json_mode
        self.stream = stream or sys.stdout
        self.fields = fields  # added to every record (session id, OS user)
        self.lost = 0  # records the journal could not take
        self.lost_reason: str | None = None
        self._lock = threading.Lock()

    def clean(self, text: str) -> str:
        """`text` with secrets masked (the ledger's `redact:` patterns too): for what the
        session stores in the ledger or sends away, never for the argv it runs."""
        return self.journal.redactor.text(text)

    def say(self, msg: str, *, kind: str = "log", target: str | None = None, rev: int | None = None, **fields: Any) -> dict[str, Any]:
        """Journal `msg` and print it; returns the journal record (with its `seq`)."""
        record = self._append(kind, msg, target, rev, fields)
        if VERBOSITY >= 0 or kind in LOUD or self.json_mode or "journal_error" in record:
            self._emit(record)
        return record

    def record(self, kind: str, msg: str, *, target: str | None = None, rev: int | None = None, **fields: Any) -> dict[str, Any]:
        """Journal only (metric readings, step output); printed only in --json mode, or
        when the journal could not take it (then it is printed, saying so)."""
        record = self._append(kind, msg, target, rev, fields)
        if self.json_mode or VERBOSITY > 0 or "journal_error" in record:
            self._emit(record)
        return record

    def _append(self, kind: str, msg: str, target: str | None, rev: int | None, fields: dict[str, Any]) -> dict[str, Any]:
        try:
            return self.journal.append(kind, msg, actor=self.actor, rev=rev, target=target, **self.fields, **fields)
        except HandoffError as err:
            # Disk full, the database away, the journal made a folder: the line still
            # reaches the terminal, marked, and the journal notes a gap at its next write.
            reason = err.reason if isinstance(err, JournalWriteError) else str(err)
            self.lost += 1
            if reason != self.lost_reason:  # say why once, then only mark the lines
                self.lost_reason = reason
                self._emit({"ts": now_iso(), "msg": f"the journal cannot be written ({self.journal.redactor.text(reason)}); "
                                                    "lines marked [not in the journal] are only here"})
            record = make_record(self.journal.redactor, kind, msg, actor=self.actor, rev=rev, target=target,
                                 fields={**self.fields, **fields})
            record["journal_error"] = reason
            record["msg"] = f"{record['msg']} [not in the journal]"
            return record

    def _emit(self, record: dict[str, Any]) -> None:
        if self.json_mode:
            line = json_line(record)
        else:
            ts = str(record.get("ts", ""))
            clock = ts[11:19] if len(ts) >= 19 else ts
            text = visible(record.get("msg", ""))
            line = f"[{clock}] " + text.replace("\n", "\n" + " " * 11)
        with self._lock:
            # Whoever read our output may have gone (engine.host.console): the journal has the
            # line; a print must never stop a step half-way (tests/unit/test_session_terminal_gone.py).
            console.say(line, self.stream)
