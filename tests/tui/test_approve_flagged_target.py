"""The TUI's approve doors open nothing on a target changed outside the engine.

web-05 awaits its cutover and is flagged `changed_outside` (engine.store.outside: moved to
`awaiting_approval` by hand). The engine's approve operation refuses it, as for `handoff
approve` and Slack, but the TUI asked first: `a` opened the dialog, the person read the
command and typed the target's name, and only Enter said no. Now `a`, `:approve web-05`
and `A` on marked rows holding web-05 refuse at once with the engine's reason (a notice
naming web-05, what changed and `handoff reconcile` on this ledger), open no dialog, and
the ledger's bytes are unchanged. A dialog already open when the flag lands is refused by
the engine on Enter, with the same reason.
"""

from __future__ import annotations

from pathlib import Path

from tests.tui.helpers import screen_text, settle
from tests.tui.test_batch_approve import FLEET, build, fleet, mark, notes, targets
from tui.screens.approve import ApproveScreen
from tui.screens.approve_batch import BatchApproveScreen
from tui.screens.error import ErrorScreen

AWAITING = 'web-05: {state: awaiting_approval, checkpoint: "0/5555", awaiting: cutover, awaiting_by: agent'
FLAG = ', changed_outside: {at: "2026-11-29T02:50:00Z", fields: [state]}'


def flagged_fleet(tmp_path: Path) -> Path:
    folder = tmp_path / "fleet"
    folder.mkdir()
    path = folder / "ledger.yaml"
    assert FLEET.count(AWAITING) == 1
    path.write_text(FLEET.replace(AWAITING, AWAITING + FLAG), encoding="utf-8")
    return path


def refused(app, path: Path) -> str:
    said = " ".join(notes(app))
    assert "web-05 was changed outside the engine at 2026-11-29T02:50:00Z (state; now awaiting_approval)" in said, said
    assert f"`handoff reconcile {path} web-05 --to STATE --reason WHY`" in said, said
    return said


async def a_on_web05(pilot, app) -> None:
    await settle(pilot)
    assert app.main.table.move_to("web-05")
    await pilot.press("a")
    await settle(pilot)


async def test_a_on_a_flagged_target_opens_nothing_and_says_why(tmp_path: Path) -> None:
    """`a` and `:approve web-05`: no dialog, no name asked; a notice with the engine's reason."""
    path = flagged_fleet(tmp_path)
    before = path.read_bytes()
    app = build(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await a_on_web05(pilot, app)
        assert app.screen is app.main and not isinstance(app.screen, ApproveScreen), screen_text(app)
        refused(app, path)
        app.clear_notifications()
        await pilot.press(":", *"approve web-05", "enter")
        await settle(pilot)
        assert app.screen is app.main, screen_text(app)
        refused(app, path)
    assert not targets(path)["web-05"].get("approvals") and path.read_bytes() == before


async def test_a_batch_holding_a_flagged_target_opens_nothing_and_names_it(tmp_path: Path) -> None:
    """web-02, web-05 and web-06 marked, `A`: refused at once naming web-05 and why; no dialog asks for the step."""
    path = flagged_fleet(tmp_path)
    before = path.read_bytes()
    app = build(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await mark(pilot, ["web-02", "web-05", "web-06"])
        await pilot.press("A")
        await settle(pilot)
        assert not isinstance(app.screen, BatchApproveScreen), screen_text(app)
        said = refused(app, path)
        assert "nothing asked or approved" in said, said
    assert not any(t.get("approvals") for t in targets(path).values()) and path.read_bytes() == before


async def test_tui_approve_refuses_a_target_changed_outside_the_engine(tmp_path: Path) -> None:
    """The dialog opened on web-05 before the flag landed: its name typed, Enter: the engine's
    error names web-05, `state` and `handoff reconcile`; no approval, the file as it was."""
    path = fleet(tmp_path)
    app = build(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await a_on_web05(pilot, app)
        assert isinstance(app.screen, ApproveScreen), screen_text(app)
        path.write_text(path.read_text("utf-8").replace(AWAITING, AWAITING + FLAG), encoding="utf-8")
        before = path.read_bytes()
        await pilot.press(*"web-05", "enter")
        await pilot.press("enter")  # in the comment field: submit
        await settle(pilot)
        assert isinstance(app.screen, ErrorScreen), screen_text(app)
        said = app.screen.error_message
    assert "web-05 was changed outside the engine at 2026-11-29T02:50:00Z (state; now awaiting_approval)" in said, said
    assert f"`handoff reconcile {path} web-05 --to STATE --reason WHY`; nothing was approved" in said, said
    assert not targets(path)["web-05"].get("approvals") and path.read_bytes() == before


async def test_the_notice_shows_a_hand_made_mark_as_text(tmp_path: Path) -> None:
    """The mark is file data: an escape sequence in it is shown as a visible picture in the notice,
    never sent to the terminal."""
    path = flagged_fleet(tmp_path)
    path.write_text(path.read_text("utf-8").replace('at: "2026-11-29T02:50:00Z"', r'at: "\e[2J\e]0;owned\a"'), "utf-8")
    before = path.read_bytes()
    app = build(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await a_on_web05(pilot, app)
        said = " ".join(notes(app))
        assert "web-05 was changed outside the engine at" in said, said
        assert "\x1b" not in said and "\x07" not in said, repr(said)
    assert path.read_bytes() == before
