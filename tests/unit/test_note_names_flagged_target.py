"""The handoff note a session leaves names a target changed outside the engine as waiting on a
reconcile, and claims nothing its hand-written state implies.

db-02 is moved by hand from queued to `replicating` (its irreversible link never ran). The
session stops, exit 3, as it should; but the note it left for the next shift said "Do NOT retry
link on db-02: irreversible, already done" and "db-02 replicating, ready for replicate", and
listed nobody waiting on db-02. It now says, under "Waiting on people:", that db-02 was changed
outside the engine, what changed, and `handoff reconcile` naming the ledger and db-02.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.conftest import handoff

LEDGER = """\
task: flagged note
owner_shift: test-oncall
runbook:
  steps:
  - {name: check, from: queued, to: checked, reversible: true, run: ["true"]}
  - {name: link, from: checked, to: replicating, run: ["true"]}
  - {name: replicate, from: replicating, to: verified, reversible: true, run: ["true"]}
  - {name: cutover, from: verified, to: done, run: ["true"]}
targets:
  db-01: {state: queued}
  db-02: {state: queued}
"""


def test_the_note_names_a_target_changed_outside_the_engine_and_claims_nothing_of_it(tmp_path: Path) -> None:
    """The note's db-02 line is the reconcile it waits on; no "already done", no "ready for"."""
    path = tmp_path / "ledger.yaml"
    path.write_text(LEDGER, encoding="utf-8")
    assert handoff("pause", path, "--reason", "setup", "--as", "alice").returncode == 0
    assert handoff("unpause", path, "--as", "alice").returncode == 0  # the engine's own write
    path.write_text(path.read_text().replace("db-02: {state: queued}", "db-02: {state: replicating}"))
    session = handoff("resume", "--ledger", path)
    assert session.returncode == 3, session.stdout + session.stderr
    note = yaml.safe_load(path.read_text(encoding="utf-8"))["handoff_note"]
    waiting = note.split("Waiting on people:\n", 1)[-1]
    assert waiting.startswith("- db-02 was changed outside the engine at "), note
    assert "(state; now replicating): nothing acts on it until a person checks the real system and runs " \
           f"`handoff reconcile {path} db-02 --to STATE --reason WHY`." in note, note
    assert "link on db-02" not in note and "db-02 replicating, ready for" not in note, note
    assert "db-01 queued, ready for check (reversible)." in note, note


def test_the_note_never_says_every_target_is_done_of_one_marked_done_by_hand(tmp_path: Path) -> None:
    """db-02 marked done by hand (no step ran): the note names its reconcile and never closes with
    "Every target is done.", which the next shift would read as the job finished."""
    path = tmp_path / "ledger.yaml"
    path.write_text(LEDGER.replace("db-01: {state: queued}", "db-01: {state: done}"), encoding="utf-8")
    assert handoff("pause", path, "--reason", "setup", "--as", "alice").returncode == 0
    assert handoff("unpause", path, "--as", "alice").returncode == 0  # the engine's own write
    path.write_text(path.read_text().replace("db-02: {state: queued}", "db-02: {state: done}"))
    before = path.read_text()
    assert "db-02: {state: done}" in before, before
    session = handoff("resume", "--ledger", path)
    assert session.returncode == 3, session.stdout + session.stderr
    note = yaml.safe_load(path.read_text(encoding="utf-8"))["handoff_note"]
    assert "- db-02 was changed outside the engine at " in note and "(state; now done)" in note, note
    assert "Every target is done." not in note, note
