"""`check --strict` does not change with the clock (metrics are read only with --live); `unapprove --step` withdraws one approval."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from engine.audit.journal import journal_path
from tests.conftest import RUNBOOK_LEDGER
from tests.conftest import handoff as cli

LEDGER = """\
task: t
invariants:
  - pause if error_rate_5m > 0.5%
metrics:
  error_rate_5m: {run: [echo, "RATE"], max_age: 300}
notify:
  - {run: [echo]}
runbook:
  steps:
    - {name: s, from: queued, to: done, reversible: true, run: [echo, x]}
targets:
  a: {state: queued}
"""


def handoff(*args) -> tuple[int, str]:
    result = cli(*[str(a) for a in args])
    return result.returncode, result.stdout + result.stderr


def _reading(path: Path, minutes_ago: float, value: float) -> None:
    """What a session journals when it reads the metric."""
    ts = (datetime.now(timezone.utc) - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    with open(journal_path(str(path)), "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"ts": ts, "kind": "metric", "msg": f"error_rate_5m = {value}%", "actor": "s",
                             "metric": "error_rate_5m", "value": value, "percent": True}) + "\n")


def test_the_same_file_gets_the_same_answer_whatever_the_age_of_the_last_reading(tmp_path: Path) -> None:
    """Fresh reading, the same reading 8 minutes later (past max_age), a violating old one: check --strict says the same."""
    path = tmp_path / "ledger.yaml"
    path.write_text(LEDGER.replace("RATE", "0.1%"), encoding="utf-8")
    before = path.read_bytes()
    answers = []
    for minutes, value in ((0, 0.1), (8, 0.1), (60, 9.9)):
        _reading(path, minutes, value)
        answers.append(handoff("check", "--strict", path))
    assert answers[0][0] == 0 and len(set(answers)) == 1, answers
    assert "stale" not in answers[0][1]
    data = json.loads(handoff("check", "--json", path)[1])
    assert data["invariants"][0]["status"] == "unknown" and "not read: `handoff check --live`" in data["invariants"][0]["value"]
    assert path.read_bytes() == before
    # `status` is the runtime view: there the old reading is shown, and its age.
    assert "(1h ago): older than max_age 5m" in handoff("status", path)[1]


def test_live_reads_the_metric_now(tmp_path: Path) -> None:
    """--live runs the metric's command: a violating value is a problem, a failing command a warning (a problem with --strict)."""
    path = tmp_path / "ledger.yaml"
    path.write_text(LEDGER.replace("RATE", "0.9%"), encoding="utf-8")
    code, out = handoff("check", "--live", path)
    assert code == 1 and "invariant violated: pause if error_rate_5m > 0.5% (error_rate_5m 0.9%" in out
    assert handoff("check", path)[0] == 0  # the file alone is fine
    path.write_text(LEDGER.replace('[echo, "RATE"]', '[sh, -c, "exit 4"]'), encoding="utf-8")
    before = path.read_bytes()
    code, out = handoff("check", "--live", path)
    assert code == 0 and "warning: metric error_rate_5m could not be read now: " in out and "failed (exit 4)" in out
    assert handoff("check", "--live", "--strict", path)[0] == 1
    path.write_text(LEDGER.replace('[echo, "RATE"]', '[echo, "password=hunter2"]'), encoding="utf-8")
    before = path.read_bytes()
    code, out = handoff("check", "--live", path)
    assert "printed what looks like a secret" in out and "hunter2" not in out
    assert path.read_bytes() == before


def test_unapprove_step_withdraws_only_that_approval_and_names_it(tmp_path: Path) -> None:
    """db-2 holds a stale link approval and a valid cutover one: --step link withdraws the first and keeps the second."""
    path = tmp_path / "fleet.yaml"
    stale = ('{by: alice, user: alice, at: "2026-09-10T01:00:00Z", step: link, hash: 0123456789abcdef, checkpoint: "0/1"}')
    path.write_text(RUNBOOK_LEDGER.replace('db-2: {state: verified, checkpoint: "0/1"}',
                                           f'db-2: {{state: verified, checkpoint: "0/1", approvals: [{stale}]}}'), encoding="utf-8")
    code, out = handoff("approve", path, "db-2", "--step", "cutover", "--yes", "--as", "bob")
    assert code == 0, out
    code, out = handoff("unapprove", path, "db-2", "--step", "link", "--as", "bob")
    assert code == 0, out
    assert "approval of link on db-2 withdrawn; still approved: cutover" in out
    approvals = json.loads(handoff("status", path, "--json")[1])["targets"]["db-2"]["approvals"]
    assert [a["step"] for a in approvals] == ["cutover"]
    before = path.read_bytes()
    code, out = handoff("unapprove", path, "db-2", "--step", "link", "--as", "bob")
    assert code == 1 and "db-2 holds no unused approval of link to withdraw (it holds one of cutover)" in out
    assert path.read_bytes() == before
    code, out = handoff("unapprove", path, "db-2", "--as", "bob")  # without --step: every unused one, named
    assert code == 0 and "approval of cutover on db-2 withdrawn" in out and "still approved" not in out
