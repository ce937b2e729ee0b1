"""The fields kept after each write (engine.store.outside and kept_fields, `<ledger>.last-write.targets.json`
and its lines): re-encoded only for the targets a write touched, they read as what encoding every target
afresh gives (name by name: a target taken out and put back in one write keeps its place in
the file, as it did before), through writes that change, add and remove targets and after a
hand edit."""

from __future__ import annotations

import json
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.ledger.model import InFlight, Target
from engine.store import kept_fields, outside
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


def new_process() -> None:
    """What a process remembers of the kept fields, forgotten: the next write reads the files."""
    kept_fields._END.clear()
    kept_fields._BODY.clear()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(CHANGES, st.sampled_from(["same", "new process", "hand edit", "torn line", "crash"])),
                min_size=1, max_size=6), st.integers(min_value=1, max_value=4))
def test_the_kept_fields_are_what_a_full_encoding_gives(fleet, writes, compact):
    """Through one-line appends, new processes, hand edits, a torn last line and a crash
    between the ledger and the kept fields, what a reader gets is the last write's fields."""
    kept_fields.COMPACT, default = compact, kept_fields.COMPACT
    try:
        new_process()
        store = FileStore(str(fleet))
        for changes, before in writes:
            if before == "new process":
                new_process()
                store = FileStore(str(fleet))
            elif before == "hand edit":  # someone else's save: the next write starts from bytes it never wrote
                fleet.write_text(fleet.read_text(encoding="utf-8") + "\n", encoding="utf-8")
            elif before == "torn line":  # a crash in the middle of an append
                with open(str(fleet) + kept_fields.LINES, "ab") as fh:
                    fh.write(b'{"base":"')
                new_process()
            elif before == "crash":  # the ledger written, the kept fields not: they end one write behind
                store.transact(change(changes), accept_shrink=True)
                kept = {p: open(p, "rb").read() for p in (str(fleet) + kept_fields.WHOLE, str(fleet) + kept_fields.LINES)
                        if os.path.exists(p)}
                store.transact(change([(n, "done") for n, _ in changes]), accept_shrink=True)
                for p in (str(fleet) + kept_fields.WHOLE, str(fleet) + kept_fields.LINES):
                    if p in kept:
                        open(p, "wb").write(kept[p])
                    elif os.path.exists(p):
                        os.unlink(p)
                new_process()
                store = FileStore(str(fleet))
            store.transact(change(changes), accept_shrink=True)
            assert outside.last_written(str(fleet)) == whole(store)
            assert outside.last_written(str(fleet)) == json.loads(json.dumps(outside.last_written(str(fleet))))
    finally:
        kept_fields.COMPACT = default


def test_lines_from_an_earlier_start_are_never_applied(fleet):
    """A crash after the whole file was written anew and before the old lines went: the
    reader stops at the first line that does not follow on from the whole file's key."""
    store = FileStore(str(fleet))
    store.transact(change([("db-1", "done")]))
    new_process()
    store.transact(change([("db-2", "failed")]))  # one line after the whole
    lines = open(str(fleet) + kept_fields.LINES, "rb").read()
    assert lines.count(b"\n") == 1
    new_process()
    FileStore(str(fleet)).transact(change([("db-2", "done")]))
    store = FileStore(str(fleet))
    os.unlink(str(fleet) + kept_fields.WHOLE)
    new_process()
    store.transact(change([("db-3", "failed")]))  # no whole file: every target written, the lines start over
    assert not os.path.exists(str(fleet) + kept_fields.LINES)
    with open(str(fleet) + kept_fields.LINES, "wb") as fh:
        fh.write(lines)  # the old line, as a crash between the whole and the unlink leaves it
    assert outside.last_written(str(fleet)) == whole(store)
    assert outside.last_written(str(fleet))["db-2"]["state"] == "done"
    new_process()
    store.transact(change([("db-4", "failed")]))  # and the next write does not append after it
    assert outside.last_written(str(fleet)) == whole(store)
    # A line that does not follow on from the whole file, ending where the next write starts:
    # a line after it would never be read, so the next write writes the whole again.
    os.unlink(str(fleet) + kept_fields.WHOLE)
    new_process()
    store.transact(change([("db-1", "done")]))  # the whole file written anew, no lines
    assert not os.path.exists(str(fleet) + kept_fields.LINES)
    with open(str(fleet) + kept_fields.LINES, "w") as fh:
        fh.write(json.dumps({"base": "0" * 32, "key": store.last_write()["hash"], "set": {}, "gone": []}) + "\n")
    new_process()
    store.transact(change([("db-3", "done")]))
    assert outside.last_written(str(fleet)) == whole(store)
