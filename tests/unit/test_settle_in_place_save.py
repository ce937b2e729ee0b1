"""A ledger read while a person saves it in place (truncate, then write: nano, `>`,
`write_text`). The read that lands in between sees an empty or half-written file; the
engine reads it again once the save is whole, instead of ending a session with "the ledger
must be a mapping". A file that stays bad is reported after one short look again.

The save's second half is written where the engine pauses (engine.store.settle.pause), so
the read always lands inside the save, whatever the machine's load."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from session_kit import demo_copy

from engine import api
from engine.errors import LedgerInvalid
from engine.store import settle


@pytest.fixture
def saved(tmp_path: Path):
    """(ledger path, its whole bytes, a handle opened on it)."""
    path = demo_copy(tmp_path)
    handle = api.open_ledger(str(path), actor="alice")
    return path, path.read_bytes(), handle


def _save_finishes_at_the_pause(monkeypatch, path: Path, whole: bytes) -> list[float]:
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        path.write_bytes(whole)

    monkeypatch.setattr(settle, "pause", pause)
    return pauses


@pytest.mark.parametrize("cut", ["empty", "half"])
def test_a_read_inside_a_save_waits_for_the_whole_file(monkeypatch, saved, cut: str) -> None:
    path, whole, handle = saved
    path.write_bytes(b"" if cut == "empty" else whole[: len(whole) // 2])
    pauses = _save_finishes_at_the_pause(monkeypatch, path, whole)
    ledger = handle.load()
    assert pauses == [settle.PAUSES[0]]
    assert set(ledger.targets) == set(yaml.safe_load(whole)["targets"])


def test_a_change_made_inside_a_save_goes_on_the_whole_file(monkeypatch, saved) -> None:
    """A person's pause, written while the file is half saved: made on the whole file, which stays whole."""
    path, whole, handle = saved
    path.write_bytes(whole[: len(whole) // 3])
    _save_finishes_at_the_pause(monkeypatch, path, whole)
    handle.pause("looking at db-18")
    data = yaml.safe_load(path.read_text("utf-8"))
    assert data["paused"] and set(data["targets"]) == set(yaml.safe_load(whole)["targets"])


def test_a_file_that_stays_bad_is_reported_after_one_look_again(monkeypatch, saved) -> None:
    path, _whole, handle = saved
    path.write_bytes(b"")
    pauses: list[float] = []
    monkeypatch.setattr(settle, "pause", pauses.append)
    with pytest.raises(LedgerInvalid) as err:
        handle.load()
    assert "the ledger must be a mapping" in str(err.value) and str(path) in str(err.value)
    assert pauses == [settle.PAUSES[0]]  # the same bytes again: reported, not waited on for 1.55 s
    with pytest.raises(LedgerInvalid):
        handle.pause("refused")
    assert path.read_bytes() == b""  # never written over


def test_a_save_that_keeps_changing_is_reported_as_it_last_was(monkeypatch, saved) -> None:
    """Bytes that change at every look but never parse: the pauses run out, the last error is said."""
    path, _whole, handle = saved
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        path.write_bytes(b"- %d\n" % len(pauses))  # a list, never a mapping

    path.write_bytes(b"- 0\n")
    monkeypatch.setattr(settle, "pause", pause)
    with pytest.raises(LedgerInvalid) as err:
        handle.load()
    assert "the ledger must be a mapping" in str(err.value)
    assert pauses == list(settle.PAUSES) and path.read_bytes() == b"- %d\n" % len(settle.PAUSES)
