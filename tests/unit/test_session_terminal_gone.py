"""A session whose terminal goes away mid-run, with no SIGHUP (a job left running with
`disown`, or started under `setsid`): every write to the terminal then fails with EIO.

What it prints is only a copy of the journal, so the session goes on and ends as it
would have: every step run, recorded as what it did, the handoff note written. Before,
the first line it could not print stopped a step half-way and turned every later spawn
into "cannot run 'sleep': Input/output error": targets marked failed whose commands never
ran (a lie in the ledger).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import cli_env

TARGETS = 6
LEDGER = """\
task: terminal-gone
invariants:
- never touch more than 2 dbs concurrently
runbook:
  steps:
  - {name: check, from: queued, to: checked, reversible: true, run: [sleep, "0.3"]}
  - {name: sync, from: checked, to: done, reversible: true, run: [sleep, "0.3"]}
targets:
""" + "".join(f"  db-{i}: {{state: queued}}\n" for i in range(1, TARGETS + 1))


def test_a_session_goes_on_when_its_terminal_goes_away(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(LEDGER, encoding="utf-8")
    master, slave = os.openpty()
    # A new session without TIOCSCTTY: the pty is nobody's controlling terminal, so closing
    # its other side sends no SIGHUP; writes to it fail with EIO from then on.
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", str(ledger), "--as", "agent"],
                            stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, cwd=str(tmp_path),
                            env=cli_env(XDG_STATE_HOME=str(tmp_path / "state")), start_new_session=True)
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + 60
        while b"db-1: starting check" not in seen:  # the session is running its first step
            assert time.monotonic() < deadline and proc.poll() is None, f"exit {proc.poll()}: {seen!r}"
            if select.select([master], [], [], 0.5)[0]:
                seen += os.read(master, 1 << 16)
    finally:
        os.close(master)
    code = proc.wait(timeout=120)

    data = yaml.safe_load(ledger.read_text(encoding="utf-8"))
    states = {name: t["state"] for name, t in data["targets"].items()}
    records = [json.loads(line) for line in (tmp_path / "ledger.yaml.journal.jsonl").read_text().splitlines() if line.strip()]
    errors = [r["msg"] for r in records if "session error" in r.get("msg", "") or "cannot run" in r.get("msg", "")]
    assert errors == [], errors
    assert states == {f"db-{i}": "done" for i in range(1, TARGETS + 1)}, states
    assert code == 0
    assert data.get("handoff_note") and data.get("session") is None  # handed off on purpose, the lease given back
    ends = [r for r in records if r.get("kind") == "session_end"]
    assert len(ends) == 1 and "exit 0" in ends[0]["msg"], ends


@pytest.mark.parametrize("gone", ["while following", "while printing what was there", "with nothing new"])
def test_journal_follow_ends_quietly_when_its_terminal_goes_away(tmp_path: Path, gone: str, monkeypatch) -> None:
    """`handoff journal -f` left running after logout (no SIGHUP) ends, exit 0 and no
    traceback, as a closed pipe (`| head`) does; it printed until then and changed nothing.
    The terminal may go while it follows (the next record ends it: the kernel may still
    take that write into a buffer nobody reads, so the hang-up is asked of the terminal),
    while it is still printing the records already there (a line and its newline are two
    writes), or while nothing new comes at all."""
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text("task: t\ntargets:\n  a: {state: queued}\n", encoding="utf-8")
    world = cli_env(XDG_STATE_HOME=str(tmp_path / "state"))

    def handoff(*args: str) -> None:
        done = subprocess.run([sys.executable, "-m", "engine.cli.main", *args], cwd=str(tmp_path), env=world,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr

    handoff("block", str(ledger), "a", "--reason", "first")
    if gone != "while following":  # more than a terminal's buffer holds: the follower is mid-way when it goes
        from engine.api import open_ledger

        monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
        other = open_ledger(str(ledger), actor="bob")
        for i in range(60):
            other.unblock("a", "queued", f"go {i}")
            other.block("a", f"hold {i}")
    master, slave = os.openpty()  # nobody's controlling terminal (see above)
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "journal", str(ledger), "--follow"],
                            stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE, cwd=str(tmp_path),
                            env=world, start_new_session=True)
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + 60
        # The whole line, its newline too (the follower is following), or its first bytes.
        while (b"[" if gone == "while printing what was there" else b"first\r\n") not in seen:
            assert time.monotonic() < deadline and proc.poll() is None, f"exit {proc.poll()}: {seen!r}"
            if select.select([master], [], [], 0.5)[0]:
                seen += os.read(master, 1 << 16)
        if gone == "with nothing new":
            time.sleep(1.0)  # the follower has printed what was there and waits for more (it looks every 0.2 s)
    finally:
        os.close(master)
    if gone != "with nothing new":
        handoff("unblock", str(ledger), "a", "--to", "queued", "--reason", "second")  # a record it cannot print
    try:
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert code == 0 and "Traceback" not in err, err
