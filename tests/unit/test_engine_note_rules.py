"""The engine's own note keeps the rules: a session's generated note carries forward
every still-applying "Do NOT ..." rule of the note it replaces, so the engine's note
never fails the engine's review. A real `handoff resume` writes it; the journal's
`note_review` record and the stored note are what a person reads next.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.conftest import handoff

LEDGER = """\
task: rules
owner_shift: test-oncall
runbook:
  steps:
  - {name: link, from: checked, to: done, run: [echo, link, "{target}"]}
targets:
  db-17: {state: done}
  db-18: {state: awaiting_approval, awaiting: link, awaiting_by: "agent:s-0", awaiting_since: "2026-09-10T02:00:00Z"}
handoff_note: |
  Started db-18 at 01:58Z.
  Do NOT retry pg_upgrade on db-18, the --link step is irreversible.
  Never restart db-17 without asking alice.
  Do not page the DBAs before 06:00.
handoff_note_by: alice
"""


def test_the_sessions_note_keeps_every_rule_that_still_applies_and_passes_review(tmp_path: Path) -> None:
    """db-18 is not done: its rule is kept; the unnamed rule is kept; db-17 is done: its rule has done its job."""
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(LEDGER)
    result = handoff("resume", "--ledger", ledger)
    assert result.returncode == 0, result.stdout + result.stderr
    data = yaml.safe_load(ledger.read_text())
    note = data["handoff_note"]
    assert data["handoff_note_by"].startswith("agent:")
    assert "Reviewer:" not in note  # first: a Reviewer section would quote the very rules it misses
    assert "Do NOT retry pg_upgrade on db-18, the --link step is irreversible" in note
    assert "Do not page the DBAs before 06:00" in note
    assert "db-17 without asking" not in note
    records = [json.loads(line) for line in Path(str(ledger) + ".journal.jsonl").read_text().splitlines()]
    [verdict] = [r for r in records if r["kind"] == "note_review"]
    assert verdict["msg"].endswith("passes") and not verdict.get("problems"), verdict
    assert data["previous_note"]["text"].startswith("Started db-18")  # alice's words are kept, too
