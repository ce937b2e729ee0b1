"""A per-user mark only moves forward: a save stamped before what is stored is dropped
(another tab or terminal of the same user saw a later reading), an equal or later one wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.host.userstate import advance_user_state, load_user_state


@pytest.fixture(autouse=True)
def private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def test_an_older_save_never_replaces_a_newer_mark() -> None:
    assert advance_user_state("k", {"seen_at": "2026-12-01T10:00:00+00:00", "n": 2})
    assert not advance_user_state("k", {"seen_at": "2026-12-01T09:59:59+00:00", "n": 1})
    assert load_user_state("k")["n"] == 2
    assert advance_user_state("k", {"seen_at": "2026-12-01T10:00:00+00:00", "n": 3})  # equal: the later save wins
    assert advance_user_state("k", {"seen_at": "2026-12-01T11:00:00+00:00", "n": 4})
    assert load_user_state("k")["n"] == 4


def test_keys_are_apart_and_an_unreadable_time_does_not_block() -> None:
    assert advance_user_state("k#viewer=a", {"seen_at": "2026-12-01T10:00:00+00:00"})
    assert advance_user_state("k#viewer=b", {"seen_at": "2026-12-01T09:00:00+00:00"})
    assert advance_user_state("k#viewer=a", {"seen_at": "not a time", "n": 5})
    assert load_user_state("k#viewer=a")["n"] == 5
