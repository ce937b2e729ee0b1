"""Verify and a reader's rollback check use the index's reach (its last line), not every entry.

The index's last line says how far into the journal it reached and the highest revision
seen; `JournalIndex.reach` reads that and the journal past it, and gives what a full
`refresh` gives. A journal cut short behind the index's back, with the ledger's
last-write record gone too (so no head names what was lost), is still a break that
`handoff journal --verify` names, and verifying writes nothing.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from tests.conftest import handoff

LEDGER = """\
task: reach
owner_shift: test-oncall
runbook:
  steps:
  - {name: link, from: queued, to: done, run: ["true"]}
targets:
  db-1: {state: queued}
"""


def _ledger(tmp_path: Path) -> Path:
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(LEDGER)
    # The index keeps approvals and step starts: a gate, an approval, the run, then more.
    for args in (("resume", "--ledger"), ("approve", "db-1", "--as", "alice"), ("resume", "--ledger"),
                 ("pause", "--reason", "one", "--as", "bob"), ("note", "--set", "two", "--as", "bob")):
        done = handoff(args[0], *([args[1], ledger] if args[1] == "--ledger" else [ledger, *args[1:]]))
        assert done.returncode == 0, done.stdout + done.stderr
    return ledger


def test_reach_is_what_a_full_refresh_gives(tmp_path: Path) -> None:
    from engine.audit.index import JournalIndex

    ledger = _ledger(tmp_path)
    path = f"{ledger}.journal.jsonl"
    full = JournalIndex(path, str(ledger))
    full.refresh()
    assert full.rev >= 4 and full.covered > 0
    assert JournalIndex(path, str(ledger)).reach() == (full.covered, full.rev)


def test_a_journal_cut_short_behind_the_index_is_a_break_verify_names(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    path = Path(f"{ledger}.journal.jsonl")
    data = path.read_bytes()
    cut = data[: data.rfind(b"\n", 0, len(data) // 2) + 1]  # whole records, the later half gone
    path.write_bytes(cut)
    os.unlink(f"{ledger}.last-write.json")  # no head names the lost records
    before = {str(p.relative_to(tmp_path)): hashlib.sha256(p.read_bytes()).hexdigest() for p in tmp_path.rglob("*") if p.is_file()}
    verify = handoff("journal", ledger, "--verify")
    assert verify.returncode == 1, verify.stdout + verify.stderr
    assert f"the journal ends at byte {len(cut)} but its index says it reached byte " in verify.stdout
    assert "records were erased or cut off" in verify.stdout
    assert {str(p.relative_to(tmp_path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in tmp_path.rglob("*") if p.is_file()} == before
