"""The witness index beside a file journal: `<ledger>.journal.jsonl.index`.

A spent approval and an intent's start must be found however long the journal has
grown (a multi-day migration with chatty steps writes hundreds of MiB after the step
it must never run again). So every `step_start`, `approval` and `chain_break` record
gets one small line here, written under the journal's lock right after the record
itself (and fsynced), and a line marks each 64 KiB of journal between them. Each line
carries `end` (the journal offset it covers up to) and `rev` (the highest revision the
journal held by then). Reading it costs its own few KiB plus at most the last 64 KiB
of journal; nothing depends on the journal's size.

The journal stays the truth: a missing index is rebuilt from it (one full scan, saved
by the next writer), one that is behind (a crash between the record and its line) is
caught up from its last `end`, and one that reaches past the journal's end means the
journal was cut short, which the next append notes as a `chain_break`. Entries stay
when the journal is erased: a spent approval stays spent. An index an engine that kept
fewer kinds wrote is completed from the journal once (VERSION).
"""

from __future__ import annotations

import json
import os
from typing import Any

from engine.audit.journal_io import write_whole
from engine.host.digests import content_digest
from engine.store.sidecar import SidecarRefused, open_sidecar, open_to_read

SUFFIX = ".index"
MARK_EVERY = 64 * 1024
# kind -> the fields its entry keeps: what lookups match on, and what callers read back.
INDEXED: dict[str, tuple[str, ...]] = {
    "step_start": ("target", "step", "token", "attempt", "approval_hash", "approval_by", "approval_at", "ts", "actor"),
    "approval": ("target", "step", "hash", "actor", "user", "at", "ts", "digest"),  # digest: compared, not matched
    "unapproval": ("target", "step", "hash", "approval_by", "approval_at", "ts"),
    "unapproval_intent": ("target", "step", "hash", "approval_by", "approval_at", "ts"),  # journaled before the write
    "intent_cancelled": ("target", "cancels", "ts"),  # ... and cancelled when the write did not happen
    # who asked (and who started the session that asked): never the approver (engine.approvals.policy)
    "gate": ("target", "step", "actor", "user", "started_by", "started_as", "ts"),
    # ... and who started the session that asked (never one of a count's people), however far back
    "session_start": ("session", "by", "user", "starter", "ts"),
    "claude_session_start": ("session", "by", "user", "ts"),
    # A witness whose record was lost: checked at every fence (engine.approvals.witness), so never a scan.
    "journal_gap": ("target", "lost_kind", "lost", "ts"),
    "chain_break": ("ts", "msg", "missing_head"),
}
# The last line of each save carries VERSION: every record of the kinds and fields above, up
# to that line's `end`, has its entry. It follows INDEXED by itself: an index an engine that
# indexed less wrote (before `gate` and `unapproval` were kept) is completed from the journal
# once, from where its lines stop carrying it, so no lookup misses a witness.
VERSION = content_digest(json.dumps(INDEXED, sort_keys=True).encode())[:12]


def entry_of(record: dict[str, Any], end: int) -> dict[str, Any] | None:
    """The index entry of a journal record ending at byte `end`, or None if it has none."""
    keep = INDEXED.get(record.get("kind"))  # type: ignore[arg-type]
    if keep is None:
        return None
    entry = {"seq": record.get("seq"), "end": end, "kind": record["kind"]}
    entry.update({k: record[k] for k in (*keep, "chain") if record.get(k) is not None})
    return entry


def _key(entry: dict[str, Any]) -> tuple:
    # Not the offset alone: after the journal was cut short, a new record can start
    # where an erased one did, and both stay witnesses.
    return entry.get("seq"), entry.get("chain") or entry.get("ts")


