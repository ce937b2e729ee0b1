"""The ledger turns into a symlink loop (`ln -sf ledger.yaml ledger.yaml`) while it is shown.

The engine says so in the banner ("is a symlink loop"); the screen's own "since you last
looked" mark must not trip over the path either. It named the mark by resolving the path
each time, and Python's `Path.resolve` raises RuntimeError on a loop: quitting printed a
traceback over the terminal (and saved no mark), and a loop made before the screen's first
worker read the mark showed an "Unexpected error ... Please report this" dialog.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.host import userstate
from tests.tui.helpers import fixed_clock, screen_text, settle, wait_until
from tui.app import make_app
from tui.screens.error import ErrorScreen
from tui.widgets.banners import Banners


def make_loop(path: Path) -> None:
    path.unlink()
    path.symlink_to(path.name)  # ledger.yaml -> ledger.yaml


def says_loop(app) -> bool:
    return any("symlink loop" in text for text in app.main.query_one(Banners).texts())


async def test_quit_while_the_ledger_is_a_symlink_loop_saves_the_mark(ledger_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Shown (`handoff-tui ledger.yaml`, from its folder), then made a loop: R shows the banner,
    q quits cleanly and the mark is saved under the key the ledger had when it opened."""
    monkeypatch.chdir(ledger_path.parent)
    app = make_app("ledger.yaml", actor="alice", clock=fixed_clock, watch=False)
    key = app.controller.user_state_key
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        make_loop(ledger_path)
        await pilot.press("R")
        await wait_until(pilot, lambda: says_loop(app))
        assert "web-02" in screen_text(app)  # the last good state stays
        assert not any(isinstance(s, ErrorScreen) for s in app.screen_stack), screen_text(app)
        await pilot.press("q")
        await settle(pilot)
    assert not app.is_running
    assert userstate.load_user_state(key), "quitting saved no mark"


async def test_a_loop_before_the_first_worker_is_no_unexpected_error(ledger_path: Path) -> None:
    """Made a loop between opening and the first frame: the banner says so, and no
    "Unexpected error" dialog stands over it."""
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    make_loop(ledger_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        errors = [s for s in app.screen_stack if isinstance(s, ErrorScreen)]
        assert not errors, [(s.error_title, s.error_message) for s in errors]
        await pilot.press("R")
        await wait_until(pilot, lambda: says_loop(app))
        await pilot.press("q")
        await settle(pilot)
    assert not app.is_running
