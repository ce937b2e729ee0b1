"""More ways a note says "db-18 is done" that a second review found passing while db-18
replicates, each now a finding, and the true twin of each passing: a claim after an opening
"Don't worry," (a "do not" rule ends at its comma), a time, date or duration after the done word,
ranges written in words or with a dash, single-mark emphasis, checked task items, check marks,
full-width digits, and "approved" while the approval is still awaited."""

from __future__ import annotations

import yaml
from session_kit import DEMO

from engine.audit.review import review
from engine.ledger.model import Approval, Ledger

PREVIOUS = "Do NOT retry pg_upgrade on db-18, the --link step is irreversible.\n"
RULE = "\nDo NOT retry pg_upgrade on db-18."
SINCE = "2026-12-01T00:00Z"
WRONG = "the note says db-18 is done; the ledger says replicating, nothing in flight"


def demo(**targets) -> Ledger:
    data = yaml.safe_load((DEMO / "ledger.yaml").read_text())
    data["targets"].update(targets)
    return Ledger.model_validate(data)  # db-17 done, db-18 replicating, db-19 queued


def findings(note: str, ledger: Ledger) -> list[str]:
    return review(note + RULE, ledger, previous=PREVIOUS, since=SINCE)


def test_a_claim_after_an_opening_dont_is_still_read() -> None:
    """"Don't worry, db-18 is done." once passed: the whole clause was taken for the rule."""
    ledger = demo()
    assert findings("Relax, db-18 is done.", ledger) == [WRONG]  # the control
    for lie in ["Don't worry, db-18 is done.", "Don't panic: db-18 is done.", "Never mind the lag alert, db-18 finished.",
                "Do not page anyone, db-18 done."]:
        assert findings(lie, ledger) == [WRONG], lie
    # What follows a rule's comma with no target named belongs to the rule, and a true claim passes.
    for rule in ["Do NOT retry link on db-18: irreversible, already done.", "Do not retry it, already done.",
                 "Do not mark db-18 done, it is replicating.", "Don't worry, db-17 is done."]:
        assert findings(rule, ledger) == [], rule


def test_a_false_done_with_a_time_or_a_manner_after_it_is_flagged() -> None:
    """The article's ledger writes done targets with a time; a note does the same ("done at 02:10Z")."""
    ledger = demo()
    for lie in ["db-18 done at 02:10Z.", "db-18 finished at 02:07.", "db-18 cut over at 02:12Z.",
                "db-18 completed at 02:10Z, verified.", "db-18 done by 02:10.", "db-18 done in 4 minutes.",
                "db-18 done on 2026-09-10."]:
        assert findings(lie, ledger) == [WRONG], lie
    for fine in ["db-17 done at 02:10Z.", "db-17 finished at 01:52Z, verified.", "db-18 will be done by 04:00.",
                 "db-18 done by 04:00, hopefully.", "db-18 is done with the check."]:
        assert findings(fine, ledger) == [], fine


def test_the_middle_of_a_range_written_in_words_is_claimed() -> None:
    """"db-17 through db-19 done" once read only db-19; db-18 in the middle passed."""
    ledger = demo(**{"db-19": {"state": "done"}})  # db-17 and db-19 done, db-18 replicates
    assert findings("db-17..db-19 done.", ledger) == [WRONG]  # the control
    for spelled in ["db-17 through db-19 done.", "db-17 thru db-19 are done.", "db-17 to db-19 are done.",
                    "db-17 - db-19 done.", "db-17–db-19 done.", "db-17-19 done."]:
        assert findings(spelled, ledger) == [WRONG], spelled
    for fine in ["db-16 through db-17 done.", "db-16-17 done.", "db-16 – db-17 done."]:
        assert findings(fine, ledger) == [], fine


def test_markdown_and_symbol_forms_of_a_false_done_are_flagged() -> None:
    """Single-mark emphasis, a checked task item, a check mark and full-width digits (NFKC)."""
    ledger = demo()
    assert findings("**db-18** done.", ledger) == [WRONG]  # the control
    for lie in ["*db-18* done.", "_db-18_ done.", "db-18 is *done*.", "db-18 is _done_.", "- [x] db-18 done",
                "Done:\n- [x] db-18\n", "db-18 ✓ done", "db-18: ✅ done", "db-１８ done."]:
        assert WRONG in findings(lie, ledger), lie
    for fine in ["*db-17* done.", "Done:\n- [x] db-17\n", "db-17 ✓ done", "db-１７ done.", "* db-18 replicating",
                 "pg_upgrade on db-18 is _running_."]:
        assert findings(fine, ledger) == [], fine


def test_a_target_said_approved_while_it_awaits_approval_is_flagged() -> None:
    ledger = demo(**{"db-21": {"state": "awaiting_approval", "awaiting": "cutover"}})
    for lie in ["db-21 approved, cutover can go.", "db-21 is approved."]:
        problems = findings(lie, ledger)
        assert any("db-21" in p and "approv" in p and "does not name" not in p for p in problems), (lie, problems)
    for fine in ["db-21 awaits approval of cutover.", "db-21 is not approved yet.", "db-21 needs to be approved.",
                 "db-21 approved? Not yet, it awaits approval.", "db-21 awaits approval; db-17 approved and cut over."]:
        assert findings(fine, ledger) == [], fine
    # One approval of two given: "approved by alice" is true.
    ledger.targets["db-21"].approvals.append(Approval(by="alice", user="alice", at=SINCE, step="cutover", hash="h"))
    assert findings("db-21 approved by alice, a second approver is due.", ledger) == []


def test_names_the_ledger_writes_in_compatibility_characters_are_still_read() -> None:
    """The note is read NFKC-folded ("db-１８" is db-18); a target whose own name folds ("ｗｅｂ") is still found."""
    ledger = demo(**{"ｗｅｂ": {"state": "queued"}, "ｄｂ-1": {"state": "queued"}})
    for lie, name in [("ｗｅｂ done.", "ｗｅｂ"), ("ｄｂ-1 done.", "ｄｂ-1"), ("DB 1 done.", "ｄｂ-1")]:
        assert f"the note says {name} is done; the ledger says queued, nothing in flight" in findings(lie, ledger), lie
