"""A writer never waits for ever on the journal's lock: past HANDOFF_LOCK_TIMEOUT it names the
process holding it (and says when that process is stopped), writes nothing to the journal, and
the revision it could not journal is recorded as a gap by the next append."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from engine.audit.journal import journal_path
from tests.conftest import cli_env, handoff, wait_stopped

HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("stopped", [False, True], ids=["busy", "stopped"])
def test_a_held_journal_lock_is_named_and_the_change_is_kept_with_a_gap(fleet, stopped):
    assert handoff("note", fleet, "--set", "first note").returncode == 0
    journal = journal_path(str(fleet))
    holder = subprocess.Popen([sys.executable, "-c", HOLD, journal], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        if stopped:
            holder.send_signal(signal.SIGSTOP)
            wait_stopped(holder.pid, 10)
        before = open(journal, "rb").read()
        result = handoff("note", fleet, "--set", "second note", env=cli_env(HANDOFF_LOCK_TIMEOUT="1"), timeout=30)
        assert result.returncode == 1, result.stderr
        assert "but NOT in the journal" in result.stderr and "held for more than 1s" in result.stderr
        assert result.stderr.count("\n") == 1  # one line, the holder's command line folded into it
        assert f"pid {holder.pid} (python" in result.stderr and "end it, then run the command again" in result.stderr
        assert (f"which is stopped: let it go on (kill -CONT {holder.pid})" in result.stderr) is stopped
        assert open(journal, "rb").read() == before  # nothing written past the lock
        assert "second note" in fleet.read_text()  # the change itself is kept
        revision = json.loads(handoff("status", fleet, "--json").stdout)["revision"]
    finally:
        if stopped:
            holder.send_signal(signal.SIGCONT)
        holder.communicate(timeout=10)
    assert handoff("note", fleet, "--set", "third note").returncode == 0
    records = [json.loads(line) for line in open(journal, encoding="utf-8")]
    gaps = [r for r in records if r["kind"] == "journal_gap"]
    assert [g["rev"] for g in gaps] == [revision]
    assert "held for more than 1s" in gaps[0]["msg"] + json.dumps(gaps[0])
