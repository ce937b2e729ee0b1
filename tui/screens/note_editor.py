"""The handoff-note editor and its conflict view.

`NoteEditor` edits the note in a TextArea and returns the new text (ctrl+s) or
None (escape; when there are unsaved edits it asks first). Control characters in
the note are shown as visible stand-ins (`␛`), and what is saved is what was
shown: an `ESC[2J` in a note can never reach the terminal through the editor.
The app saves with `base=` the text the edit started from; when the engine
answers `Conflict`, `NoteConflictScreen` shows both texts side by side and the
operator chooses: keep mine, take theirs, or merge by editing. Nothing is
overwritten without that choice.
"""

from __future__ import annotations

from typing import Literal

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static, TextArea

from tui.screens.confirm import ConfirmScreen
from tui.text import clean, safe
from tui.widgets.keybar import KeyBar

Choice = Literal["mine", "theirs", "merge"]


class NoteEditor(ModalScreen[str | None]):
    """Edit the handoff note.

    | Key | Action | What it does |
    |---|---|---|
    | ctrl+s | save | Save the note |
    | escape | cancel | Close (asks first when there are unsaved edits) |
    """

    BINDINGS = [
        Binding("ctrl+s", "save", "Save note", id="note.save", priority=True),
        Binding("escape", "cancel", "Cancel", id="note.cancel"),
    ]

    def __init__(self, text: str, *, title: str = "Edit handoff note") -> None:
        super().__init__(classes="modal-screen")
        # What the editor shows (and saves): the note with its control characters made visible.
        self.initial = clean(text)
        self.editor_title = title

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog note-editor"):
            yield Label(self.editor_title, id="note-editor-title", classes="dialog-title")
            yield Label("What is in flight, what waits on whom, what must not be touched.", classes="hint")
            yield TextArea(self.initial, id="note-area", soft_wrap=True, show_line_numbers=False)
            with Horizontal(classes="buttons"):
                yield Button("Save (ctrl+s)", id="save", variant="primary")
                yield Button("Cancel (esc)", id="cancel")
        yield KeyBar()

    def on_mount(self) -> None:
        area = self.query_one("#note-area", TextArea)
        area.focus()
        area.move_cursor(area.document.end)

    @property
    def text(self) -> str:
        return self.query_one("#note-area", TextArea).text

    def action_save(self) -> None:
        # ctrl+s is a priority binding, handled as it reaches the app; keys typed just
        # before it (a paste, a fast typist over SSH) may still wait in the TextArea's
        # own queue. Read the text after the TextArea has processed them.
        self.query_one("#note-area", TextArea).call_later(self._save_now)

    def _save_now(self) -> None:
        if self.is_current:
            self.dismiss(clean(self.text))  # a control character pasted in is saved as its stand-in

    def action_cancel(self) -> None:
        # Read after queued keys, as for save: the last keystrokes count as edits too.
        self.query_one("#note-area", TextArea).call_later(self._cancel_now)

    def _cancel_now(self) -> None:
        if not self.is_current:
            return
        if self.text == self.initial:
            self.dismiss(None)
            return

        def answered(discard: bool | None) -> None:
            if discard:
                self.dismiss(None)

        self.app.push_screen(ConfirmScreen("Discard your edits to the handoff note?",
                                           "They are not saved anywhere. ctrl+s saves them instead.",
                                           yes="Discard", no="Keep editing", danger=True), answered)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "save":
            self.action_save()
        else:
            self.action_cancel()


class NoteConflictScreen(ModalScreen[Choice | None]):
    """Both notes side by side; the operator picks.

    | Key | Action | What it does |
    |---|---|---|
    | m | choose('mine') | Save my text over theirs (deliberately) |
    | t | choose('theirs') | Discard my edit, keep theirs |
    | e | choose('merge') | Edit a merge of both |
    | escape | cancel | Decide later (theirs stays; my text is kept as a draft for e) |
    """

    BINDINGS = [
        Binding("m", "choose('mine')", "Keep mine", id="conflict.mine"),
        Binding("t", "choose('theirs')", "Take theirs", id="conflict.theirs"),
        Binding("e", "choose('merge')", "Merge", id="conflict.merge"),
        Binding("escape", "cancel", "Cancel", id="conflict.cancel"),
    ]

    def __init__(self, mine: str, theirs: str) -> None:
        super().__init__(classes="modal-screen")
        self.mine = mine
        self.theirs = theirs

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog conflict -danger"):
            yield Label("The handoff note changed while you were editing it", classes="dialog-title")
            yield Label("Nothing was saved. Compare, then choose.", classes="hint")
            with Horizontal(id="conflict-sides"):
                with VerticalScroll(id="conflict-mine", classes="conflict-side"):
                    yield Static(safe(self.mine))
                with VerticalScroll(id="conflict-theirs", classes="conflict-side"):
                    yield Static(safe(self.theirs))
            with Horizontal(classes="buttons"):
                yield Button("Keep mine (m)", id="mine", variant="error")
                yield Button("Take theirs (t)", id="theirs", variant="primary")
                yield Button("Merge (e)", id="merge")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#conflict-mine").border_title = "Mine"
        self.query_one("#conflict-theirs").border_title = "Theirs (now in the ledger)"
        self.query_one("#merge", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id)  # type: ignore[arg-type]

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)  # type: ignore[arg-type]

    def action_cancel(self) -> None:
        self.dismiss(None)


def merged(mine: str, theirs: str) -> str:
    """A starting point for a manual merge: theirs first (it is what is saved), then mine."""
    return f"{theirs.rstrip()}\n\n--- my version (edit, then delete this line) ---\n{mine.rstrip()}\n"
