"""An approval approves exactly what the approver saw, and runs it at most once.

The hash an approval binds covers the rendered command, its timeout and the checkpoint;
callers pass the hash they showed (`expect_hash`, `--expect-hash`, the terminal prompt),
and a mismatch records nothing and shows what is there now.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
import yaml

from engine.api import open_ledger
from engine.errors import ApprovalChanged, Refused
from engine.ledger import guard, ops
from engine.ledger.render import approval_hash
from tests.conftest import ROOT, cli_env, handoff

LEDGER = """\
task: binding
owner_shift: test-oncall
runbook:
  steps:
  - {name: link, from: checked, to: linked, timeout: 60, run: [echo, link, "{target}"]}
targets:
  db-1: {state: awaiting_approval, checkpoint: "0/AA", awaiting: link, awaiting_by: "agent:s-1", awaiting_since: "2026-09-10T02:11Z"}
"""


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.yaml"
    path.write_text(LEDGER)
    return path


def _edit(path: Path, fn) -> None:
    data = yaml.safe_load(path.read_text())
    fn(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_an_approval_binds_the_command_shown_not_the_one_on_disk_at_confirm_time(ledger: Path) -> None:
    """Shown `echo link db-1`; the file is edited to EVIL before confirming: ApprovalChanged shows both, nothing recorded."""
    handle = open_ledger(str(ledger), actor="alice")
    shown = handle.pending_command(handle.load(), "db-1")
    _edit(ledger, lambda d: d["runbook"]["steps"][0].update(run=["EVIL", "link", "{target}"]))
    before = ledger.read_bytes()
    with pytest.raises(ApprovalChanged) as caught:
        handle.approve("db-1", expect_hash=shown.hash)
    err = caught.value
    assert err.seen == shown.hash and err.now.argv == ["EVIL", "link", "db-1"] and err.now.hash != shown.hash
    assert "EVIL link db-1" in err.message and "Nothing was approved" in err.message
    assert ledger.read_bytes() == before


def test_a_changed_checkpoint_is_a_changed_approval(ledger: Path) -> None:
    """The same command with another checkpoint (the command does not even mention it) does not match what was shown."""
    handle = open_ledger(str(ledger), actor="alice")
    shown = handle.pending_command(handle.load(), "db-1")
    assert "{checkpoint}" not in " ".join(shown.step.run)
    _edit(ledger, lambda d: d["targets"]["db-1"].update(checkpoint="0/BB"))
    with pytest.raises(ApprovalChanged, match="checkpoint 0/BB"):
        handle.approve("db-1", expect_hash=shown.hash)


def test_checkpoint_and_timeout_are_in_the_hash_and_the_guard_holds_them(ledger: Path) -> None:
    """Approved at 0/AA: a new checkpoint, or a new timeout, voids the approval for the guard."""
    handle = open_ledger(str(ledger), actor="alice")
    handle.approve("db-1")
    fresh = handle.load()
    step = fresh.step("link")
    assert guard.check(fresh, "db-1", step, ledger_dir=str(ledger.parent)).allowed
    moved = fresh.model_copy(deep=True)
    moved.targets["db-1"].checkpoint = "0/BB"
    decision = guard.check(moved, "db-1", moved.step("link"), ledger_dir=str(ledger.parent))
    assert not decision.allowed and decision.needs_approval and "no longer matches" in decision.reason
    slower = fresh.model_copy(deep=True)
    slower.step("link").timeout = 3600
    assert approval_hash("db-1", slower.targets["db-1"], slower.step("link"), ledger_dir=str(ledger.parent)) != fresh.targets["db-1"].approvals[0].hash
    assert not guard.check(slower, "db-1", slower.step("link"), ledger_dir=str(ledger.parent)).allowed


def test_status_json_shows_argv_checkpoint_and_hash_and_expect_hash_uses_it(ledger: Path) -> None:
    """`status --json` gives the awaiting command's argv, checkpoint and hash; `approve --expect-hash` takes it."""
    status = json.loads(handoff("status", str(ledger), "--json").stdout)
    (item,) = status["awaiting"]
    assert item["argv"] == ["echo", "link", "db-1"] and item["checkpoint"] == "0/AA"
    wrong = handoff("approve", str(ledger), "db-1", "--expect-hash", "0" * 16, "--as", "alice")
    assert wrong.returncode == 1 and "changed since you looked" in wrong.stderr
    assert "approvals" not in yaml.safe_load(ledger.read_text())["targets"]["db-1"]
    right = handoff("approve", str(ledger), "db-1", "--expect-hash", item["hash"], "--as", "alice")
    assert right.returncode == 0, right.stderr
    assert f"hash: {item['hash']}" in right.stdout and ' argv: ["echo", "link", "db-1"]' in right.stdout and "0/AA" in right.stdout


def _approve_on_a_terminal(ledger: Path, *extra: str, typed: bytes | None) -> tuple[int, str]:
    """`handoff approve` with a real pseudo-terminal as its stdin/stdout; `typed` is sent after the prompt."""
    master, slave = pty.openpty()

    def controlling_terminal() -> None:  # like a login shell: the pty is the child's terminal (Ctrl-C is SIGINT)
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        # A shell's foreground command gets Ctrl-C and Ctrl-\ at their defaults, whatever the shell was given. The suite
        # may itself run with them ignored (a background job of a non-interactive shell: `sh -c 'tests/run.sh &'`),
        # and an ignored signal stays ignored in every child: Python then never turns Ctrl-C into KeyboardInterrupt,
        # and the prompt waited for ever on the ^C typed into it.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)

    proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "approve", str(ledger), "db-1", "--as", "alice", *extra],
                            stdin=slave, stdout=slave, stderr=slave, env=cli_env(), cwd=str(ROOT), close_fds=True,
                            preexec_fn=controlling_terminal)
    os.close(slave)
    out = b""
    sent = typed is None
    deadline = time.monotonic() + 120  # a guard against a hang, not a time limit: CLI start-up under load
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        if not sent and b"to approve it" in out:
            os.write(master, typed)
            sent = True
        if proc.poll() is not None and not ready:
            break
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:  # say where it hangs: what the terminal showed, and the process's own state
        state = _proc_state(proc.pid)
        proc.kill()
        proc.wait()
        os.close(master)
        raise AssertionError(f"`handoff approve` did not end ({'typed ' + repr(typed) if sent else 'nothing typed'}); "
                             f"{state}; the terminal showed: {out.decode('utf-8', 'replace')!r}") from None
    os.close(master)
    return proc.returncode, out.decode("utf-8", "replace")