class JournalIndex:
    """One process's view of the index, refreshed incrementally (the index file's new
    lines, then the journal's bytes past them)."""

    def __init__(self, journal_path: str, ledger: str) -> None:
        self.journal_path = journal_path
        self.path = journal_path + SUFFIX
        self.ledger = ledger
        self.entries: dict[tuple, dict[str, Any]] = {}  # in journal order (file order, then scanned)
        self.unsaved: list[dict[str, Any]] = []  # known here, not yet in the index file
        self.covered = 0  # the journal offset the index file's last line reaches
        self.scanned = 0  # how far this process has read the journal past `covered`
        self.complete = 0  # up to where every record has its entry here (VERSION's promise)
        self.promised = 0  # the `end` of the index file's last line carrying VERSION
        self.rev = 0  # the highest revision the journal records
        self.shrunk: tuple[int, int] | None = None  # (journal size, what the index covers) when cut short
        self._read = 0  # bytes of the index file taken in
        self._ino: int | None = None

    # -- reading -----------------------------------------------------------------

    def refresh(self) -> None:
        """Take in what the index and the journal gained since the last refresh."""
        self._read_index()
        try:
            size = os.path.getsize(self.journal_path)
        except FileNotFoundError:
            size = 0
        self.shrunk = (size, self.covered) if size < self.covered else None
        if self.shrunk is not None:
            self.scanned = 0  # what is left is read again from the start (its entries are known)
            self._scan(0)
            return
        start = min(self.complete, max(self.covered, self.scanned))  # what older lines cover, read again
        if start < size:
            self._scan(start)

    @property
    def loaded(self) -> bool:
        """Has this process taken in the index (or noted entries of its own)?"""
        return self._read > 0 or bool(self.entries)

    def reach(self) -> tuple[int, int]:
        """(the journal offset the index covers, the highest revision the journal records),
        from the index file's last whole line and the journal's bytes past it, one line at a
        time: what verifying and a reader's rollback check need, without taking every entry
        into memory (a million-record journal has tens of thousands). `refresh` gives the same."""
        covered = rev = 0
        try:
            fd = open_sidecar(self.path, os.O_RDONLY, ledger=self.ledger)
        except SidecarRefused:
            fd = None
        if fd is not None:
            try:
                size = os.fstat(fd).st_size
                tail = os.pread(fd, min(size, 65536), max(0, size - 65536))
            finally:
                os.close(fd)
            for raw in reversed(tail[: tail.rfind(b"\n") + 1].split(b"\n")[:-1]):
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue  # a torn line, or the window's cut first one
                if isinstance(line, dict) and isinstance(line.get("end"), int):
                    found = line.get("rev")
                    covered, rev = line["end"], found if isinstance(found, int) else 0
                    break
        fh = open_to_read(self.journal_path)
        if fh is None:
            return covered, rev
        with fh:
            if os.fstat(fh.fileno()).st_size < covered:
                fh.seek(0)  # cut short: what is left is read again (the index keeps the revisions it saw)
            else:
                fh.seek(covered)
            for raw in fh:
                if not raw.endswith(b"\n"):
                    break
                try:
                    number = json.loads(raw).get("rev")
                except (ValueError, AttributeError):
                    continue
                if isinstance(number, int) and number > rev:
                    rev = number
        return covered, rev

    def _read_index(self) -> None:
        try:
            fd = open_sidecar(self.path, os.O_RDONLY, ledger=self.ledger)
        except SidecarRefused:
            # None yet (rebuilt from the journal), or not a plain file (never followed). One this
            # process read is gone: the next save writes every entry known here again, so the
            # new file's VERSION line does not vouch for entries it lacks.
            if self._ino is not None:
                self.unsaved, self._read, self._ino = list(self.entries.values()), 0, None
            return
        try:
            st = os.fstat(fd)
            if st.st_ino != self._ino or st.st_size < self._read:  # replaced or cut: start again
                self.__init__(self.journal_path, self.ledger)  # type: ignore[misc]
                self._ino = st.st_ino
            data = os.pread(fd, st.st_size - self._read, self._read)
        finally:
            os.close(fd)
        end = data.rfind(b"\n") + 1
        self._read += end
        for raw in data[:end].split(b"\n")[:-1]:
            try:
                line = json.loads(raw)
            except ValueError:
                continue  # a torn line (a crash mid-write): the journal still has the record
            if not isinstance(line, dict) or not isinstance(line.get("end"), int):
                continue
            self._take(line)
            if line["end"] < self.covered:  # the journal was cut short: what older lines cover is behind it
                self.complete = min(self.complete, line["end"])
            self.covered = line["end"]
            if line.get("v") == VERSION:
                self.complete = max(self.complete, line["end"])
                self.promised = line["end"]

    def _take(self, line: dict[str, Any]) -> None:
        rev = line.get("rev")
        if isinstance(rev, int) and rev > self.rev:
            self.rev = rev
        if isinstance(line.get("seq"), int) and "kind" in line:
            self.entries.pop(_key(line), None)  # a later line of the same record (read again, below) sets its place
            self.entries[_key(line)] = line

    def _scan(self, start: int) -> None:
        """Read the journal from `start` (a line boundary) for what the index lacks."""
        fh = open_to_read(self.journal_path)
        if fh is None:
            return
        with fh:
            fh.seek(start)
            data = fh.read()
        position = start
        for raw in data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]:
            here, position = position, position + len(raw) + 1
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(record, dict):
                continue
            record.setdefault("seq", here)
            self.note(record, position)
        self.scanned = position
        if start <= self.complete:
            self.complete = position

    # -- writing (under the journal's lock) ----------------------------------------

    def note(self, record: dict[str, Any], end: int) -> None:
        """A journal record ending at `end`: remember its entry (and the revision)."""
        rev = record.get("rev")
        if isinstance(rev, int) and rev > self.rev:
            self.rev = rev
        entry = entry_of(record, end)
        known = self.entries.get(_key(entry)) if entry is not None else None
        # Known, but read again where only an older engine's lines vouched: put back whole (they may
        # have kept fewer fields) and in journal order (a record of a kind they did not keep, found
        # now, would otherwise sit after later ones).
        again = known is not None and self.shrunk is None and end <= self.covered
        if entry is not None and (known is None or again):
            entry["rev"] = known["rev"] if known and isinstance(known.get("rev"), int) else self.rev
            self.entries.pop(_key(entry), None)
            self.entries[_key(entry)] = entry
            self.unsaved.append(entry)
        self.scanned = max(self.scanned, end)

    def save(self) -> None:
        """Append the entries the index file lacks, and a mark if 64 KiB went by
        without one (or when an older engine's index was read whole); fsynced. Under the
        journal's lock (one writer at a time), after a `refresh` there and this process's
        own records: every entry up to the journal's end is known, as VERSION promises."""
        lines = list(self.unsaved)
        completed = self.promised < self.covered <= self.complete  # an older engine's index, now read whole
        if not lines and (self.scanned - self.covered >= MARK_EVERY or completed):
            lines.append({"end": self.scanned, "rev": self.rev})
        if not lines:
            return
        lines[-1]["end"] = max(lines[-1]["end"], self.scanned)  # the last line covers all that was read
        lines[-1]["rev"] = self.rev
        lines[-1]["v"] = VERSION
        data = b"".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n" for line in lines)

        fd = open_sidecar(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, ledger=self.ledger)
        try:
            write_whole(fd, data)
            self._ino = os.fstat(fd).st_ino
            self._read = os.lseek(fd, 0, os.SEEK_END)
        finally:
            os.close(fd)
        self.unsaved.clear()
        self.covered = self.complete = self.promised = lines[-1]["end"]

    # -- lookups -----------------------------------------------------------------

    def newest(self, kind: str, match: dict[str, Any]) -> dict[str, Any] | None:
        """The newest entry of `kind` whose fields equal `match`."""
        for entry in reversed(self.entries.values()):
            if entry.get("kind") == kind and all(entry.get(k) == v for k, v in match.items()):
                return entry
        return None
