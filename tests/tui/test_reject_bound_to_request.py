"""The TUI's reject says no only to the request it showed.

`x` on web-02 opened the reason prompt for its cutover (checkpoint 0/9A3F2C10). While the
reason was typed, the request changed: the checkpoint moved (another hash), web-02 came to
or web-02 came to await another step. Enter blocked web-02 anyway: a "no" to something the
person never saw. The prompt now carries the step and the hash it was opened on; the engine
refuses with
the reason (`ApprovalChanged`), the error view says it, nothing is recorded and the file's
bytes are as they were.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from textual.widgets import Input

from tests.conftest import engine_write
from tests.tui.helpers import fixed_clock, journal_records, screen_text, settle
from tui.app import make_app
from tui.screens.error import ErrorScreen
from tui.screens.reason import ReasonPrompt

WHY = "lag 0.4s on web-02 at 03:10Z; PLAT-231 says wait for the vacuum"


def checkpoint_moved(path: Path) -> None:
    path.write_text(path.read_text("utf-8").replace("0/9A3F2C10", "0/9A3F2D00"), "utf-8")


def another_step(path: Path) -> None:
    """web-02 now awaits its link (from `checked`), not its cutover: another request."""
    text = path.read_text("utf-8")
    assert text.count("awaiting: cutover") == 1
    path.write_text(text.replace("awaiting: cutover", "awaiting: link"), "utf-8")


def written_elsewhere(path: Path) -> None:
    """The engine writes the ledger (web-05's reason): web-02's request is as it was, the revision is not."""
    engine_write(path, lambda ledger: setattr(ledger.targets["web-05"], "reason", "waiting on PLAT-9"))


async def open_reject(pilot, app) -> None:
    """`x` on web-02: its reason prompt open (the request it names taken now)."""
    await settle(pilot)
    assert app.main.table.move_to("web-02")
    await pilot.press("x")
    await settle(pilot)
    assert isinstance(app.screen, ReasonPrompt), screen_text(app)


async def typed_then(pilot, app, path: Path, change) -> None:
    """The reason typed in web-02's open prompt, `change` made to the ledger, then Enter."""
    await open_reject(pilot, app)
    app.screen.query_one("#reason", Input).value = WHY
    change(path)
    await pilot.press("enter")
    await settle(pilot)


@pytest.mark.parametrize(("change", "said"), [
    (checkpoint_moved, "web-02: what cutover would run changed since you looked"),
    (another_step, "web-02 now awaits approval of link, not of cutover you were shown"),
], ids=["hash", "step"])
async def test_a_reject_of_a_request_that_changed_is_refused(ledger_path: Path, change, said: str) -> None:
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_reject(pilot, app)
        app.screen.query_one("#reason", Input).value = WHY
        change(ledger_path)
        before = ledger_path.read_bytes()
        app.reload()  # the reading lands while the prompt is open (as the file watcher's would)
        await settle(pilot)
        assert isinstance(app.screen, ReasonPrompt), screen_text(app)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ErrorScreen), screen_text(app)
        message = app.screen.error_message
    assert said in message and "nothing was rejected" in message, message
    assert ledger_path.read_bytes() == before
    assert yaml.safe_load(before)["targets"]["web-02"]["state"] == "awaiting_approval"
    assert not [r for r in journal_records(ledger_path) if r["kind"] == "rejection"]


async def test_the_prompt_names_the_step_it_rejects_and_a_reject_as_shown_goes_through(ledger_path: Path) -> None:
    """Nothing changed: the prompt says which step it says no to, and Enter blocks web-02 with the reason."""
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_reject(pilot, app)
        assert "Reject cutover on web-02" in screen_text(app)
        await pilot.press(*WHY, "enter")
        await settle(pilot)
    target = yaml.safe_load(ledger_path.read_text("utf-8"))["targets"]["web-02"]
    assert target["state"] == "blocked" and target["reason"] == f"rejected by alice: {WHY}"
    assert [(r["step"], r["reason"]) for r in journal_records(ledger_path) if r["kind"] == "rejection"] == [("cutover", WHY)]


async def test_a_write_elsewhere_does_not_refuse_the_reject(ledger_path: Path) -> None:
    """The engine writes another target while the reason is typed (a busy session does every few
    seconds): web-02 still asks what was shown, so the "no" goes through (bound to step and hash,
    as approvals are, not to the revision)."""
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await typed_then(pilot, app, ledger_path, written_elsewhere)
        assert not isinstance(app.screen, ErrorScreen), screen_text(app)
    assert yaml.safe_load(ledger_path.read_text("utf-8"))["targets"]["web-02"]["reason"] == f"rejected by alice: {WHY}"


@pytest.mark.parametrize("change", [checkpoint_moved, another_step], ids=["hash", "step"])
async def test_a_reason_for_a_request_that_is_gone_is_shown_not_kept(ledger_path: Path, change) -> None:
    """Refused because web-02 asks something else now: the error view says the reason is not
    kept, and quotes it (never lost unseen); `x` then opens empty, for the request as it is."""
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await typed_then(pilot, app, ledger_path, change)
        assert isinstance(app.screen, ErrorScreen), screen_text(app)
        said = app.screen.error_message
        assert ("Your reason was not saved, and is not kept: web-02 no longer asks what it was typed for. "
                f"It was: {WHY}") in said, said
        await pilot.press("escape", "R")
        await open_reject(pilot, app)
        assert app.screen.query_one("#reason", Input).value == ""
