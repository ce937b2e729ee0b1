"""Messages the app's workers send back to the UI thread.

Workers never touch widgets; they post one of these. Bursts of ledger and
journal updates coalesce (`can_replace`) so a busy session cannot flood the
screen with repaints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from textual.message import Message

if TYPE_CHECKING:
    from engine.api import HandoffError, Ledger
    from tui.asked import Asked


@dataclass
class Snapshot:
    """One consistent view: the ledger plus what the engine derives from it and noticed about it.

    `missing`: targets the engine last wrote that the file lost; `rollback`: sentences
    saying how the file went backwards. `seq` orders reads: a result of an older read
    never replaces a newer one on screen (a slow worker must not hide a broken file)."""

    ledger: Ledger
    invariants: list[Any] = field(default_factory=list)
    lease: Any = None
    missing: list[str] = field(default_factory=list)
    rollback: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seq: int = 0


class SnapshotReady(Message):
    """A new ledger (and its invariants and lease) to show."""

    def __init__(self, snapshot: Snapshot) -> None:
        super().__init__()
        self.snapshot = snapshot

    def can_replace(self, message: Message) -> bool:
        # Only the newest ledger matters; older ones waiting in the queue are dropped.
        return isinstance(message, SnapshotReady)


class LedgerBroken(Message):
    """The file no longer parses (read number `seq`); keep the last good state on screen."""

    def __init__(self, error: HandoffError, seq: int = 0) -> None:
        super().__init__()
        self.error = error
        self.seq = seq


class JournalRecords(Message):
    """New journal records, in order."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        super().__init__()
        self.records = records


class NoteConflict(Message):
    """Saving the note found it changed underneath: show both and let the user choose."""

    def __init__(self, mine: str, theirs: str) -> None:
        super().__init__()
        self.mine = mine
        self.theirs = theirs


@dataclass(frozen=True)
class Draft:
    """Words the operator typed (a note, a reason, a comment) that a refused request did not save.

    `key` is the prompt they go back to (the request's verb and target: the reason typed to
    reject web-02 opens only the reject prompt of web-02); `what` names them, `reopen` says
    how to get them back. `asked`: the request they were typed for (a reject's reason), if
    bound to one: they are kept only while the target still asks it (tui.asked)."""

    key: tuple[str, str | None]
    text: str
    what: str
    reopen: str
    asked: Asked | None = None


class NotSaved(Message):
    """The engine refused a request that carried typed words for another reason than a note
    conflict (the file stopped parsing, became a folder): say why, and keep the words; or,
    `kept` False, say them (their request is gone: tui.asked) and keep nothing."""

    def __init__(self, draft: Draft, error: HandoffError, *, kept: bool = True) -> None:
        super().__init__()
        self.draft = draft
        self.error = error
        self.kept = kept


class RetryRefused(Message):
    """The engine refused a plain retry (a failed irreversible step): offer a forced one,
    on the reason the plain one carried (`draft`: asked for in production), if any."""

    def __init__(self, target: str, error: HandoffError, draft: Draft | None = None) -> None:
        super().__init__()
        self.target = target
        self.error = error
        self.draft = draft
