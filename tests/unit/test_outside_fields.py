"""The fields kept after each write (engine.store.outside, `<ledger>.last-write.targets.json`):
re-encoded only for the targets a write touched, the file reads as what encoding every target
afresh gives (name by name: a target taken out and put back in one write keeps its place in
the file, as it did before), through writes that change, add and remove targets and after a
hand edit."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.ledger.model import InFlight, Target
from engine.store import outside
from engine.store.file import FileStore

NAMES = st.sampled_from(["db-1", "db-2", "db-3", "db-4", "db-5", "db-new"])
CHANGES = st.lists(st.tuples(NAMES, st.sampled_from(["done", "failed", "in_flight", "clear", "add", "remove"])),
                   min_size=1, max_size=4)


def whole(store: FileStore) -> dict:
    ledger = store.read()
    return json.loads(json.dumps({name: outside._fields(t) for name, t in ledger.targets.items()}))


def change(changes):
    def fn(ledger):
        for name, what in changes:
            if what == "add" and name not in ledger.targets:
                ledger.targets[name] = Target(state="queued")
            elif what == "remove" and name in ledger.targets and len(ledger.targets) > 1:
                del ledger.targets[name]
            elif name in ledger.targets and what in ("done", "failed"):
                ledger.targets[name].state = what
            elif name in ledger.targets and what == "in_flight":
                ledger.targets[name].in_flight = InFlight(step="check")
            elif name in ledger.targets and what == "clear":
                ledger.targets[name].in_flight = None
    return fn


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(CHANGES, min_size=1, max_size=4), st.booleans())
def test_the_kept_fields_are_what_a_full_encoding_gives(fleet, writes, hand_edit):
    store = FileStore(str(fleet))
    kept = str(fleet) + outside.SUFFIX
    for i, changes in enumerate(writes):
        if hand_edit and i == 1:  # someone else's save: the next write starts from bytes it never wrote
            fleet.write_text(fleet.read_text(encoding="utf-8") + "\n", encoding="utf-8")
        store.transact(change(changes), accept_shrink=True)
        with open(kept, "rb") as fh:
            assert json.loads(fh.read()) == whole(store)
