"""An index an earlier engine wrote is completed from the journal once, then trusted again.

An engine that indexed fewer kinds (stop 47's kept no `gate`, no `unapproval`) or fewer
fields left lines that cover records without their entries. This engine's lines carry
`engine.audit.index.VERSION`; where the lines stop carrying it, the journal is read again
from there (once: the next write marks the index whole), the entries found are saved, and
they stay when the journal is erased. The engine itself asking under an older engine is in
tests/unit/test_requester_alias.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.audit.index import VERSION, JournalIndex
from engine.audit.journal import Journal


def _journal(tmp_path: Path) -> Journal:
    """A journal with a gate, an approval, then a chatty step (an index mark past both)."""
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text("task: t\n")
    journal = Journal(f"{ledger}.journal.jsonl")
    journal.append("gate", "db-19 link requires approval", actor="robot", target="db-19", step="link", user="ops")
    journal.append("approval", "approved", actor="alice", target="db-19", step="link", hash="ab12", user="alice",
                   at="2026-12-06T21:00:00Z")
    journal.append("log", "replication progress", actor="step", target="db-20", output="x" * 100_000)
    return journal


def _as_older_engine_wrote_it(journal: Journal, *, drop: tuple[str, ...] = (), strip: tuple[str, ...] = ()) -> None:
    """Rewrite the index as an engine that kept no `drop` kinds, nor `strip` fields, would have."""
    index = Path(journal.path + ".index")
    lines = [json.loads(raw) for raw in index.read_text().splitlines()]
    older = [{k: v for k, v in line.items() if k != "v" and k not in strip} for line in lines if line.get("kind") not in drop]
    if lines[-1].get("kind") in drop:  # its reach stays: an end and a revision
        older.append({"end": lines[-1]["end"], "rev": lines[-1].get("rev", 0)})
    index.write_text("".join(json.dumps(line) + "\n" for line in older))
    assert all("v" not in line for line in older) and older[-1]["end"] > 0


def _scans(monkeypatch) -> list[int]:
    """Where each index in this process starts reading the journal."""
    starts: list[int] = []
    real = JournalIndex._scan

    def spy(self, start: int) -> None:
        starts.append(start)
        real(self, start)
    monkeypatch.setattr(JournalIndex, "_scan", spy)
    return starts


def test_a_kind_the_older_index_did_not_keep_is_found_saved_and_kept(tmp_path: Path, monkeypatch) -> None:
    journal = _journal(tmp_path)
    _as_older_engine_wrote_it(journal, drop=("gate",))
    starts = _scans(monkeypatch)
    assert Journal(journal.path).last_of("gate", target="db-19", step="link")["user"] == "ops"
    assert starts == [0]  # the whole journal read again: the older lines promised nothing

    Journal(journal.path).append("log", "next", actor="step", target="db-20")  # the next writer saves it
    last = json.loads(Path(journal.path + ".index").read_text().splitlines()[-1])
    assert last.get("v") == VERSION
    starts.clear()
    assert Journal(journal.path).last_of("gate", target="db-19", step="link") is not None
    assert starts == []  # trusted again: nothing read past the index

    Path(journal.path).write_bytes(b"")  # the journal erased: its witnesses stay in the index
    kept = JournalIndex(journal.path, journal._ledger())
    kept.refresh()
    assert kept.newest("gate", {"target": "db-19", "step": "link"}) is not None


def test_an_older_index_missing_nothing_is_marked_whole_by_the_next_write(tmp_path: Path, monkeypatch) -> None:
    """Stop 48's index kept every kind this one does, without VERSION: read again once, and
    the next write (of a record with no entry) says so, so no reader reads it again."""
    journal = _journal(tmp_path)
    _as_older_engine_wrote_it(journal)
    starts = _scans(monkeypatch)
    writer = Journal(journal.path)
    writer.append("log", "next", actor="step", target="db-20")
    assert starts == [0]
    marked = Path(journal.path + ".index").read_text()
    writer.append("log", "and next", actor="step", target="db-20")  # said once, not at every write
    assert Path(journal.path + ".index").read_text() == marked
    starts.clear()
    assert Journal(journal.path).last_of("gate", target="db-19", step="link") is not None
    assert starts == [json.loads(marked.splitlines()[-1])["end"]]  # only the record past the mark


def test_lines_an_older_engine_added_later_are_read_again_from_where_they_start(tmp_path: Path, monkeypatch) -> None:
    journal = _journal(tmp_path)
    whole = Path(journal.path + ".index").read_text()
    trusted = json.loads(whole.splitlines()[-1])["end"]
    older = Journal(journal.path)
    older.append("gate", "db-20 link requires approval", actor="robot", target="db-20", step="link", user="ops")
    older.append("log", "replication progress", actor="step", target="db-20", output="y" * 100_000)
    later = Path(journal.path + ".index").read_text()[len(whole):]
    lines = [json.loads(raw) for raw in later.splitlines() if json.loads(raw).get("kind") != "gate"]
    Path(journal.path + ".index").write_text(whole + "".join(json.dumps({k: v for k, v in line.items() if k != "v"}) + "\n"
                                                             for line in lines))
    starts = _scans(monkeypatch)
    assert Journal(journal.path).last_of("gate", target="db-20", step="link") is not None
    assert starts == [trusted]  # not from the start: this engine's lines are trusted


@pytest.mark.parametrize("field", ["user", "at"])
def test_a_field_the_older_index_did_not_keep_is_read_again(tmp_path: Path, field: str) -> None:
    """An approval matched on a field an older engine's entry lacked is still found."""
    journal = _journal(tmp_path)
    _as_older_engine_wrote_it(journal, strip=(field,))
    found = Journal(journal.path).last_of("approval", target="db-19", step="link", hash="ab12", user="alice",
                                          at="2026-12-06T21:00:00Z")
    assert found is not None and found[field]
