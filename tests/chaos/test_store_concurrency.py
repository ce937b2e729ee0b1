"""Concurrency: several processes approving different targets and editing the note while
a 'human' keeps saving the file like a careful editor does (temp + atomic swap, or
truncate + write in place). Every run checks everything: no acknowledged engine write
is lost, no editor save is lost without being re-applied, no engine write lands on a
stale read, and every state parses.

The editor is careful the way vim is ("the file changed since reading it"), and then
some: with an atomic swap it sees what it replaced, and if that was an engine write
that slipped in, it swaps it straight back and edits again (an engine never builds on
the stale copy meanwhile: it refuses a file that went back in time). In place, it
notices when its write went to a file the engine had already replaced, and redoes it."""

from __future__ import annotations

import ctypes
import json
import os
import random
import subprocess
import sys
import threading
import time

import yaml

from engine.audit.journal import journal_path
from engine.store.file import FileStore
from tests.conftest import ROOT, cli_env

N_WORKERS = 4
PER_WORKER = 4
NOTES_PER_WORKER = 3

WORKER = r"""
import sys, time
from engine.api import open_ledger
from engine.errors import LedgerInvalid, Refused
path, me, targets = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
def retry(action):
    for _ in range(400):
        try:
            return action()
        except LedgerInvalid:
            time.sleep(0.01)   # caught the editor mid-write: try again
        except Refused as err:
            # Shrank or went back in time: the editor's half-written or clobbering save, undone in a moment.
            if err.title not in ("Ledger busy", "Ledger shrank", "Ledger went back in time"):
                raise
            time.sleep(0.01)
    raise SystemExit(f"{me}: gave up")
for i, target in enumerate(targets):
    retry(lambda: open_ledger(path, actor=me).approve(target, comment=f"by {me}"))
    print(f"approved {target}", flush=True)
    if i < int(sys.argv[4]):
        text = f"note {i} from {me}"
        retry(lambda: open_ledger(path, actor=me).set_note(text))
        print(f"note {text}", flush=True)
"""


def _ledger_text(n: int) -> str:
    rows = "\n".join(
        f'  t{i:02d}: {{state: awaiting_approval, checkpoint: "0/{i:08X}", awaiting: cutover, awaiting_by: agent}}' for i in range(n)
    )
    return (
        "# chaos ledger\ntask: chaos\nhuman_edits: 0\n"
        "runbook:\n  steps:\n  - {name: cutover, from: verified, to: done, run: [echo, \"{target}\"]}\n"
        f"targets:\n{rows}\nhandoff_note: start\n"
    )


_libc = ctypes.CDLL(None, use_errno=True)
_RENAME_EXCHANGE = 2


def _exchange(a: str, b: str) -> bool:
    """Atomically swap two paths (renameat2 RENAME_EXCHANGE); False if unsupported."""
    fn = getattr(_libc, "renameat2", None)
    if fn is None:
        return False
    return fn(-100, a.encode(), -100, b.encode(), _RENAME_EXCHANGE) == 0


