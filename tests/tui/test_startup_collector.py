"""`handoff-tui` starts up (imports, the ledger's read, the first frame) without the cyclic
collector, and turns it back on once the first frame is up (engine.store.bulk): a TUI runs for
days, and a collector left off would let every reference cycle it makes stay for good."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

import tui.app
from engine.api import HandoffError
from tests.tui.helpers import fixed_clock, settle
from tui.app import make_app
from tui.main import main


async def test_the_collector_is_on_again_once_the_first_frame_is_up(ledger_path: Path) -> None:
    gc.disable()  # as tui.main leaves it for the start-up
    try:
        app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
        assert not gc.isenabled()
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            assert gc.isenabled() and gc.get_freeze_count() > 0
            await pilot.press("q")
    finally:
        gc.enable()
        gc.unfreeze()  # this test process's objects back to the collector


def test_main_reads_the_ledger_with_the_collector_off(monkeypatch: pytest.MonkeyPatch, ledger_path: Path) -> None:
    seen: list[bool] = []

    def opened(*args, **kwargs):
        seen.append(gc.isenabled())
        raise HandoffError("stop here: the screen is another test's")

    monkeypatch.setattr(tui.app, "make_app", opened)
    assert main([str(ledger_path)]) == 2
    assert seen == [False]
    assert gc.isenabled()  # a start that failed leaves it on, as a process that goes on needs (these tests' own)


def test_serve_keeps_the_collector_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """`handoff-tui serve` runs for weeks and paints nothing itself: its collector is never turned off."""
    import tui.main as entry

    seen: list[bool] = []
    monkeypatch.setattr(entry, "serve_main", lambda argv: seen.append(gc.isenabled()) or 0)
    assert main(["serve", "ledger.yaml"]) == 0 and seen == [True]
