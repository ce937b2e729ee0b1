"""What every journal backend shares (the file journal, the PostgreSQL table): the record
shape, redaction before anything is written, the `journal_gap` record for a change whose
own record was lost, bounded read warnings, and following the journal as it grows."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from engine.audit.index import INDEXED
from engine.audit.redact import Redactor
from engine.codec.timefmt import now_iso
from engine.errors import HandoffError

MAX_WARNINGS = 20

# Fields the engine reads back as proof (a spent approval, an intent's start, where the
# chain stands): never masked, whatever the ledger's `redact:` patterns say. A pattern
# that matched them would blind the witness (an approval hash masked as [REDACTED] is
# never found again); `handoff check` refuses such a pattern (engine.checks.witness).
WITNESS_FIELDS = frozenset({
    "ts", "kind", "actor", "rev", "seq", "prev", "chain", "target", "step", "token", "attempt",
    "approval_hash", "approval_by", "approval_at", "hash", "digest",
    "user", "at",  # an approval's record is found by its OS user and time too (engine.approvals.witness)
    "body_digest",  # what a PostgreSQL ledger's row held after a write (engine.store.postgres)
})


def make_record(redactor: Redactor, kind: str, msg: str, *, actor: str, rev: int | None, target: str | None, fields: dict[str, Any]) -> dict[str, Any]:
    """One journal record, redacted except for its witness fields: the same shape in every
    journal backend. A field holding a whole ledger (the history's `full` record: 10,000
    targets, 41,000 strings) is scanned once, joined (`Redactor.document`), not string by
    string: a clean one is kept as it is, one with a secret is masked as `value` masks."""
    record: dict[str, Any] = {"ts": now_iso(), "kind": kind, "actor": actor}
    if rev is not None:
        record["rev"] = rev
    if target is not None:
        record["target"] = target
    record["msg"] = msg
    record.update({k: v for k, v in fields.items() if v is not None})
    return {k: v if k in WITNESS_FIELDS else redactor.document(v) if isinstance(v, (dict, list)) else redactor.value(v)
            for k, v in record.items()}


def gap_of(record: dict[str, Any], error: str) -> dict[str, Any]:
    """What is kept of `record` when it could not be written (its revision, kind, target,
    message and why), for the next append to record as a `journal_gap`. For a witness kind
    (engine.audit.index.INDEXED) also the fields a witness matches on, so that a record lost
    here can be told from one that was never made (engine.approvals.authority)."""
    kind, msg = record.get("kind"), str(record.get("msg") or "")
    gap = {"rev": record.get("rev"), "kind": kind, "target": record.get("target"),
           "msg": msg if len(msg) <= 200 else msg[:199] + "…", "error": error}
    if kind in INDEXED:
        gap["lost"] = {k: record.get(k) for k in INDEXED[kind] if k not in ("ts", "target")}
    return gap


def gap_record(gap: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(kind, msg, fields) of the `journal_gap` record for a record that was lost."""
    rev = gap.get("rev")
    msg = (f"revision {rev} was recorded in the ledger but its journal record ({gap.get('kind')}: "
           f"{gap.get('msg')}) could not be written: {gap.get('error')}")
    fields = {"rev": rev, "lost_kind": gap.get("kind"), "target": gap.get("target"), "error": gap.get("error")}
    if isinstance(gap.get("lost"), dict):
        fields["lost"] = gap["lost"]
    return "journal_gap", msg, fields


class JournalWriteError(HandoffError):
    """A journal record could not be written whole (nothing of it stays in the journal)."""

    title = "Journal not written"
    exit_code = 1

    def __init__(self, message: str, *, rev: int | None = None, reason: str = "") -> None:
        super().__init__(message)
        self.rev = rev
        self.reason = reason or message


class Warnings(list):
    """What reading skipped: each warning once, and at most MAX_WARNINGS of them (the
    TUI polls the journal every few seconds for as long as it runs)."""

    def add(self, text: str) -> None:
        if text in self:
            return
        self.append(text)
        if len(self) > MAX_WARNINGS:
            del self[0]


class JournalBase:
    """What every journal backend shares: where it is, redaction, read-only, warnings."""

    if TYPE_CHECKING:  # each backend's own
        def read(self, offset: int = 0) -> tuple[list[dict[str, Any]], int]: ...

        def end_offset(self) -> int: ...

    def __init__(self, path: str, *, redact: list[str] | None = None, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        self.redactor = Redactor(redact or ())
        self.warnings = Warnings()

    def ledger_file(self) -> str | None:
        """The file ledger this journal is beside (None: the ledger is not a file)."""
        return None

    def proofs(self) -> Any:
        """Where the kernel's (or the database's) word that a user recorded an approval is
        kept: engine.approvals.attest.FileProofs or engine.store.pg_attest.PgProofs, each with
        `record(target, approval)` and `problem(target, approval)`; None: nowhere."""
        return None

    def set_redact(self, patterns: list[str]) -> None:
        self.redactor = Redactor(patterns)

    def check_writable(self) -> None:
        """Raise (with what to do) if an append would fail for a reason known now, so a
        caller can refuse before it changes the ledger. Backends override it."""

    def follow(self, offset: int | None = None, poll: float = 0.2, until: Callable[[], bool] | None = None) -> Iterator[dict[str, Any]]:
        """Yield records as they are appended (blocking; for `handoff journal --follow`),
        over the backend's own `read(offset)` and `end_offset()`; ends when `until()` says
        so while nothing new comes (the follower's terminal has gone)."""
        if offset is None:
            offset = self.end_offset()
        while True:
            records, offset = self.read(offset)
            yield from records
            if not records:
                if until is not None and until():
                    return
                time.sleep(poll)


