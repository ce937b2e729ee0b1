"""A runbook whose steps only go round (queued -> checked -> queued) and never reach
`done`: `handoff check` must say the targets can never finish (engine/checks/flow.py
promises "does every path end at `done`"), not "ok"; otherwise a session burns its
whole budget going round."""

from __future__ import annotations

from tests.conftest import handoff

CYCLE = """\
task: t
runbook:
  steps:
  - {name: check, from: queued, to: checked, reversible: true, run: [echo, "{target}"]}
  - {name: back, from: checked, to: queued, reversible: true, run: [echo, back]}
targets:
  db-1: {state: queued}
"""


def test_a_runbook_that_never_reaches_done_is_a_problem(tmp_path):
    path = tmp_path / "ledger.yaml"
    path.write_text(CYCLE)
    result = handoff("check", path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "done" in result.stdout and (":4:" in result.stdout or ":5:" in result.stdout), result.stdout
    assert path.read_text() == CYCLE
