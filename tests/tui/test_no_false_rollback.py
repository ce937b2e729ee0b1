"""No false "THE FILE WENT BACKWARDS" at 10,000 targets while a real writer is busy.

A reader's parse of a 10,000-target ledger takes long enough that a busy writer (an
ordinary session, here a real process in a loop of transactions) writes the file and
its record several times meanwhile. The reader must judge the file it parsed against
the record that goes with that file, never a later one: every snapshot taken during
the writes says neither "rollback" nor "missing". A real old copy put back is still
called a rollback (the alarm is not switched off to pass).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.common import write_engine_ledger  # noqa: E402
from engine.store.file import FileStore  # noqa: E402

READINGS = 5  # 26 of 40 alarmed before the fix: five readings all pass by chance 0.5% of the time

# The writer: a transaction after transaction on one target, as a session's progress
# notes are; it says "ready" after its first write so the reader starts under load.
WRITER = """
import sys
from engine.store.file import FileStore
store = FileStore(sys.argv[1])
n = 0
while True:
    n += 1
    def bump(ledger, n=n):
        ledger.targets["db-00001"].last_action = f"progress {n}"
    store.transact(bump)
    if n == 1:
        print("ready", flush=True)
"""


def _engine_written(path: Path, n: int = 10_000) -> None:
    write_engine_ledger(str(path), n=n)
    FileStore(str(path)).transact(lambda ledger: None)  # the record the reader judges against


def test_a_busy_writer_never_looks_like_a_rollback(tmp_path: Path) -> None:
    ledger = tmp_path / "fleet.yaml"
    _engine_written(ledger)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(ledger)], stdout=subprocess.PIPE,
                              cwd=str(ROOT), text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        reader = FileStore(str(ledger), read_only=True)
        false_alarms: list[str] = []
        revisions: set[int] = set()
        # At least READINGS reads, and on until the writer has moved on twice (a loaded
        # machine slows it down; each of its writes also journals its history).
        deadline, i = time.monotonic() + 180, 0
        while i < READINGS or (len(revisions) <= 2 and time.monotonic() < deadline):
            i += 1
            snap = reader.snapshot()
            revisions.add(snap.ledger.revision)
            if snap.rollback or snap.missing:
                false_alarms.append(" ".join(snap.warnings))
        assert writer.poll() is None, "the writer stopped: the reader did not read under load"
    finally:
        writer.kill()
        writer.wait()
    assert len(revisions) > 2, f"the writer hardly moved ({sorted(revisions)}): nothing was tested"
    assert false_alarms == [], f"{len(false_alarms)} of {READINGS} readings alarmed: {false_alarms[0]}"


def test_an_old_copy_put_back_is_still_a_rollback(tmp_path: Path) -> None:
    ledger = tmp_path / "fleet.yaml"
    _engine_written(ledger, n=40)  # the alarm itself does not depend on size
    old = tmp_path / "old.yaml"
    shutil.copy(ledger, old)
    store = FileStore(str(ledger))
    for n in range(2):
        store.transact(lambda led, n=n: setattr(led.targets["db-00001"], "last_action", f"later {n}"))
    os.replace(old, ledger)
    before = ledger.read_bytes()
    snap = FileStore(str(ledger), read_only=True).snapshot()
    assert snap.rollback and "went back in time" in " ".join(snap.warnings)
    assert ledger.read_bytes() == before
