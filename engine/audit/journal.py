"""The journal: `<ledger>.journal.jsonl`, append-only, one JSON record per line.

Every transition, step, approval, note edit, pause, discrepancy, page, metric reading
and log line, with time, actor and revision. It is the audit trail and the stream the
TUI's log pane and `handoff journal --follow` tail. Secrets are redacted before
anything is written.

An append holds an exclusive lock on the journal while it writes, so `seq` (the byte
offset of the record) is unique and increasing across processes. It waits for that lock
at most HANDOFF_LOCK_TIMEOUT seconds, then names the holder (from the kernel's lock
table: a stopped or stuck process) and writes nothing; the record starts on a line
boundary (a torn last line, left by a crash, gets its newline first) and writes the
whole record or nothing (a partial write is cut back off, and the caller is told).
A record about a ledger change that could not be written is noted in a small file
beside the journal, and the next append writes a `journal_gap` record naming the
revision first: the audit trail never silently misses a change.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

from engine.audit.chain import draft
from engine.audit.index import INDEXED
from engine.audit.journal_base import (
    MAX_WARNINGS,
    JournalBase,
    JournalWriteError,
    Warnings,
    gap_of,
    gap_record,
    make_record,
)
from engine.audit.journal_io import HISTORY_SUFFIX, SUFFIX, encode, journal_path, write_whole
from engine.audit.sealed import Sealed
from engine.audit.tail import head_gone, journal_head, last_record
from engine.errors import HandoffError, os_error_text
from engine.host.console import say
from engine.host.flock import flock_holder, take_within
from engine.settings import seconds
from engine.store.sidecar import SidecarRefused, open_sidecar, open_to_read

__all__ = ["MAX_WARNINGS", "SUFFIX", "Journal", "JournalBase", "JournalWriteError", "Warnings",
           "gap_record", "head_gone", "journal_head", "journal_path", "make_record", "print_warnings"]

GAP_SUFFIX = ".gap"


class Journal(Sealed, JournalBase):
    """Append and read one ledger's journal file."""

    def __init__(self, path: str, *, ledger: str | None = None, redact: list[str] | None = None,
                 read_only: bool = False) -> None:
        super().__init__(path, redact=redact, read_only=read_only)
        # The ledger's path as the caller named it (absolute), when it gave one: its proofs are
        # looked for along any link it passes through (engine.approvals.spent_marks._places).
        self.named = os.path.abspath(ledger) if ledger else None
        self._seen: tuple[int, int, bytes] | None = None  # (inode, offset, the bytes before it) of the last read

    def _ledger(self) -> str:
        return self.named or self.path.removesuffix(SUFFIX)

    def ledger_file(self) -> str | None:
        return self._ledger()

    def proofs(self) -> Any:
        from engine.approvals.proofs import FileProofs

        return FileProofs(self._ledger())

    def check_writable(self) -> None:
        """The journal can be opened for appending and its lock taken within
        HANDOFF_LOCK_TIMEOUT; raises SidecarRefused (a folder, a symlink, no group write
        access) or JournalWriteError (a stuck holder) otherwise. A journal not there yet
        passes: the first append creates it, in the folder the ledger was just written to."""
        if self.read_only or not os.path.lexists(self.path):
            return  # none yet: nothing can hold it, and a refused change must not leave an empty one behind
        fd = open_sidecar(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, ledger=self._ledger())
        try:
            busy = self._lock(fd)
        finally:
            os.close(fd)  # releases the lock
        if busy is not None:
            raise JournalWriteError(f"{self.path}: {busy}, then run the command again; nothing was changed", reason=busy)

    def append(self, kind: str, msg: str, *, actor: str, rev: int | None = None, target: str | None = None, **fields: Any) -> dict[str, Any]:
        """Write one record durably and return it (with its byte offset as `seq`).

        Raises JournalWriteError if it could not be written whole (disk full, I/O
        error); nothing of it is left in the journal, and a record with a revision is
        noted as a gap for the next append to record."""
        record = make_record(self.redactor, kind, msg, actor=actor, rev=rev, target=target, fields=fields)
        if self.read_only:
            return record
        drafted = draft(record)  # a record JSON cannot hold fails here, before the file is opened or locked
        fd = open_sidecar(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, ledger=self._ledger())
        try:
            busy = self._lock(fd)  # one writer at a time: `seq` is the true offset
            if busy is not None:
                if rev is not None:
                    self._note_gap(gap_of(record, busy))
                raise JournalWriteError(f"{self.path}: the journal record could not be written: {busy}", rev=rev, reason=busy)
            try:
                self.index.refresh()
                self._note_break(fd, actor, rev)
                self._write_gaps(fd, actor)
                record = self._put(fd, record, drafted)
            except OSError as err:
                reason = os_error_text(err)
                if rev is not None:
                    self._note_gap(gap_of(record, reason))
                raise JournalWriteError(f"{self.path}: the journal record could not be written: {reason}", rev=rev, reason=reason) from None
            try:
                self.index.save()
            except (OSError, SidecarRefused):
                pass  # the record is in the journal: the index, made from it, catches up at the next read that can write it
        finally:
            os.close(fd)  # releases the lock
        return record

    def _lock(self, fd: int) -> str | None:
        """Take the journal's lock within HANDOFF_LOCK_TIMEOUT seconds; else why not (who
        holds it), and nothing is held. An append holds it for milliseconds: a holder past
        the timeout is stopped or stuck, and waiting on it for ever hung every writer."""
        limit = seconds("HANDOFF_LOCK_TIMEOUT")
        if take_within(fd, fcntl.LOCK_EX, limit):
            return None
        return f"the journal's lock has been held for more than {limit:g}s by {flock_holder(fd)}"

    def _erased(self, rev: int | None) -> str | None:
        """Why this journal, which records no write yet, was erased, or None. Erased with its index and the last-write
        record, nothing else says so once a write starts a new chain: the history journal beside
        the ledger does, holding earlier writes while the write of revision `rev` going in was
        kept whole (`full`: its store found no record of the write before it). A ledger's first
        write goes into both; a noted gap explains a journal never written."""
        if rev is None or os.path.exists(self._gap_path()):
            return None
        history = os.path.realpath(self._ledger()) + HISTORY_SUFFIX
        if _lines(history, 2) < 2:
            return None
        newest = _newest(history)
        if newest is None or newest.get("rev") != rev or "full" not in newest:
            return None  # a write that followed on from one the engine recorded: this journal was never written
        return ("the journal holds no record of a write, but the history journal beside it holds earlier writes of "
                "the engine: the journal was erased (its index and last-write record with it)")

    # -- gaps: ledger changes whose record could not be written --------------------

    def _gap_path(self) -> str:
        return self.path + GAP_SUFFIX

    def _note_gap(self, gap: dict[str, Any]) -> None:
        try:
            fd = open_sidecar(self._gap_path(), os.O_WRONLY | os.O_APPEND | os.O_CREAT, ledger=self._ledger())
            try:
                write_whole(fd, encode(gap), torn_check=False)
            finally:
                os.close(fd)
        except (OSError, HandoffError) as err:
            # Even the note cannot be written: say so where a person will see it.
            self.warnings.add(f"{self.path}: revision {gap.get('rev')} is not in the journal and the gap could not be noted ({err})")

    def _write_gaps(self, fd: int, actor: str) -> None:
        """Under the journal lock: write a `journal_gap` record for each noted gap, then forget them."""
        fh = open_to_read(self._gap_path())
        if fh is None:
            return
        with fh:
            raw = fh.read()
        for line in raw.splitlines():
            try:
                gap = json.loads(line)
            except ValueError:
                continue  # a torn note: the next whole one still counts
            if isinstance(gap, dict):
                kind, msg, fields = gap_record(gap)
                rev, target = fields.pop("rev"), fields.pop("target")
                self._put(fd, make_record(self.redactor, kind, msg, actor=actor, rev=rev, target=target, fields=fields))
        os.unlink(self._gap_path())

    # -- reading -----------------------------------------------------------------

    def read(self, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
        """Complete records from byte `offset`; returns them and the offset to read from next.

        An unfinished last line (being written, or torn by a crash) is left for the next
        read; a line that is complete but not JSON is skipped with a warning. A journal cut
        short or replaced since this reader reached `offset` (`journal --follow`, the screen's
        log: shorter than that, another file, other bytes before it) is said, and read again
        from its start."""
        fh = open_to_read(self.path)
        if fh is None:
            return [], offset
        with fh:
            if offset and not self._same_file(fh.fileno(), offset):
                self.warnings.add(f"{self.path}: the journal was cut short or replaced since it was read up to byte "
                                  f"{offset} (see `handoff journal --verify`); read again from its start")
                offset = 0
            fh.seek(offset)
            data = fh.read()
            records, end = self._parse(data, offset)
            seen = min(64, end)
            self._seen = (os.fstat(fh.fileno()).st_ino, end, os.pread(fh.fileno(), seen, end - seen))
        return records, end

    def _same_file(self, fd: int, offset: int) -> bool:
        """Is the file at `fd` still the journal this reader read up to `offset` (its inode, and
        the bytes it read last before `offset`)? An offset it did not reach itself is taken as given."""
        st = os.fstat(fd)
        if offset > st.st_size:
            return False
        seen = self._seen
        if seen is None or seen[1] != offset:
            return True
        ino, _, tail = seen
        return st.st_ino == ino and os.pread(fd, len(tail), offset - len(tail)) == tail

    def stream(self) -> Iterator[dict[str, Any]]:
        """Every complete record from the start, one at a time (memory does not grow with
        the journal: the report and time travel over a million records). As `read(0)`:
        a damaged line is skipped with a warning, an unfinished last line is left."""
        fh = open_to_read(self.path)
        if fh is None:
            return
        with fh:
            offset = 0
            for raw in fh:
                here, offset = offset, offset + len(raw)
                if not raw.endswith(b"\n"):
                    break  # being written, or torn by a crash: not a record yet
                record = self._decode(raw, here)
                if record is not None:
                    yield record

    def _decode(self, raw: bytes, here: int) -> dict[str, Any] | None:
        """One whole line at byte `here` as a record (its `seq` is where it is: a record moved
        by hand says otherwise, and `journal --verify` reports it), or None: blank, or damaged
        (warned)."""
        if not raw.strip():
            return None
        try:
            record = json.loads(raw)
        except ValueError:
            self.warnings.add(f"{self.path}: skipped a damaged journal line at byte {here}")
            return None
        if not isinstance(record, dict):
            return None
        record["seq"] = here
        return record

    def _parse(self, data: bytes, offset: int) -> tuple[list[dict[str, Any]], int]:
        records: list[dict[str, Any]] = []
        end = data.rfind(b"\n") + 1
        position = offset
        for raw in data[:end].split(b"\n")[:-1]:
            here = position
            position += len(raw) + 1
            record = self._decode(raw, here)
            if record is not None:
                records.append(record)
        if end < len(data) and data[end:].strip() and self._is_torn(offset + end):
            self.warnings.add(f"{self.path}: the last line is incomplete (a crash mid-append?); skipped")
        return records, offset + end

    def _window(self, start: int) -> list[dict[str, Any]]:
        """The whole records that begin at or after byte `start` (a line cut by the
        window's start is not a record, and not a damaged one either)."""
        if start <= 0:
            return self.read(0)[0]
        fh = open_to_read(self.path)
        if fh is None:
            return []
        with fh:
            fh.seek(start - 1)
            data = fh.read()
        first = data.find(b"\n") + 1  # data[0] is the byte before `start`
        if first == 0:
            return []
        return self._parse(data[first:], start - 1 + first)[0]

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
        return self._window(max(0, size - max(65536, n * 2048)))[-n:]

    def for_target(self, target: str, limit: int = 200) -> list[dict[str, Any]]:
        """Records about one target (scans the whole journal; history views only)."""
        records, _ = self.read(0)
        return [r for r in records if r.get("target") == target][-limit:]

    def last_of(self, kind: str, **match: Any) -> dict[str, Any] | None:
        """The newest record of `kind` whose fields equal `match`. Witness kinds matched on
        indexed fields go through the index (unbounded reach); anything else reads
        backwards from the end in growing windows, up to 64 MiB."""
        if kind in INDEXED and set(match) <= set(INDEXED[kind]):
            return self.witness(kind, **match)
        try:
            size = os.path.getsize(self.path)
        except FileNotFoundError:
            return None
        window = 256 * 1024
        while True:
            start = max(0, size - window)
            for record in reversed(self._window(start)):
                if record.get("kind") == kind and all(record.get(k) == v for k, v in match.items()):
                    return record
            if start == 0 or window >= 64 * 1024 * 1024:
                return None
            window *= 4


def _lines(path: str, most: int) -> int:
    """How many whole lines the file at `path` holds, counted up to `most` (a line of a
    history journal can be a whole ledger: read in chunks, never parsed); 0 when it cannot be read."""
    try:
        fh = open_to_read(path)
    except SidecarRefused:
        return 0  # said where the history journal is read (`check`, `journal --verify`)
    if fh is None:
        return 0
    count = 0
    with fh:
        while count < most and (chunk := fh.read(1 << 20)):
            count += chunk.count(b"\n")
    return min(count, most)


def _newest(path: str) -> dict[str, Any] | None:
    """The last whole record of the journal file at `path`, or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        found = last_record(fd, os.fstat(fd).st_size)
    except OSError:
        return None
    finally:
        os.close(fd)
    return found[0] if found else None


def print_warnings(journal: Journal) -> None:
    """Say on stderr what reading skipped (CLI only)."""
    for warning in journal.warnings:
        say(f"warning: {warning}", sys.stderr)  # a terminal gone: nobody to warn, no traceback either
    journal.warnings.clear()
