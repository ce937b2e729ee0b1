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

    controller: "Controller"
    main: "MainScreen | None"
    read_only: bool
    read_only_reason: str | None

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
        """Open the note editor; save with `base` so an edit made underneath is detected."""
        shown = clean(text)

        def done(new_text: str | None) -> None:
            # The editor shows control characters as stand-ins; an untouched note is not saved
            # (that would only bump the revision, and replace the characters by their stand-ins).
            if new_text is not None and new_text != shown:
                self.mutate("set_note", new_text, base)

        self.push_screen(NoteEditor(text), done)

    def on_action_done(self, message: ActionDone) -> None:
        self.notify(message.text, timeout=3, markup=False)

    def on_note_conflict(self, message: NoteConflict) -> None:
        mine, theirs = message.mine, message.theirs

        def chosen(choice: str | None) -> None:
            if choice == "mine":
                self.mutate("set_note", mine, theirs)
            elif choice == "merge":
                self.edit_note(merged(mine, theirs), base=theirs)
            else:
                self.notify("Kept their note; your edit was not saved.", markup=False)
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
