"""What an operator typed into a dialog is not lost when the engine refuses the change.

A reason typed for a retry in production went nowhere when the engine refused the plain
retry (a failed irreversible step): the "Force retry" prompt that follows opened empty,
and the operator typed the same why again. An approval's comment was lost the same way
when the approval was refused (the checkpoint moved underneath). Both are kept with the
shared draft mechanism (`Draft`, `take_draft`): the prompt that follows, or the same
dialog opened again, holds them. A target taken out of the file is said as gone
(`NoSuchTarget`), not offered a forced retry.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from textual.widgets import Input

from tests.tui.helpers import fixed_clock, journal_records, screen_text, settle
from tui.app import make_app
from tui.screens.approve import ApproveScreen
from tui.screens.error import ErrorScreen
from tui.screens.reason import ReasonPrompt

WHY = "PLAT-231: link on web-03 never reached the replica; checked by hand"
COMMENT = "lag 0.4s at 03:10Z, go"


def on_disk(path: Path) -> dict:
    return yaml.safe_load(path.read_text("utf-8"))


async def test_the_reason_for_a_retry_in_production_opens_the_force_retry_prompt(ledger_path: Path) -> None:
    """The engine refuses the plain retry of web-03 (its link failed, irreversible); the
    "Force retry" prompt holds the reason already typed, and Enter forces it with that reason."""
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.main.table.move_to("web-03")
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, ReasonPrompt) and "Retry web-03 in production?" in screen_text(app)
        app.screen.query_one("#reason", Input).value = WHY
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ReasonPrompt) and "Force retry of web-03?" in screen_text(app)
        assert on_disk(ledger_path)["targets"]["web-03"]["state"] == "failed"  # refused: nothing written
        assert app.screen.query_one("#reason", Input).value == WHY
        await pilot.press("enter")
        await settle(pilot)
    retry = [r for r in journal_records(ledger_path) if r["kind"] == "retry"]
    assert [(r.get("forced"), r.get("reason")) for r in retry] == [(True, WHY)]


async def test_an_approval_comment_is_kept_when_the_approval_is_refused(ledger_path: Path) -> None:
    """web-02's checkpoint moves while the dialog is open: the approval is refused, the error
    view says the comment is kept and how to get it back, and `a` opens the dialog on it."""
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.main.table.move_to("web-02")
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ApproveScreen)
        await pilot.press(*"web-02", "enter", *COMMENT)
        ledger_path.write_text(ledger_path.read_text("utf-8").replace("0/9A3F2C10", "0/9A3F2D00"), "utf-8")
        before = ledger_path.read_bytes()
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ErrorScreen), screen_text(app)
        assert ledger_path.read_bytes() == before  # refused: nothing written
        assert "Your comment was not saved; it is kept as a draft: a on web-02 opens it again." in app.screen.error_message
        await pilot.press("escape", "R")
        await settle(pilot)
        assert app.main.table.move_to("web-02")
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ApproveScreen)
        assert app.screen.query_one("#comment", Input).value == COMMENT
        await pilot.press(*"web-02", "enter", "enter")
        await settle(pilot)
    approvals = on_disk(ledger_path)["targets"]["web-02"]["approvals"]
    assert [(a["by"], a["comment"]) for a in approvals] == [("alice", COMMENT)]


async def test_a_target_taken_out_of_the_file_is_not_offered_a_forced_retry(ledger_path: Path) -> None:
    """web-03 is removed from the file by hand while the screen still shows it: `r` says it
    is gone and which file (the reason kept), not "Force retry of web-03?"."""
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.main.table.move_to("web-03")
        lines = ledger_path.read_text("utf-8").splitlines(keepends=True)
        ledger_path.write_text("".join(line for line in lines if not line.startswith("  web-03:")), "utf-8")
        before = ledger_path.read_bytes()
        await pilot.press("r")
        await settle(pilot)
        app.screen.query_one("#reason", Input).value = WHY
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ErrorScreen), screen_text(app)
        assert app.screen.error_title == "No such target"
        assert app.screen.error_message.startswith(f"no target named 'web-03' in {ledger_path}")
        assert "Your reason was not saved; it is kept as a draft: r on web-03 opens it again." in app.screen.error_message
        assert ledger_path.read_bytes() == before


async def test_a_batch_approval_comment_is_kept_when_the_batch_is_refused(tmp_path: Path) -> None:
    """As the single dialog's: web-05's checkpoint moves while the batch dialog is open, the
    engine refuses the batch, the error view says the comment is kept and how to get it back,
    and `A` on the same marks opens the dialog on it; the batch then carries it to each approval."""
    from tests.tui.test_batch_approve import BATCH, build, confirm, fleet, open_batch, targets
    from tui.screens.approve_batch import BatchApproveScreen

    path = fleet(tmp_path)
    app = build(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_batch(pilot)
        app.screen.query_one("#comment", Input).value = COMMENT
        path.write_text(path.read_text("utf-8").replace('checkpoint: "0/5555"', 'checkpoint: "0/5556"'), encoding="utf-8")
        before = path.read_bytes()
        await confirm(pilot)
        assert isinstance(app.screen, ErrorScreen), screen_text(app)
        assert path.read_bytes() == before  # refused: nothing written
        said = app.screen.error_message
        assert "Your comment was not saved; it is kept as a draft: A on targets marked for cutover opens it again." in said, said
        await pilot.press("escape", "R")
        await settle(pilot)
        await pilot.press("A")
        await settle(pilot)
        assert isinstance(app.screen, BatchApproveScreen), screen_text(app)
        assert app.screen.query_one("#comment", Input).value == COMMENT
        await confirm(pilot)
        assert not isinstance(app.screen, ErrorScreen), screen_text(app)
    assert [[(a["by"], a["comment"]) for a in targets(path)[n]["approvals"]] for n in BATCH] == [[("alice", COMMENT)]] * 3
