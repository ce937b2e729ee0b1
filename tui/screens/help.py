"""Help (`?`): every key that works right now, with what it does, built from the bindings.

The main screen hands over its sections (from `BINDINGS` descriptions and
tooltips, after read-only mode took out what it cannot do) plus the `:` commands;
nothing here is a second table of keys. The dialog fits 80x24; the long tail
scrolls.
"""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from tui.widgets.keybar import KeyBar

Section = tuple[str, list[tuple[str, str]]]


def help_text(sections: list[Section]) -> Group:
    """Each section as a two-column grid (keys right-aligned, descriptions wrapping beside them)."""
    parts = []
    for n, (title, rows) in enumerate(sections):
        parts.append(Text(("\n" if n else "") + title, style="bold underline"))
        grid = Table.grid(padding=(0, 2))
        grid.add_column(justify="right", style="bold", no_wrap=True)
        grid.add_column(ratio=1)
        for key, description in rows:
            grid.add_row(Text(key), Text(description))
        parts.append(grid)
    return Group(*parts)


class HelpScreen(ModalScreen[None]):
    """Keys and what they do.

    | Key | Action | What it does |
    |---|---|---|
    | escape,question_mark,q | close_help | Close help |
    """

    BINDINGS = [
        Binding("escape,question_mark,q", "close_help", "Close", id="help.close", key_display="esc"),
    ]

    def __init__(self, sections: list[Section], mode_line: str) -> None:
        super().__init__(classes="modal-screen")
        self.sections = sections
        self.mode_line = mode_line

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog help"):
            yield Label("handoff-tui: keys", classes="dialog-title")
            yield Label(self.mode_line, id="help-mode")
            with VerticalScroll(id="help-scroll"):
                yield Static(help_text(self.sections), id="help-keys")
        yield KeyBar()

    def on_mount(self) -> None:
        scroll = self.query_one("#help-scroll")
        # Everything but the dialog's frame, title, mode line and the footer: the long tail scrolls.
        scroll.styles.max_height = max(5, self.app.size.height - 8)
        scroll.focus()

    def on_resize(self, event) -> None:
        self.query_one("#help-scroll").styles.max_height = max(5, event.size.height - 8)

    def action_close_help(self) -> None:
        self.dismiss(None)
