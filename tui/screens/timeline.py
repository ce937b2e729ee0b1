"""The timeline (`T`, `:timeline [TARGET]`): the journal over time, one page at a time, read-only.

Each row is one journal record (sequence, time, revision, kind, actor, target, message);
`[` and `]` page to older and newer records (a page holds `PAGE`; a long rollout's journal
is never put on screen whole). Enter shows every target as the journal says it was at the
selected record's revision, rebuilt by the engine (`handoff show --at`'s rebuild). Journal
text is data: every cell is a `rich.text.Text` with control characters made visible, never
markup. Nothing here writes; the reads run in this screen's worker and come back as
Messages.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Label, Static

from engine.api import REBUILT_FROM, TimelinePage
from tui.text import clean_line, one_line
from tui.timefmt import short_time
from tui.widgets.keybar import KeyBar

PAGE = 100  # records per page
COLUMNS = ("Seq", "Time", "Rev", "Kind", "Actor", "Target", "What")


class TimelineLoaded(Message):
    """A page of the journal, read by the worker."""

    def __init__(self, page: TimelinePage) -> None:
        super().__init__()
        self.page = page


class StateLoaded(Message):
    """The targets rebuilt at revision `rev`."""

    def __init__(self, rev: int, states: dict[str, dict[str, Any]]) -> None:
        super().__init__()
        self.rev = rev
        self.states = states


def record_row(record: dict[str, Any]) -> tuple[Text, ...]:
    """One record as table cells (data, never markup)."""
    rev = record.get("rev")
    return (Text(str(record.get("seq", "")), justify="right"), one_line(short_time(record.get("ts"))),
            Text("" if rev is None else str(rev), justify="right"), one_line(record.get("kind", "")),
            one_line(record.get("actor", "")), one_line(record.get("target") or ""), one_line(record.get("msg", "")))


def state_text(rev: int, states: dict[str, dict[str, Any]], target: str | None) -> Text:
    """`At revision 12: db-01 done · db-02 awaiting_approval (cutover) ...`, one target per line."""
    text = Text(f"At revision {rev} ({REBUILT_FROM}):\n", style="bold", end="")
    names = [target] if target is not None and target in states else sorted(states)
    if not names:
        text.append("no target has a journal record by this revision")
    for name in names:
        t = states[name]
        extra = (f" (awaiting {t['awaiting']})" if t.get("awaiting") else "") + \
                (f", in flight: {t['in_flight']}" if t.get("in_flight") else "") + \
                (f", checkpoint {t['checkpoint']}" if t.get("checkpoint") else "")
        text.append(clean_line(f"  {name}: {t['state']}{extra}") + "\n")
    return text


class TimelineScreen(Screen[None]):
    """The journal, page by page; the targets at any record's revision.

    | Key | Action | What it does |
    |---|---|---|
    | escape,q | close | Back |
    | left_square_bracket | older | Older records (the previous page) |
    | right_square_bracket | newer | Newer records (the next page) |
    | enter | state_at | The targets as they were at the selected record's revision |
    """

    DEFAULT_CSS = """
    TimelineScreen #timeline-table { height: 1fr; }
    TimelineScreen #timeline-state { height: auto; max-height: 12; }
    """

    BINDINGS = [
        Binding("escape,q", "close", "Back", id="timeline.close", key_display="esc"),
        Binding("left_square_bracket", "older", "Older", id="timeline.older", key_display="[",
                tooltip="The previous page: older journal records"),
        Binding("right_square_bracket", "newer", "Newer", id="timeline.newer", key_display="]",
                tooltip="The next page: newer journal records"),
        Binding("enter", "state_at", "State then", id="timeline.state_at", priority=True,
                tooltip="Show every target as the journal says it was at the selected record's revision"),
    ]

    def __init__(self, controller: Any, target: str | None = None) -> None:
        super().__init__(classes="timeline-screen")
        self.controller = controller  # the engine's port (tui.controller.Controller): reads only
        self.target = target
        self.page: TimelinePage | None = None

    def compose(self) -> ComposeResult:
        yield Label("Journal timeline (read-only): loading…", id="timeline-title")
        table: DataTable[Text] = DataTable(id="timeline-table", cursor_type="row", zebra_stripes=True)
        table.add_columns(*COLUMNS)
        yield table
        yield Static("", id="timeline-state", markup=False)
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()
        self.load(None)

    # -- reading, in this screen's worker -------------------------------------------------

    @work(thread=True, exclusive=True, exit_on_error=False, group="timeline")
    def load(self, start: int | None) -> None:
        self.post_message(TimelineLoaded(self.controller.timeline(start, PAGE, self.target)))

    @work(thread=True, exclusive=True, exit_on_error=False, group="timeline-state")
    def load_state(self, rev: int) -> None:
        self.post_message(StateLoaded(rev, self.controller.state_at(rev)))

    # -- showing ------------------------------------------------------------------------

    def on_timeline_loaded(self, message: TimelineLoaded) -> None:
        page = self.page = message.page
        table = self.query_one(DataTable)
        table.clear()
        for record in page.records:
            table.add_row(*record_row(record))
        whose = f" of {clean_line(page.target)}" if page.target is not None else ""
        shown = f"records {page.start + 1}–{page.start + len(page.records)} of {page.total}" if page.records else "no records"
        self.query_one("#timeline-title", Label).update(Text(
            f"Journal timeline{whose} (read-only): {shown} · newest revision {page.head_rev}", end=""))
        if page.records:
            # The newest page opens on its newest record; an older one on its first. After the
            # refresh: the rows must be laid out before the table can scroll to the cursor.
            row = len(page.records) - 1 if page.start + len(page.records) == page.total else 0
            self.call_after_refresh(table.move_cursor, row=row, animate=False)

    def on_state_loaded(self, message: StateLoaded) -> None:
        self.query_one("#timeline-state", Static).update(state_text(message.rev, message.states, self.target))

    # -- keys ---------------------------------------------------------------------------

    def action_older(self) -> None:
        if self.page is not None and self.page.start > 0:
            self.load(max(0, self.page.start - PAGE))

    def action_newer(self) -> None:
        page = self.page
        if page is not None and page.start + len(page.records) < page.total:
            self.load(page.start + PAGE)

    def selected_rev(self) -> int | None:
        """The revision the selected record made, or the last one made before it on this page."""
        if self.page is None or not self.page.records:
            return None
        row = self.query_one(DataTable).cursor_row
        for record in reversed(self.page.records[: row + 1]):
            if isinstance(record.get("rev"), int):
                return int(record["rev"])
        return 0

    def action_state_at(self) -> None:
        rev = self.selected_rev()
        if rev is not None:
            self.load_state(rev)

    def action_close(self) -> None:
        self.dismiss(None)
