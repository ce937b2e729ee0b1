"""The handoff-note panel: shown on open, above the table, leaving header and first rows visible.

It carries the note (plain text, control characters made visible), who wrote
it and when, and the "since you last looked" digest. Its height is capped so
the table stays in view; the note scrolls inside it.
"""

from __future__ import annotations

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
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        # Made here, not looked up: `show` may run before they are mounted.
        self.note_text = Static(id="note-text")
        self.since_text = Static(id="note-since")

    def compose(self) -> ComposeResult:
        yield self.note_text
        yield self.since_text

    def show(self, note: str | None, by: str | None, at: str | None, acknowledged: bool, since: list[str],
             *, read_only: bool = False) -> None:
        """Repaint with the note, its author and time, and the since-last-look lines."""
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
        since_widget = self.since_text
        since_widget.display = bool(since)
        if since:
            body = Text("Since you last looked:\n", style="bold", end="")
            body.append("\n".join(f"  • {clean_line(line)}" for line in since))
            since_widget.update(body)
