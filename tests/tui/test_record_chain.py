"""A journal whose hash chain breaks is a banner on the main screen, never silent.

Real journals written by the engine, edited by hand as a person would; the app checks
the chain in a worker on open, then only when the journal changed (tui.chain).
"""

from __future__ import annotations

from pathlib import Path

from engine.api import open_ledger
from tests.tui.helpers import fixed_clock, screen_text, settle
from tui.app import make_app
from tui.widgets.banners import Banners


def journaled(ledger: Path) -> Path:
    """Three engine writes, so the journal has records to edit; returns the journal's path."""
    handle = open_ledger(str(ledger), actor="alice")
    handle.block("web-05", "ticket PLAT-2")
    handle.unblock("web-05", "queued", "ticket closed")
    handle.block("web-06", "ticket PLAT-3")
    return Path(str(ledger.resolve()) + ".journal.jsonl")


def tamper(journal: Path) -> None:
    """Edit the first record's message in place, the way `sed -i` would."""
    lines = journal.read_bytes().splitlines(keepends=True)
    assert b"PLAT-2" in lines[0]
    lines[0] = lines[0].replace(b"PLAT-2", b"PLAT-9")
    journal.write_bytes(b"".join(lines))


def chain_banner(app) -> list[str]:
    return [t for t in app.main.query_one(Banners).texts() if "JOURNAL WAS CHANGED" in t]


async def test_a_broken_chain_is_a_banner_on_open(ledger_path: Path) -> None:
    journal = journaled(ledger_path)
    tamper(journal)
    before = ledger_path.read_bytes(), journal.read_bytes()
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        [banner] = chain_banner(app)
        assert "1 break in its hash chain" in banner and "seq" in banner, banner
        assert f"handoff journal {ledger_path} --verify" in banner, banner
        assert "THE JOURNAL WAS CHANGED" in screen_text(app)
    assert (ledger_path.read_bytes(), journal.read_bytes()) == before  # showing it writes nothing


async def test_an_intact_chain_shows_nothing_and_a_later_edit_is_found_once(ledger_path: Path) -> None:
    journal = journaled(ledger_path)
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert chain_banner(app) == [] and app.chain_checks == 1
        app.check_chain()  # the 30 s tick with the journal unchanged: no full read
        await settle(pilot)
        assert app.chain_checks == 1
        tamper(journal)
        app.check_chain()  # the next tick: the journal changed, so it is verified again
        await settle(pilot)
        assert app.chain_checks == 2 and len(chain_banner(app)) == 1