class Editor(threading.Thread):
    """A human saving the file in a loop: bumps `human_edits`, either with an atomic swap
    (rename-exchange, so it sees what it replaced) or in place (like `cat > ledger.yaml`).
    `edits` counts only saves that stuck; `undone` and `redone` count the careful moves, and
    `put_back` the reads that caught an engine's exchange between its two halves."""

    def __init__(self, path: str, stop: threading.Event, writing: threading.Lock):
        super().__init__(daemon=True)
        self.path, self.stop, self.writing = path, stop, writing
        self.edits = 0
        self.undone = 0
        self.redone = 0
        self.put_back = 0
        self.failures: list[str] = []
        self.rng = random.Random(5)
        # An in-place save judged orphaned because, at the instant it looked, the engine's
        # rename-exchange had swapped its own file in: the engine then saw the save, put it
        # back and wrote again on top of it. Then this count did stick after all.
        self.maybe: int | None = None

    def run(self) -> None:
        while not self.stop.is_set():
            time.sleep(self.rng.uniform(0.005, 0.03))
            with open(self.path, "rb") as fh:
                before = fh.read()
            try:
                data = yaml.safe_load(before)
            except yaml.YAMLError:
                continue
            n = data.get("human_edits", 0)
            if n != self.edits and n == self.maybe:
                self.edits = n  # the save judged orphaned was put back by the engine's exchange: it stuck
            self.maybe = None
            if n < self.edits and self._put_back():
                continue
            if n != self.edits:
                self.failures.append(f"the file says human_edits {n}, but {self.edits} saves stuck")
                self.edits = n
            text = before.decode().replace(f"human_edits: {n}\n", f"human_edits: {n + 1}\n", 1)
            if self.rng.random() < 0.5:
                self._swap(before, text, n + 1)
            else:
                self._in_place(before, text, n + 1)

    def _put_back(self) -> bool:
        """Read during the microseconds an engine's compare-and-swap had its copy in, between its
        two exchanges (a save of ours landed after its last compare): it puts ours straight
        back, so a moment later the file holds every save that stuck. A real loss stays lost."""
        time.sleep(0.05)
        try:
            now = yaml.safe_load(open(self.path, "rb").read()).get("human_edits", 0)
        except yaml.YAMLError:
            return False
        if now != self.edits:
            return False
        self.put_back += 1
        return True

    def _swap(self, before: bytes, text: str, n: int) -> None:
        tmp = self.path + ".swp"
        with open(tmp, "w") as fh:
            fh.write(text)
        assert _exchange(tmp, self.path), "this test needs renameat2(RENAME_EXCHANGE)"
        with open(tmp, "rb") as fh:
            replaced = fh.read()
        if replaced == before:
            os.unlink(tmp)
            self.edits = n
            return
        # An engine write slipped in between our read and our swap: put it straight back.
        assert _exchange(tmp, self.path)
        with open(tmp, "rb") as fh:
            back = fh.read()
        # Built on the stale save means: what we took back carries our bump. Anything else is
        # the engine's own compare-and-swap exchange caught between our two (it swaps back).
        if back != text.encode() and f"human_edits: {n}\n".encode() in back:
            self.failures.append("someone built on the editor's stale save before it was undone")
        os.unlink(tmp)
        self.undone += 1

    def _in_place(self, before: bytes, text: str, n: int) -> None:
        with self.writing:  # readers in this test skip the moment the file is half-written
            with open(self.path, "r+b") as fh:
                if fh.read() != before:
                    return  # changed under us: start over, as a careful editor would
                fh.seek(0)
                fh.truncate()
                fh.write(text.encode())
                fh.flush()
                orphaned = os.fstat(fh.fileno()).st_ino != os.stat(self.path).st_ino
        if orphaned:
            self.redone += 1  # the engine replaced the file meanwhile: our save went nowhere; edit again
            self.maybe = n  # ... unless the engine exchanged it back (seen at the next read)
        else:
            self.edits = n


def test_concurrent_approvals_notes_and_editor_saves(tmp_path):
    """4 processes approve 16 targets and set 12 notes while an editor saves ~every 20 ms: nothing acknowledged is lost, revisions never repeat, every state parses."""
    path = str(tmp_path / "ledger.yaml")
    n = N_WORKERS * PER_WORKER
    with open(path, "w") as fh:
        fh.write(_ledger_text(n))
    stop = threading.Event()
    writing = threading.Lock()
    editor = Editor(path, stop, writing)
    parse_failures: list[str] = []
    reads = [0]

    def reader():
        store = FileStore(path, read_only=True)
        while not stop.is_set():
            with writing:
                try:
                    store.read()
                    reads[0] += 1
                except Exception as err:  # noqa: BLE001 - any failure is the finding
                    parse_failures.append(str(err))
            time.sleep(0.002)

    read_thread = threading.Thread(target=reader, daemon=True)
    editor.start()
    read_thread.start()
    procs = []
    for w in range(N_WORKERS):
        names = ",".join(f"t{i:02d}" for i in range(w * PER_WORKER, (w + 1) * PER_WORKER))
        procs.append(subprocess.Popen(
            [sys.executable, "-c", WORKER, path, f"w{w}", names, str(NOTES_PER_WORKER)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(), cwd=str(ROOT),
        ))
    outputs = [p.communicate(timeout=90) for p in procs]
    stop.set()
    editor.join(5)
    read_thread.join(5)
    for p, (out, err) in zip(procs, outputs):
        assert p.returncode == 0, err

    print(f"editor saves {editor.edits}, undone {editor.undone}, redone {editor.redone}, "
          f"put back {editor.put_back}, reader reads {reads[0]}")
    assert editor.edits > 5, "the editor never got a save in"
    assert editor.failures == [], editor.failures[:3]
    assert parse_failures == [], parse_failures[:3]
    assert reads[0] > 10
    final = FileStore(path).read()
    journal = [json.loads(line) for line in open(journal_path(path))]
    # One record per engine write (an `external_edit` note shares the revision of the write that saw it).
    revisions = [r["rev"] for r in journal if r["kind"] != "external_edit"]
    # No engine write landed on a stale read: each write's revision is new.
    assert len(revisions) == n + N_WORKERS * NOTES_PER_WORKER, [(r["kind"], r["actor"], r["rev"], r.get("target")) for r in journal]
    assert len(revisions) == len(set(revisions)), revisions
    # Every acknowledged approval is in the file, bound to its own target's checkpoint.
    for i in range(n):
        t = final.targets[f"t{i:02d}"]
        assert t.state == "verified" and len(t.approvals) == 1, (i, t)
        assert t.approvals[0].checkpoint == f"0/{i:08X}"
    notes = {r["text"] for r in journal if r["kind"] == "note"}
    assert final.handoff_note in notes
    # Every save the editor believes stuck is there: none was replaced by an older engine-written copy.
    assert final.model_extra["human_edits"] == editor.edits
