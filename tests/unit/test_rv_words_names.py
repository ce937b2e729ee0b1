"""rev-words: the words of a refusal, as the CLI says them (real `handoff` processes, real files).

- A target changed outside the engine: `handoff approve`'s refusal and `handoff run`'s stop said
  two near copies of one sentence, each telling the person to run `handoff reconcile LEDGER ...`
  with a literal `LEDGER`. Now one sentence, naming the ledger as `handoff status` shows it,
  shell-quoted (a folder with a space in it), so the line can be pasted.
- A step or a state the ledger does not have: `approve --step`, a batch's `--step`, `unapprove
  --step`, `reconcile --to` and `unblock --to` exited 1 (`run`'s step 2), none naming the ledger or
  the nearest names. Now usage, as a target the ledger does not have: exit 2, one line naming the
  ledger, the name as typed and the nearest names; the ledger's bytes and its journal untouched.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.conftest import RUNBOOK_LEDGER, handoff
from tests.unit.test_batch_approve import FLEET

HAND_APPROVAL = ('approvals: [{by: mallory, user: mallory, at: "2026-12-07T20:00:00Z", step: cordon, '
                 'hash: "0123456789abcdef"}], awaiting_since')


def _flagged(tmp_path: Path) -> Path:
    """FLEET in a folder whose name holds a space, prod-1 given an approval by hand after an engine write."""
    folder = tmp_path / "on call"
    folder.mkdir()
    path = folder / "fleet.yaml"
    path.write_text(FLEET, encoding="utf-8")
    assert handoff("pause", path, "--reason", "setup", "--as", "alice").returncode == 0
    assert handoff("unpause", path, "--as", "alice").returncode == 0
    path.write_text(path.read_text(encoding="utf-8").replace("awaiting_since", HAND_APPROVAL, 1), encoding="utf-8")
    assert handoff("pause", path, "--reason", "look", "--as", "alice").returncode == 0  # flags prod-1
    assert handoff("unpause", path, "--as", "alice").returncode == 0
    return path


def test_a_flagged_target_is_said_in_one_sentence_naming_the_real_ledger(tmp_path: Path) -> None:
    path = _flagged(tmp_path)
    paste = f"`handoff reconcile {shlex.quote(str(path))} prod-1 --to STATE --reason WHY`"
    before = path.read_bytes()
    approve = handoff("approve", path, "prod-1", "--step", "cordon", "--as", "alice")
    assert approve.returncode == 1, approve.stdout + approve.stderr
    assert paste in approve.stderr and "LEDGER" not in approve.stderr, approve.stderr
    assert path.read_bytes() == before
    run = handoff("run", path, "prod-1")
    assert run.returncode == 3, run.stdout + run.stderr
    assert paste in run.stdout and "LEDGER" not in run.stdout, run.stdout
    # One sentence: what `approve` refuses with is what `run` stops on (less the closing words).
    said = approve.stderr.removeprefix("handoff: ").split("; nothing was approved")[0]
    assert said.startswith("prod-1 was changed outside the engine at 2026-"), said
    line = next(ln for ln in run.stdout.splitlines() if "changed outside the engine" in ln)
    head, tail = said.split(" (approvals; now awaiting_approval)")
    assert head in line and tail in line, (said, line)
    status = handoff("status", path)
    assert paste in status.stdout, status.stdout  # `status` names it the same way


STEP = {  # argv after the ledger; the misspelt step is `cutovr` (cutover meant), `chek` for run
    "run": (["run", "db-5", "chek"], "runbook step", "chek", "check"),
    "approve": (["approve", "db-1", "--step", "cutovr", "--yes"], "runbook step", "cutovr", "cutover"),
    "approve-batch": (["approve", "--step", "cutovr", "--targets", "db-1", "--yes"], "runbook step", "cutovr", "cutover"),
    "unapprove": (["unapprove", "db-1", "--step", "cutovr"], "runbook step", "cutovr", "cutover"),
    "reconcile": (["reconcile", "db-5", "--to", "qeued", "--reason", "looked"], "state", "qeued", "queued"),
    "unblock": (["unblock", "db-3", "--to", "qeued", "--reason", "fixed"], "state", "qeued", "queued"),
}


@pytest.mark.parametrize("command", STEP, ids=list(STEP))
def test_a_step_or_state_the_ledger_does_not_have_is_usage_said_as_a_missing_target_is(tmp_path: Path, command: str) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER, encoding="utf-8")
    before = path.read_bytes()
    argv, noun, typed, near = STEP[command]
    result = handoff(argv[0], path, *argv[1:], "--as", "bob", input="")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == f"handoff: no {noun} named {typed!r} in {path}; did you mean {near}?\n"
    assert result.stdout == ""
    assert path.read_bytes() == before
    assert not (tmp_path / "fleet.yaml.journal.jsonl").exists()


def test_a_state_the_ledger_has_but_the_command_cannot_take_is_still_refused(tmp_path: Path) -> None:
    """`--to awaiting_approval` names a state the ledger knows: a refusal (exit 1), not usage."""
    path = tmp_path / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER, encoding="utf-8")
    before = path.read_bytes()
    result = handoff("reconcile", path, "db-5", "--to", "awaiting_approval", "--reason", "looked", "--as", "bob")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "cannot reconcile db-5 to 'awaiting_approval'" in result.stderr
    assert path.read_bytes() == before


def test_a_name_near_nothing_lists_the_names_there_are(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER, encoding="utf-8")
    result = handoff("run", path, "db-5", "\x1b[31mzap", "--as", "bob")
    assert result.returncode == 2
    assert result.stderr == (f"handoff: no runbook step named '\\x1b[31mzap' in {path} "
                             "(runbook steps include check, link, sync, cutover)\n")
