"""What an operator asks the engine to change, as data: one frozen dataclass per kind of change.

A request carries what the operator saw when they asked (the target, the step, the
approval hash on screen, the note they edited from, the ledger's revision), so the engine
can refuse a change to something that moved underneath (`expect_hash`, `base`). The app's
one mutation worker runs `request.run(controller)` and posts the outcome as a Message
(`RequestDone`, or what `answer` turns an engine refusal into); nothing is dispatched by
name. `revision` is what the screen showed; it is said back in the journal-facing text.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar

from textual.message import Message

from engine.api import DRIFT_UNCHECKED, Conflict, HandoffError, ReadOnly, Refused
from tui.asked import Asked
from tui.messages import Draft, NoteConflict, NotSaved, RetryRefused

if TYPE_CHECKING:
    from tui.controller import Controller


@dataclass(frozen=True)
class Request:
    """A change the operator asked for; `revision` is the ledger's revision on screen then."""

    revision: int | None
    verb: ClassVar[str] = "change"

    def run(self, controller: Controller) -> str:  # pragma: no cover - every kind overrides it
        """Carry it out through the engine; returns what happened, in words."""
        raise NotImplementedError

    def kept(self) -> Draft | None:
        """The words the operator typed for this request (a note, a reason), if any."""
        return None

    def answer(self, error: HandoffError) -> Message | None:
        """The dialog an engine refusal opens instead of the error view (None: the error view).
        Typed words are never lost to a refusal: the error view says they are kept (`NotSaved`)."""
        draft = self.kept()
        return NotSaved(draft, error) if draft is not None else None


def reason_kept(request: Request, target: str | None, reason: str, key: str) -> Draft:
    """A reason `request` carried, kept for its prompt: `key` (on `target`) opens it again."""
    return Draft((request.verb, target), reason, "reason", f"{key} on {target} opens it again" if target else
                 f"{key} opens it again")


@dataclass(frozen=True)
class Approve(Request):
    target: str
    step: str | None
    comment: str | None
    expect_hash: str | None  # the hash of the command and checkpoint the dialog showed
    expect_drift: object = DRIFT_UNCHECKED  # the checkpoint drift the dialog showed (None: none)
    verb: ClassVar[str] = "approve"

    def run(self, controller: Controller) -> str:
        return controller.approve(self.target, self.step, self.comment, expect_hash=self.expect_hash,
                                  expect_drift=self.expect_drift)

    def kept(self) -> Draft | None:
        if not self.comment:
            return None
        return Draft((self.verb, self.target), self.comment, "comment", f"a on {self.target} opens it again")


@dataclass(frozen=True)
class ApproveBatch(Request):
    """One step approved on several marked targets: each bound to the hash the dialog showed
    for it (command and checkpoint), as the single approval is; the engine records all of
    them or none. Not bound to the revision: a session busy elsewhere in the fleet writes
    the ledger every few seconds, and a batch that any write refused could never be given."""

    step: str
    expect: tuple[tuple[str, str], ...]  # (target, hash shown), in the order the dialog listed them
    comment: str | None
    drift: tuple[tuple[str, str | None], ...] | None = None  # (target, drift shown: None for none); None: unbound
    verb: ClassVar[str] = "approve the marked targets"

    @property
    def targets(self) -> list[str]:
        return [name for name, _ in self.expect]

    def run(self, controller: Controller) -> str:
        return controller.approve_batch(dict(self.expect), self.step, self.comment,
                                        expect_drift=dict(self.drift) if self.drift is not None else None)

    def kept(self) -> Draft | None:
        # As the single dialog's comment; kept by the step (the batch has no one target): `A` on
        # marks awaiting that step opens it again (tui.screens.batch_actions).
        if not self.comment:
            return None
        return Draft((self.verb, self.step), self.comment, "comment", f"A on targets marked for {self.step} opens it again")


