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

SHORT = 30  # screens shorter than this show the note in one line until n expands it


class NotePanel(VerticalScroll):
    """Handoff note + since-you-last-looked, in a bordered, height-capped box."""

    DEFAULT_CSS = """
    NotePanel { height: auto; max-height: 10; }
    NotePanel.-collapsed { border: none; padding: 0 1; max-height: 5; }
    NotePanel.-collapsed #note-since { margin-top: 0; }
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
             previous: Any = None, *, read_only: bool = False, collapsed: bool = False) -> None:
        """Repaint with the note, its author and time, the note it replaced (`previous`:
        the ledger's `previous_note`, with text, by, at) and the since-last-look lines.
        `collapsed` (a short screen): the note in one line, and at most three changes."""
        self.set_class(collapsed, "-collapsed")
        if collapsed:
            self._show_collapsed(note, by, at, acknowledged, since)
            return
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

    def _show_collapsed(self, note: str | None, by: str | None, at: str | None, acknowledged: bool,
                        since: list[str]) -> None:
        # One line for the note: who, when, its first words, and the key that opens it.
        hint = "  n expands"
        head = "✎ note" + (f" by {clean_line(by)}" if by else "") + (f" {short_time(at)}" if at else "")
        head += " ✓" if acknowledged else ""
        first = clean_line((note or "(no handoff note yet)").strip().splitlines()[0] if note and note.strip() else
                           "(no handoff note yet)")
        room = max(10, (self.size.width or self.app.size.width) - 2 - len(head) - len(hint) - 2)
        if len(first) > room:
            first = first[: room - 1] + "…"
        line = Text(head + ": ", style="bold", end="", no_wrap=True, overflow="ellipsis")
        line.append(first)
        line.append(hint, style="dim")
        self.note_text.update(line)
        self.previous_text.display = False
        # The changes since the last look are the news of a new shift: they stay in sight.
        self.since_text.display = bool(since)
        if since:
            body = Text("Since you last looked: ", style="bold", end="")
            shown = since[:3]
            body.append("\n".join(f"• {clean_line(item)}" for item in shown))
            if len(since) > len(shown):
                body.append(f"\n… {len(since) - len(shown)} more (n expands)")
            self.since_text.update(body)
