"""Handoff notes a reviewer (round "record") found passing the deterministic review although the
ledger denies them, each beside a control that the review already catches or rightly passes.

Goes in tests/unit/ (it imports `session_kit` from there, as the other note-review tests do).
The demo ledger: db-01..db-17 done, db-18 replicating, db-19 queued, db-20 blocked, db-27 failed,
the rest queued; its runbook's last step `cutover` moves a target from verified to done.
"""

from __future__ import annotations

import yaml
from session_kit import DEMO

from engine.audit.review import review
from engine.ledger.model import Ledger

PREVIOUS = "Do NOT retry pg_upgrade on db-18, the --link step is irreversible.\n"
RULE = "\nDo NOT retry pg_upgrade on db-18."
SINCE = "2026-12-01T00:00Z"  # db-20 and db-27 went bad before it: a note need not name them


def demo(**targets) -> Ledger:
    data = yaml.safe_load((DEMO / "ledger.yaml").read_text())
    data["targets"].update(targets)
    return Ledger.model_validate(data)


def findings(note: str, ledger: Ledger, since: str | None = SINCE) -> list[str]:
    return review(note + RULE, ledger, previous=PREVIOUS, since=since)


def test_a_contracted_negation_is_read_like_the_spelled_out_one() -> None:
    """"db-17 is not done" is flagged (db-17 is done) but "db-17 isn't done" passed: `_GAP` takes "is"
    as a filler word and then cannot read "n't". The module's own docstring lists "hasn't finished"."""
    ledger = demo()
    pairs = [("db-17 is not done.", "db-17 isn't done."),
             ("db-17 has not finished.", "db-17 hasn't finished."),
             ("db-17 has not been cut over.", "db-17 hasn't been cut over."),
             ("db-20 is not blocked.", "db-20 isn't blocked."),           # db-20 IS blocked: "go ahead" at 2 AM
             ("db-20 is not blocked.", "db-20 isn\u2019t blocked."),     # a typographic apostrophe
             ("db-27 is no longer failed.", "db-27 isn't failed anymore.")]
    for spelled, contracted in pairs:
        assert findings(spelled, ledger), spelled  # the control
        assert findings(contracted, ledger) == findings(spelled, ledger), f"passes the review: {contracted!r}"


def test_the_last_step_said_done_claims_the_target_done() -> None:
    """`cutover` is the step that makes a target done: "db-19 cutover done" says db-19 is done.
    It passed while db-19 is queued (a "<name> <step> done" is read as an activity, like "done with
    the check")."""
    ledger = demo()
    wrong = "the note says db-19 is done; the ledger says queued, nothing in flight"
    assert findings("Cut over db-19.", ledger) == [wrong]  # the control
    for lie in ["db-19 cutover done.", "db-19: cutover complete.", "db-19 cutover completed at 02:10Z.",
                "db-19's cutover is done."]:
        assert wrong in findings(lie, ledger), f"passes the review: {lie!r}"
    for fine in ["db-17 cutover done.", "db-17: cutover complete.", "db-19 cutover next, once verified."]:
        assert findings(fine, ledger) == [], fine


def test_a_status_line_count_is_checked() -> None:
    """The line `handoff status` prints ("17 done, 1 replicating, 20 queued, 1 blocked, 1 failed") is what
    a person or a model pastes into a note; with the numbers wrong it passed, as did "18 of 40 complete",
    "18 of 40 finished" and "18 of 40 cut over" while "18 of 40 done" is flagged."""
    ledger = demo()  # 17 done
    assert findings("18 of 40 done.", ledger)  # the control
    assert findings("17 done, 1 replicating, 20 queued, 1 blocked, 1 failed.", ledger) == []  # true: passes
    for lie in ["18 done, 1 replicating, 19 queued, 1 blocked, 1 failed.",
                "Status: 18 done, 1 replicating, 19 queued, 1 blocked, 1 failed",
                "17 done, 1 replicating, 20 queued, 0 blocked, 0 failed.",
                "18 of 40 complete.", "18 of 40 finished.", "18 of 40 cut over.", "18 of the 40 dbs done.",
                "18 of 40 are now done."]:
        assert findings(lie, ledger), f"passes the review: {lie!r}"


