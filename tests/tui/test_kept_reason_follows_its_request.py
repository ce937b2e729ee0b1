"""A kept reject reason goes with the request it was typed for.

A reason typed to reject web-02's cutover is kept when the engine refuses the reject for
something else (the file did not parse): `x` on web-02 opens the prompt on it again. But
the reason waited for ever: when bob blocked or approved web-02 meanwhile, and web-02
later asked again, `x` opened on a "no" typed for a request that was long gone. It is
now bound to the request (its step, hash and when it was asked): a reading in which
web-02 no longer asks for it drops it, and so does a new request, even for the same step
and hash.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input

from engine.api import open_ledger
from tests.conftest import engine_write
from tests.tui.helpers import fixed_clock, screen_text, settle
from tests.tui.test_note_kept_when_save_fails import broken, fixed
from tui.app import make_app
from tui.screens.error import ErrorScreen
from tui.screens.reason import ReasonPrompt

WHY = "lag 0.4s on web-02 at 03:10Z; PLAT-231 says wait for the vacuum"
ASKED = "2026-11-29T02:50:00Z"  # web-02's awaiting_since in the test fleet


def blocked_by_bob(path: Path) -> None:
    open_ledger(str(path), actor="bob").block("web-02", "PLAT-9: replica rebuilt first")


def approved_by_bob(path: Path) -> None:
    open_ledger(str(path), actor="bob").approve("web-02")


def asks_again(path: Path, since: str) -> None:
    """web-02 asks for its cutover again, at the same checkpoint (the same hash), asked `since`."""
    def change(ledger) -> None:
        t = ledger.targets["web-02"]
        t.state, t.reason, t.awaiting, t.awaiting_by, t.awaiting_since = "awaiting_approval", None, "cutover", "agent", since
        t.approvals = []
        t.next_action = None

    engine_write(path, change)


async def keep_a_reason(pilot, path: Path) -> None:
    """`x` on web-02, the reason typed, the file breaks: refused, the reason kept; the file is fixed."""
    app = pilot.app
    assert app.main.table.move_to("web-02")
    await pilot.press("x")
    await settle(pilot)
    app.screen.query_one("#reason", Input).value = WHY
    broken(path)
    await pilot.press("enter")
    await settle(pilot)
    assert isinstance(app.screen, ErrorScreen), screen_text(app)
    assert "Your reason was not saved; it is kept as a draft: x on web-02 opens it again." in app.screen.error_message
    await pilot.press("escape")
    fixed(path)
    await pilot.press("R")
    await settle(pilot)


async def reason_offered(pilot) -> str:
    app = pilot.app
    assert app.main.table.move_to("web-02")
    await pilot.press("x")
    await settle(pilot)
    assert isinstance(app.screen, ReasonPrompt), screen_text(app)
    return app.screen.query_one("#reason", Input).value


@pytest.mark.parametrize("answered", [blocked_by_bob, approved_by_bob], ids=["blocked", "approved"])
async def test_a_kept_reason_is_dropped_once_the_screen_sees_its_request_gone(ledger_path: Path, answered) -> None:
    """bob answers web-02 (the screen reads it), then web-02 asks the very same again: `x` opens empty."""
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await keep_a_reason(pilot, ledger_path)
        answered(ledger_path)
        await pilot.press("R")
        await settle(pilot)
        assert app.main.table.row("web-02").state != "awaiting_approval"
        asks_again(ledger_path, ASKED)
        await pilot.press("R")
        await settle(pilot)
        assert await reason_offered(pilot) == ""


async def test_a_kept_reason_is_not_offered_to_a_new_request_for_the_same_step(ledger_path: Path) -> None:
    """bob blocks web-02 and it asks again before the screen next reads: same step, same hash,
    asked later: another request, and `x` opens empty."""
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await keep_a_reason(pilot, ledger_path)
        blocked_by_bob(ledger_path)
        asks_again(ledger_path, "2026-11-29T03:20:00Z")
        await pilot.press("R")
        await settle(pilot)
        assert await reason_offered(pilot) == ""


async def test_a_kept_reason_stays_while_its_request_stands(ledger_path: Path) -> None:
    """A write elsewhere (web-05) leaves web-02's request as it was: `x` opens on the reason."""
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await keep_a_reason(pilot, ledger_path)
        engine_write(ledger_path, lambda ledger: setattr(ledger.targets["web-05"], "reason", "waiting on PLAT-9"))
        await pilot.press("R")
        await settle(pilot)
        assert await reason_offered(pilot) == WHY
