"""True notes in the wordings the review reads since round "record" (contractions, a step said
done, a job's verb, a check mark, pasted status counts, "nothing blocked" and the label forms)
pass: a false finding on a true note is as bad as a missed one."""

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


def findings(note: str, ledger: Ledger) -> list[str]:
    return review(note + RULE, ledger, previous=PREVIOUS, since=SINCE)


def test_true_claims_about_targets_in_the_new_wordings_pass() -> None:
    """db-17 done, db-18 replicating (past its link), db-19 queued."""
    ledger = demo()
    for fine in ["db-17 cutover done.", "db-18's link is done.", "db-18 link complete, replicating.", "db-18 isn't done.",
                 "db-19 hasn’t been cut over.", "db-19's check isn't finished.", "db-17 upgraded.", "Migrated db-17.",
                 "| target | status |\n|---|---|\n| db-17 | ✅ |\n| db-18 | replicating |", "db-17 ✅, db-18 replicating.",
                 "Status: 17 done, 1 replicating, 20 queued, 1 blocked, 1 failed", "17 of the 40 dbs cut over."]:
        assert findings(fine, ledger) == [], fine


def test_true_fleet_wide_none_claims_pass() -> None:
    """Nothing blocked, failed, waiting or in flight: every way of saying so is true."""
    ledger = demo(**{"db-20": {"state": "queued"}, "db-27": {"state": "queued"}})
    for fine in ["Nothing blocked.", "No blocked or failed targets.", "No failures.", "Blocked: none.", "Failed: 0.",
                 "Nothing in progress.", "Running: none.", "Pending approvals: none.", "Nothing to approve.",
                 "17 done, 1 replicating, 22 queued, 0 blocked, 0 failed."]:
        assert findings(fine, ledger) == [], fine


def test_what_counts_something_else_or_part_of_the_fleet_is_no_fleet_claim() -> None:
    """db-20 is blocked and db-27 failed: a "none" scoped to the shift or to other things, the
    blocked and failed ones left out by "else", and a count of the shift's work say nothing false."""
    ledger = demo()
    for fine in ["No new failures this shift.", "Smoke tests: 42 passed, 0 failed.", "pg_upgrade --check: 12 checks, no failures.",
                 "db-20 blocked (PLAT-4412), db-27 failed; nothing else blocked or failed.", "This shift: 1 done, 1 failed.",
                 "Upgraded the extensions on db-18.", "Checks ✅."]:
        assert findings(fine, ledger) == [], fine


def test_a_step_named_with_spaces_or_underscores_said_done_is_read() -> None:
    """A step's name written with spaces (`cut over now`) or as `cut_over` spelled with a space: the claim
    is read against the step's `to`, and a true one passes (a space in the name once raised KeyError)."""
    from engine.audit.review import review
    from engine.ledger.model import Ledger

    for step in ("cut over now", "cut_over"):
        ledger = Ledger.model_validate({"task": "t", "runbook": {"steps": [{"name": step, "from": "queued", "to": "done",
                                                                           "run": ["x"]}]},
                                        "targets": {"db-19": {"state": "queued"}, "db-17": {"state": "done"}}})
        said = step.replace("_", " ")
        assert review(f"db-19 {said} done.", ledger, previous=None, since=None), step
        assert review(f"db-17 {said} done.", ledger, previous=None, since=None) == [], step
