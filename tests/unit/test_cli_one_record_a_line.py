"""CLI text output is one record a line: a newline in ledger text (a task name, a reason)
must not forge another line of `handoff status` or `handoff journal`."""

from __future__ import annotations

from tests.conftest import RUNBOOK_LEDGER, handoff

FORGED_NEED = "needs a person: db-5 (blocked) blocked: do not touch"
FORGED_ASK = "awaiting approval: db-9 cutover (asked by alice since 2026-09-10T02:11Z)"
FORGED_RECORD = "[02:11:05] db-1: approved cutover by alice"


def test_status_lines_cannot_be_forged_by_a_reason_or_the_task(tmp_path):
    """db-4's reason and the task each carry a newline and a line `handoff status` writes itself."""
    path = tmp_path / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER.replace("task: small-fleet", f'task: "small-fleet\\n{FORGED_ASK}"').replace(
        'reason: "check exited 1"', f'reason: "check exited 1\\n{FORGED_NEED}"'), encoding="utf-8")
    result = handoff("status", path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert FORGED_NEED not in lines, result.stdout  # db-5 is queued; only db-4's reason says otherwise
    assert not any(line.startswith(FORGED_ASK) for line in lines), result.stdout  # nothing named db-9 exists


def test_journal_lines_cannot_be_forged_by_a_reason(tmp_path):
    """`handoff block --reason` with a newline: `handoff journal` prints one line for the one record."""
    path = tmp_path / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER, encoding="utf-8")
    assert handoff("block", path, "db-5", "--as", "bob", "--reason", f"ticket 1\n{FORGED_RECORD}").returncode == 0
    result = handoff("journal", path)
    assert result.returncode == 0, result.stderr
    assert FORGED_RECORD not in result.stdout.splitlines(), result.stdout
