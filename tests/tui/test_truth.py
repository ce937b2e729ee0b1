"""The screen never shows a healthy fleet that is not there: broken, shrunk, rolled-back files, and old readings."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import yaml

from engine.api import open_ledger
from engine.audit.journal import journal_path
from tests.tui.helpers import FIXED_NOW, LEDGER, fixed_clock, journal_records, screen_text, settle, wait_until
from tui.app import LEASE_POLL, make_app
from tui.screens.confirm import ConfirmScreen
from tui.widgets.banners import Banners


def banners(app) -> list[str]:
    return app.main.query_one(Banners).texts()


def table_header(app) -> str:
    return next(line for line in screen_text(app).splitlines() if "Target" in line and "State" in line)


async def a_reading_after(pilot, app, shown: int) -> None:
    """Wait (bounded) until the app has handled a reading of the file later than reading `shown`
    (every read is numbered as it starts; the app keeps the number of the one on screen): with the
    file unchanged, the next lease poll's (every LEASE_POLL s), or R's."""
    await wait_until(pilot, lambda: app._shown_seq > shown, timeout=LEASE_POLL + 30)


async def test_invalid_write_in_place_keeps_the_banner_through_lease_polls(ledger_path: Path) -> None:
    """Invalid YAML written in place: the banner appears and stays through the 2 s lease polls until the file parses."""
    good = ledger_path.read_text("utf-8")
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.main.table.row_count == 7)
        with open(ledger_path, "r+", encoding="utf-8") as fh:  # same inode, as `vim` with backupcopy=yes writes
            fh.seek(0)
            fh.write("task: x\ntargets: {a: [\n")
            fh.truncate()
        await wait_until(pilot, lambda: any("LEDGER DOES NOT PARSE" in b for b in banners(app)))
        for _ in range(2):  # two lease polls later (the old screen repainted the last good ledger here)
            await a_reading_after(pilot, app, app._shown_seq)
            assert any("LEDGER DOES NOT PARSE" in b for b in banners(app)), screen_text(app)
        shown = app._shown_seq
        await pilot.press("R")
        await a_reading_after(pilot, app, shown)
        assert any("LEDGER DOES NOT PARSE" in b for b in banners(app))
        assert "web-02" in screen_text(app)  # the last good state stays on screen
        ledger_path.write_text(good, encoding="utf-8")
        await wait_until(pilot, lambda: not banners(app))


async def test_broken_file_marks_header_and_table_stale_with_the_age(ledger_path: Path) -> None:
    """While the file does not parse, header and table say the state is stale, and how old it is."""
    now = [FIXED_NOW]
    app = make_app(str(ledger_path), actor="alice", clock=lambda: now[0], watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "STALE" not in table_header(app) and "does not parse" not in app.main.header_text()
        ledger_path.write_text("task: x\ntargets: {a: [\n", encoding="utf-8")
        await pilot.press("R")
        await settle(pilot)
        now[0] = FIXED_NOW + timedelta(seconds=90)
        app.main._tick_stale()  # the once-a-second repaint
        await pilot.pause()
        assert "file does not parse; showing the state of 1m ago" in app.main.header_text()
        assert "STALE: last good state, 1m old" in table_header(app)
        assert re.search(r"Showing the last good state \(revision 0\), read 1m ago", " ".join(banners(app)))


def shrink_to(path: Path, keep: int) -> None:
    """Cut the targets of the file to the first `keep` (still valid YAML), as a bad truncation would."""
    data = yaml.safe_load(path.read_text("utf-8"))
    data["targets"] = dict(list(data["targets"].items())[:keep])
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


async def test_shrunk_file_shows_a_banner_keeps_missing_rows_and_offers_accept_removal(ledger_path: Path) -> None:
    """A file cut to 3 of 7 targets: a loud banner names the 4 missing, their rows stay, :accept-removal resolves it."""
    open_ledger(str(ledger_path), actor="bob").block("web-05", "hold")  # an engine write: it records the names
    shrink_to(ledger_path, 3)
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        [banner] = banners(app)
        assert "4 TARGETS MISSING FROM THE FILE: web-04, web-05, web-06, web-07" in banner
        assert ":accept-removal" in banner
        table = app.main.table
        assert table.total_count == 7 and table.row("web-07").state == "(missing)"
        text = screen_text(app)
        assert "∅ missing from file" in text and "4 missing from file" in text
        assert table.row("web-07").reason == "not in the file"  # opened after the cut: nothing more is known
        await pilot.press("colon", *"accept-removal", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
        assert banners(app) == [] and app.main.table.total_count == 3
    assert [r["kind"] for r in journal_records(ledger_path)].count("removal_accepted") == 1


async def test_shrink_while_watching_keeps_what_the_screen_knew(ledger_path: Path) -> None:
    """The file shrinks under an open screen: the lost targets keep their last known state, marked missing."""
    open_ledger(str(ledger_path), actor="bob").block("web-05", "hold")
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        shrink_to(ledger_path, 2)
        await pilot.press("R")
        await settle(pilot)
        row = app.main.table.row("web-03")
        assert row.state == "(missing)" and row.reason == "was failed"
        assert app.main.table.visible_names()[2] == "web-03"  # where it was, not moved to the end
        assert "5 TARGETS MISSING FROM THE FILE" in banners(app)[0]


async def test_rollback_shows_a_banner_and_offers_accept_rollback(ledger_path: Path) -> None:
    """The file goes back to an older revision: a banner says so until :accept-rollback."""
    handle = open_ledger(str(ledger_path), actor="bob")
    handle.block("web-05", "hold")
    older = ledger_path.read_text("utf-8")
    handle.unblock("web-05", "queued", "ok")
    ledger_path.write_text(older, encoding="utf-8")  # restored from an old copy
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        [banner] = banners(app)
        assert "THE FILE WENT BACKWARDS: its revision is 1, lower than the engine's last write (revision 2)" in banner
        await pilot.press("colon", *"accept-rollback", "enter")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert banners(app) == []
    assert any(r["kind"] == "rollback_accepted" for r in journal_records(ledger_path))


async def test_since_you_last_looked_compares_content_not_revision(ledger_path: Path) -> None:
    """A hand edit (revision unchanged) that moves web-05 from queued to failed shows on the next open."""
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("q")
    text = ledger_path.read_text("utf-8").replace("web-05: {state: queued}", "web-05: {state: failed}")
    ledger_path.write_text(text, encoding="utf-8")
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.main.ledger.revision == 0
        assert "web-05: queued → failed" in screen_text(app)


def old_reading(path: Path, minutes: float, value: float = 0.02) -> None:
    """A metric reading a session journaled `minutes` ago."""
    ts = (datetime.now(timezone.utc) - timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")
    with open(journal_path(str(path)), "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"ts": ts, "kind": "metric", "msg": f"error_rate_5m = {value}%", "actor": "s",
                             "metric": "error_rate_5m", "value": value, "percent": True}) + "\n")


async def test_an_old_metric_reading_is_unknown_stale_not_ok(ledger_path: Path) -> None:
    """An 8-minute-old reading shows `unknown (stale)` in the header and the invariants pane, never ✓ ok."""
    text = LEDGER.replace("  - never touch more than 2 dbs concurrently\n",
                          "  - never touch more than 2 dbs concurrently\n  - pause if error_rate_5m > 0.5%\n")
    ledger_path.write_text(text + "metrics:\n  error_rate_5m: {run: [echo, '0.02%']}\n", encoding="utf-8")
    old_reading(ledger_path, 8)
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        screen = screen_text(app)
        assert "? invariant unknown (stale): error_rate_5m 0.02% (8m ago): older than max_age 5m" in app.main.header_text()
        assert "? unknown (stale) pause if error_rate_5m > 0.5%" in screen
        assert "✓ ok pause if error_rate_5m" not in screen
