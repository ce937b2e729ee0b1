"""What a write carries forward instead of looking at every target again: the new document's
target texts (`Parsed.lines`) and block indexes (`Parsed.where`), and the store's line -> target
map (`FileStore._known`), are each what a full look at the document just written gives, through
hand-written ledgers (comments everywhere) and writes that change, add and remove targets."""

from __future__ import annotations

import os
import shutil
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.codec.layout import TARGET
from engine.ledger.model import Target
from engine.store.file import FileStore
from tests.unit.hand_written import ledgers

OPS = st.lists(st.tuples(st.integers(0, 5), st.sampled_from(["state", "note", "add", "remove", "top"])), min_size=1, max_size=5)


def _change(ops):
    def fn(ledger):
        names = list(ledger.targets)
        for at, what in ops:
            name = names[at % len(names)] if names else None
            if what == "add":
                ledger.targets[f"new-{at}"] = Target(state="queued")
            elif what == "remove" and name in ledger.targets and len(ledger.targets) > 1:
                del ledger.targets[name]
            elif what == "state" and name in ledger.targets:
                ledger.targets[name].state = "done"
            elif what == "note" and name in ledger.targets:
                ledger.targets[name].next_action = f"look again {at}"
            elif what == "top":
                ledger.handoff_note = f"note {at}"
    return fn


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(ledgers(), st.lists(OPS, min_size=1, max_size=4))
def test_what_a_write_carries_forward_is_what_a_full_look_gives(doc, writes):
    folder = tempfile.mkdtemp()
    try:
        path = os.path.join(folder, "ledger.yaml")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(doc.text)
        store = FileStore(path)
        store.read()
        for ops in writes:
            store.transact(_change(ops), accept_shrink=True)
            (hit,) = store._cache.values()
            blocks = hit.doc.blocks
            assert hit.doc.lines == {b[1]: b[2] for b in blocks if b[0] == TARGET}
            if hit.doc._where is not None:
                assert hit.doc._where == {b[1]: i for i, b in enumerate(blocks) if b[0] == TARGET}
            of, known = store._known
            ledger = hit.ledger
            assert known == {line: ledger.targets[n] for n, line in hit.doc.lines.items() if n in ledger.targets}
            assert all(known[line] is ledger.targets[n] for n, line in hit.doc.lines.items() if n in ledger.targets)
            assert store.read() is ledger  # the next read is the write's own snapshot
    finally:
        shutil.rmtree(folder)
