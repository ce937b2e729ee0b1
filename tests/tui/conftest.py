"""Fixtures for the TUI tests: the test fleet on disk and a private XDG state folder.

Every test runs with XDG_STATE_HOME in its own temp folder, so "since you last
looked" state never touches the real home. Tests wait for workers (see
`helpers.settle`) instead of sleeping.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tui.helpers import LEDGER


@pytest.fixture(autouse=True)
def private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Per-user state goes to a temp folder (the engine reads XDG_STATE_HOME)."""
    state = tmp_path / "xdg-state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state


@pytest.fixture
def ledger_path(tmp_path: Path) -> Path:
    """The small fleet, written in its own folder."""
    folder = tmp_path / "fleet"
    folder.mkdir()
    path = folder / "ledger.yaml"
    path.write_text(LEDGER, encoding="utf-8")
    return path
