"""The timeline (`T`, `:timeline [TARGET]`): the journal over time, one page at a time, read-only.

Each row is one journal record (sequence, time, revision, kind, actor, target, message);
`[` and `]` page to older and newer records (a page holds `PAGE`; a long rollout's journal
is never put on screen whole). The table always fits the screen's width (at 80x24 too): the
"What" column takes what the others leave and ends in `…` where it is longer, and the
selected record's message is shown below the table (three lines of it: `handoff journal`
has every record whole), so no line needs scrolling sideways (a scrollbar that came and
went took the newest row out of view). Enter shows every target as the journal says it
was at the selected record's revision, rebuilt by the engine (`handoff show --at`'s rebuild). Journal text is data: every cell is a
`rich.text.Text` with control characters made visible, never markup. Nothing here writes;
the reads run in this screen's worker and come back as Messages.
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
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
WHAT_MIN = 12  # on a screen narrower than the other columns need, "What" keeps this much (and the table scrolls)


class TimelineLoaded(Message):
    """A page of the journal, read by the worker."""

    def __init__(self, page: TimelinePage) -> None:
        super().__init__()
        self.page = page


class StateLoaded(Message):
    """The targets rebuilt at revision `rev`, asked for on the page shown as number `page`."""

    def __init__(self, rev: int, states: dict[str, dict[str, Any]], page: int) -> None:
        super().__init__()
        self.rev = rev
        self.states = states
        self.page = page


def record_row(record: dict[str, Any]) -> tuple[Text, ...]:
    """One record as table cells (data, never markup)."""
    rev = record.get("rev")
    return (Text(str(record.get("seq", "")), justify="right"), one_line(short_time(record.get("ts"))),
            Text("" if rev is None else str(rev), justify="right"), one_line(record.get("kind", "")),
            one_line(record.get("actor", "")), one_line(record.get("target") or ""), one_line(record.get("msg", "")))


def fitted_rows(records: list[dict[str, Any]], width: int, padding: int = 1) -> list[tuple[Text, ...]]:
    """The records' rows for a table `width` cells wide: every column but the last as wide as
    its widest cell (or its heading), the last ("What") cut to the room they leave, ending in
    `…`. `padding`: the table's cell padding on each side of every column."""
    rows = [record_row(record) for record in records]
    widths = [max([cell_len(heading)] + [row[i].cell_len for row in rows]) for i, heading in enumerate(COLUMNS[:-1])]
    room = max(WHAT_MIN, width - sum(widths) - 2 * padding * len(COLUMNS))
    for row in rows:
        row[-1].truncate(room, overflow="ellipsis")
    return rows


def record_text(record: dict[str, Any]) -> Text:
    """The selected record's message (data, never markup): `#41978 transition by bob: ...`."""
    who = f" by {record['actor']}" if record.get("actor") else ""
    return Text(clean_line(f"#{record.get('seq', '')} {record.get('kind', '')}{who}: {record.get('msg', '')}"), end="")


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


class RecordTable(DataTable[Text]):
    """The timeline's table: when it gets shorter or narrower (the state then shown below it,
    a resize), the cursor's row is scrolled back into view."""

    def on_resize(self) -> None:
        self.call_after_refresh(self._keep_cursor)

    def _keep_cursor(self) -> None:
        self.move_cursor(row=self.cursor_row, animate=False)  # the row it is on when this runs


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
    TimelineScreen #timeline-record { height: 3; }
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
        self._fitted = -1  # the width the rows were cut for
        self._pending: int | None = None  # the row the cursor is being put on (see _fill)
        self._pages = 0  # pages shown so far: the state then belongs to the page it was asked on

    def compose(self) -> ComposeResult:
        yield Label("Journal timeline (read-only): loading…", id="timeline-title")
        table = RecordTable(id="timeline-table", cursor_type="row", zebra_stripes=True)
        table.add_columns(*COLUMNS)
        yield table
        yield Static("", id="timeline-record", markup=False)
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
    def load_state(self, rev: int, page: int) -> None:
        self.post_message(StateLoaded(rev, self.controller.state_at(rev), page))

    # -- showing ------------------------------------------------------------------------

    def on_timeline_loaded(self, message: TimelineLoaded) -> None:
        page = self.page = message.page
        self._pages += 1
        self.query_one("#timeline-state", Static).update("")  # the state then was of a record of the page before
        whose = f" of {clean_line(page.target)}" if page.target is not None else ""
        shown = f"records {page.start + 1}–{page.start + len(page.records)} of {page.total}" if page.records else "no records"
        self.query_one("#timeline-title", Label).update(Text(
            f"Journal timeline{whose} (read-only): {shown} · newest revision {page.head_rev}", end=""))
        # The newest page opens on its newest record; an older one on its first.
        self._fill(len(page.records) - 1 if page.start + len(page.records) == page.total else 0)

    def _fill(self, row: int) -> None:
        """The page's rows, fitted to `_width` (a page is longer than a screen is high: it has a
        vertical scrollbar), with the cursor on `row` once they are laid out (the table must
        know its rows' places before it can scroll to one)."""
        table = self.query_one(DataTable)
        page = self.page
        self._fitted = self._width(table)
        table.clear(columns=True)  # columns too: a kept column only ever widens (a narrower screen would scroll again)
        table.add_columns(*COLUMNS)
        if page is None or not page.records:
            self._pending = None
            self.query_one("#timeline-record", Static).update("")
            return
        for cells in fitted_rows(page.records, self._fitted, table.cell_padding):
            table.add_row(*cells)
        self._pending = row  # where the cursor goes: until it is there, a resize keeps this row, not clear()'s 0
        self.call_after_refresh(self._show_row, row)

    def _show_row(self, row: int) -> None:
        """Put the cursor on `row` and scroll it into view."""
        self.query_one(DataTable).move_cursor(row=row, animate=False)
        if row == self._pending:
            self._pending = None
        self._show_record()

    def _show_record(self) -> None:
        """The record under the cursor, below the table (its first three lines)."""
        table = self.query_one(DataTable)
        records = self.page.records if self.page is not None else []
        if 0 <= table.cursor_row < len(records):
            self.query_one("#timeline-record", Static).update(record_text(records[table.cursor_row]))

    def _width(self, table: DataTable[Text]) -> int:
        """What the rows may take: the table's width (the app's before it is laid out) less a vertical scrollbar's."""
        return (table.size.width or self.app.size.width) - table.styles.scrollbar_size_vertical

    def on_resize(self) -> None:
        table = self.query_one(DataTable)
        if self.page is not None and self._width(table) != self._fitted:
            self._fill(self._pending if self._pending is not None else table.cursor_row)

    def on_data_table_row_highlighted(self) -> None:
        self._show_record()

    def on_state_loaded(self, message: StateLoaded) -> None:
        if message.page == self._pages:  # not once another page is shown
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
            self.load_state(rev, self._pages)

    def action_close(self) -> None:
        self.dismiss(None)