def in_flight_and_waiting() -> Ledger:
    flying = {"step": "check", "session": "s1", "pid": 1, "started_at": "2026-12-01T02:00Z"}
    return demo(**{"db-19": {"state": "queued", "in_flight": flying},
                   "db-22": {"state": "queued", "in_flight": {**flying, "pid": 2}},
                   "db-21": {"state": "awaiting_approval", "awaiting": "cutover"}})


# Names every target a note must name, each in a state the ledger agrees with, but says of db-21 and
# db-22 nothing that tells they wait on a person or run.
BODY = "db-18 replicating. db-19 check running. db-21: cutover next. db-22 queued. db-20 blocked, db-27 failed.\n"


def test_no_approval_pending_is_checked_however_it_is_worded() -> None:
    """db-21 awaits approval of its cutover; "No approvals pending." is flagged, the same said at the
    end of a line with a time word, as a label or as "nothing to approve" passed."""
    ledger = in_flight_and_waiting()
    assert findings(BODY + "No approvals pending.", ledger, since=None)  # the control
    for lie in ["No approvals pending at the moment.", "No approvals are pending right now.",
                "Pending approvals: none.", "Awaiting approval: none", "Approvals: none.",
                "Nothing to approve.", "Nothing needs approval.", "0 approvals pending."]:
        assert findings(BODY + lie, ledger, since=None), f"passes the review: {lie!r}"


def test_nothing_else_in_flight_is_checked_however_it_is_worded() -> None:
    """db-19's and db-22's checks run; the note speaks of db-19's only. "Nothing else is in flight." is
    flagged (db-22); "No other targets in flight.", "No other steps running." and the label forms passed."""
    ledger = in_flight_and_waiting()
    assert findings(BODY + "Nothing else is in flight.", ledger, since=None)  # the control
    for lie in ["No other targets in flight.", "No other steps running.", "In flight: none.", "Running: none.",
                "Nothing in progress."]:
        assert findings(BODY + lie, ledger, since=None), f"passes the review: {lie!r}"


def test_nothing_blocked_or_failed_is_checked() -> None:
    """db-20 is blocked and db-27 failed (before the session began: the note need not name them). A
    note that says the fleet has none is still false, and the next shift reads it as a clear fleet."""
    ledger = demo()
    assert findings("All good.", ledger) == []  # the control: saying nothing of them passes
    for lie in ["Nothing blocked.", "No blocked or failed targets.", "No failures.", "Blocked: none.",
                "Failed: none.", "0 blocked, 0 failed."]:
        assert findings(lie, ledger), f"passes the review: {lie!r}"


def test_the_jobs_own_verb_in_the_past_is_a_done_claim() -> None:
    """The task is a PostgreSQL upgrade: "db-19 upgraded", "Migrated db-19", a range "db-01..db-20
    upgraded" say db-19 (queued) and db-20 (blocked) are finished. They passed; "db-19 finished" is flagged."""
    ledger = demo()
    assert findings("db-19 finished.", ledger)  # the control
    for lie in ["db-19 upgraded.", "db-19 is upgraded to pg16.", "Upgraded db-19.", "Migrated db-19 to PG16.",
                "db-01..db-20 upgraded.", "db-19 rolled out."]:
        assert findings(lie, ledger), f"passes the review: {lie!r}"
    assert findings("db-17 upgraded.", ledger) == []  # true: passes


def test_a_check_mark_in_a_status_table_is_a_done_claim() -> None:
    """A markdown status table with ✅ in the state column is how models write notes; "| db-19 | done |"
    is flagged, "| db-19 | ✅ |" and "db-19 ✅" passed while db-19 is queued."""
    ledger = demo()
    table = "| target | status |\n|---|---|\n| db-17 | {} |\n| db-19 | {} |\n"
    assert findings(table.format("done", "done"), ledger)  # the control
    assert findings(table.format("✅", "✅"), ledger), "passes the review: a ✅ for a queued target"
    assert findings("db-19 ✅", ledger), "passes the review: 'db-19 ✅'"
    assert findings(table.format("✅", "queued"), ledger) == []  # true: passes
