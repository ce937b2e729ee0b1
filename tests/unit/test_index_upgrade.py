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
import os
from pathlib import Path

import pytest

from engine.audit.index import VERSION, JournalIndex
from engine.audit.journal import Journal
from tests.conftest import OlderEngine
from tests.unit.test_requester_alias import _refused_as_alice, alias_ledger


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


def _two_gates_as_47_then_48_kept_them(tmp_path: Path) -> Journal:
    """An agent's gate for db-19 (stop 47 kept no gate), then robot's for the same step (stop
    48 kept it, without VERSION): the older gate comes first in the journal, last in the rescan."""
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text("task: t\n")
    journal = Journal(f"{ledger}.journal.jsonl")
    old = journal.append("gate", "db-19 link requires approval", actor="agent:s-old", target="db-19", step="link", user="ops")
    journal.append("log", "replication progress", actor="step", target="db-20", output="x" * 100_000)
    journal.append("gate", "db-19 link requires approval", actor="robot", target="db-19", step="link", user="me")
    index = Path(journal.path + ".index")
    lines = [json.loads(raw) for raw in index.read_text().splitlines()]
    older = [{k: v for k, v in line.items() if k != "v"} for line in lines if line.get("seq") != old["seq"]]
    index.write_text("".join(json.dumps(line) + "\n" for line in older))
    return journal


@pytest.mark.parametrize("saved", [False, True], ids=["read", "after-the-next-write"])
def test_a_record_found_again_keeps_its_place_in_the_journal(tmp_path: Path, saved: bool) -> None:
    """The newest gate is robot's, read at once or by a fresh process after the completed
    index was saved (review helper's finding: the rescan put the older gate last)."""
    journal = _two_gates_as_47_then_48_kept_them(tmp_path)
    if saved:
        Journal(journal.path).append("log", "next", actor="step", target="db-20")
    found = Journal(journal.path).last_of("gate", target="db-19", step="link")
    assert found is not None and found["actor"] == "robot", found


def test_the_requester_cannot_approve_own_request_after_a_47_then_48_upgrade(tmp_path: Path) -> None:
    """End to end with the real engines: an agent's gate under stop 47 (1f1ddaf), robot's
    request under stop 48 (19a3925, gates kept without VERSION), then this engine's approve."""
    stop_47, stop_48 = OlderEngine(tmp_path, "1f1ddaf").run, OlderEngine(tmp_path, "19a3925").run
    ledger = alias_ledger(tmp_path)
    journal = f"{ledger}.journal.jsonl"
    earlier = stop_47("-c", "import sys, getpass; from engine.audit.journal import Journal; j = Journal(sys.argv[1]); "
                            "j.append('gate', 'db-19: link requires approval', actor='agent:s-old', target='db-19', "
                            "step='link', user=getpass.getuser()); "
                            "j.append('log', 'replication progress', actor='step', target='db-20', output='x' * 100_000)",
                      journal)
    assert earlier.returncode == 0, earlier.stderr
    asked = stop_48("run", ledger, "db-19", "link", "--as", "robot")
    assert asked.returncode == 1 and "requires approval" in asked.stdout, asked.stdout + asked.stderr
    index = Path(journal + ".index").read_text()
    assert '"robot"' in index and '"v"' not in index, index
    _refused_as_alice(ledger)


def test_a_gate_an_older_engine_wrote_after_the_journal_was_cut_is_found(tmp_path: Path) -> None:
    """The journal cut short, this engine's next line vouches for less than its earlier ones
    did: an older engine's later lines (a session started before the upgrade) are read again."""
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text("task: t\n")
    journal = Journal(f"{ledger}.journal.jsonl")
    first = journal.append("log", "started", actor="step", target="db-20")
    journal.append("log", "replication progress", actor="step", target="db-20", output="x" * 400_000)
    os.truncate(journal.path, first["seq"] + len(Path(journal.path).read_bytes().split(b"\n")[0]) + 1)  # cut short
    Journal(journal.path).append("log", "after the cut", actor="step", target="db-20")  # a chain_break, the index saved
    wrote = OlderEngine(tmp_path, "1f1ddaf").run(
        "-c", "import sys; from engine.audit.journal import Journal; j = Journal(sys.argv[1]); "
              "j.append('gate', 'db-19: link requires approval', actor='robot', target='db-19', step='link', user='ops'); "
              "j.append('log', 'replication progress', actor='step', target='db-20', output='y' * 100_000)",
        journal.path)
    assert wrote.returncode == 0, wrote.stderr
    assert os.path.getsize(journal.path) < 400_000  # the older engine's lines end below the VERSION line before the cut
    assert Journal(journal.path).last_of("gate", target="db-19", step="link") is not None


def test_a_spent_approval_is_found_after_the_index_was_deleted_under_a_writer(tmp_path: Path) -> None:
    """The index deleted under a long-lived process (a session, the screen): its next write
    puts back every entry it knew, so the new file's VERSION line vouches for what it says."""
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text("task: t\n")
    session = Journal(f"{ledger}.journal.jsonl")  # one process's journal, kept for the whole session
    session.append("step_start", "db-19: link", actor="robot", target="db-19", step="link", token="t1",
                   approval_hash="ab12", approval_by="alice", approval_at="2026-12-06T21:00:00Z")
    os.remove(session.path + ".index")  # "rebuilt from the journal if it is deleted" (docs/operating.md)
    session.append("approval", "approved", actor="alice", target="db-20", step="link", hash="cd34", user="alice",
                   at="2026-12-06T22:00:00Z")
    spent = Journal(session.path).last_of("step_start", target="db-19", approval_hash="ab12", approval_by="alice",
                                          approval_at="2026-12-06T21:00:00Z")
    assert spent is not None, Path(session.path + ".index").read_text()
