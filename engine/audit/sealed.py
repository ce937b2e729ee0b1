"""The sealed, indexed half of the file journal: each record chained to the one before
(engine.audit.chain), a break at the journal's end noted as a `chain_break` record,
and the witness index (engine.audit.index) kept in step with every append.

Mixed into engine.audit.journal.Journal; every method here but the lookups runs under the
journal's exclusive lock.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from engine.audit.chain import GENESIS, chain_hash, link_of, sealed_line
from engine.audit.index import JournalIndex
from engine.audit.journal_base import make_record
from engine.audit.journal_io import write_whole
from engine.audit.tail import last_record, link_before, record_at, sealed_tail
from engine.store.sidecar import read_record

if TYPE_CHECKING:
    from engine.audit.redact import Redactor


class Sealed:
    """Chaining, break notes, witness lookups and verification for a file journal (needs
    `path`, `redactor` and `_ledger()` from engine.audit.journal.Journal)."""

    if TYPE_CHECKING:  # what engine.audit.journal.Journal provides
        path: str
        redactor: Redactor
        _index: JournalIndex

        def _ledger(self) -> str: ...

        def _window(self, start: int) -> list[dict[str, Any]]: ...

        def _erased(self, rev: int | None) -> str | None: ...

    @property
    def index(self) -> JournalIndex:
        """The witness index beside this journal (engine.audit.index), kept per process."""
        if getattr(self, "_index", None) is None:
            self._index = JournalIndex(self.path, self._ledger())
            self._tail: tuple[int, str] | None = None  # (journal end, link of its last record) under the lock
        return self._index

    def _put(self, fd: int, record: dict[str, Any], drafted: bytes | None = None) -> dict[str, Any]:
        """Under the lock: write `record` sealed after the journal's last record, with its
        offset as `seq`; note it in the index (saved by the caller). `drafted`: the
        record's `chain.draft`, when the caller has made it."""

        end = os.lseek(fd, 0, os.SEEK_END)
        prev = self._tail[1] if self._tail and self._tail[0] == end else link_before(fd, end)
        seq = end + (1 if end and os.pread(fd, 1, end - 1) != b"\n" else 0)  # as write_whole places it
        line = sealed_line(record, prev, seq, drafted)
        if write_whole(fd, line) != record["seq"]:
            raise OSError("the journal moved under its lock")
        self._tail = (record["seq"] + len(line), record["chain"])  # the next _put under this lock needs no read
        self.index.note(record, record["seq"] + len(line))
        return record

    def _note_break(self, fd: int, actor: str, rev: int | None = None) -> None:
        """Under the lock: if the journal's end shows a break (cut short, its last record
        changed or moved, emptied), write a `chain_break` record saying so before anything
        else (the record going in next is of revision `rev`)."""
        end = os.lseek(fd, 0, os.SEEK_END)
        sealed = sealed_tail(fd, end)  # a last line whose bytes hash to its chain: it was not changed
        last = None if sealed else last_record(fd, end)
        self._tail = (end, sealed[2] if sealed else link_of(last[0]) if last else GENESIS)
        why = None
        if self.index.shrunk is not None:
            size, covered = self.index.shrunk
            why = f"the journal is {size} bytes but its index says it reached byte {covered}: records were erased or cut off"
        elif sealed is not None:
            at, seq, _ = sealed
            if seq != at:
                why = f"its last record says it was written at byte {seq} but is at byte {at}: records before it were removed or added"
        elif last is not None and "chain" in last[0]:
            record, at = last
            if record["chain"] != chain_hash(record):
                why = f"its last record (seq {at}) was changed after it was written"
            elif record.get("seq") != at:
                why = f"its last record says it was written at byte {record.get('seq')} but is at byte {at}: records before it were removed or added"
        missing = None
        if why is None:
            why, missing = self._head_gone(fd, end)
        if why is None and self.index.rev == 0:  # the journal records no write (empty, or lines of no revision)
            why = self._erased(rev)
        if why is not None:
            self._put(fd, make_record(self.redactor, "chain_break", f"journal chain broken before this record: {why}",
                                      actor=actor, rev=None, target=None, fields={"missing_head": missing}))
            self.index.shrunk = None

    def _head_gone(self, fd: int, end: int) -> tuple[str | None, int | None]:
        """(why, seq) if the record the ledger's last write named as the journal's head is
        no longer there (the journal and its index erased together); noted once."""
        head = (read_record(self._ledger() + ".last-write.json", self._ledger()) or {}).get("journal_head")
        if not isinstance(head, dict) or not isinstance(head.get("seq"), int):
            return None, None
        seq = head["seq"]
        if self.index.newest("chain_break", {"missing_head": seq}) is not None:
            return None, None  # already noted
        at = record_at(fd, seq, end)
        if at is not None and link_of(at) == head.get("chain"):
            return None, None
        return (f"the ledger's last write named record seq {seq} as the journal's head; the journal no longer has it "
                "(records were erased or cut off)"), seq

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
        """Check the whole chain (engine.audit.verify); `head` is what the ledger's
        last-write record names. The index reaching past the journal's end is a break too."""
        from engine.audit.verify import Break, verify_file

        verdict = verify_file(self.path, head)
        covered, _ = self.index.reach()  # not every entry: memory stays flat however long the journal
        try:
            size = os.path.getsize(self.path)
        except FileNotFoundError:
            size = 0
        if size < covered:
            verdict.breaks.append(Break(size, None, f"the journal ends at byte {size} but its index says it reached byte "
                                                    f"{covered}: records were erased or cut off"))
        return verdict

    def highest_revision(self) -> int:
        """The highest ledger revision the journal records: through the index when this
        process holds it, else from the index file's last line (cheap either way)."""
        if self.index.loaded or not os.path.exists(self.index.path):
            # The entries are in memory already (a writer, a witness lookup), or there is no
            # index file yet: the incremental refresh remembers how far it read.
            self.index.refresh()
            return self.index.rev
        return self.index.reach()[1]
