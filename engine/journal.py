"""The journal: `<ledger>.journal.jsonl`, append-only, one JSON record per line.

Every transition, step, approval, note edit, pause, discrepancy, page, metric reading
and log line, with time, actor and revision. It is the audit trail and the stream the
TUI's log pane and `handoff journal --follow` tail. Appends are single O_APPEND writes,
fsynced; a torn last line (a crash mid-append) is skipped with a warning, never fatal.
Secrets are redacted before anything is written.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Iterator

from engine.redact import Redactor
from engine.store.sidecar import open_sidecar
from engine.timefmt import now_iso

SUFFIX = ".journal.jsonl"


def journal_path(ledger_path: str) -> str:
    """`ledger.yaml` -> `ledger.yaml.journal.jsonl`, beside the real file."""
    return os.path.realpath(ledger_path) + SUFFIX


def make_record(redactor: Redactor, kind: str, msg: str, *, actor: str, rev: int | None, target: str | None, fields: dict[str, Any]) -> dict[str, Any]:
    """One journal record, redacted: the same shape in every journal backend."""
    record: dict[str, Any] = {"ts": now_iso(), "kind": kind, "actor": actor}
    if rev is not None:
        record["rev"] = rev
    if target is not None:
        record["target"] = target
    record["msg"] = msg
    record.update({k: v for k, v in fields.items() if v is not None})
    return redactor.value(record)


class JournalBase:
    """What every journal backend shares: where it is, redaction, read-only, warnings."""

    def __init__(self, path: str, *, redact: list[str] | None = None, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        self.redactor = Redactor(redact or ())
        self.warnings: list[str] = []

    def set_redact(self, patterns: list[str]) -> None:
        self.redactor = Redactor(patterns)

    def follow(self, offset: int | None = None, poll: float = 0.2) -> Iterator[dict[str, Any]]:
        """Yield records as they are appended (blocking; for `handoff journal --follow`),
        over the backend's own `read(offset)` and `end_offset()`."""
        if offset is None:
            offset = self.end_offset()
        while True:
            records, offset = self.read(offset)
            yield from records
            if not records:
                time.sleep(poll)


class Journal(JournalBase):
    """Append and read one ledger's journal file."""

    def append(self, kind: str, msg: str, *, actor: str, rev: int | None = None, target: str | None = None, **fields: Any) -> dict[str, Any]:
        """Write one record durably and return it (with its byte offset as `seq`)."""
        record = make_record(self.redactor, kind, msg, actor=actor, rev=rev, target=target, fields=fields)
        if self.read_only:
            return record
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        fd = open_sidecar(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, ledger=self.path.removesuffix(SUFFIX))
        try:
            record["seq"] = os.lseek(fd, 0, os.SEEK_END)
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        return record

    def read(self, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
        """Complete records from byte `offset`; returns them and the offset to read from next.

        An unfinished last line (being written, or torn by a crash) is left for the next
        read; a line that is complete but not JSON is skipped with a warning."""
        try:
            with open(self.path, "rb") as fh:
                fh.seek(offset)
                data = fh.read()
        except FileNotFoundError:
            return [], offset
        records: list[dict[str, Any]] = []
        end = data.rfind(b"\n") + 1
        position = offset
        for raw in data[:end].split(b"\n")[:-1]:
            here = position
            position += len(raw) + 1
            try:
                record = json.loads(raw)
            except ValueError:
                self.warnings.append(f"{self.path}: skipped a damaged journal line at byte {here}")
                continue
            if isinstance(record, dict):
                record.setdefault("seq", here)
                records.append(record)
        if end < len(data) and data[end:].strip() and self._is_torn(offset + end):
            self.warnings.append(f"{self.path}: the last line is incomplete (a crash mid-append?); skipped")
        return records, offset + end

    def _is_torn(self, at: int) -> bool:
        # A partial line that has not grown for a moment is a crash, not a writer mid-write.
        try:
            return time.time() - os.stat(self.path).st_mtime > 2.0
        except FileNotFoundError:
            return False

    def end_offset(self) -> int:
        """Where the journal ends now: read(end_offset()) later gives only what came after."""
        try:
            return os.path.getsize(self.path)
        except FileNotFoundError:
            return 0

    def tail(self, n: int = 200) -> list[dict[str, Any]]:
        """The last `n` records (reads at most the last few MiB)."""
        try:
            size = os.path.getsize(self.path)
        except FileNotFoundError:
            return []
        start = max(0, size - max(65536, n * 2048))
        records, _ = self.read(start)
        if start > 0 and records:
            records = records[1:]  # the first may be a partial line
        return records[-n:]

    def for_target(self, target: str, limit: int = 200) -> list[dict[str, Any]]:
        """Records about one target (scans the whole journal; history views only)."""
        records, _ = self.read(0)
        return [r for r in records if r.get("target") == target][-limit:]

    def last_of(self, kind: str, **match: Any) -> dict[str, Any] | None:
        """The newest record of `kind` whose fields equal `match`, reading backwards from
        the end in growing windows (a long journal is never read whole for this)."""
        try:
            size = os.path.getsize(self.path)
        except FileNotFoundError:
            return None
        window = 256 * 1024
        while True:
            start = max(0, size - window)
            records, _ = self.read(start)
            if start > 0 and records:
                records = records[1:]  # the first may be a partial line
            for record in reversed(records):
                if record.get("kind") == kind and all(record.get(k) == v for k, v in match.items()):
                    return record
            if start == 0 or window >= 64 * 1024 * 1024:
                return None
            window *= 4


def print_warnings(journal: Journal) -> None:
    """Say on stderr what reading skipped (CLI only)."""
    for warning in journal.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    journal.warnings.clear()
