"""The TUI binds an approval to the checkpoint drift it showed (reviewer's TOCTOU report, section 3).

A checkpoint drift a session records while a person is looking at an approval is approved unseen.

Promise (docs/operating.md, Approving): a drifted target's approval screen "shows the
mismatch and asks 'Approve anyway'"; `handoff approve` "says the same first (WARNING: db-18's
checkpoint drifted: ...) and asks"; and for a batch, in the TUI: "if one target's command,
checkpoint or drift changed since, or any one target is refused, nothing is recorded and the
dialog or the error names the target and why".

What happens: the engine binds an approval to its hash (command, timeout, checkpoint) only;
a drift is the target's `reason`, which is in no hash and which the engine never compares at
commit time (engine/ledger/ops.py approve, engine/approvals/batch.py approve_all). The TUI
only holds when its next re-reading reaches the dialog (`follow`), and `handoff approve`
only looks before it prints the command. A drift recorded between what was shown and the yes
is approved as if it were not there: the person never saw the warning nor said "anyway".
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import engine_write
from tests.tui.helpers import settle
from tests.tui.test_batch_approve import BATCH, build, confirm, fleet, open_batch, targets

DRIFT = ("checkpoint drift: the ledger says 0/5555, `lag web-05` says 0/5600 (at 2026-11-29T02:58:00Z). "
         "Resolve with `handoff reconcile LEDGER web-05 --accept-checkpoint --reason WHY` or `--to STATE --reason WHY`")


def _drift(name: str, reason: str):
    def change(ledger) -> None:  # as engine.session.reconcile.verify_target records it
        ledger.targets[name].reason = reason
    return change


async def test_tui_batch_a_drift_recorded_before_the_yes_refuses_the_batch(tmp_path: Path) -> None:
    """Mark web-02, web-05, web-06; `A`; a session records web-05's drift; the person types `cutover` and `3`:
    the docs say nothing is recorded and the error names web-05. Instead all three are approved, web-05 too."""
    path = fleet(tmp_path)
    app = build(path)
    async with app.run_test(size=(120, 40)) as pilot:
        dialog = await open_batch(pilot)
        assert not dialog.drifted  # shown: no drift anywhere
        engine_write(path, _drift("web-05", DRIFT))  # a session's probe disagreed while the dialog was open
        await confirm(pilot)
    approved = [n for n in BATCH if targets(path)[n].get("approvals")]
    assert "web-05" not in approved, (
        f"the drifted web-05 was approved with no drift shown and no 'anyway': approved {approved}; "
        f"web-05 reason now: {targets(path)['web-05'].get('reason')!r}")


async def test_tui_single_a_drift_recorded_before_the_yes_is_not_approved_unseen(tmp_path: Path) -> None:
    """`a` on web-05 (no drift shown, button `Approve`); a session records its drift; the name typed, enter:
    approved, though the dialog never showed CHECKPOINT DRIFT nor asked 'Approve anyway'."""
    from tui.screens.approve import ApproveScreen

    path = fleet(tmp_path)
    app = build(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.main.table.move_to("web-05")
        await pilot.press("a")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ApproveScreen) and not dialog.drifted
        engine_write(path, _drift("web-05", DRIFT))
        await pilot.press(*"web-05", "enter")
        await pilot.press("enter")  # in the comment field: submit
        await settle(pilot)
    assert not targets(path)["web-05"].get("approvals"), "web-05 approved with a drift it never showed"
