"""The approval dialog and the detail show the step's policy and how each approval given was verified.

Real approvals through the engine: cutover needs two people and expires after 24h;
alice (a verified approver: her OS login is checked) gives the first one.
"""

from __future__ import annotations

from pathlib import Path

from engine.api import open_ledger
from engine.approvals.identity import os_user
from engine.codec.timefmt import now_iso
from tests.tui.helpers import fixed_clock, screen_text, settle
from tui.app import make_app
from tui.screens.approve import ApproveScreen
from tui.screens.detail import DetailScreen

POLICY = "1 of 2 approvals (alice); expires after 24h"


def one_of_two(ledger: Path) -> None:
    text = ledger.read_text().replace('description: "move traffic; the old side is gone after this"}',
                                      'description: "move traffic", approvals: {count: 2, expire_after: 24h}}')
    text = text.replace("runbook:", f"approvers:\n  - {{name: alice, os_user: {os_user()}}}\n  - {{name: bob, os_user: {os_user()}}}\nrunbook:")
    # Asked now: alice approves on the engine's real clock, and a request asked days ago has expired (never approved).
    text = text.replace('awaiting: cutover, awaiting_by: agent, awaiting_since: "2026-11-29T02:50:00Z"',
                        f'awaiting: cutover, awaiting_by: agent, awaiting_since: "{now_iso()}"')
    ledger.write_text(text)
    open_ledger(str(ledger), actor="alice").approve("web-02", comment="lag ok")
    target = open_ledger(str(ledger), read_only=True).load().targets["web-02"]
    assert target.state == "awaiting_approval" and target.approvals[0].verified == "os_user", target


async def test_the_detail_shows_the_policy_and_how_alice_was_verified(ledger_path: Path) -> None:
    one_of_two(ledger_path)
    app = make_app(str(ledger_path), actor="bob", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.main.table.move_to("web-02")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        detail = " ".join(screen_text(app).split())
        assert f"policy {POLICY}" in detail, detail
        assert "cutover: alice (login" in detail and "verified by OS login (uid)" in detail


async def test_the_dialog_shows_the_policy_and_the_approval_given(ledger_path: Path) -> None:
    one_of_two(ledger_path)
    before = ledger_path.read_bytes()
    app = make_app(str(ledger_path), actor="bob", clock=fixed_clock, watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.main.table.move_to("web-02")
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ApproveScreen)
        text = screen_text(app)
        assert f"policy {POLICY}" in text, text
        assert "given alice: verified by OS login (uid)" in text
        assert "Type the target name" in text and "Approve" in text  # the extra line still fits at 80x24
        await pilot.press("escape")
        await settle(pilot)
    assert ledger_path.read_bytes() == before


async def test_an_approval_written_without_proof_says_so(ledger_path: Path) -> None:
    """The default policy shows no policy line, but an unproven approval is never passed off as verified."""
    open_ledger(str(ledger_path), actor="carol").approve("web-02")
    app = make_app(str(ledger_path), actor="bob", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.main.table.move_to("web-02")
        await pilot.press("enter")
        await settle(pilot)
        detail = " ".join(screen_text(app).split())
        assert "policy 1 of" not in detail and "expires after" not in detail
        assert "cutover: carol" in detail and "not verified (nothing proves who)" in detail
