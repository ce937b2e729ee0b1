""""Since you last looked" lists every kind of change: who rejected and why, pause and
unpause, and a hand edit that moved a done target back (the engine never does that).

The digest is compared from the ledger's content (through the real engine's writes),
as the app does on open: `remember` when the user stops looking, `changes` on return.
"""

from __future__ import annotations

from pathlib import Path

from engine.api import open_ledger
from tests.tui.helpers import FIXED_NOW, fixed_clock, screen_text, settle
from tui.app import make_app
from tui.since import changes, remember


def load(path: Path):
    return open_ledger(str(path)).load()


def test_rejection_names_who_and_why(ledger_path: Path) -> None:
    before = remember(load(ledger_path), FIXED_NOW)
    open_ledger(str(ledger_path), actor="carol").reject("web-02", "lag too high")
    assert "web-02: awaiting_approval → blocked (rejected by carol: lag too high)" in changes(before, load(ledger_path))


def test_pause_and_unpause_are_listed(ledger_path: Path) -> None:
    before = remember(load(ledger_path), FIXED_NOW)
    open_ledger(str(ledger_path), actor="bob").pause("db maintenance")
    paused = load(ledger_path)
    assert "paused by bob: db maintenance" in changes(before, paused)
    seen_paused = remember(paused, FIXED_NOW)
    open_ledger(str(ledger_path), actor="bob").unpause()
    assert "unpaused (it was paused by bob: db maintenance)" in changes(seen_paused, load(ledger_path))


def test_done_back_to_queued_by_hand_is_flagged(ledger_path: Path) -> None:
    before = remember(load(ledger_path), FIXED_NOW)
    text = ledger_path.read_text("utf-8").replace('web-01: {state: done,', 'web-01: {state: queued,')
    ledger_path.write_text(text, "utf-8")
    lines = changes(before, load(ledger_path))
    assert any(line.startswith("⚠ web-01: done → queued") and "hand edit" in line for line in lines), lines


async def test_the_digest_is_on_the_first_screen_at_80x24(ledger_path: Path) -> None:
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("q")
    open_ledger(str(ledger_path), actor="carol").reject("web-02", "lag too high")
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        text = " ".join(screen_text(app).split())
    assert "Since you last looked" in text and "→ blocked (rejected by carol" in text
