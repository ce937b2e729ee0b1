"""The app's changing side (a mixin of `HandoffApp`): one worker runs each engine mutation.

A mutation is never cancelled by the next one. Its outcome comes back as a
Message: done (a note), a note conflict (both texts, the operator chooses), a
refused plain retry (offer a forced one with a reason). Any other engine error
ends in the app's one error view. A read-only view refuses before calling the
engine at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import work

from engine.api import Conflict, ReadOnly, Refused
from tui.messages import ActionDone, NoteConflict, RetryRefused
from tui.screens.note_editor import NoteConflictScreen, NoteEditor, merged
from tui.screens.reason import Reason, ReasonPrompt
from tui.text import clean

if TYPE_CHECKING:
    from tui.controller import Controller
    from tui.screens.main import MainScreen


class Mutations:
    """Mutation worker and the dialogs its outcomes open."""

    controller: Controller
    main: MainScreen | None
    read_only: bool
    read_only_reason: str | None
    note_draft: str | None

    @work(thread=True, exit_on_error=False, group="mutate")
    def mutate(self, op: str, *args: Any, **kwargs: Any) -> None:
        """Run one engine mutation. Not exclusive: an operator's action is never cancelled by the next."""
        if self.read_only:
            raise ReadOnly(f"read-only: {op.replace('_', ' ')} refused ({self.read_only_reason}); nothing was changed.")
        try:
            text = getattr(self.controller, op)(*args, **kwargs)
        except Conflict as error:
            if op == "set_note":
                self.post_message(NoteConflict(args[0], str(error.theirs or "")))
                return
            raise
        except Refused as error:
            if op == "retry" and not kwargs.get("force") and not isinstance(error, ReadOnly):
                self.post_message(RetryRefused(args[0], error))
                return
            raise
        self.post_message(ActionDone(text))
        if op == "ack_note":
            self.call_from_thread(self._acknowledged)
        self.call_from_thread(self.reload)

    def _acknowledged(self) -> None:
        if self.main is not None:
            self.main.mark_acknowledged()

    def edit_note(self, text: str, *, base: str) -> None:
        """Open the note editor on `text`; save with `base` (the note in the ledger when the
        edit started) so an edit made underneath is detected."""
        unchanged = clean(base)

        def done(new_text: str | None) -> None:
            # Compared with what is in the ledger, not with what the editor opened on: a merge
            # saved as offered differs from the ledger's note and must be written. A note equal
            # to the ledger's is not (that would only bump the revision, and replace control
            # characters by their stand-ins), and the operator is told.
            if new_text is None:
                return
            if new_text == unchanged:
                self.notify("Handoff note unchanged; nothing saved.", timeout=3, markup=False)
                return
            self.mutate("set_note", new_text, base)

        self.push_screen(NoteEditor(text), done)

    def edit_note_or_draft(self, current: str) -> None:
        """`e`: the note, or the draft a conflict left (merged with the note as it is now)."""
        draft, self.note_draft = self.note_draft, None
        self.edit_note(merged(draft, current) if draft is not None else current, base=current)

    def on_action_done(self, message: ActionDone) -> None:
        self.notify(message.text, timeout=3, markup=False)

    def on_note_conflict(self, message: NoteConflict) -> None:
        mine, theirs = message.mine, message.theirs

        def chosen(choice: str | None) -> None:
            if choice == "mine":
                self.mutate("set_note", mine, theirs)
            elif choice == "merge":
                self.edit_note(merged(mine, theirs), base=theirs)
            elif choice == "theirs":
                self.notify("Kept their note; your edit was not saved.", markup=False)
                self.reload()
            else:
                # Escape decides nothing: the words stay, for the next `e`.
                self.note_draft = mine
                self.notify("Nothing saved; your text is kept as a draft: e opens it again, merged with theirs.",
                            markup=False)
                self.reload()

        self.push_screen(NoteConflictScreen(mine, theirs), chosen)

    def on_retry_refused(self, message: RetryRefused) -> None:
        name = message.target

        def done(reason: Reason | None) -> None:
            if reason is not None:
                self.mutate("retry", name, force=True, reason=reason.text)

        self.push_screen(ReasonPrompt(
            f"Force retry of {name}?",
            f"{message.error.message}\n\nThe failed step may have half-happened. Forcing runs it again; "
            "say why (this goes to the journal).",
            ok_label="Force retry", danger=True), done)
