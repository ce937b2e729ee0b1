"""Batch approval in the TUI (issue 23): mark rows, `A`, type the step and the count; one approval per
target, each bound to its own hash, all or none, through the engine's batch operation."""

from __future__ import annotations

from pathlib import Path

import yaml
from textual.widgets import Button, Input

from tests.tui.helpers import LEDGER, fixed_clock, journal_records, screen_text, settle
from tui.app import make_app
from tui.screens.approve_batch import BatchApproveScreen
from tui.screens.error import ErrorScreen
from tui.widgets.summary import SummaryBar
from tui.widgets.target_table import MARK

# web-02, web-05 and web-06 await cutover (each with its own checkpoint); web-07 awaits link.
FLEET = (LEDGER
         .replace('  web-05: {state: queued}\n',
                  '  web-05: {state: awaiting_approval, checkpoint: "0/5555", awaiting: cutover, awaiting_by: agent}\n')
         .replace('  web-06: {state: checked, evidence: {step: check, exit_code: 2, at: "2026-11-29T02:20:00Z"}}\n',
                  '  web-06: {state: awaiting_approval, checkpoint: "0/6666", awaiting: cutover, awaiting_by: agent}\n')
         .replace('  web-07: {state: failed, reason: "check failed", evidence: {step: check, exit_code: 1, at: "2026-11-29T02:30:00Z"}}\n',
                  '  web-07: {state: awaiting_approval, awaiting: link, awaiting_by: agent}\n'))
BATCH = ["web-02", "web-05", "web-06"]


def fleet(tmp_path: Path) -> Path:
    folder = tmp_path / "fleet"
    folder.mkdir()
    path = folder / "ledger.yaml"
    path.write_text(FLEET, encoding="utf-8")
    return path


def build(path: Path, **kw):
    kw.setdefault("actor", "alice")
    return make_app(str(path), clock=fixed_clock, watch=False, **kw)


def notes(app) -> list[str]:
    return [n.message for n in app._notifications]


def targets(path: Path) -> dict:
    return yaml.safe_load(path.read_text("utf-8"))["targets"]


async def mark(pilot, names: list[str]) -> None:
    for name in names:
        assert pilot.app.main.table.move_to(name)
        await pilot.press("space")
        await pilot.pause()


async def open_batch(pilot, names: list[str] = BATCH) -> BatchApproveScreen:
    await settle(pilot)
    await mark(pilot, names)
    await pilot.press("A")
    await settle(pilot)
    assert isinstance(pilot.app.screen, BatchApproveScreen), notes(pilot.app)
    return pilot.app.screen


async def confirm(pilot, step: str = "cutover", count: str = "3") -> None:
    await pilot.press(*step, "enter")
    await pilot.press(*count, "enter")
    await pilot.press("enter")  # in the comment field: submit
    await settle(pilot)


