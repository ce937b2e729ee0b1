"""The screen never says less than `handoff check` about the journal: a journal erased (or cut
short) together with its index and the last-write record is a banner on a screen that is open
(the operator's TUI, a served viewer's) as `check` and `journal --verify` report it, from the
history journal beside it that still counts the engine's writes.

Real journals written by the engine; the files erased as a person or an agent would (`rm`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from engine.api import open_ledger
from tests.conftest import cli_env
from tests.tui.helpers import fixed_clock, screen_text, settle, wait_until
from tui.app import make_app
from tui.widgets.banners import Banners
from tui.widgets.log_pane import LogPane

ERASED = (".journal.jsonl", ".journal.jsonl.index", ".last-write.json")


def journaled(ledger: Path) -> None:
    handle = open_ledger(str(ledger), actor="alice")
    handle.block("web-05", "ticket PLAT-2")
    handle.unblock("web-05", "queued", "ticket closed")
    handle.block("web-06", "ticket PLAT-3")


def erase(ledger: Path) -> None:
    for suffix in ERASED:
        try:
            os.unlink(str(ledger) + suffix)
        except FileNotFoundError:
            pass


def chain_banner(app) -> list[str]:
    return [t for t in app.main.query_one(Banners).texts() if "JOURNAL WAS CHANGED" in t]


async def test_a_journal_erased_under_an_open_screen_is_a_banner_as_check_says(ledger_path: Path, tmp_path: Path) -> None:
    journaled(ledger_path)
    app = make_app(str(ledger_path), actor="bob", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert chain_banner(app) == []  # intact while it is
        erase(ledger_path)
        checked = subprocess.run([sys.executable, "-m", "engine.cli.main", "check", str(ledger_path)],
                                 env=cli_env(), capture_output=True, text=True, timeout=60)
        assert checked.returncode == 1 and "the journal was erased" in checked.stdout, checked.stdout + checked.stderr
        app.check_chain()  # the next tick: the journal changed (gone), so it is verified again
        await settle(pilot)
        [banner] = chain_banner(app)
        assert "the journal was erased" in banner, banner


async def test_a_screen_opened_on_an_erased_journal_says_so(ledger_path: Path) -> None:
    journaled(ledger_path)
    erase(ledger_path)
    app = make_app(str(ledger_path), actor="bob", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        [banner] = chain_banner(app)
        assert "the journal was erased" in banner, banner


async def test_the_log_pane_goes_on_after_the_journal_was_erased_under_it(ledger_path: Path) -> None:
    """The log pane followed the journal at its old end: every record written after the
    erasure was never shown."""
    journaled(ledger_path)
    app = make_app(str(ledger_path), actor="bob", clock=fixed_clock, watch=True)
    async with app.run_test(size=(140, 40)) as pilot:
        log = app.main.query_one(LogPane)
        await wait_until(pilot, lambda: log.lines_seen >= 3)
        erase(ledger_path)
        open_ledger(str(ledger_path), actor="carol").pause("after the erasure")
        await wait_until(pilot, lambda: "ledger paused by carol" in screen_text(app))
