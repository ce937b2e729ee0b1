"""The target table: a virtual table on Textual's Line API, fast at 10,000 targets.

A stock `DataTable` measures every cell of every row when rows are added (about
3.8 s for 10,000 rows). This table keeps each row as a tuple of cleaned
strings, lays its columns out for the width it has (`tui.widgets.columns`), and
renders only the lines on screen (`render_line`). When the ledger changes it
diffs old and new rows and repaints only the changed lines that are visible;
changed rows are highlighted briefly. Targets the engine last wrote but the
file lost stay on as `∅ missing from file` rows. Marked rows (for a batch
approval) carry `*` in the gutter's third cell, in every colour mode; marks are
view state, kept across re-readings for every target still shown. While the file does not parse,
every row is drawn dim and the header says how old the state shown is.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.events import Resize
from textual.geometry import Offset, Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tui.states import TONES, look
from tui.text import clean_line
from tui.timefmt import Clock, ago, parse_ts, utcnow
from tui.widgets.columns import GUTTER, Column, fit, layout, total_width
from tui.widgets.table_view import (
    SORTS,
    Row,
    View,
    missing_row,
    order_with_missing,
    queue_position,
    row_of,
    state_cell,
    view_order,
    wants_person,
)

if TYPE_CHECKING:
    from engine.api import Ledger

FLASH_SECONDS = 2.0
MARK = "*"  # ASCII: one cell in every terminal and font; `✓` is the done state's symbol
AGE_TICK = 1.0  # seconds between repaints of the age column (only its visible cells)



class TargetTable(ScrollView, can_focus=True):
    """Targets, one per line, with cursor, sort and filter.

    | Key | Action | What it does |
    |---|---|---|
    | enter | select | Open the target's detail |
    | up,k | cursor_up | Move the cursor up |
    | down,j | cursor_down | Move the cursor down |
    | pageup | page_up | Move a screenful up |
    | pagedown | page_down | Move a screenful down |
    | ctrl+u | half_page_up | Move half a screen up |
    | ctrl+d | half_page_down | Move half a screen down |
    | home,g | first | Jump to the first row |
    | end,G | last | Jump to the last row |
    | right_square_bracket | next_attention | Next target that needs a human |
    | left_square_bracket | previous_attention | Previous target that needs a human |
    """

    BINDINGS = [
        Binding("enter", "select", "Detail", id="table.select", tooltip="Open the selected target's detail: fields, what would run next, history"),
        Binding("up,k", "cursor_up", "Up", show=False, id="table.up", key_display="↑/k"),
        Binding("down,j", "cursor_down", "Down", show=False, id="table.down", key_display="↓/j"),
        Binding("pageup", "page_up", "Page up", show=False, id="table.page_up", key_display="pgup"),
        Binding("pagedown", "page_down", "Page down", show=False, id="table.page_down", key_display="pgdn"),
        Binding("ctrl+u", "half_page_up", "Half page up", show=False, id="table.half_up", key_display="^u"),
        Binding("ctrl+d", "half_page_down", "Half page down", show=False, id="table.half_down", key_display="^d"),
        Binding("home,g", "first", "First row", show=False, id="table.first", key_display="home/g"),
        Binding("end,G", "last", "Last row", show=False, id="table.last", key_display="end/G"),
        Binding("right_square_bracket", "next_attention", "Next", id="table.next_attention", key_display="]",
                tooltip="Next target that needs a human: awaiting, failed, blocked, drifted, changed outside the engine or missing"),
        Binding("left_square_bracket", "previous_attention", "Previous", show=False,
                id="table.previous_attention", key_display="[",
                tooltip="Previous target that needs a human"),
    ]

    COMPONENT_CLASSES = {
        "target-table--header",
        "target-table--cursor",
        "target-table--changed",
        "target-table--dim",
        "target-table--stale",
        *(f"target-table--{tone}" for tone in TONES),
    }

    DEFAULT_CSS = """
    TargetTable { height: 1fr; }
    """

    cursor = reactive(0, always_update=True)

    class Selected(Message):
        """Enter on a row: open the detail of `name`."""

        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    def __init__(self, *, clock: Clock | None = None, id: str | None = None) -> None:
        super().__init__(id=id)
        self._clock = clock or utcnow
        self._rows: dict[str, Row] = {}
        # The Target each row was built from: a reading that shares an unchanged target's
        # object (the store's snapshots do: copy on change) reuses its row, unbuilt.
        self._built_from: dict[str, object] = {}
        self._keys: list[str] = []  # ledger order (missing targets where they were)
        self._view = View()
        self._natural: dict[str, int] = {}
        self._columns: list[Column] = []
        self._laid_out_for = -1
        self._line_cache: dict[str, list[Segment]] = {}
        self._flash: dict[str, float] = {}
        self._haystack: dict[str, str] = {}
        self._changed_epoch: dict[str, float] = {}
        self.missing: set[str] = set()
        self._marked: set[str] = set()
        self.stale_label: str | None = None
        self.sort_key = "ledger"
        self.sort_reverse = False
        self.filter_text = ""

    # -- data ------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        """Rows shown (after the filter)."""
        return len(self._view.order)

    @property
    def total_count(self) -> int:
        """Rows in the table (missing targets included)."""
        return len(self._keys)

    @property
    def columns(self) -> list[Column]:
        """The columns as laid out now."""
        return list(self._columns)

    @property
    def cursor_name(self) -> str | None:
        """The target under the cursor, or None."""
        if not self._view.order:
            return None
        return self._view.order[min(self.cursor, len(self._view.order) - 1)]

    def visible_names(self) -> list[str]:
        """Names in display order (filtered and sorted); for tests and the palette."""
        return list(self._view.order)

    def row(self, name: str) -> Row | None:
        """The row of `name`, as shown."""
        return self._rows.get(name)

    def set_ledger(self, ledger: Ledger, missing: list[str] | tuple[str, ...] = ()) -> set[str]:
        """Show `ledger` (plus rows for `missing` names); returns the names whose rows changed.

        Only changed rows are rebuilt and repainted. The order is recomputed only
        when targets came or went, or when a change can move rows (a sort other
        than ledger order, or a filter).
        """
        first = not self._rows
        old_rows = self._rows
        built, rows_before = self._built_from, self._rows
        new_rows = {name: rows_before[name] if built.get(name) is target and name in rows_before else row_of(name, target)
                    for name, target in ledger.targets.items()}
        self._built_from = dict(ledger.targets)
        gone = [n for n in missing if n not in new_rows]
        for name in gone:
            new_rows[name] = missing_row(name, old_rows.get(name))
        keys = order_with_missing(self._keys, list(ledger.targets), gone)
        changed = {name for name, row in new_rows.items() if old_rows.get(name) != row}
        membership_changed = keys != self._keys
        cursor_before = self.cursor_name
        cursor_state = old_rows[cursor_before].state if cursor_before in old_rows else None
        self._rows, self._keys, self.missing = new_rows, keys, set(gone)
        for name in changed:
            self._line_cache.pop(name, None)
            self._haystack.pop(name, None)
            self._changed_epoch.pop(name, None)
        if membership_changed:
            self._marked &= set(new_rows)  # a mark goes with its row (a missing target keeps its row)
            for name in set(old_rows) - set(new_rows):
                self._line_cache.pop(name, None)
                self._haystack.pop(name, None)
                self._flash.pop(name, None)
        if first or membership_changed or changed:
            self._measure()
        reorder = membership_changed or (changed and (self.sort_key != "ledger" or self.filter_text))
        if reorder:
            self._rebuild_view(queue=(cursor_before, cursor_state) if cursor_before in changed else None)
            self.refresh()
        else:
            for name in changed:
                self._refresh_row(name)
        if not first and changed:
            until = time.monotonic() + FLASH_SECONDS
            for name in changed:
                self._flash[name] = until
            self.set_timer(FLASH_SECONDS + 0.05, self._end_flash)
        return changed if not first else set()

    def _measure(self) -> None:
        # Natural widths from plain string lengths (cell_len only for the longest):
        # cheap at 10,000 rows, unlike measuring every rendered cell.
        rows = self._rows.values()

        def longest(values) -> int:
            return cell_len(max(values, key=len, default=""))

        states = {(row.state, row.drifted) for row in rows}
        self._natural = {
            "name": longest(r.name for r in rows),
            "state": max((cell_len(state_cell(Row("", s, "", "", "", "", "", d))) for s, d in states), default=5),
            "next_action": longest(r.next_action for r in rows),
            "reason": longest(r.reason for r in rows),
            "last_action": longest(r.last_action for r in rows),
            "checkpoint": longest(r.checkpoint for r in rows),
            "age": 4,
        }
        self._laid_out_for = -1
        self._layout()

    def _layout(self) -> None:
        width = self.scrollable_content_region.width or self.size.width or 80
        if width == self._laid_out_for:
            return
        self._laid_out_for = width
        self._columns = layout(self._natural, width)
        self._line_cache.clear()
        self.virtual_size = Size(total_width(self._columns), len(self._view.order) + 1)

    def on_resize(self, event: Resize) -> None:
        if self._natural:
            self._layout()
            self.refresh()

    # -- marks ---------------------------------------------------------------------

    @property
    def marked_count(self) -> int:
        """How many rows are marked (shown or filtered out)."""
        return len(self._marked)

    def marked_names(self) -> list[str]:
        """The marked targets in ledger order (filtered-out ones too: a mark is not undone by a filter)."""
        return [n for n in self._keys if n in self._marked]

    def is_marked(self, name: str) -> bool:
        return name in self._marked

    def set_marked(self, names: list[str] | set[str], marked: bool) -> int:
        """Mark (or unmark) `names` that have a row; returns how many changed."""
        changed = 0
        for name in names:
            if name not in self._rows or (name in self._marked) == marked:
                continue
            if marked:
                self._marked.add(name)
            else:
                self._marked.discard(name)
            self._line_cache.pop(name, None)
            self._refresh_row(name)
            changed += 1
        if changed:
            self.post_message(self.MarksChanged(len(self._marked)))
        return changed

    class MarksChanged(Message):
        """The set of marked rows changed; `count` rows are marked now."""

        def __init__(self, count: int) -> None:
            super().__init__()
            self.count = count

    # -- sort, filter and stale ----------------------------------------------------

    def set_sort(self, key: str, reverse: bool = False) -> None:
        """Sort by `key` (one of SORTS), keeping the cursor on the same target."""
        self.sort_key = key if key in SORTS else "ledger"
        self.sort_reverse = reverse
        self._rebuild_view()
        self.refresh()

    def cycle_sort(self) -> str:
        """Next sort key; returns it."""
        self.set_sort(SORTS[(SORTS.index(self.sort_key) + 1) % len(SORTS)])
        return self.sort_key

    def set_filter(self, text: str) -> None:
        """Show only rows matching every word of `text` (`state:failed` matches a state)."""
        self.filter_text = text.strip()
        self._rebuild_view()
        self.refresh()

    def set_stale(self, label: str | None) -> None:
        """Mark every row as drawn from an old state (`label` says how old), or not."""
        if label != self.stale_label:
            dimming = (label is None) != (self.stale_label is None)
            self.stale_label = label
            if dimming:
                self._line_cache.clear()
                self.refresh()
            else:
                self.refresh(Region(0, 0, self.size.width, 1))

    def _epoch(self, name: str) -> float:
        epoch = self._changed_epoch.get(name)
        if epoch is None:
            parsed = parse_ts(self._rows[name].changed_at)
            epoch = parsed.timestamp() if parsed else 0.0
            self._changed_epoch[name] = epoch
        return epoch

    def _rebuild_view(self, queue: tuple[str | None, str | None] | None = None) -> None:
        keep, index_before = self.cursor_name, self.cursor
        names = view_order(self._keys, self._rows, filter_text=self.filter_text, sort_key=self.sort_key,
                           reverse=self.sort_reverse, epoch=self._epoch, haystack=self._haystack)
        self._view = View(names, {n: i for i, n in enumerate(names)})
        self.virtual_size = Size(self.virtual_size.width, len(names) + 1)
        stay = None
        if queue and self.sort_key == "state" and queue[0] is not None and queue[1] is not None:
            stay = queue_position(names, self._rows, queue[0], queue[1], index_before)
        if stay is not None:
            self.cursor = stay
        elif keep is not None and keep in self._view.index:
            self.cursor = self._view.index[keep]
        else:
            self.cursor = min(self.cursor, max(0, len(names) - 1))

    # -- cursor ------------------------------------------------------------------

    def move_to(self, name: str, *, top: bool = False) -> bool:
        """Put the cursor on `name` if it is shown (scrolled to the top of the table when `top`)."""
        index = self._view.index.get(name)
        if index is None:
            return False
        self.cursor = index
        if top:
            self.scroll_to(y=index, animate=False, immediate=True)
        return True

    def attention(self) -> list[str]:
        """Shown targets that need a human, in display order."""
        return [n for n in self._view.order if wants_person(self._rows[n])]

    def first_attention(self) -> str | None:
        """Put the cursor on the first target that needs a human, at the top; returns it."""
        names = self.attention()
        if names:
            self.move_to(names[0], top=True)
            return names[0]
        return None

    def jump_attention(self, step: int) -> str | None:
        """Next (`step` 1) or previous (-1) target that needs a human, wrapping; None when there is none."""
        order = self._view.order
        n = len(order)
        for offset in range(1, n + 1):
            index = (self.cursor + step * offset) % n
            if wants_person(self._rows[order[index]]):
                self.cursor = index
                return order[index]
        return None

    def validate_cursor(self, value: int) -> int:
        return max(0, min(value, len(self._view.order) - 1)) if self._view.order else 0

    class Highlighted(Message):
        """The cursor is on `name` now (None: no rows)."""

        def __init__(self, name: str | None) -> None:
            super().__init__()
            self.name = name

    def watch_cursor(self, old: int, new: int) -> None:
        if not self.is_mounted:
            return
        self.post_message(self.Highlighted(self.cursor_name))
        for index in {old, new}:
            self._refresh_index(index)
        self._scroll_to_cursor()
        self._place_terminal_cursor()

    def on_focus(self) -> None:
        # After the refresh too: the Input that lost the focus may still move the cursor as it blurs.
        self._place_terminal_cursor()
        self.call_after_refresh(self._place_terminal_cursor)

    def _place_terminal_cursor(self) -> None:
        # The (hidden) terminal cursor sits on the selected row while the table has
        # the focus, as Input and TextArea put it on their caret: screen readers and
        # braille displays follow it, and so can a test driving a real terminal.
        if not self.has_focus:
            return
        region = self.content_region
        y = self.cursor - int(self.scroll_y) + 1
        if 1 <= y < region.height:
            self.app.cursor_position = Offset(region.x, region.y + y)

    def _scroll_to_cursor(self) -> None:
        visible = max(1, self.scrollable_content_region.height - 1)
        top = int(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + visible:
            self.scroll_to(y=self.cursor - visible + 1, animate=False, immediate=True)

    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - 2)

    def action_cursor_up(self) -> None:
        self.cursor -= 1

    def action_cursor_down(self) -> None:
        self.cursor += 1

    def action_page_up(self) -> None:
        self.cursor -= self._page()

    def action_page_down(self) -> None:
        self.cursor += self._page()

    def action_half_page_up(self) -> None:
        self.cursor -= max(1, self._page() // 2)

    def action_half_page_down(self) -> None:
        self.cursor += max(1, self._page() // 2)

    def action_first(self) -> None:
        self.cursor = 0

    def action_last(self) -> None:
        self.cursor = len(self._view.order) - 1

    def action_next_attention(self) -> None:
        if self.jump_attention(1) is None:
            self.notify("No target needs a human right now.", timeout=2, markup=False)

    def action_previous_attention(self) -> None:
        if self.jump_attention(-1) is None:
            self.notify("No target needs a human right now.", timeout=2, markup=False)

    def action_select(self) -> None:
        name = self.cursor_name
        if name is not None:
            self.post_message(self.Selected(name))

    def on_click(self, event) -> None:
        # Mouse is optional; a click moves the cursor, a double click opens detail.
        index = int(self.scroll_y) + event.y - 1
        if event.y >= 1 and 0 <= index < len(self._view.order):
            self.cursor = index
            if event.chain >= 2:
                self.action_select()

    # -- painting ------------------------------------------------------------------

    def on_mount(self) -> None:
        self.set_interval(AGE_TICK, self._tick_age)

    def _tick_age(self) -> None:
        """Repaint the visible age cells: rows, columns and caches stay as they are."""
        if not self._columns or not self._view.order:
            return
        x = GUTTER + sum(c.width + 1 for c in self._columns[:-1]) - int(self.scroll_x)
        width = self._columns[-1].width + 1
        if x + width <= 0 or x >= self.size.width:
            return
        self.refresh(Region(max(0, x), 1, width, max(0, self.size.height - 1)))

    def _refresh_index(self, index: int) -> None:
        y = index - int(self.scroll_y) + 1
        if 1 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def _refresh_row(self, name: str) -> None:
        index = self._view.index.get(name)
        if index is not None:
            self._refresh_index(index)

    def _end_flash(self) -> None:
        now = time.monotonic()
        for name, until in list(self._flash.items()):
            if until <= now:
                del self._flash[name]
                self._refresh_row(name)

    def notify_style_update(self) -> None:
        # A theme change restyles every component class: drop cached segments.
        super().notify_style_update()
        self._line_cache.clear()

    def _header_segments(self, width: int) -> list[Segment]:
        style = self.get_component_rich_style("target-table--header")
        segments = [Segment(" " * GUTTER, style)]
        for column in self._columns:
            title = column.title
            if column.key == self.sort_key:
                title += " ▲" if self.sort_reverse else " ▼"
            segments.append(Segment(fit(title, column.width) + " ", style))
        if self.stale_label:
            # Over the right end of the header: the rows below are from an old state.
            label = f" ⚠ {self.stale_label} "
            stale = self.get_component_rich_style("target-table--stale")
            line = Strip(segments).crop_extend(0, width, style)
            keep = max(0, width - cell_len(label))
            return list(line.crop(0, keep)) + [Segment(fit(label, width - keep), stale)]
        return segments

    def _cells(self, row: Row) -> dict[str, str]:
        return {"name": row.name, "state": state_cell(row), "next_action": row.next_action,
                "reason": row.reason, "last_action": row.last_action, "checkpoint": row.checkpoint}

    def _row_segments(self, name: str) -> list[Segment]:
        cached = self._line_cache.get(name)
        if cached is not None:
            return cached
        row = self._rows[name]
        state_look = look(row.state)
        # A drift is drawn as a failure is: sessions refuse the target until someone reconciles it.
        tone_name = "failed" if row.drifted or row.outside else state_look.tone
        tone = self.get_component_rich_style(f"target-table--{tone_name}", partial=True)
        dim = self.get_component_rich_style("target-table--dim", partial=True)
        attention = wants_person(row)
        styles = {"name": tone + Style(bold=True) if attention else Style(), "state": tone, "next_action": Style(),
                  "reason": tone if attention else dim, "last_action": dim, "checkpoint": dim}
        cells = self._cells(row)
        gutter = (" ▌" if attention else "  ") + (MARK if name in self._marked else " ")
        segments = [Segment(gutter, tone + Style(bold=True) if name in self._marked else tone)]
        for column in self._columns[:-1]:
            text = fit(cells[column.key], column.width, middle=column.key == "name")
            segments.append(Segment(text + " ", styles[column.key]))
        self._line_cache[name] = segments
        return segments

    def render_line(self, y: int) -> Strip:
        base = self.rich_style
        width = self.scrollable_content_region.width
        scroll_x = int(self.scroll_x)
        if self._laid_out_for != width and self._natural and width:
            self._layout()
        if y == 0:
            segments = self._header_segments(width)
            return Strip(Segment.apply_style(segments, base)).crop_extend(scroll_x, scroll_x + width, base)
        index = int(self.scroll_y) + y - 1
        order = self._view.order
        if index >= len(order):
            if index == 0 and self._keys:
                msg = f"   no target matches /{clean_line(self.filter_text)}  (esc clears the filter)"
                return Strip([Segment(fit(msg, width), base + self.get_component_rich_style("target-table--dim", partial=True))])
            return Strip.blank(width, base)
        name = order[index]
        segments = list(self._row_segments(name))
        epoch = self._epoch(name)
        age = ago(self._clock().timestamp() - epoch) if epoch else ""
        segments.append(Segment(fit(age, self._columns[-1].width) + " ", Style()))
        if index == self.cursor:
            # One style for the whole selected row, chosen for contrast in every theme and
            # colour mode; `▶` marks it without colour too.
            cursor = base + self.get_component_rich_style("target-table--cursor", partial=True)
            text = "".join(s.text for s in segments)
            mark = "▶" + text[1:]
            return Strip([Segment(mark, cursor)], cell_len(mark)).crop_extend(scroll_x, scroll_x + width, cursor)
        line_style = base
        if name in self._flash:
            line_style = line_style + self.get_component_rich_style("target-table--changed", partial=True)
        if self.stale_label:
            line_style = line_style + Style(dim=True, italic=True)
        segments = list(Segment.apply_style(segments, line_style))
        return Strip(segments).crop_extend(scroll_x, scroll_x + width, line_style)
