"""Drift is shown where you approve; a row never promises what the engine will refuse.

A session that finds a recorded checkpoint disagreeing with reality keeps the target's
state and records the mismatch as its reason (engine.session.reconcile.verify_target);
the next session refuses to run anything on it until someone reconciles. The screen
must say so in the row, the header, the approval dialog (which asks whether to approve
anyway) and `]`'s list; a rejected target no longer offers "handoff approve"; the
unpause dialog says what will really happen.
"""

from __future__ import annotations

import inspect
from pathlib import Path

from textual.widgets import Button

from engine.api import DRIFT_PREFIX, checkpoint_drift, open_ledger
from engine.session import reconcile
from tests.tui.helpers import LEDGER, fixed_clock, screen_text, settle
from tui.app import make_app
from tui.screens.approve import ApproveScreen
from tui.screens.confirm import ConfirmScreen
from tui.screens.detail import DetailScreen

# The reason exactly as verify_target words it (the test below holds the engine to the prefix).
DRIFT = ("checkpoint drift: the ledger says 0/9A3F2C10, `lag web-02` says 0/9B000000 (at 2026-11-29T02:58:00Z). "
         "Resolve with `handoff reconcile LEDGER web-02 --accept-checkpoint --reason WHY` or `--to STATE --reason WHY`")
APPROVE_LINK = "a human approves cutover: handoff approve ledger.yaml web-02"


def drifted_ledger(path: Path) -> Path:
    text = LEDGER.replace('verified_at: "2026-11-29T02:49:00Z"}',
                          f'verified_at: "2026-11-29T02:49:00Z", reason: "{DRIFT}", next_action: "{APPROVE_LINK}"}}')
    text = text.replace("web-06: {state: checked,",
                        'web-06: {state: checked, checkpoint: "0/1", reason: "checkpoint drift: the ledger says 0/1, '
                        'probe says 0/2",')
    path.write_text(text, encoding="utf-8")
    return path


def build(path: Path):
    return make_app(str(path), actor="alice", clock=fixed_clock, watch=False)


def row_line(app, name: str) -> str:
    return next(line for line in screen_text(app).splitlines() if line.lstrip(" ▌▶").startswith(name + " "))


def test_the_engine_still_words_drift_as_the_screen_reads_it() -> None:
    source = inspect.getsource(reconcile.verify_target)
    assert f'reason = (f"{DRIFT_PREFIX}' in source
    assert checkpoint_drift(type("T", (), {"reason": DRIFT})()) == DRIFT
    assert checkpoint_drift(type("T", (), {"reason": "ticket PLAT-1"})()) is None


async def test_drift_shows_in_row_header_and_the_attention_list(ledger_path: Path) -> None:
    app = build(drifted_ledger(ledger_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        table = app.main.table
        assert "DRIFT" in row_line(app, "web-02") and "DRIFT" in row_line(app, "web-06")
        assert "handoff approve" not in row_line(app, "web-02")
        assert "2 drifted" in app.main.header_text()
        assert "web-06" in table.attention()  # `checked` alone needs nobody; drifted, it does
        table.move_to("web-05")
        await pilot.press("right_square_bracket")
        assert table.cursor_name == "web-06"


async def test_the_dialog_shows_the_mismatch_and_asks_to_approve_anyway(ledger_path: Path) -> None:
    app = build(drifted_ledger(ledger_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.main.table.move_to("web-02")
        await pilot.press("a")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ApproveScreen)
        text = " ".join(screen_text(app).split())
        assert "CHECKPOINT DRIFT" in text and "0/9B000000" in text
        assert "before the drift" in text  # the old probe is not passed off as current
        assert "environment: production" in text
        assert str(dialog.query_one("#approve", Button).label) == "Approve anyway"
        await pilot.press(*"web-02", "enter", "enter")
        await settle(pilot)
        assert not isinstance(app.screen, ApproveScreen)
        row = row_line(app, "web-02") + app.main.table.row("web-02").next_action
    assert "the next session runs it" in open_ledger(str(ledger_path)).load().targets["web-02"].next_action
    assert "next session runs it" not in row and "DRIFT" in row


async def test_a_rejected_target_offers_no_approve_link(ledger_path: Path) -> None:
    path = ledger_path
    path.write_text(LEDGER.replace('verified_at: "2026-11-29T02:49:00Z"}',
                                   f'verified_at: "2026-11-29T02:49:00Z", next_action: "{APPROVE_LINK}"}}'), "utf-8")
    open_ledger(str(path), actor="carol").reject("web-02", "lag too high")
    app = build(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        row = row_line(app, "web-02")
        assert "handoff approve" not in row and "blocked" in row
        app.main.table.move_to("web-02")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        detail = screen_text(app)
        assert "handoff approve" not in detail and "rejected by carol: lag too high" in detail


async def test_unpause_says_nothing_runs_until_a_session_starts(ledger_path: Path) -> None:
    open_ledger(str(ledger_path), actor="bob").pause("db maintenance")
    app = build(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        text = " ".join(screen_text(app).split())
        assert "Sessions go on with their next steps" not in text
        assert "No session is running: nothing runs until one is started (s here, or handoff resume" in text
