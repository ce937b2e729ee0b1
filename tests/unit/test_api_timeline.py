"""engine.api's read-only timeline: pages of the real journal (newest first page, any start,
one target's records) and the targets rebuilt at a revision, equal to the ledger as written then."""

from __future__ import annotations

from pathlib import Path

from engine.api import open_ledger

LEDGER = """\
task: timeline
targets:
  a: {state: queued}
  b: {state: queued}
runbook:
  steps:
    - {name: check, from: queued, to: checked, reversible: true, run: ["true"]}
"""


def fleet(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.yaml"
    path.write_text(LEDGER, encoding="utf-8")
    return path


def test_pages_of_the_journal_and_of_one_target(tmp_path: Path) -> None:
    """Five changes: the newest page holds the last records, start=0 the first, a target filter only its own."""
    path = fleet(tmp_path)
    handle = open_ledger(str(path), actor="alice")
    for i in range(5):
        handle.block("a" if i % 2 == 0 else "b", f"hold {i}")
        handle.unblock("a" if i % 2 == 0 else "b", "queued", f"go {i}")
    total = handle.timeline(size=1000).total
    assert total >= 10
    newest = handle.timeline(size=3)
    assert newest.start == total - 3 and len(newest.records) == 3 and newest.total == total
    assert newest.records[-1]["msg"].endswith("go 4") or "go 4" in newest.records[-1]["msg"]
    first = handle.timeline(start=0, size=4)
    assert first.start == 0 and [r["seq"] for r in first.records] == sorted(r["seq"] for r in first.records)
    beyond = handle.timeline(start=10_000, size=4)
    assert beyond.start == total - 4  # a start past the end shows the last page, never an empty one
    only_b = handle.timeline(size=1000, target="b")
    assert only_b.records and all(r.get("target") == "b" for r in only_b.records) and only_b.target == "b"
    assert newest.head_rev == handle.load().revision


def test_state_at_each_revision_is_the_ledger_written_then(tmp_path: Path) -> None:
    """After every write, state_at(that revision) gives each touched target's state as the file said;
    a target no record names yet is absent (the rebuild never invents a state)."""
    path = fleet(tmp_path)
    handle = open_ledger(str(path), actor="alice")
    written, touched = {}, set()
    for name, step in (("a", lambda: handle.block("a", "x")), ("b", lambda: handle.block("b", "y")),
                       ("a", lambda: handle.unblock("a", "checked", "z")), ("b", lambda: handle.unblock("b", "queued", "w"))):
        step()
        touched.add(name)
        ledger = handle.load()
        written[ledger.revision] = {n: t.state for n, t in ledger.targets.items() if n in touched}
    assert len(written) == 4
    for rev, states in written.items():
        then = handle.state_at(rev)
        assert {n: t["state"] for n, t in then.items()} == states, rev


def test_the_timeline_writes_nothing(tmp_path: Path) -> None:
    """Reading pages and past states leaves the ledger and journal bytes as they were."""
    path = fleet(tmp_path)
    open_ledger(str(path), actor="alice").block("a", "x")
    journal = Path(str(path) + ".journal.jsonl")
    before = (path.read_bytes(), journal.read_bytes())
    reader = open_ledger(str(path), read_only=True)
    reader.timeline(size=2)
    reader.state_at(0)
    assert (path.read_bytes(), journal.read_bytes()) == before