@dataclass(frozen=True)
class Reject(Request):
    """A "no" to the request the prompt showed (`asked`: its step and hash): the engine refuses
    it if the target asks anything else now. Not bound to the revision, as approvals are not:
    a session busy elsewhere in the fleet writes every few seconds, and a "no" any write
    refused could hardly be given. The reason is kept only while that request stands."""

    target: str
    reason: str
    asked: Asked | None = None
    verb: ClassVar[str] = "reject"

    def run(self, controller: Controller) -> str:
        asked = self.asked or Asked(None, None, None)
        return controller.reject(self.target, self.reason, step=asked.step, expect_hash=asked.hash)

    def kept(self) -> Draft | None:
        return replace(reason_kept(self, self.target, self.reason, "x"), asked=self.asked)


@dataclass(frozen=True)
class Unapprove(Request):
    target: str
    verb: ClassVar[str] = "unapprove"

    def run(self, controller: Controller) -> str:
        return controller.unapprove(self.target)


@dataclass(frozen=True)
class SetNote(Request):
    text: str
    base: str | None  # the note in the ledger when the edit started
    verb: ClassVar[str] = "save the note"

    def run(self, controller: Controller) -> str:
        return controller.set_note(self.text, self.base)

    def kept(self) -> Draft | None:
        return Draft((self.verb, None), self.text, "note", "e opens it again, merged with the note as it is then")

    def answer(self, error: HandoffError) -> Message | None:
        if isinstance(error, Conflict):
            return NoteConflict(self.text, str(error.theirs or ""))
        return super().answer(error)  # any other refusal: the words are kept, not lost


@dataclass(frozen=True)
class AckNote(Request):
    verb: ClassVar[str] = "acknowledge the note"

    def run(self, controller: Controller) -> str:
        return controller.ack_note()


@dataclass(frozen=True)
class Pause(Request):
    reason: str
    verb: ClassVar[str] = "pause"

    def run(self, controller: Controller) -> str:
        return controller.pause(self.reason)

    def kept(self) -> Draft | None:
        return reason_kept(self, None, self.reason, "p")


@dataclass(frozen=True)
class Unpause(Request):
    verb: ClassVar[str] = "unpause"

    def run(self, controller: Controller) -> str:
        return controller.unpause()


@dataclass(frozen=True)
class Retry(Request):
    target: str
    force: bool = False
    reason: str | None = None
    verb: ClassVar[str] = "retry"

    def run(self, controller: Controller) -> str:
        return controller.retry(self.target, force=self.force, reason=self.reason)

    def kept(self) -> Draft | None:
        return reason_kept(self, self.target, self.reason, "r") if self.reason else None

    def answer(self, error: HandoffError) -> Message | None:
        # A plain retry of a failed irreversible step is refused: offer a forced one, with a reason.
        if isinstance(error, Refused) and not isinstance(error, ReadOnly) and not self.force:
            return RetryRefused(self.target, error, self.kept())
        return super().answer(error)


@dataclass(frozen=True)
class Block(Request):
    target: str
    reason: str
    verb: ClassVar[str] = "block"

    def run(self, controller: Controller) -> str:
        return controller.block(self.target, self.reason)

    def kept(self) -> Draft | None:
        return reason_kept(self, self.target, self.reason, "b")


@dataclass(frozen=True)
class Unblock(Request):
    target: str
    to: str
    reason: str
    verb: ClassVar[str] = "unblock"

    def run(self, controller: Controller) -> str:
        return controller.unblock(self.target, self.to, self.reason)

    def kept(self) -> Draft | None:
        return reason_kept(self, self.target, self.reason, "u")


@dataclass(frozen=True)
class StartSession(Request):
    verb: ClassVar[str] = "start a session"

    def run(self, controller: Controller) -> str:
        return controller.start_session()


@dataclass(frozen=True)
class RequestStop(Request):
    verb: ClassVar[str] = "stop the session"

    def run(self, controller: Controller) -> str:
        return controller.request_stop()


@dataclass(frozen=True)
class AcceptRemoval(Request):
    verb: ClassVar[str] = "accept the removal"

    def run(self, controller: Controller) -> str:
        return controller.accept_removal()


@dataclass(frozen=True)
class AcceptRollback(Request):
    verb: ClassVar[str] = "accept the rollback"

    def run(self, controller: Controller) -> str:
        return controller.accept_rollback()


class RequestDone(Message):
    """A request went through; `text` says what happened."""

    def __init__(self, request: Request, text: str) -> None:
        super().__init__()
        self.request = request
        self.text = text
