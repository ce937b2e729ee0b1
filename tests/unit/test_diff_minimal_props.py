"""Property tests: a hand-written ledger (comments everywhere, blank lines, every quoting
style, float-looking strings) goes through a random sequence of engine changes in the
real file store (approve, pause, unpause, note, target state changes). After each: the
file reads as the change made it (by the strict loader alone, and the fast reader
agrees); a refused change leaves the file byte for byte; at the end every comment is
still there and every line of what no change touched is there, unchanged, in order."""

from __future__ import annotations

import os
import shutil
import tempfile

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from engine.codec import strict
from engine.codec.document import parse_document
from engine.codec.numbers import same
from engine.errors import Refused
from engine.ledger import ops
from engine.store.convert import target_data, to_data, to_ledger, top_data
from engine.store.file import FileStore
from tests.unit.hand_written import STRINGS, ledgers

ALICE = ops.Who("alice", "alice")
CAROL = ops.Who("carol", "carol")
AGENT = ops.Who("agent:s2", "root")
NOTES = ["Short note.", "A note\nwith lines\n", "1.30", "Do NOT retry link on db-1. " * 6, "  indented first\n"]

# Which target: the n-th of the ledger's (-1: one it does not have, so the change is refused).
TARGET = st.integers(-1, 4)
OPS = st.one_of(
    st.tuples(st.just("pause"), st.sampled_from(["app team says wait", "1.30"])),
    st.tuples(st.just("unpause")),
    st.tuples(st.just("note"), st.sampled_from([ALICE, CAROL, AGENT]), st.sampled_from(NOTES)),
    st.tuples(st.just("approve"), TARGET),
    st.tuples(st.just("approve"), TARGET),
    st.tuples(st.just("state"), TARGET, st.sampled_from(["checked", "verified", "done"]), st.sampled_from(STRINGS)),
    st.tuples(st.just("block"), TARGET, st.sampled_from(STRINGS)),
    st.tuples(st.just("nothing")),
)


def _apply(op, ledger, folder):
    """Run one operation on the transaction's ledger; returns what it touched."""
    kind = op[0]
    if kind == "pause":
        ops.pause(ledger, ALICE, op[1])
        return {("top", "paused")}
    if kind == "unpause":
        ops.unpause(ledger, ALICE)
        return {("top", "paused")}
    if kind == "note":
        ops.set_note(ledger, op[1], op[2], base=None)
        return {("top", k) for k in ("handoff_note", "handoff_note_by", "handoff_note_at", "previous_note")}
    if kind == "nothing":
        return set()
    names = list(dict.keys(ledger.targets))
    if op[1] < 0:
        raise Refused("no such target")
    name = names[op[1] % len(names)]
    if kind == "approve":
        ops.approve(ledger, name, CAROL, step=None, comment=None, ledger_dir=folder)
    elif kind == "state":
        target = ledger.targets[name]
        target.state, target.checkpoint = op[2], op[3]
    elif kind == "block":
        ops.block(ledger, name, ALICE, op[2])
    return {("target", name)}


def _read_strictly(text: str, path: str) -> dict:
    """The file's data through the strict loader and the model, no fast path, no cache."""
    return to_data(to_ledger(strict.load(text, path), path, text))


def _subsequence(needles: list[str], hay: list[str]) -> bool:
    it = iter(hay)
    return all(any(line == needle for line in it) for needle in needles)


# HYP_N: more examples for a long hunt (60 keep the suite fast; 4,000 ran clean when this was written).
@settings(max_examples=int(os.environ.get("HYP_N", "60")), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(ledgers(), st.lists(OPS, min_size=1, max_size=6), st.lists(st.booleans(), min_size=6, max_size=6))
def test_engine_changes_keep_every_comment_and_untouched_line(doc, operations, fresh_store):
    """Whatever a human wrote and whatever the engine changes, only what changed is rewritten."""
    folder = tempfile.mkdtemp()
    try:
        path = os.path.join(folder, "ledger.yaml")
        original = doc.text
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(original)
        assert same(parse_document(original, path).data, strict.load(original, path))  # the fast reader agrees, comments and all
        read = FileStore(path).read()
        data = to_data(read)
        assert data["targets"] == doc.data["targets"]  # strings as typed: `1.30` is "1.30"
        if "handoff_note" in doc.data:
            assert data["handoff_note"] == doc.data["handoff_note"]
        touched: set = set()
        store = FileStore(path)
        for op, fresh in zip(operations, fresh_store):
            if fresh:
                store = FileStore(path)  # a new process: the parse cache, not this store's memory
            before = open(path, "rb").read()
            seen = {}

            def change(ledger, op=op):
                seen["touched"] = _apply(op, ledger, folder)
                # dict.items: the copy-on-write targets as they are, without copying them all.
                seen["data"] = {**top_data(ledger), "targets": {n: target_data(t) for n, t in dict.items(ledger.targets)}}
                return None

            try:
                _, revision = store.transact(change)
            except Refused:
                assert open(path, "rb").read() == before
                continue
            event(f"written: {op[0]}")
            touched |= seen["touched"] | {("top", "revision")}
            text = open(path, encoding="utf-8").read()
            expected = {**seen["data"], "revision": revision}
            assert _read_strictly(text, path) == expected
            assert same(parse_document(text, path).data, strict.load(text, path))
            assert to_data(FileStore(path).read()) == expected  # the parse cache the write left says the same
        final = open(path, encoding="utf-8").read()
        for token in doc.comments:
            assert final.count(token + " ") + final.count(token + "\n") == 1, (token, final)
        kept = [line for owner, line in doc.rows if owner not in touched]
        assert _subsequence(kept, final.split("\n")), final
    finally:
        shutil.rmtree(folder)
