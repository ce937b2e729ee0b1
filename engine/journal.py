"""The journal: `<ledger>.journal.jsonl`, append-only, one JSON record per line.

Every transition, step, approval, note edit, pause, discrepancy, page, metric reading
and log line, with time, actor and revision. It is the audit trail and the stream the
TUI's log pane and `handoff journal --follow` tail. Secrets are redacted before
anything is written.

An append holds an exclusive lock on the journal while it writes, so `seq` (the byte
offset of the record) is unique and increasing across processes; it starts on a line
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
from typing import Any

from engine.errors import HandoffError, os_error_text
from engine.journal_base import MAX_WARNINGS, JournalBase, JournalWriteError, Warnings, gap_record, make_record
from engine.journal_chain import GENESIS, chain_hash, link_of, seal
from engine.journal_index import INDEXED, JournalIndex
from engine.store.sidecar import open_sidecar

__all__ = ["MAX_WARNINGS", "SUFFIX", "Journal", "JournalBase", "JournalWriteError", "Warnings", "approval_recorded",
           "gap_record", "head_gone", "journal_head", "journal_path", "make_record", "print_warnings"]

SUFFIX = ".journal.jsonl"
GAP_SUFFIX = ".gap"


def journal_path(ledger_path: str) -> str:
    """`ledger.yaml` -> `ledger.yaml.journal.jsonl`, beside the real file."""
    return os.path.realpath(ledger_path) + SUFFIX


class Journal(JournalBase):
    """Append and read one ledger's journal file."""

    def _ledger(self) -> str:
        return self.path.removesuffix(SUFFIX)

    @property
    def index(self) -> JournalIndex:
        """The witness index beside this journal (engine.journal_index), kept per process."""
        if getattr(self, "_index", None) is None:
            self._index = JournalIndex(self.path, self._ledger())
            self._tail: tuple[int, str] | None = None  # (journal end, link of its last record) under the lock
        return self._index

    def check_writable(self) -> None:
        """The journal can be opened for appending (creating it if need be); raises
        SidecarRefused (a folder, a symlink, no group write access) otherwise."""
        if not self.read_only:
            os.close(open_sidecar(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, ledger=self._ledger()))

    def append(self, kind: str, msg: str, *, actor: str, rev: int | None = None, target: str | None = None, **fields: Any) -> dict[str, Any]:
        """Write one record durably and return it (with its byte offset as `seq`).

        Raises JournalWriteError if it could not be written whole (disk full, I/O
        error); nothing of it is left in the journal, and a record with a revision is
        noted as a gap for the next append to record."""
        record = make_record(self.redactor, kind, msg, actor=actor, rev=rev, target=target, fields=fields)
        if self.read_only:
            return record
        line = _encode(record)
        fd = open_sidecar(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, ledger=self._ledger())
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # one writer at a time: `seq` is the true offset
            try:
                self.index.refresh()
                self._note_break(fd, actor)
                self._write_gaps(fd, actor)
                record = self._put(fd, record)
                self.index.save()
            except OSError as err:
                reason = os_error_text(err)
                if rev is not None:
                    self._note_gap({"rev": rev, "kind": kind, "target": target, "msg": _short(record.get("msg")), "error": reason})
                raise JournalWriteError(f"{self.path}: the journal record could not be written: {reason}", rev=rev, reason=reason) from None
        finally:
            os.close(fd)  # releases the lock
        return record

    def _put(self, fd: int, record: dict[str, Any]) -> dict[str, Any]:
        """Under the lock: write `record` sealed after the journal's last record, with its
        offset as `seq`; note it in the index (saved by the caller)."""
        end = os.lseek(fd, 0, os.SEEK_END)
        prev = self._tail[1] if self._tail and self._tail[0] == end else _link_before(fd, end)
        record["seq"] = end + (1 if end and os.pread(fd, 1, end - 1) != b"\n" else 0)  # as _write_whole places it
        line = _encode(seal(record, prev))
        if _write_whole(fd, line) != record["seq"]:
            raise OSError("the journal moved under its lock")
        self._tail = (record["seq"] + len(line), record["chain"])  # the next _put under this lock needs no read
        self.index.note(record, record["seq"] + len(line))
        return record

    def _note_break(self, fd: int, actor: str) -> None:
        """Under the lock: if the journal's end shows a break (cut short, its last record
        changed or moved), write a `chain_break` record saying so before anything else."""
        end = os.lseek(fd, 0, os.SEEK_END)
        last = _last_record(fd, end)
        self._tail = (end, link_of(last[0]) if last else GENESIS)
        why = None
        if self.index.shrunk is not None:
            size, covered = self.index.shrunk
            why = f"the journal is {size} bytes but its index says it reached byte {covered}: records were erased or cut off"
        elif last is not None and "chain" in last[0]:
            record, at = last
            if record["chain"] != chain_hash(record):
                why = f"its last record (seq {at}) was changed after it was written"
            elif record.get("seq") != at:
                why = f"its last record says it was written at byte {record.get('seq')} but is at byte {at}: records before it were removed or added"
        missing = None
        if why is None:
            why, missing = self._head_gone(fd, end)
        if why is not None:
            self._put(fd, make_record(self.redactor, "chain_break", f"journal chain broken before this record: {why}",
                                      actor=actor, rev=None, target=None, fields={"missing_head": missing}))
            self.index.shrunk = None

    def _head_gone(self, fd: int, end: int) -> tuple[str | None, int | None]:
        """(why, seq) if the record the ledger's last write named as the journal's head is
        no longer there (the journal and its index erased together); noted once."""
        from engine.store.record import read_record

        head = (read_record(self._ledger() + ".last-write.json", self._ledger()) or {}).get("journal_head")
        if not isinstance(head, dict) or not isinstance(head.get("seq"), int):
            return None, None
        seq = head["seq"]
        if self.index.newest("chain_break", {"missing_head": seq}) is not None:
            return None, None  # already noted
        at = _record_at(fd, seq, end)
        if at is not None and link_of(at) == head.get("chain"):
            return None, None
        return (f"the ledger's last write named record seq {seq} as the journal's head; the journal no longer has it "
                "(records were erased or cut off)"), seq

    # -- gaps: ledger changes whose record could not be written --------------------

    def _gap_path(self) -> str:
        return self.path + GAP_SUFFIX

    def _note_gap(self, gap: dict[str, Any]) -> None:
        try:
            fd = open_sidecar(self._gap_path(), os.O_WRONLY | os.O_APPEND | os.O_CREAT, ledger=self._ledger())
            try:
                _write_whole(fd, _encode(gap), torn_check=False)
            finally:
                os.close(fd)
        except (OSError, HandoffError) as err:
            # Even the note cannot be written: say so where a person will see it.
            self.warnings.add(f"{self.path}: revision {gap.get('rev')} is not in the journal and the gap could not be noted ({err})")

    def _write_gaps(self, fd: int, actor: str) -> None:
        """Under the journal lock: write a `journal_gap` record for each noted gap, then forget them."""
        try:
            with open(self._gap_path(), "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            return
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
        read; a line that is complete but not JSON is skipped with a warning."""
        try:
            with open(self.path, "rb") as fh:
                fh.seek(offset)
                data = fh.read()
        except FileNotFoundError:
            return [], offset
        return self._parse(data, offset)

    def _parse(self, data: bytes, offset: int) -> tuple[list[dict[str, Any]], int]:
        records: list[dict[str, Any]] = []
        end = data.rfind(b"\n") + 1
        position = offset
        for raw in data[:end].split(b"\n")[:-1]:
            here = position
            position += len(raw) + 1
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except ValueError:
                self.warnings.add(f"{self.path}: skipped a damaged journal line at byte {here}")
                continue
            if isinstance(record, dict):
                record["seq"] = here  # where it is (a record moved by hand says otherwise; `journal --verify` reports it)
                records.append(record)
        if end < len(data) and data[end:].strip() and self._is_torn(offset + end):
            self.warnings.add(f"{self.path}: the last line is incomplete (a crash mid-append?); skipped")
        return records, offset + end

    def _window(self, start: int) -> list[dict[str, Any]]:
        """The whole records that begin at or after byte `start` (a line cut by the
        window's start is not a record, and not a damaged one either)."""
        if start <= 0:
            return self.read(0)[0]
        try:
            with open(self.path, "rb") as fh:
                fh.seek(start - 1)
                data = fh.read()
        except FileNotFoundError:
            return []
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

    def witness(self, kind: str, **match: Any) -> dict[str, Any] | None:
        """The newest `step_start`, `approval` or `chain_break` record whose fields equal
        `match`, found through the index (however long the journal): the journal's record
        itself, or the index's copy of its fields when the journal no longer has it."""
        self.index.refresh()
        entry = self.index.newest(kind, match)
        if entry is None:
            return None
        at = self._window(entry["seq"])[:1] if isinstance(entry.get("seq"), int) else []
        if at and at[0].get("seq") == entry["seq"] and at[0].get("kind") == kind and all(at[0].get(k) == v for k, v in match.items()):
            return at[0]
        return {**entry, "from_index": True}

    def verify(self, head: dict[str, Any] | None = None):
        """Check the whole chain (engine.journal_verify); `head` is what the ledger's
        last-write record names. The index reaching past the journal's end is a break too."""
        from engine.journal_verify import Break, verify_file

        verdict = verify_file(self.path, head)
        self.index.refresh()
        if self.index.shrunk is not None:
            size, covered = self.index.shrunk
            verdict.breaks.append(Break(size, None, f"the journal ends at byte {size} but its index says it reached byte "
                                                    f"{covered}: records were erased or cut off"))
        return verdict

    def highest_revision(self) -> int:
        """The highest ledger revision the journal records (through the index: cheap)."""
        self.index.refresh()
        return self.index.rev

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


def approval_recorded(journal, target: str, step: str, hash: str, by: str) -> dict[str, Any] | None:
    """The journal's own `approval` record of `by` approving `step` on `target` with this
    hash, or None: the witness that an approval in the ledger was given through the
    engine (any journal backend)."""
    return journal.last_of("approval", target=target, step=step, hash=hash, actor=by)


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
        at = _record_at(fd, head["seq"], os.fstat(fd).st_size)
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
        last = _last_record(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)
    if last is None:
        return None
    return {"seq": last[1], "chain": link_of(last[0])}


def _record_at(fd: int, seq: int, end: int) -> dict[str, Any] | None:
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


def _link_before(fd: int, end: int) -> str:
    last = _last_record(fd, end)
    return link_of(last[0]) if last else GENESIS


def _last_record(fd: int, end: int) -> tuple[dict[str, Any], int] | None:
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


def _encode(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def _short(text: Any, limit: int = 200) -> str:
    text = str(text or "")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _write_whole(fd: int, data: bytes, *, torn_check: bool = True) -> int:
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


def print_warnings(journal: Journal) -> None:
    """Say on stderr what reading skipped (CLI only)."""
    for warning in journal.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    journal.warnings.clear()
