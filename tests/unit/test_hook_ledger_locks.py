"""The ledger's locks are the engine's: `handoff hook pre-tool-use` (a subprocess, fed Claude Code's
JSON) refuses a command that names the ledger's lock file, that runs `flock` on the ledger or a file
beside it (the journal's lock is a flock on the journal itself), or code that names the ledger and
takes a lock. Held by an agent (`flock ledger.yaml.lock sleep 3600 &`), the lock made a person's
`handoff pause` fail after HANDOFF_LOCK_TIMEOUT seconds, and every `handoff run` with it."""

from __future__ import annotations

from pathlib import Path

import pytest
from session_kit import demo_copy
from test_hooks import bash, verdict


@pytest.fixture
def fleet(tmp_path: Path) -> tuple[Path, Path]:
    ledger = demo_copy(tmp_path)
    world = tmp_path / "world"
    bash(ledger, world, "true")  # the session's first call takes the lease (a write): the lock file is there
    assert (ledger.parent / "ledger.yaml.lock").exists()
    return ledger, world


@pytest.mark.parametrize("command, named", [
    ("flock ledger.yaml.lock sleep 3600 &", "ledger.yaml.lock"),
    ("flock -n {L}.lock true", "{L}.lock"),
    ("nohup flock -w 1 -E 0 ./ledger.yaml.lock sleep 3600 > /dev/null 2>&1 &", "./ledger.yaml.lock"),
    ("(cd /tmp && flock {L}.lock -c 'sleep 3600')", "{L}.lock"),
    ("flock ledger.yaml.journal.jsonl sleep 3600", "ledger.yaml.journal.jsonl"),
    ("flock ledger.yaml.j* sleep 3600", "ledger.yaml.j*"),
    ("exec 9<ledger.yaml.journal.jsonl; flock 9; sleep 3600", "ledger.yaml.journal.jsonl"),
    ("exec 9<ledger.yaml.lock && flock -x 9 && sleep 3600", "ledger.yaml.lock"),
    ("sleep 3600 < ledger.yaml.lock &", "ledger.yaml.lock"),
    ("cat ledger.yaml.lock", "ledger.yaml.lock"),
    ("python3 -c \"import fcntl, time; f = open('ledger.yaml.lock'); fcntl.flock(f, fcntl.LOCK_EX); time.sleep(3600)\"",
     "ledger.yaml"),
    ("python3 -c \"import fcntl; fcntl.lockf(open('ledger.yaml' + '.journal.jsonl', 'rb'), fcntl.LOCK_SH)\"", "ledger.yaml"),
    ("perl -e 'use Fcntl; open F, \"<ledger.yaml.lock\"; flock F, 2; sleep 3600'", "ledger.yaml"),
], ids=["flock", "flock-full-path", "flock-options-wrapped", "flock-elsewhere-dash-c", "flock-journal", "flock-glob",
        "fd-journal", "fd-lock", "held-open", "names-lock", "python-fcntl", "python-lockf", "perl-flock"])
def test_a_lock_on_the_ledger_s_files_is_the_engine_s(fleet, command, named) -> None:
    """Each is denied, naming the file and that only the engine takes its locks; the ledger is byte-identical."""
    ledger, world = fleet
    before = ledger.read_bytes()
    kind, reason = verdict(bash(ledger, world, command.format(L=ledger)))
    assert kind == "deny", (command, reason)
    assert named.format(L=ledger) in reason and "lock" in reason, reason
    assert "only the engine" in reason, reason
    assert ledger.read_bytes() == before


@pytest.mark.parametrize("command", [
    "flock /tmp/build.lock make -n",
    "flock -n /tmp/x.lock python3 sim.py counts",
    "head ledger.yaml.journal.jsonl",
    "tail -n 5 ledger.yaml.journal.jsonl | cut -c1-80",
    "ls -la",
    "grep -c flock ledger.yaml.journal.jsonl",
    "exec 9</tmp/x.lock; flock 9",
    "python3 -c \"import fcntl; fcntl.flock(open('/tmp/x.lock', 'w'), fcntl.LOCK_EX)\"",
], ids=["flock-other", "flock-other-runs", "read-journal", "tail-journal", "ls", "grep-the-word-flock", "fd-other",
        "python-other"])
def test_other_locks_and_reading_the_journal_pass(fleet, command) -> None:
    ledger, world = fleet
    assert verdict(bash(ledger, world, command)) == ("none", ""), command
