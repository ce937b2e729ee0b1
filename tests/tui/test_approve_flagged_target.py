"""The TUI's approve dialog approves nothing on a target changed outside the engine.

web-05 awaits its cutover and is flagged `changed_outside` (engine.store.outside: moved to
`awaiting_approval` by hand). `a`, the name typed, Enter: the approval was recorded beside the
flag, and outlived the `handoff reconcile` that later cleared it. The engine's approve
operation refuses it, as for `handoff approve` and Slack: the error view names the target,
what changed and `handoff reconcile`; the ledger's bytes are unchanged.
"""

from __future__ import annotations

from pathlib import Path

from tests.tui.helpers import screen_text, settle
from tests.tui.test_batch_approve import FLEET, build, targets
from tui.screens.approve import ApproveScreen
from tui.screens.error import ErrorScreen

AWAITING = 'web-05: {state: awaiting_approval, checkpoint: "0/5555", awaiting: cutover, awaiting_by: agent'
FLAG = ', changed_outside: {at: "2026-11-29T02:50:00Z", fields: [state]}'


async def test_tui_approve_refuses_a_target_changed_outside_the_engine(tmp_path: Path) -> None:
    """`a` on the flagged web-05, its name typed, Enter: the error names web-05, `state` and
    `handoff reconcile`; no approval is recorded and the file is as it was."""
    folder = tmp_path / "fleet"
    folder.mkdir()
    path = folder / "ledger.yaml"
    assert FLEET.count(AWAITING) == 1
    path.write_text(FLEET.replace(AWAITING, AWAITING + FLAG), encoding="utf-8")
    before = path.read_bytes()
    app = build(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.main.table.move_to("web-05")
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ApproveScreen), screen_text(app)
        await pilot.press(*"web-05", "enter")
        await pilot.press("enter")  # in the comment field: submit
        await settle(pilot)
        assert isinstance(app.screen, ErrorScreen), screen_text(app)
        said = app.screen.error_message
    assert "web-05 was changed outside the engine at 2026-11-29T02:50:00Z (state; now awaiting_approval)" in said, said
    assert f"`handoff reconcile {path} web-05 --to STATE --reason WHY`; nothing was approved" in said, said
    assert not targets(path)["web-05"].get("approvals") and path.read_bytes() == before
