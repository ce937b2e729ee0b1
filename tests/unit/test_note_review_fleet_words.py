"""What a note says of the whole fleet, and how it counts what it leaves unnamed, whatever the
wording: the article's own "Nothing else is in flight." is checked (those the note speaks of
as in flight are the "else"), so are "Nothing is waiting on approval", "All 40 databases done",
"18 out of 40 done" and "Done: 18 of 40"; and the "and N more" of unnamed failed targets is a
number that counts, never a lag, a time or a ticket that happens to equal it."""

from __future__ import annotations

import yaml
from session_kit import DEMO

from engine.audit.review import review
from engine.ledger.model import Ledger

PREVIOUS = "Do NOT retry pg_upgrade on db-18, the --link step is irreversible.\n"
# Names every target a note must name, in states the ledger agrees with, and keeps the rule.
BODY = ("Started db-18 at 01:58Z, replicating. db-19 queued. db-21 awaits approval of cutover. "
        "db-20 blocked (PLAT-4412), db-27 failed.\nDo NOT retry pg_upgrade on db-18.\n")


def fleet() -> Ledger:
    data = yaml.safe_load((DEMO / "ledger.yaml").read_text())
    data["targets"]["db-19"] = {"state": "queued", "in_flight": {"step": "check", "session": "s1", "pid": 1,
                                                                 "started_at": "2026-12-01T02:00Z"}}
    data["targets"]["db-21"] = {"state": "awaiting_approval", "awaiting": "cutover"}
    return Ledger.model_validate(data)  # 17 of 40 done, db-19's check in flight, db-21 awaits approval


def test_nothing_in_flight_or_waiting_is_checked_however_it_is_worded() -> None:
    """"else" leaves out only what the note speaks of as in flight or awaiting ("db-19 check running")."""
    assert review(BODY, fleet(), previous=PREVIOUS, since=None) == []
    for caught in ["Nothing is in flight.", "Nothing awaits approval."]:  # the controls
        assert review(BODY + caught, fleet(), previous=PREVIOUS, since=None), caught
    for lie in ["Nothing else is in flight.", "Nothing currently in flight.", "Nothing's in flight.",
                "Nothing is waiting on approval.", "Nothing waiting for approval."]:
        assert review(BODY + lie, fleet(), previous=PREVIOUS, since=None), f"passes the review: {lie!r}"
    for spoken in ["db-19 check running since 02:00Z.", "db-19: check, pid 1."]:  # an in-flight word, or its step
        for fine in ["Nothing else is in flight.", "Nothing else is waiting on approval."]:
            assert review(BODY.replace("db-19 queued.", spoken) + fine, fleet(), previous=PREVIOUS, since=None) == [], fine


def test_all_and_counts_of_the_fleet_are_checked_however_they_are_worded() -> None:
    """A count of 17 done, or of checks, is no lie; "all 17 databases" counts some, not the fleet."""
    for caught in ["All dbs done.", "18 of 40 done."]:  # the controls
        assert review(BODY + caught, fleet(), previous=PREVIOUS, since=None), caught
    for lie in ["All 40 databases done.", "18 out of 40 done.", "Done: 18 of 40."]:
        assert review(BODY + lie, fleet(), previous=PREVIOUS, since=None), f"passes the review: {lie!r}"
    for fine in ["17 out of 40 done.", "Done: 17 of 40.", "All 17 databases done.", "Done: 3 of 4 checks on db-19.",
                 "All 3 checks done."]:
        assert review(BODY + fine, fleet(), previous=PREVIOUS, since=None) == [], fine


def failed_fleet() -> Ledger:
    data = yaml.safe_load((DEMO / "ledger.yaml").read_text())
    for name in ("db-21", "db-22", "db-23", "db-24", "db-25", "db-26"):
        data["targets"][name] = {"state": "failed", "reason": "check exited 1"}
    return Ledger.model_validate(data)  # failed or blocked: db-20..db-27, eight


def test_a_number_that_counts_nothing_does_not_stand_for_the_targets_left_out() -> None:
    note = ("db-20 blocked, db-21 failed, db-22 failed, db-23 failed, db-24 failed. db-18 replicating. "
            "Do NOT retry pg_upgrade on db-18.")
    left_out = review(note, failed_fleet(), previous=PREVIOUS, since=None)
    assert [p.split()[0] for p in left_out] == ["db-25", "db-26", "db-27"]  # the control: three unnamed
    for counted in [" 3 more failed: see status.", " And 3 more.", " 8 in total."]:
        assert review(note + counted, failed_fleet(), previous=PREVIOUS, since=None) == [], counted
    for aside in [" Replication lag was 3.2s.", " Paged at 03:00Z.", " Ticket PLAT-3.", " Retried 3 times."]:
        assert review(note + aside, failed_fleet(), previous=PREVIOUS, since=None) == left_out, aside
