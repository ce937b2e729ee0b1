"""The target table's columns: which ones show, and how wide, for the width the table has.

Pure functions (no Textual), so the layout is tested on its own. Every column has
a natural width (its longest cell, capped) and a comfortable one. Name, state and
age always show; the others join in priority order (next action, checkpoint,
reason, last action) while each still fits at its comfortable width, so Reason
shows when there is room; then every column grows towards its natural width. A
name that still does not fit keeps both ends (`prod-eu-west-1-…-0001`): the
suffix is what tells targets apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size

GUTTER = 3  # cursor marker, attention bar, space
SEP = 1     # one space after every cell


@dataclass(frozen=True)
class Spec:
    """A column the table may show."""

    key: str
    title: str
    cap: int          # never wider than this
    comfortable: int  # the width it joins at (less if its content is shorter)
    grow_order: int   # who gets spare room first (lower first)


# In the order they appear on screen.
SPECS: tuple[Spec, ...] = (
    Spec("name", "Target", 64, 28, 0),
    Spec("state", "State", 40, 40, 9),
    Spec("next_action", "Next action", 90, 32, 1),
    Spec("reason", "Reason", 70, 24, 2),
    Spec("last_action", "Last action", 60, 24, 3),
    Spec("checkpoint", "Checkpoint", 24, 18, 4),
    Spec("age", "Age", 4, 4, 9),
)
ALWAYS = ("name", "state", "age")
JOIN_ORDER: tuple[str, ...] = ("next_action", "checkpoint", "reason", "last_action")
MIN_NAME = 8
MIN_JOIN = 12  # a column narrower than this says too little to be worth its room


@dataclass(frozen=True)
class Column:
    """A column as laid out: title and width in cells."""

    key: str
    title: str
    width: int


def layout(natural: dict[str, int], available: int) -> list[Column]:
    """Columns (screen order) for a table `available` cells wide, given each column's natural width."""
    specs = {s.key: s for s in SPECS}
    want = {k: max(cell_len(specs[k].title), min(specs[k].cap, natural.get(k, 0))) for k in specs}
    room = available - GUTTER
    widths = {k: min(want[k], specs[k].comfortable) for k in ALWAYS}
    spare = room - sum(w + SEP for w in widths.values())
    if spare < 0:  # a very narrow terminal: the name gives way first, down to MIN_NAME
        widths["name"] = max(MIN_NAME, widths["name"] + spare)
        spare = room - sum(w + SEP for w in widths.values())
    for key in JOIN_ORDER:
        if natural.get(key, 0) <= 0:
            continue  # nothing to show (no target has a reason)
        width = min(want[key], specs[key].comfortable, spare - SEP)
        if width < min(want[key], MIN_JOIN):
            break  # not even a useful sliver: this column and the ones after it wait for a wider terminal
        widths[key] = width
        spare -= width + SEP
    for key in sorted(widths, key=lambda k: specs[k].grow_order):
        extra = min(max(0, spare), want[key] - widths[key])
        widths[key] += extra
        spare -= extra
    return [Column(s.key, s.title, widths[s.key]) for s in SPECS if s.key in widths]


def total_width(columns: list[Column]) -> int:
    """Cells a row of these columns takes, gutter included."""
    return GUTTER + sum(c.width + SEP for c in columns)


def fit(text: str, width: int, *, middle: bool = False) -> str:
    """`text` in exactly `width` cells: padded, or cut with `…` (in the middle when `middle`)."""
    if width <= 0:
        return ""
    size = cell_len(text)
    if size <= width:
        return text + " " * (width - size) if text.isascii() else set_cell_size(text, width)
    if width == 1:
        return "…"
    if middle:
        head = width // 2
        return set_cell_size(text, head) + "…" + _last_cells(text, width - 1 - head)
    return set_cell_size(text, width - 1) + "…"


def _last_cells(text: str, width: int) -> str:
    """The last `width` cells of `text` (padded on the left if a wide character would straddle)."""
    if width <= 0:
        return ""
    out, used = [], 0
    for char in reversed(text):
        size = cell_len(char)
        if used + size > width:
            break
        out.append(char)
        used += size
    return " " * (width - used) + "".join(reversed(out))
