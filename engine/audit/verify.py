"""Checking a journal's hash chain (engine.audit.chain) and saying where it breaks.

    verdict = verify_file(path, head=last_write.get("journal_head"))
    for b in verdict.breaks: print(f"line {b.line} (seq {b.seq}): {b.why}")

A file journal is read line by line (constant memory); each sealed record must hash to
its own `chain`, name the record before it as `prev` and sit at the byte offset it was
written at (`seq`). Records from before the chain (an older journal) are accepted up to
the first sealed one; an unsealed record after it was inserted by hand. A damaged line
(a crash mid-append) is a warning, not a break: the chain links across it. The ledger's
last-write record names the journal's head: a journal that no longer has it was cut
short or erased, even when what is left links up.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from engine.audit.chain import GENESIS, chain_hash, flaw, link_of
from engine.store.sidecar import open_to_read


@dataclass
class Break:
    """Where the chain breaks: the record's seq, its line (file journals), and why."""

    seq: int | None
    line: int | None
    why: str

    def text(self) -> str:
        return f"{self.place()}: {self.why}"

    def place(self) -> str:
        """`line 7 (seq 512)`, or `at` alone where no line is known."""
        return f"line {self.line} (seq {self.seq})" if self.line is not None else self.at()

    def at(self) -> str:
        """`seq 512`, or `its end` (a break found at no record: records gone after the last)."""
        return f"seq {self.seq}" if self.seq is not None else "its end"


@dataclass
class Verdict:
    """What verifying found."""

    records: int = 0
    sealed: int = 0
    unsealed: int = 0  # from before the chain
    damaged: list[int] = field(default_factory=list)  # line numbers of lines that are not records
    breaks: list[Break] = field(default_factory=list)
    noted: list[int] = field(default_factory=list)  # seqs of `chain_break` records
    head: int | None = None  # seq of the last record

    @property
    def ok(self) -> bool:
        return not self.breaks


class _Walk:
    """The chain rules, one record at a time (shared by the file and PostgreSQL)."""

    def __init__(self) -> None:
        self.v = Verdict()
        self.expected = GENESIS
        self.shift = 0  # offset - written seq, while it holds (one break per change)

    def feed(self, record: dict[str, Any], seq: int | None, line: int | None, written_seq: Any = None) -> None:
        v = self.v
        v.records += 1
        v.head = seq
        if record.get("kind") == "chain_break":  # a break the engine found when it appended: still a break
            v.noted.append(seq)  # type: ignore[arg-type]
            v.breaks.append(Break(seq, line, f"noted by the engine at {record.get('ts')}: {record.get('msg')}"))
        if not isinstance(record.get("chain"), str):
            if v.sealed:
                v.breaks.append(Break(seq, line, "a record without a hash after the journal was sealed (added by hand?)"))
            else:
                v.unsealed += 1
            self.expected = chain_hash(record)
            return
        v.sealed += 1
        why = flaw(record, self.expected)
        if why is None and isinstance(written_seq, int) and seq is not None and seq - written_seq != self.shift:
            self.shift = seq - written_seq
            why = (f"it was written at byte {written_seq} but is at byte {seq}: "
                   f"{abs(self.shift)} bytes of records before it were {'added' if self.shift > 0 else 'removed'}")
        if why:
            v.breaks.append(Break(seq, line, why))
        self.expected = link_of(record)


def _head_break(head: dict[str, Any] | None, seen: dict[int, str]) -> Break | None:
    if not head or not isinstance(head.get("seq"), int):
        return None
    if seen.get(head["seq"]) == head.get("chain"):
        return None
    return Break(head["seq"], None, f"the ledger's last write named journal record seq {head['seq']} as the head "
                                    f"(hash {str(head.get('chain'))[:12]}...); the journal no longer has it: "
                                    "records were erased or cut off")


def verify_file(path: str, head: dict[str, Any] | None = None) -> Verdict:
    """Verify a file journal (line by line); `head` is the last-write record's `journal_head`."""
    walk = _Walk()
    seen: dict[int, str] = {}
    want = head.get("seq") if head else None
    offset = 0
    fh = open_to_read(path)
    if fh is not None:
        with fh:
            for number, raw in enumerate(fh, 1):
                here, offset = offset, offset + len(raw)
                if not raw.endswith(b"\n"):
                    break  # an unfinished last line (being written, or torn): not a record yet
                if not raw.strip():
                    continue
                try:
                    record = json.loads(raw)
                except ValueError:
                    walk.v.damaged.append(number)
                    continue
                if not isinstance(record, dict):
                    walk.v.damaged.append(number)
                    continue
                walk.feed(record, here, number, record.get("seq"))
                if here == want:
                    seen[here] = link_of(record)
    found = _head_break(head, seen)
    if found:
        walk.v.breaks.append(found)
    return walk.v


def verify_rows(rows: Iterable[tuple[int, dict[str, Any]]]) -> Verdict:
    """Verify records given as (seq, record) in seq order (the PostgreSQL journal)."""
    walk = _Walk()
    for seq, record in rows:
        walk.feed(dict(record), seq, None)
    return walk.v
