"""The app's changing side (a mixin of `HandoffApp`): one worker runs each engine change.

A change travels as a typed request (`tui.requests`: the target, step, hash and revision
the operator saw). It is never cancelled by the next one. Its outcome comes back only as
a Message: `RequestDone` (a note, then a re-read), or the dialog the request turns an
engine refusal into (a note conflict: both texts, the operator chooses; a refused plain
retry: offer a forced one with a reason, the one typed for it if any). Words the request
carried (a note, a reason, an approval's comment) are never lost to a refusal: the error
view says so, and the prompt they came from opens on them again (`drafts`, taken by
`take_draft`). Words bound to a request (a reject's reason: tui.asked) are kept only while
the target still asks it: a refusal finding it gone quotes them instead, and a reading
without it drops them (`drop_gone_drafts`). Any other engine error ends in the app's one error view. A read-only view refuses before calling the engine at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import work

from engine.api import HandoffError, ReadOnly
from tui.asked import asked_now
from tui.messages import Draft, NoteConflict, NotSaved, RetryRefused
from tui.requests import AckNote, ApproveBatch, Request, RequestDone, Retry, SetNote
from tui.screens.reason import Reason, ReasonPrompt
from tui.text import clean

if TYPE_CHECKING:
    from tui.controller import Controller
    from tui.host import MainView


class Mutations:
    """Mutation worker and the dialogs its outcomes open."""

    controller: Controller
    main: MainView | None
    read_only: bool
    read_only_reason: str | None
    drafts: dict[tuple[str, str | None], Draft]

    def submit(self, request: Request) -> None:
        """Run `request` in a worker. Not exclusive: an operator's change is never cancelled by the next."""
        self._run_request(request)

    @work(thread=True, exit_on_error=False, group="mutate")
    def _run_request(self, request: Request) -> None:
        if self.read_only:
            raise ReadOnly(f"read-only: {request.verb} refused ({self.read_only_reason}); nothing was changed.")
        try:
            text = request.run(self.controller)
        except HandoffError as error:
            answer = request.answer(error)
            if answer is None:
                raise
            if isinstance(answer, NotSaved) and not self._still_asked(answer.draft):
                answer = NotSaved(answer.draft, error, kept=False)
            self.post_message(answer)
            return
        self.post_message(RequestDone(request, text))

    def _still_asked(self, draft: Draft) -> bool:
        """Does the target still ask what `draft` was typed for? (In the worker: a fresh reading;
        one that cannot be read says nothing is gone, and the words are kept.)"""
        if draft.asked is None:
            return True
        try:
            ledger = self.controller.read().ledger
        except (HandoffError, OSError):
            return True
        return asked_now(self.controller, ledger, draft.key[1]) == draft.asked

    def drop_gone_drafts(self, ledger) -> None:
        """A new reading: words bound to a request the target no longer asks go (never offered to the next one)."""
        for key, draft in list(self.drafts.items()):
            if draft.asked is not None and asked_now(self.controller, ledger, key[1]) != draft.asked:
                del self.drafts[key]

    def on_request_done(self, message: RequestDone) -> None:
        self.notify(message.text, timeout=3, markup=False)
        if isinstance(message.request, AckNote) and self.main is not None:
            self.main.mark_acknowledged()
        if isinstance(message.request, ApproveBatch) and self.main is not None:
            self.main.batch_approved(message.request.targets)
        self.reload()

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
            self.submit(SetNote(self._revision(), new_text, base))

        from tui.screens.note_editor import NoteEditor  # a TextArea: loaded when a note is first edited, not at start

        self.push_screen(NoteEditor(text), done)

    def edit_note_or_draft(self, current: str) -> None:
        """`e`: the note, or the draft a conflict left (merged with the note as it is now)."""
        from tui.screens.note_editor import merged

        draft = self.take_draft(SetNote.verb)
        self.edit_note(merged(draft, current) if draft is not None else current, base=current)

    def on_note_conflict(self, message: NoteConflict) -> None:
        from tui.screens.note_editor import NoteConflictScreen, merged

        mine, theirs = message.mine, message.theirs

        def chosen(choice: str | None) -> None:
            if choice == "mine":
                self.submit(SetNote(self._revision(), mine, theirs))
            elif choice == "merge":
                self.edit_note(merged(mine, theirs), base=theirs)
            elif choice == "theirs":
                self.notify("Kept their note; your edit was not saved.", markup=False)
                self.reload()
            else:
                # Escape decides nothing: the words stay, for the next `e`.
                self.drafts[SetNote.verb, None] = Draft((SetNote.verb, None), mine, "note", "e opens it again")
                self.notify("Nothing saved; your text is kept as a draft: e opens it again, merged with theirs.",
                            markup=False)
                self.reload()

        self.push_screen(NoteConflictScreen(mine, theirs), chosen)

    def on_not_saved(self, message: NotSaved) -> None:
        """The engine's refusal in the error view, and the operator's words kept for the prompt they came from."""
        from tui.screens.error import ErrorScreen

        draft = message.draft
        if not message.kept:  # typed for a request the target no longer asks: said, not offered to the next
            self.push_screen(ErrorScreen(message.error.title, f"{message.error}\n\nYour {draft.what} was not saved, and "
                                         f"is not kept: {draft.key[1]} no longer asks what it was typed for. "
                                         f"It was: {draft.text}"))
            return
        self.drafts[draft.key] = draft
        self.push_screen(ErrorScreen(message.error.title, f"{message.error}\n\nYour {draft.what} was not saved; "
                                     f"it is kept as a draft: {draft.reopen}."))

    def take_draft(self, verb: str, target: str | None = None) -> str | None:
        """The words a refused request left for the prompt of `verb` (on `target`), taken: they open once."""
        draft = self.drafts.pop((verb, target), None)
        return draft.text if draft is not None else None

    def on_retry_refused(self, message: RetryRefused) -> None:
        name = message.target
        if message.draft is not None:  # the reason typed for the plain retry is the forced one's
            self.drafts[message.draft.key] = message.draft

        def done(reason: Reason | None) -> None:
            if reason is not None:
                self.submit(Retry(self._revision(), name, force=True, reason=reason.text))

        self.push_screen(ReasonPrompt(
            f"Force retry of {name}?",
            f"{message.error.message}\n\nThe failed step may have half-happened. Forcing runs it again; "
            "say why (this goes to the journal).",
            ok_label="Force retry", danger=True, value=self.take_draft(Retry.verb, name) or ""), done)

    def _revision(self) -> int | None:
        """The revision on screen now (what the operator saw when they chose)."""
        ledger = getattr(self.main, "ledger", None)
        return getattr(ledger, "revision", None)
