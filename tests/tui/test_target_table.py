"""The virtual target table: rows, symbols, diffing, filter, sort and cursor, at 10,000 targets."""

from __future__ import annotations

from textual.app import App, ComposeResult

from engine.ledger.model import Ledger
from tests.tui.helpers import fixed_clock, screen_text
from tui.widgets.target_table import TargetTable


def fleet(n: int, **overrides: dict) -> Ledger:
    targets = {f"db-{i:05d}": {"state": "queued"} for i in range(n)}
    targets.update(overrides)
    return Ledger.model_validate({"task": "t", "targets": targets})


class TableApp(App[None]):
    def __init__(self, ledger: Ledger) -> None:
        super().__init__()
        self.ledger = ledger

    def compose(self) -> ComposeResult:
        yield TargetTable(id="t", clock=fixed_clock)

    def on_mount(self) -> None:
        self.query_one(TargetTable).set_ledger(self.ledger)


async def test_state_is_symbol_and_word() -> None:
    """Every state is shown as symbol + word, never colour alone."""
    ledger = fleet(0, a={"state": "done"}, b={"state": "failed"}, c={"state": "awaiting_approval"},
                   d={"state": "blocked"}, e={"state": "replicating"}, f={"state": "queued"})
    app = TableApp(ledger)
    async with app.run_test(size=(100, 12)) as pilot:
        await pilot.pause()
        text = screen_text(app)
    for label in ("✓ done", "✗ failed", "⚑ awaiting_approval", "⊘ blocked", "⟳ replicating", "· queued"):
        assert label in text
    # Attention rows carry a marker in the gutter as well as their colour.
    assert "▌ b" in text and "▌ c" in text and "▌ d" in text


async def test_ten_thousand_rows_render_only_what_is_visible() -> None:
    """10,000 targets load; the screen shows the first rows and end jumps to the last."""
    app = TableApp(fleet(10_000))
    async with app.run_test(size=(80, 20)) as pilot:
        await pilot.pause()
        table = app.query_one(TargetTable)
        assert table.row_count == 10_000
        assert "db-00000" in screen_text(app)
        await pilot.press("end")
        await pilot.pause()
        assert table.cursor_name == "db-09999"
        assert "db-09999" in screen_text(app)


async def test_update_diffs_rows_in_place() -> None:
    """A new ledger changes only the rows that changed; the cursor stays on its target."""
    app = TableApp(fleet(1000))
    async with app.run_test(size=(80, 20)) as pilot:
        table = app.query_one(TargetTable)
        await pilot.pause()
        table.move_to("db-00500")
        changed = table.set_ledger(fleet(1000, **{"db-00003": {"state": "failed", "reason": "x"}}))
        await pilot.pause()
        assert changed == {"db-00003"}
        assert table.cursor_name == "db-00500"
        assert "db-00003" in table._flash  # briefly highlighted


async def test_filter_by_text_and_state() -> None:
    """`/` filter matches name, any text, and `state:` prefixes."""
    ledger = fleet(0, **{"web-1": {"state": "failed", "reason": "disk full"}, "web-2": {"state": "done"},
                         "db-1": {"state": "queued", "next_action": "check disk"}})
    app = TableApp(ledger)
    async with app.run_test(size=(80, 12)) as pilot:
        table = app.query_one(TargetTable)
        await pilot.pause()
        table.set_filter("web")
        assert table.visible_names() == ["web-1", "web-2"]
        table.set_filter("disk")
        assert table.visible_names() == ["web-1", "db-1"]
        table.set_filter("state:fail")
        assert table.visible_names() == ["web-1"]
        table.set_filter("nothing-matches")
        await pilot.pause()
        assert "no target matches" in screen_text(app)


async def test_sort_by_state_puts_attention_first() -> None:
    """Sorting by state lists awaiting, failed and blocked before the rest."""
    ledger = fleet(0, a={"state": "done"}, b={"state": "queued"}, c={"state": "blocked"},
                   d={"state": "awaiting_approval"}, e={"state": "failed"})
    app = TableApp(ledger)
    async with app.run_test(size=(80, 12)) as pilot:
        table = app.query_one(TargetTable)
        await pilot.pause()
        table.set_sort("state")
        assert table.visible_names() == ["d", "e", "c", "b", "a"]
        table.set_sort("name")
        assert table.visible_names() == ["a", "b", "c", "d", "e"]


async def test_hostile_names_render_literally() -> None:
    """Markup, escapes and very long text in a target are shown as plain, cropped text."""
    evil = "[red]x\x1b[2J" + "A" * 500
    ledger = fleet(0, **{evil: {"state": "queued", "next_action": "[link=file:///etc]y[/link]\x07"}})
    app = TableApp(ledger)
    async with app.run_test(size=(80, 8)) as pilot:
        await pilot.pause()
        text = screen_text(app)
    assert "[red]x␛[2J" in text
    assert "[link=file:///etc]y[/link]␇" in text
    assert "\x1b" not in text
