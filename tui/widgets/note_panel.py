"""The handoff-note panel: shown on open, above the table, leaving header and first rows visible.

It carries the note (plain text, control characters made visible), who wrote
it and when, the note it replaced (a human's words a session's note pushed
aside), and the "since you last looked" digest. Its height is capped so
the table stays in view; the note scrolls inside it.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from tui.text import clean_line, safe
from tui.timefmt import short_time


class NotePanel(VerticalScroll):
    """Handoff note + since-you-last-looked, in a bordered, height-capped box."""

    DEFAULT_CSS = """
    NotePanel { height: auto; max-height: 10; }
    NotePanel #note-since { margin-top: 1; }
    NotePanel #note-previous { margin-top: 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        # Made here, not looked up: `show` may run before they are mounted.
        self.note_text = Static(id="note-text")
        self.previous_text = Static(id="note-previous")
        self.since_text = Static(id="note-since")

    def compose(self) -> ComposeResult:
        yield self.note_text
        yield self.previous_text
        yield self.since_text

    def show(self, note: str | None, by: str | None, at: str | None, acknowledged: bool, since: list[str],
             previous: Any = None, *, read_only: bool = False) -> None:
        """Repaint with the note, its author and time, the note it replaced (`previous`:
        the ledger's `previous_note`, with text, by, at) and the since-last-look lines."""
        title = Text("Handoff note", style="bold", end="")
        if by:
            title.append(f" by {clean_line(by)}")
        if at:
            title.append(f" at {short_time(at)}")
        if acknowledged:
            title.append("  ✓ acknowledged")
        self.border_title = title
        # Only what this view can do: a read-only observer can hide the panel, nothing more.
        self.border_subtitle = Text("n hide" if read_only else "n hide · N acknowledge · e edit", end="")
        self.note_text.update(safe(note.rstrip()) if note else Text("(no handoff note yet)", style="dim"))
        self.previous_text.display = previous is not None
        if previous is not None:
            head = Text("Previous note", style="bold", end="")
            if previous.by:
                head.append(f" by {clean_line(previous.by)}")
            if previous.at:
                head.append(f" at {short_time(previous.at)}")
            head.append(":\n")
            head.append_text(safe(previous.text.rstrip(), style="dim"))
            self.previous_text.update(head)
        since_widget = self.since_text
        since_widget.display = bool(since)
        if since:
            body = Text("Since you last looked:\n", style="bold", end="")
            body.append("\n".join(f"  • {clean_line(line)}" for line in since))
            since_widget.update(body)