def _proc_state(pid: int) -> str:
    """A live process's state, kernel wait channel and signal masks (/proc), for a failure message."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            rows = [line.strip() for line in fh if line.startswith(("State", "SigBlk", "SigIgn", "SigCgt", "Threads"))]
        with open(f"/proc/{pid}/wchan", encoding="ascii") as fh:
            rows.append(f"wchan: {fh.read()}")
    except OSError as err:
        rows = [f"/proc/{pid}: {err}"]
    return ", ".join(rows)


def test_on_a_terminal_approve_shows_the_command_and_asks_for_the_name(ledger: Path) -> None:
    """The argv one per line, checkpoint and hash, then the name: a wrong name, Ctrl-D or Ctrl-C approves nothing."""
    before = ledger.read_bytes()
    for typed in (b"db-2\n", b"\x04", b"\x03"):
        code, out = _approve_on_a_terminal(ledger, typed=typed)
        assert code in (1, 130) and "approved by" not in out, (typed, out)
        assert ledger.read_bytes() == before, typed
    code, out = _approve_on_a_terminal(ledger, typed=b"db-1\n")
    assert code == 0, out
    assert "link (IRREVERSIBLE) would run:" in out and "    echo\r\n    link\r\n    db-1" in out and "checkpoint: 0/AA" in out
    assert f"runs in: {ledger.parent.resolve()}\r\n" in out  # the folder the hash binds, shown
    assert "approved by alice" in out


def test_yes_skips_the_question_on_a_terminal(ledger: Path) -> None:
    """`--yes` approves on a terminal without asking, and still prints what it approved."""
    code, out = _approve_on_a_terminal(ledger, "--yes", typed=None)
    assert code == 0 and "to approve it" not in out and "approved by alice" in out and "hash:" in out


@pytest.mark.parametrize("name", ["agent:s-1 ", " Agent:S-1", "AGENT:s-1"])
def test_self_approval_compares_trimmed_and_case_folded_names(ledger: Path, name: str) -> None:
    """The session that asked cannot approve itself with a trailing space or another case."""
    result = handoff("approve", str(ledger), "db-1", "--as", name)
    assert result.returncode == 1 and "someone else must approve it" in result.stderr


def test_check_lists_approvals_that_no_longer_match(ledger: Path) -> None:
    """An unused approval given under another command (or the old binding) is listed: approve it again."""
    open_ledger(str(ledger), actor="alice").approve("db-1")
    _edit(ledger, lambda d: d["runbook"]["steps"][0].update(timeout=120))
    result = handoff("check", str(ledger))
    assert "db-1: the approval of link by alice" in result.stdout and "approve it again" in result.stdout


def test_a_stale_unused_approval_is_replaced_not_a_dead_end(ledger: Path) -> None:
    """Approving again after the command changed replaces the approval that can never be used."""
    handle = open_ledger(str(ledger), actor="alice")
    handle.approve("db-1")
    _edit(ledger, lambda d: d["targets"]["db-1"].update(checkpoint="0/CC"))
    handle.approve("db-1", step="link")
    (approval,) = handle.load().targets["db-1"].approvals
    assert approval.checkpoint == "0/CC"


def test_an_irreversible_step_with_until_or_retries_never_runs(ledger: Path, tmp_path: Path) -> None:
    """`until` or `retries` on an irreversible step: the guard refuses it and a session refuses to start, changing nothing."""
    _edit(ledger, lambda d: d["runbook"]["steps"][0].update(until="value < 5"))
    loaded = open_ledger(str(ledger)).load()
    decision = guard.check(loaded, "db-1", loaded.step("link"), ledger_dir=str(ledger.parent))
    assert not decision.allowed and "runs exactly once per approval" in decision.reason
    before = ledger.read_bytes()
    names = sorted(p.name for p in tmp_path.iterdir())
    result = handoff("resume", "--ledger", str(ledger))
    assert result.returncode == 2
    assert "runbook step link is irreversible but has `until`" in result.stderr
    assert ledger.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names + ["ledger.yaml.journal.jsonl"])
    (record,) = [json.loads(line) for line in open(str(ledger) + ".journal.jsonl")]
    assert record["kind"] == "session_refused"


def test_ops_approve_refuses_without_a_runbook_step_to_bind(tmp_path: Path) -> None:
    """Nothing awaits: expecting a hash is a conflict (what was shown is gone), not an approval of something else."""
    path = tmp_path / "l.yaml"
    path.write_text(LEDGER.replace("awaiting_approval", "linked").replace(", awaiting: link", ""))
    handle = open_ledger(str(path), actor="alice")
    with pytest.raises(ApprovalChanged, match="no longer waits on what you were shown"):
        handle.approve("db-1", expect_hash="abcd")
    with pytest.raises(Refused):
        ops.approve(handle.load().model_copy(deep=True), "db-1", ops.Who("alice", "alice"), step=None, comment=None,
                    ledger_dir=str(tmp_path))
