"""A process's first ledger read runs without the cyclic collector and then freezes what is
alive (engine.store.bulk); later reads leave the collector alone, and it is on throughout
after. The Temporal loop collects everything once it ends (the SDK's clients must not be left to
the interpreter's exit) and freezes again what was frozen. Each case in a fresh process: the collector's state is the whole process's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, RUNBOOK_LEDGER

FIRST_AND_LATER = """
import gc, sys
from engine.store.file import FileStore
store = FileStore(sys.argv[1], read_only=True)
before = gc.get_freeze_count()
store.read()
first = gc.get_freeze_count()
with open(sys.argv[1], "a") as fh:
    fh.write("# a later line\\n")  # new bytes: the next read parses and validates again
store.read()
print(before, first, gc.get_freeze_count(), gc.isenabled())
"""

TEMPORAL_EXIT = """
import asyncio, gc, sys, weakref
from engine.store.file import FileStore
from engine.temporal.client import in_loop

class Cycle:
    pass

def garbage():
    a, b = Cycle(), Cycle()
    a.other, b.other = b, a  # a cycle only the collector frees
    return weakref.ref(a)

async def work():
    FileStore(sys.argv[1], read_only=True).read()  # a worker's first read, inside the SDK's loop
gc.set_threshold(10**9)  # on, but no collection of its own before the read
held = garbage()  # garbage before the read: frozen with it, unless unfrozen before the collection
in_loop(work())
print(held() is not None, gc.isenabled())
"""


READ_THEN_LOOP = """
import asyncio, gc, sys
from engine.store.file import FileStore
from engine.temporal.client import in_loop

FileStore(sys.argv[1], read_only=True).read()  # status's own read, before it asks the server
frozen = gc.get_freeze_count()

async def ask():
    return None
in_loop(ask())
print(int(frozen > 1000), int(gc.get_freeze_count() > 1000), gc.isenabled())
"""


def _run(code: str, ledger: Path) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code, str(ledger)], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_first_read_freezes_what_is_alive_once_and_the_collector_stays_on(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(RUNBOOK_LEDGER, encoding="utf-8")
    before, first, later, enabled = _run(FIRST_AND_LATER, ledger)
    assert before == "0" and int(first) > 1000  # the interpreter's, the engine's and the ledger's objects
    # A session re-reads for days: never frozen again (the count only falls, as frozen objects are freed).
    assert int(later) <= int(first)
    assert enabled == "True"


def test_the_temporal_loop_collects_what_the_first_read_froze(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(RUNBOOK_LEDGER, encoding="utf-8")
    assert _run(TEMPORAL_EXIT, ledger) == ["False", "True"]  # frozen, the cycle would outlive the loop


def test_a_loop_after_the_first_read_keeps_the_freeze(tmp_path: Path) -> None:
    """status and the TUI ask the server in a loop of their own after their read: what is alive
    is frozen again after the loop's collection, so the TUI's start-up stays out of the
    collections that follow."""
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(RUNBOOK_LEDGER, encoding="utf-8")
    assert _run(READ_THEN_LOOP, ledger) == ["1", "1", "True"]
