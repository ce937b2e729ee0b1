"""The snapshot a write leaves in its store is the ledger the file now holds, in the file's
order: what this process decides on next (the autopilot's proposals, the touched list)
is what any other process reading the same file decides on (engine.store.file.as_written).

Found in review: a target taken out and put back in one transaction stood last in the
writer's own snapshot while the file kept it in place, so a long-running session
proposed in an order no other process saw, and carried it to every later write.
"""

from __future__ import annotations

from engine.ledger.model import InFlight, Target
from engine.ledger.touched import touched
from engine.planners.autopilot import Autopilot
from engine.store.file import FileStore


def proposed(ledger) -> list[str]:
    return [a.target for a in Autopilot().proposals(ledger)]


def agree(store: FileStore, path) -> list[str]:
    """The writer's snapshot and a fresh read of the file say the same, in the same order."""
    mine, fresh = store.read(), FileStore(str(path)).read()
    assert list(mine.targets) == list(fresh.targets)
    assert touched(mine) == touched(fresh)
    assert proposed(mine) == proposed(fresh)
    return list(mine.targets)


def test_a_target_taken_out_and_put_back_stays_where_the_file_keeps_it(fleet):
    store = FileStore(str(fleet))
    order = list(store.read().targets)

    def fn(ledger):
        ledger.targets["db-5"].in_flight = InFlight(step="check")
        ledger.targets["db-1"] = ledger.targets.pop("db-1")  # awaiting cutover: touched
        ledger.targets["db-2"] = ledger.targets.pop("db-2")  # verified: touched, can move
        assert list(ledger.targets)[-2:] == ["db-1", "db-2"]  # inside the transaction: Python's order

    store.transact(fn, accept_shrink=True)
    assert agree(store, fleet) == order
    store.transact(lambda ledger: setattr(ledger.targets["db-5"], "in_flight", None))  # an ordinary write after
    assert agree(store, fleet) == order
    assert proposed(store.read()) == ["db-2", "db-5"]  # in the fleet's order, not db-5 first


def test_targets_given_in_another_order_are_written_and_kept_in_the_files(fleet):
    store = FileStore(str(fleet))
    order = list(store.read().targets)

    def reverse(ledger):
        ledger.targets = {name: ledger.targets[name] for name in reversed(list(ledger.targets))}
        ledger.targets["db-3"].reason = "looked at"

    store.transact(reverse)
    assert agree(store, fleet) == order


def test_a_new_target_comes_last_and_a_removed_one_is_gone_in_both(fleet):
    store = FileStore(str(fleet))
    order = list(store.read().targets)

    def grow_and_shrink(ledger):
        del ledger.targets["db-2"]
        ledger.targets["db-9"] = Target(state="queued")

    store.transact(grow_and_shrink, accept_shrink=True)
    assert agree(store, fleet) == [n for n in order if n != "db-2"] + ["db-9"]