async def test_marked_rows_show_a_glyph_and_the_summary_counts_them_without_colour(tmp_path: Path, monkeypatch) -> None:
    """With NO_COLOR, each marked row carries `*` in its gutter and the summary says "* 3 marked"."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = build(fleet(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await mark(pilot, BATCH)
        await pilot.press("home")  # the cursor off every marked row: its `▶` would not hide the mark anyway
        await pilot.pause()
        lines = screen_text(app).splitlines()
        for name in BATCH:
            row = next(line for line in lines if line[3:].startswith(name + " "))
            assert row[2] == MARK, row
        assert next(line for line in lines if line[3:].startswith("web-07 "))[2] == " "
        assert "* 3 marked" in str(app.main.query_one(SummaryBar).counts.render())


async def test_three_marked_targets_get_three_approvals_each_with_its_own_hash(tmp_path: Path) -> None:
    """Mark 3, A, type `cutover` and `3`: 3 approvals on disk (each the hash its row showed), 3 journal records."""
    path = fleet(tmp_path)
    app = build(path)
    async with app.run_test(size=(120, 40)) as pilot:
        dialog = await open_batch(pilot)
        shown = {i.name: i.pending.hash for i in dialog.items}
        text = screen_text(app)
        for name in BATCH:
            assert name in text
        assert "--checkpoint" in text and "0/5555" in text
        assert dialog.query_one("#approve", Button).disabled
        await confirm(pilot)
        assert app.screen is app.main, notes(app)
        assert app.main.table.marked_count == 0  # what was approved is unmarked
    on_disk = targets(path)
    hashes = {}
    for name in BATCH:
        (approval,) = on_disk[name]["approvals"]
        assert approval["step"] == "cutover" and approval["by"] == "alice"
        assert approval["hash"] == shown[name]
        hashes[name] = approval["hash"]
        assert on_disk[name]["state"] == "verified"
    assert len(set(hashes.values())) == 3
    records = [r for r in journal_records(path) if r["kind"] == "approval"]
    assert sorted(r["target"] for r in records) == BATCH
    assert {r["target"]: r["hash"] for r in records} == hashes
    assert on_disk["web-07"].get("approvals") in (None, [])


async def test_a_wrong_step_name_or_count_approves_nothing(tmp_path: Path) -> None:
    """`link` for `cutover`, or `2` for 3 targets: the dialog says so, Approve stays off, the file is byte for byte the same."""
    path = fleet(tmp_path)
    before = path.read_bytes()
    app = build(path)
    async with app.run_test(size=(120, 40)) as pilot:
        dialog = await open_batch(pilot)
        await pilot.press(*"link", "enter")
        await settle(pilot)
        assert "Type the step's name exactly" in str(dialog.query_one("#confirm-error").render())
        assert app.screen is dialog and dialog.query_one("#approve", Button).disabled
        dialog.query_one("#confirm-step", Input).value = "cutover"
        dialog.query_one("#confirm-count", Input).value = "2"
        await pilot.pause()
        assert dialog.query_one("#approve", Button).disabled
        dialog.query_one("#comment", Input).focus()
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is dialog
        assert "2 is not 3, the number of targets shown" in str(dialog.query_one("#confirm-error").render())
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is app.main
    assert path.read_bytes() == before


async def test_a_mixed_selection_is_refused_naming_the_target(tmp_path: Path) -> None:
    """Marks over two steps, or over a failed target: no dialog, a note naming each and why, nothing written."""
    path = fleet(tmp_path)
    before = path.read_bytes()
    app = build(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await mark(pilot, ["web-02", "web-07"])
        await pilot.press("A")
        await settle(pilot)
        assert app.screen is app.main
        said = notes(app)[-1]
        assert "they await different steps" in said and "cutover (web-02)" in said and "link (web-07)" in said
        await mark(pilot, ["web-07", "web-03"])  # web-07 unmarked, web-03 (failed) marked
        await pilot.press("A")
        await settle(pilot)
        assert app.screen is app.main
        assert "web-03 is failed, not awaiting approval" in notes(app)[-1]
    assert path.read_bytes() == before


async def test_a_target_changed_on_disk_before_the_yes_refuses_the_whole_batch(tmp_path: Path) -> None:
    """web-05's checkpoint edited on disk while the dialog is open: the engine refuses, naming web-05; nothing is written."""
    path = fleet(tmp_path)
    app = build(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_batch(pilot)
        path.write_text(path.read_text("utf-8").replace('checkpoint: "0/5555"', 'checkpoint: "0/5556"'), encoding="utf-8")
        before = path.read_bytes()
        journal = len(journal_records(path))
        await confirm(pilot)
        assert isinstance(app.screen, ErrorScreen)
        said = app.screen.error_message
        assert "1 refused: web-05: " in said and "nothing was approved" in said, said
        assert app.main.table.marked_count == 3  # a refused batch keeps its marks
    assert path.read_bytes() == before
    assert not any(targets(path)[n].get("approvals") for n in BATCH)
    assert [r for r in journal_records(path)[journal:] if r["kind"] == "approval"] == []


async def test_a_write_elsewhere_in_the_ledger_neither_holds_nor_refuses_the_batch(tmp_path: Path) -> None:
    """Bound to each target's hash, not to the revision: a session busy on other targets writes the
    ledger every few seconds (here bob changes web-07, which is not in the batch); the batch still goes through."""
    from engine.api import open_ledger

    path = fleet(tmp_path)
    app = build(path)
    async with app.run_test(size=(120, 40)) as pilot:
        dialog = await open_batch(pilot)
        open_ledger(str(path), actor="bob").reject("web-07", "not tonight")
        app.reload()
        await settle(pilot)
        assert dialog.changed is None
        await confirm(pilot)
        assert not isinstance(app.screen, ErrorScreen), notes(app)
    assert all(len(targets(path)[n].get("approvals") or []) == 1 for n in BATCH)
    assert targets(path)["web-07"]["state"] != "awaiting_approval"


async def test_read_only_offers_no_marks_and_no_batch(tmp_path: Path) -> None:
    """--read-only: space, M and A do nothing but say read-only; `:approve-marked` is not a command; no dialog."""
    path = fleet(tmp_path)
    before = path.read_bytes()
    app = build(path, read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.main.table.move_to("web-02")
        for key in ("space", "M", "A"):
            await pilot.press(key)
            await settle(pilot)
            assert app.screen is app.main
        assert app.main.table.marked_count == 0
        assert sum(n.startswith("read-only: ") for n in notes(app)) == 3
        offered = {a.name for a in app.main.door.palette()} | {a.name for a in app.main.door.visible()}
        assert not offered & {"toggle_mark", "mark", "unmark", "approve_marked"}
        await pilot.press("colon", *"approve-marked", "enter")
        await settle(pilot)
        assert app.screen is app.main
        assert "read-only: :approve-marked changes the ledger" in notes(app)[-1]
    assert path.read_bytes() == before


async def test_marks_survive_a_reload_and_follow_their_rows(tmp_path: Path) -> None:
    """R re-reads the file and the marks stay; `:unmark PATTERN` and `M` (mark shown awaiting, again: clear) work on them."""
    path = fleet(tmp_path)
    app = build(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await mark(pilot, BATCH)
        await pilot.press("R")
        await settle(pilot)
        assert app.main.table.marked_names() == BATCH
        await pilot.press("colon", *"unmark web-0[56]", "enter")
        await settle(pilot)
        assert app.main.table.marked_names() == ["web-02"]
        await pilot.press("M")  # every shown target awaiting approval
        await settle(pilot)
        assert app.main.table.marked_names() == ["web-02", "web-05", "web-06", "web-07"]
        await pilot.press("M")  # all marked already: clears them
        await settle(pilot)
        assert app.main.table.marked_count == 0


async def test_a_drifted_target_gets_the_single_dialogs_warning(tmp_path: Path) -> None:
    """web-05's checkpoint drifted: the batch shows the same CHECKPOINT DRIFT words as `a` and says "anyway"."""
    path = fleet(tmp_path)
    drifted = "checkpoint drift: the ledger says 0/5555, `lag web-05` says 0/5600 (at 2026-11-29T02:58:00Z)"
    path.write_text(path.read_text("utf-8").replace('checkpoint: "0/5555",', f'checkpoint: "0/5555", reason: "{drifted}",'),
                    encoding="utf-8")
    app = build(path)
    async with app.run_test(size=(120, 40)) as pilot:
        dialog = await open_batch(pilot)
        warnings = [str(w.render()) for w in dialog.query(".batch-drift")]
        assert len(warnings) == 1
        assert warnings[0].startswith("⚠ CHECKPOINT DRIFT: the ledger says 0/5555")
        assert "approve anyway?" in warnings[0]
        assert str(dialog.query_one("#approve", Button).label) == "Approve all 3 anyway"


async def test_the_requester_rule_applies_to_each_target(tmp_path: Path) -> None:
    """alice asked for web-06's cutover herself: her batch is refused naming web-06, and nothing is recorded."""
    path = fleet(tmp_path)
    path.write_text(path.read_text("utf-8").replace('checkpoint: "0/6666", awaiting: cutover, awaiting_by: agent',
                                                    'checkpoint: "0/6666", awaiting: cutover, awaiting_by: alice'),
                    encoding="utf-8")
    before = path.read_bytes()
    app = build(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_batch(pilot)
        await confirm(pilot)
        assert isinstance(app.screen, ErrorScreen)
        said = app.screen.error_message
        assert "1 refused: web-06: " in said and "nothing was approved" in said
    assert path.read_bytes() == before


async def test_a_two_person_policy_counts_each_target_apart(tmp_path: Path) -> None:
    """cutover needs 2 people: alice's batch is 1 of 2 on each target (they still await); her second is refused whole."""
    path = fleet(tmp_path)
    path.write_text(path.read_text("utf-8").replace('"{checkpoint}"], description:', '"{checkpoint}"], approvals: {count: 2}, description:'),
                    encoding="utf-8")
    app = build(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_batch(pilot)
        await confirm(pilot)
        assert app.screen is app.main, notes(app)
        on_disk = targets(path)
        assert all([a["by"] for a in on_disk[n]["approvals"]] == ["alice"] for n in BATCH)
        assert all(on_disk[n]["state"] == "awaiting_approval" for n in BATCH)
        before = path.read_bytes()
        await open_batch(pilot)
        await confirm(pilot)
        assert isinstance(app.screen, ErrorScreen)
        assert "3 refused: web-02: " in app.screen.error_message
    assert path.read_bytes() == before


async def test_the_dialog_follows_the_file_and_holds_when_a_target_changes(tmp_path: Path) -> None:
    """A re-reading shows web-05 changed: the dialog names it and Approve stays off, whatever is typed; nothing is written."""
    path = fleet(tmp_path)
    app = build(path)
    async with app.run_test(size=(120, 40)) as pilot:
        dialog = await open_batch(pilot)
        path.write_text(path.read_text("utf-8").replace('checkpoint: "0/5555"', 'checkpoint: "0/5556"'), encoding="utf-8")
        before = path.read_bytes()
        app.reload()
        await settle(pilot)
        changed = str(dialog.query_one("#batch-changed").render())
        assert "what web-05 would run changed" in changed and "web-02" not in changed
        await confirm(pilot)
        assert app.screen is dialog and dialog.query_one("#approve", Button).disabled
        assert "nothing was approved" in notes(app)[-1]
    assert path.read_bytes() == before


async def test_ledger_text_in_the_dialog_is_data(tmp_path: Path) -> None:
    """A target named like markup and a checkpoint holding an escape sequence show as written, the escape made visible."""
    path = fleet(tmp_path)
    path.write_text(path.read_text("utf-8").replace('web-05: {state: awaiting_approval, checkpoint: "0/5555"',
                                                    '"web-[b]05": {state: awaiting_approval, checkpoint: "0/\\e[2J"'),
                    encoding="utf-8")
    app = build(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_batch(pilot, ["web-02", "web-[b]05"])
        text = screen_text(app)
        assert "2/2 web-[b]05  step cutover  checkpoint 0/␛[2J" in text
        # The argv, one argument a line, shell-quoted where it needs it; a control inside one is its escape.
        assert "   'web-[b]05'" in text and "   $'0/\\x1b[2J'" in text and "\x1b" not in text


async def test_the_dialog_fits_80x24(tmp_path: Path) -> None:
    """At 80x24 the first target, both fields and the button are on screen together (the list scrolls)."""
    app = build(fleet(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await open_batch(pilot)
        text = screen_text(app)
        for words in ("Approve cutover on 3 marked target(s)", "1/3 web-02", "Type the step's name (cutover)",
                      "Type how many targets you approve it on (3)", "Approve all 3", "esc Cancel"):
            assert words in text, words
