"""Every command that takes a target name says one thing of a name the ledger does not have.

It was built in five places: `approve`, `unapprove`, `reject`, `retry`, `block` and
`unblock` exited 1, `run` 2, `reconcile` 1 without the sample of names, and none said
which ledger. Now one error (`NoSuchTarget`, exit 2: usage, as `handoff --help` and
docs/ledger.md give it) names the ledger, the name as typed (escaped: it is user text)
and the nearest names, at most three; the ledger's bytes stay as they were.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import RUNBOOK_LEDGER, cli_env, handoff

COMMANDS = {
    # name: argv after the ledger, with NAME where the target goes
    "approve": ["approve", "NAME", "--yes"],
    "approve-asking": ["approve", "NAME"],
    "unapprove": ["unapprove", "NAME"],
    "reject": ["reject", "NAME", "--reason", "lag"],
    "retry": ["retry", "NAME"],
    "retry-force": ["retry", "NAME", "--force", "--reason", "looked"],
    "block": ["block", "NAME", "--reason", "hold"],
    "unblock": ["unblock", "NAME", "--to", "queued", "--reason", "fixed"],
    "reconcile-to": ["reconcile", "NAME", "--to", "queued", "--reason", "looked"],
    "reconcile-probe": ["reconcile", "NAME", "--accept-checkpoint", "--reason", "looked"],
    "run": ["run", "NAME"],
    "run-step": ["run", "NAME", "check"],
}


def refused(tmp_path: Path, command: str, name: str) -> tuple[subprocess.CompletedProcess, Path]:
    path = tmp_path / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER, encoding="utf-8")
    before = path.read_bytes()
    argv = [name if a == "NAME" else a for a in COMMANDS[command]]
    result = handoff(argv[0], path, *argv[1:], "--as", "bob", input="")
    assert path.read_bytes() == before  # nothing was written
    assert not (tmp_path / "fleet.yaml.journal.jsonl").exists(), sorted(p.name for p in tmp_path.iterdir())
    return result, path


@pytest.mark.parametrize("command", COMMANDS, ids=list(COMMANDS))
def test_a_mistyped_name_is_said_the_same_by_every_command(tmp_path: Path, command: str) -> None:
    """`db-9` for db-5's ledger: exit 2, one line naming the file and the nearest names."""
    result, path = refused(tmp_path, command, "db-9")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == f"handoff: no target named 'db-9' in {path}; did you mean db-1, db-2 or db-3?\n"
    assert result.stdout == ""


@pytest.mark.parametrize("command", COMMANDS, ids=list(COMMANDS))
def test_a_name_with_escapes_is_said_escaped(tmp_path: Path, command: str) -> None:
    """A name holding a terminal escape is said escaped; nothing is near it, so the sample is."""
    result, path = refused(tmp_path, command, "\x1b]0;pwned\x07x\u202e")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == (f"handoff: no target named '\\x1b]0;pwned\\x07x\\u202e' in {path} "
                             "(targets include db-1, db-2, db-3, db-4, db-5)\n")


def test_a_name_in_another_case_suggests_only_that_one(tmp_path: Path) -> None:
    """`WEB-FRONTEND-01`: the target it means is web-frontend-01, alone (not web-frontend-02,
    as close by its letters)."""
    path = tmp_path / "fleet.yaml"
    path.write_text("task: t\ntargets:\n  web-frontend-01: {state: failed}\n  web-frontend-02: {state: failed}\n", "utf-8")
    before = path.read_bytes()
    result = handoff("retry", path, "WEB-FRONTEND-01", "--as", "bob")
    assert result.returncode == 2
    assert result.stderr == f"handoff: no target named 'WEB-FRONTEND-01' in {path}; did you mean web-frontend-01?\n"
    assert path.read_bytes() == before
    result = handoff("retry", path, "web-frontend-1", "--as", "bob")
    assert result.stderr == (f"handoff: no target named 'web-frontend-1' in {path}; "
                             "did you mean web-frontend-01 or web-frontend-02?\n")


def test_a_target_removed_while_reconcile_probes_it_is_said_gone(tmp_path: Path) -> None:
    """The target is taken out of the file while its probe runs: no traceback (a KeyError
    was), the same error, and the file as the person who removed it left it."""
    path = tmp_path / "fleet.yaml"
    started = tmp_path / "probe-started"
    probe = f"import time, pathlib; pathlib.Path({str(started)!r}).touch(); time.sleep(2); print('0/5')"
    path.write_text("task: race\nrunbook:\n  steps:\n  - {name: check, from: queued, to: checked, run: [echo, '{target}'], "
                    f"verify: [{sys.executable}, -c, \"{probe}\"]}}\n"
                    "targets:\n  db-1: {state: checked, checkpoint: '0/1'}\n  db-2: {state: queued}\n", encoding="utf-8")
    process = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "reconcile", str(path), "db-1",
                                "--accept-checkpoint", "--reason", "looked", "--as", "bob"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env())
    for _ in range(600):
        if started.exists() or process.poll() is not None:
            break
        time.sleep(0.05)
    assert started.exists(), process.communicate()
    path.write_text(path.read_text("utf-8").replace("  db-1: {state: checked, checkpoint: '0/1'}\n", ""), "utf-8")
    after = path.read_bytes()
    out, err = process.communicate(timeout=60)
    assert process.returncode == 2, out + err
    assert err == f"handoff: no target named 'db-1' in {path}; did you mean db-2?\n"
    assert path.read_bytes() == after


def test_a_mistyped_name_in_a_batch_refuses_the_batch(tmp_path: Path) -> None:
    """`--targets db-1,db-22` (db-2 meant): the batch is refused and names db-22, rather than
    approving db-1 alone and saying nothing of the other name; a wildcard word still matches."""
    path = tmp_path / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER.replace('db-2: {state: verified, checkpoint: "0/1"}', 'db-2: {state: awaiting_approval, '
                                           'checkpoint: "0/1", awaiting: cutover, awaiting_by: agent}'), encoding="utf-8")
    before = path.read_bytes()
    result = handoff("approve", path, "--step", "cutover", "--targets", "db-1,db-22", "--yes", "--as", "bob")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == f"handoff: no target named 'db-22' in {path}; did you mean db-2?\n"
    assert result.stdout == ""
    assert path.read_bytes() == before
    assert not (tmp_path / "fleet.yaml.journal.jsonl").exists()
    result = handoff("approve", path, "--step", "cutover", "--targets", "db-[12],db-2*", "--yes", "--as", "bob")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 approval(s) of cutover recorded" in result.stdout
