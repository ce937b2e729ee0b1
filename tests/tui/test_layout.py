"""Complete at 80x24, and using the width there is: header by priority, footer, log tail, columns."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.api import open_ledger
from tests.tui.helpers import LEDGER, fixed_clock, screen_text, settle
from tui.app import make_app
from tui.messages import Snapshot
from tui.states import PAUSED_SYMBOL, look
from tui.widgets.columns import fit, layout
from tui.widgets.header import HeaderBar, status_items
from tui.widgets.keybar import KeyBar

DEMO = Path(__file__).resolve().parents[2] / "ledgers" / "demo" / "ledger.yaml"


class LiveLease:
    """What the engine's lease state says about a live Claude session (issue 12's heartbeat fields)."""

    status, holder, detail, heartbeat_age, phase = "live", "agent:demo-agent@bastion-1", "x", 2.0, "waiting on cutover"
    budget_used, tokens_used, tokens_budget, cost_usd, allow_unenforced = 0.42, 41_200, 200_000, 0.84, True


def build(path: Path, **kw):
    kw.setdefault("actor", "alice")
    return make_app(str(path), clock=fixed_clock, watch=False, **kw)


@pytest.mark.parametrize("width", [60, 72, 80, 96, 120, 160, 200])
async def test_header_drops_whole_items_by_priority_and_never_cuts_a_word(ledger_path: Path, width: int) -> None:
    """Each status item shows whole (in one of its forms) or not at all, and only after every higher one."""
    app = build(ledger_path)
    async with app.run_test(size=(width, 30)) as pilot:
        await settle(pilot)
        main = app.main
        main.show_snapshot(Snapshot(main.ledger, main.snapshot.invariants, LiveLease()))
        await pilot.pause()
        header = main.query_one(HeaderBar)
        items = status_items(header.info)
        line = header.lines(width)[1].plain.strip()
        shown = line.split(" · ")
        # The session item's own details are joined by the same separator: put them back together.
        forms = [f for item in items for f in item.forms]
        parts, n = [], 0
        while n < len(shown):
            match = next((f for f in sorted(forms, key=len, reverse=True) if " · ".join(shown[n:]).startswith(f)), None)
            assert match is not None, f"a cut item in {line!r}"
            parts.append(match)
            n += match.count(" · ") + 1
        which = [next(i for i, item in enumerate(items) if p in item.forms) for p in parts]
        assert which == list(range(len(which))), f"an item shown after a dropped one: {line!r}"
        assert len(line) <= width
        assert "● session running (--allow-unenforced)" in line  # the session always fits
        if width >= 80:
            assert "⚑ 1 awaiting" in line
        if width >= 120:
            assert "tokens 41k/200k $0.84" in line


async def test_footer_never_clips_help_and_quit(ledger_path: Path) -> None:
    """At any width the footer ends with whole items, and Help and Quit are always there; l is there at 80."""
    for read_only in (False, True):
        app = build(ledger_path, read_only=read_only)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            for width in (50, 64, 80, 120):
                await pilot.resize_terminal(width, 24)
                await pilot.pause()
                footer = screen_text(app).splitlines()[-1]
                items = app.main.query_one(KeyBar).items()
                assert ("?", "Help") in items and ("q", "Quit") in items, (width, footer)
                assert footer.rstrip().endswith(items[-1][1]), footer
                if width >= 80:
                    assert ("l", "Log") in items and ("⏎", "Detail") in items
                if read_only:
                    assert not {"Approve", "Reject", "Edit note", "Pause"} & {d for _, d in items}


async def test_invariant_line_in_the_header_is_worst_first_and_red(ledger_path: Path) -> None:
    """Four targets touched against a limit of 2: the header says `✗ invariant violated: touched 4/2`, in the error style."""
    text = LEDGER.replace("web-05: {state: queued}", "web-05: {state: replicating}")
    text = text.replace("web-06: {state: checked,", "web-06: {state: replicating,")
    ledger_path.write_text(text.replace("web-01: {state: done,", "web-01: {state: replicating,"), encoding="utf-8")
    app = build(ledger_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        header = app.main.query_one(HeaderBar)
        line = header.lines(80)[1]
        assert "✗ invariant violated: touched 4/2" in line.plain  # three replicating, one awaiting its cutover
        error = header.get_component_rich_style("header--error", partial=True)
        assert any(line.plain[s.start:s.end].startswith("✗") and s.style == error for s in line.spans)


async def test_log_tail_under_the_table_when_the_side_pane_is_folded(ledger_path: Path) -> None:
    """At 80x24 the last two journal lines show under the table; with the side pane (l, or wide) they go."""
    handle = open_ledger(str(ledger_path), actor="bob")
    handle.journal.append("log", "first line", actor="bob")
    handle.block("web-05", "disk check")
    app = build(ledger_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        tail = app.main.query_one("#log-tail")
        lines = screen_text(app).splitlines()
        assert tail.display and any("web-05: blocked by bob" in line for line in lines[-4:-1])
        await pilot.press("l")
        await pilot.pause()
        assert not tail.display and app.main.query_one("#side").display


async def test_demo_opens_on_the_first_target_that_needs_a_human(tmp_path: Path) -> None:
    """The demo fleet at 80x24 opens with the cursor on db-20 (blocked) and db-27 (failed) in view, not on db-01."""
    path = tmp_path / "ledger.yaml"
    path.write_text(DEMO.read_text("utf-8"), encoding="utf-8")
    app = build(path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.main.table.cursor_name == "db-20"
        text = screen_text(app)
        assert "▶▌ db-20" in text and " ▌ db-27" in text and "db-01" not in text


async def test_awaiting_and_paused_have_distinct_symbols(ledger_path: Path) -> None:
    """Awaiting approval is `⚑`; the PAUSED line alone uses `⏸`."""
    open_ledger(str(ledger_path), actor="bob").pause("maintenance")
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        text = screen_text(app)
    assert look("awaiting_approval").symbol == "⚑" != PAUSED_SYMBOL
    assert "⚑ awaiting_approval" in text and f"{PAUSED_SYMBOL} PAUSED by bob" in text
    assert text.count(PAUSED_SYMBOL) == 1


LONG = {f"prod-eu-west-1-postgres-primary-{n:04d}": {"state": s, "reason": r, "next_action": "x" * 60}
        for n, s, r in ((1, "failed", "pg_upgrade --check: aclitem columns in user tables"), (2, "queued", None))}


def long_names(path: Path) -> Path:
    lines = ["task: wide", "targets:"]
    for name, t in LONG.items():
        reason = f", reason: \"{t['reason']}\"" if t["reason"] else ""
        lines.append(f"  {name}: {{state: {t['state']}, next_action: \"{t['next_action']}\"{reason}}}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


async def test_columns_grow_with_the_terminal_and_long_names_keep_their_ends(tmp_path: Path) -> None:
    """At 200 columns the table uses the width (next action whole, Reason shown); at 60 names keep `…-0001`."""
    path = long_names(tmp_path / "ledger.yaml")
    app = build(path)
    async with app.run_test(size=(200, 30)) as pilot:
        await settle(pilot)
        await pilot.press("l")  # fold the side pane: the whole width is the table's
        await pilot.pause()
        table = app.main.table
        widths = {c.key: c.width for c in table.columns}
        assert sum(widths.values()) + len(widths) + 3 > 150
        assert widths["next_action"] == 60 and "reason" in widths
        text = screen_text(app)
        assert "prod-eu-west-1-postgres-primary-0001" in text and "pg_upgrade --check: aclitem columns in user tables" in text
        await pilot.resize_terminal(60, 20)
        await pilot.pause()
        names = [line[3:].split(" ")[0] for line in screen_text(app).splitlines() if "…" in line[3:25]]
        assert len(names) == 2 and names[0].endswith("-0001") and names[1].endswith("-0002")
        assert names[0].startswith("prod-eu-") and "reason" not in {c.key for c in app.main.table.columns}


def test_layout_shows_reason_only_with_room_and_grows_names_first() -> None:
    """Reason joins when it fits at its comfortable width; spare room goes to the name first."""
    natural = {"name": 40, "state": 17, "next_action": 50, "reason": 40, "last_action": 30, "checkpoint": 10, "age": 4}
    narrow = {c.key: c.width for c in layout(natural, 80)}
    assert "reason" not in narrow and narrow["name"] == 28
    wide = {c.key: c.width for c in layout(natural, 200)}
    assert wide["name"] == 40 and wide["next_action"] == 50 and wide["reason"] == 40


def test_fit_cuts_in_the_middle_for_names_and_at_the_end_for_text() -> None:
    """`prod-eu-west-1-…-0001`: both ends of a name survive; other text ends with `…`."""
    name = "prod-eu-west-1-postgres-primary-0001"
    assert fit(name, 21, middle=True) == "prod-eu-we…imary-0001"
    assert fit("abcdef", 4) == "abc…" and fit("ab", 4) == "ab  " and fit("数据库", 4) == "数 …"
