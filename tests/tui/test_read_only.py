"""Read-only mode: no mutating action in footer, help or palette; refused if reached; nothing written."""

from __future__ import annotations

import os
from pathlib import Path

from textual.command import CommandPalette

from tests.tui.helpers import fixed_clock, screen_text, settle
from tui.app import make_app
from tui.screens.action_table import ACTIONS
from tui.screens.help import HelpScreen

MUTATING = ACTIONS.mutating

EVERY_KEY = ["a", "x", "e", "n", "N", "p", "r", "b", "u", "U", "s", "S", "o", "l", "F", "R", "t", "enter", "escape",
             "down", "down", "a", "p", "N", "escape"]


def folder_state(path: Path) -> tuple[bytes, int, list[str]]:
    return path.read_bytes(), os.stat(path).st_mtime_ns, sorted(os.listdir(path.parent))


async def test_header_says_read_only_and_why(ledger_path: Path) -> None:
    """The mode badge reads READ-ONLY with the reason."""
    app = make_app(str(ledger_path), read_only=True, clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "READ-ONLY (--read-only)" in screen_text(app)


async def test_no_mutating_action_in_footer_or_help(ledger_path: Path) -> None:
    """Footer and help list no mutating action; navigation and quit remain."""
    app = make_app(str(ledger_path), read_only=True, clock=fixed_clock, watch=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        footer = screen_text(app).splitlines()[-1]
        for word in ("Approve", "Reject", "Edit note", "Pause"):
            assert word not in footer
        assert "Quit" in footer and "Filter" in footer
        actions = {a.name for a in app.main.visible_actions()}
        assert not actions & MUTATING
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        help_text = screen_text(app)
        assert "Approve" not in help_text and "Edit note" not in help_text and "READ-ONLY" in help_text


async def test_palette_offers_no_mutating_action(ledger_path: Path) -> None:
    """The command palette built from the bindings leaves out every mutating action."""
    app = make_app(str(ledger_path), read_only=True, clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"approve")
        await pilot.pause(0.3)  # the palette searches in its own worker; let it answer
        await settle(pilot)
        assert "Approve the selected" not in screen_text(app)


async def test_palette_offers_actions_in_operator_mode(ledger_path: Path) -> None:
    """In operator mode the same palette search finds Approve."""
    app = make_app(str(ledger_path), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"approve")
        await pilot.pause(0.3)  # the palette searches in its own worker; let it answer
        await settle(pilot)
        assert "Approve" in screen_text(app)


async def test_every_key_writes_nothing(ledger_path: Path) -> None:
    """A whole session of pressing every key leaves the ledger's bytes, mtime and folder listing unchanged."""
    before = folder_state(ledger_path)
    app = make_app(str(ledger_path), read_only=True, clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        for key in EVERY_KEY:
            await pilot.press(key)
            await settle(pilot)
        for action in sorted(MUTATING):
            # Reached anyhow (a stale palette entry, a keymap): still refused.
            await app.main.run_action(action)
            await settle(pilot)
        await pilot.press("q")
    assert folder_state(ledger_path) == before


async def test_unwritable_file_opens_read_only(ledger_path: Path) -> None:
    """A ledger the user cannot write opens read-only automatically, saying why. Root can
    write any file by its mode, so as root the file is made immutable (`chattr +i`), which
    the kernel refuses root too; either way the permission check is the real one."""
    import subprocess

    import pytest

    immutable = os.geteuid() == 0
    if immutable:
        made = subprocess.run(["chattr", "+i", str(ledger_path)], capture_output=True, text=True)
        if made.returncode != 0:
            pytest.fail(f"cannot make {ledger_path} unwritable for root (chattr +i: {made.stderr.strip()}); "
                        "run the tests on a filesystem with file attributes (ext4, xfs) or as another user")
    else:
        ledger_path.chmod(0o444)
    try:
        assert not os.access(ledger_path, os.W_OK)
        app = make_app(str(ledger_path), clock=fixed_clock, watch=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            assert "READ-ONLY" in screen_text(app) and "not writable" in screen_text(app)
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(ledger_path)], check=True)
