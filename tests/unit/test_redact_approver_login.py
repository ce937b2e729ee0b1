"""An approval's witness (engine.approvals.witness) finds the journal's record by its step,
hash, approver, time and OS `user`, so the journal keeps `user` and `at` unmasked
(WITNESS_FIELDS), as it keeps the hash. A `redact:` pattern that matched the approving login
(a team masking account names) masked `user` in the record, and the real approval was then
refused as "written into the file by hand?" (a review found it)."""

from __future__ import annotations

import getpass
import json
import re
from pathlib import Path

from engine.audit.journal import journal_path
from tests.conftest import RUNBOOK_LEDGER, handoff


def test_a_pattern_matching_the_approvers_login_does_not_unmake_the_approval(tmp_path: Path) -> None:
    login = getpass.getuser()
    pattern = rf"(?<![\w-]){re.escape(login)}(?![\w-])"
    ledger = tmp_path / "fleet.yaml"
    ledger.write_text(RUNBOOK_LEDGER.replace("task: small-fleet\n", f"task: small-fleet\nredact: [{json.dumps(pattern)}]\n"))
    assert handoff("approve", ledger, "db-1", "--yes", "--as", "alice").returncode == 0
    records = [json.loads(line) for line in Path(journal_path(str(ledger))).read_text().splitlines()]
    approval = next(r for r in records if r["kind"] == "approval")
    run = handoff("run", ledger, "db-1")
    assert approval.get("user") == login, approval
    assert run.returncode == 0, run.stdout + run.stderr
