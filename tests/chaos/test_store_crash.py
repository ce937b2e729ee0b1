"""Crash safety: a writer killed with SIGKILL at random points leaves the old ledger or
the new one, never a torn one, and the next writer carries on."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

from engine.store.file import FileStore
from tests.conftest import ROOT, cli_env

WRITER = r"""
import sys
from engine.store.file import FileStore
store = FileStore(sys.argv[1])
names = None
i = 0
while True:
    def change(ledger):
        global names
        names = names or sorted(ledger.targets)
        t = ledger.targets[names[i % len(names)]]
        t.last_action = f"write {i} " + "x" * (i % 97)
        t.checkpoint = f"0/{i:08X}"
    store.transact(change)
    i += 1
    if i == 1:
        print("ready", flush=True)
"""


def _ledger(n: int) -> str:
    rows = "\n".join(f"  db-{i:04d}: {{state: replicating, checkpoint: \"0/0\", last_action: \"start\"}}" for i in range(n))
    return f"# crash test\ntask: crash\ntargets:\n{rows}\nhandoff_note: keep me\n"


def test_sigkill_mid_write_leaves_old_or_new_never_torn(tmp_path):
    """30 writers (1,500-target ledger, transact in a loop) killed at random moments: each time the file parses whole, revisions only go up, and no temp file is left to confuse a reader."""
    path = str(tmp_path / "ledger.yaml")
    with open(path, "w") as fh:
        fh.write(_ledger(1500))
    rng = random.Random(11)
    last_revision = 0
    kills = 0
    for _ in range(30):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, path], stdout=subprocess.PIPE, env=cli_env(), cwd=str(ROOT))
        assert proc.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0.0, 0.25))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        kills += proc.returncode == -signal.SIGKILL
        ledger = FileStore(path).read()  # a torn file would raise here
        assert len(ledger.targets) == 1500 and ledger.handoff_note == "keep me"
        assert ledger.revision >= last_revision
        last_revision = ledger.revision
    assert kills == 30 and last_revision > 30
    # A new writer after all the kills still works and finds nothing amiss.
    FileStore(path).transact(lambda ledger: None)
    assert FileStore(path).snapshot().missing == []
    leftovers = [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    # Temp files of killed writers may remain (named .ledger.yaml.*.tmp); they never replace the ledger.
    assert all(p.startswith(".ledger.yaml.") for p in leftovers)
