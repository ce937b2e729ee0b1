"""`handoff approve` on a terminal binds the approval to the drift it warned of (reviewer's TOCTOU report, section 3).

A checkpoint drift a session records while a person is looking at an approval is approved unseen.

Promise (docs/operating.md, Approving): a drifted target's approval screen "shows the
mismatch and asks 'Approve anyway'"; `handoff approve` "says the same first (WARNING: db-18's
checkpoint drifted: ...) and asks"; and for a batch, in the TUI: "if one target's command,
checkpoint or drift changed since, or any one target is refused, nothing is recorded and the
dialog or the error names the target and why".

What happens: the engine binds an approval to its hash (command, timeout, checkpoint) only;
a drift is the target's `reason`, which is in no hash and which the engine never compares at
commit time (engine/ledger/ops.py approve, engine/approvals/batch.py approve_all). The TUI
only holds when its next re-reading reaches the dialog (`follow`), and `handoff approve`
only looks before it prints the command. A drift recorded between what was shown and the yes
is approved as if it were not there: the person never saw the warning nor said "anyway".
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import yaml

from tests.conftest import ROOT, cli_env, engine_write
from tests.tui.helpers import journal_records
from tests.tui.test_batch_approve import fleet

DRIFT = ("checkpoint drift: the ledger says 0/5555, `lag web-05` says 0/5600 (at 2026-11-29T02:58:00Z). "
         "Resolve with `handoff reconcile LEDGER web-05 --accept-checkpoint --reason WHY` or `--to STATE --reason WHY`")


def _drift(name: str, reason: str):
    def change(ledger) -> None:  # as engine.session.reconcile.verify_target records it
        ledger.targets[name].reason = reason
    return change


def test_cli_prompt_a_drift_recorded_while_the_name_is_typed_is_not_approved_unseen(tmp_path: Path) -> None:
    """`handoff approve LEDGER web-05` on a terminal prints the command (no WARNING: no drift yet) and asks for the
    name; a session records the drift; the person types `web-05`. The docs: a drifted target gets the WARNING first
    and the name typed approves it 'anyway'. Instead it is approved, the person never warned."""
    path = fleet(tmp_path)
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "approve", str(path), "web-05", "--as", "alice"],
                            stdin=slave, stdout=slave, stderr=slave, env=cli_env(), cwd=str(ROOT), close_fds=True,
                            start_new_session=True)
    os.close(slave)
    out, typed = b"", False
    deadline = time.monotonic() + 60
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
        if not typed and b"to approve it" in out:
            engine_write(path, _drift("web-05", DRIFT))  # while the person reads the command
            os.write(master, b"web-05\n")
            typed = True
        if proc.poll() is not None and not ready:
            break
    proc.wait(30)
    os.close(master)
    said = out.decode("utf-8", "replace")
    assert typed, said
    assert "WARNING" not in said.split("to approve it")[0]  # the person was shown no drift
    approvals = yaml.safe_load(path.read_text("utf-8"))["targets"]["web-05"].get("approvals")
    assert not approvals, f"approved a drift the person was never warned of (exit {proc.returncode}): {said!r}"
    assert not [r for r in journal_records(path) if r["kind"] == "approval"]


def _on_a_pty(path: Path, args: list[str], prompt: bytes, answers: list[bytes]) -> tuple[int, str]:
    """Run `handoff ARGS` on a terminal; once `prompt` shows, record web-05's drift, then type `answers`."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", *args], stdin=slave, stdout=slave, stderr=slave,
                            env=cli_env(), cwd=str(ROOT), close_fds=True, start_new_session=True)
    os.close(slave)
    out, typed = b"", False
    deadline = time.monotonic() + 60
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
        if not typed and prompt in out:
            engine_write(path, _drift("web-05", DRIFT))
            for answer in answers:
                os.write(master, answer)
            typed = True
        if proc.poll() is not None and not ready:
            break
    proc.wait(30)
    os.close(master)
    assert typed, out
    return proc.returncode, out.decode("utf-8", "replace")


def test_cli_batch_a_drift_recorded_while_the_step_is_typed_refuses_the_batch(tmp_path: Path) -> None:
    """`handoff approve LEDGER --step cutover --targets web-02,web-05` lists both with no WARNING; a session records
    web-05's drift before the step's name and the count are typed: the batch is refused, naming web-05, nothing recorded."""
    path = fleet(tmp_path)
    code, said = _on_a_pty(path, ["approve", str(path), "--step", "cutover", "--targets", "web-02,web-05", "--as", "alice"],
                           b"Type the step's name", [b"cutover\n", b"2\n"])
    assert "WARNING" not in said.split("Type the step's name")[0]
    assert code == 1, said
    assert "web-05: a checkpoint drift was recorded since you looked" in said and "nothing was approved" in said
    data = yaml.safe_load(path.read_text("utf-8"))["targets"]
    assert not data["web-02"].get("approvals") and not data["web-05"].get("approvals")
    assert not [r for r in journal_records(path) if r["kind"] == "approval"]
