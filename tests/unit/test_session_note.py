"""The generated handoff note and the autopilot planner, as pure functions of a ledger."""

from __future__ import annotations

import pytest
import yaml
from session_kit import DEMO

from engine.audit.note_rules import rules_in
from engine.errors import UsageError
from engine.ledger.model import InFlight, Ledger
from engine.planners.autopilot import Action
from engine.planners.choose import get_planner
from engine.session.handoff_note import generate


def demo() -> Ledger:
    return Ledger.model_validate(yaml.safe_load((DEMO / "ledger.yaml").read_text()))


def test_note_says_what_waits_on_whom_and_what_not_to_touch() -> None:
    """Awaiting approvals with who and since when, blocks with reasons, irreversible steps not to retry."""
    ledger = demo()
    t = ledger.targets["db-18"]
    t.state, t.awaiting, t.awaiting_by, t.awaiting_since = "awaiting_approval", "cutover", "agent:abc", "2026-09-10T02:11:07Z"
    ledger.targets["db-19"].state = "checked"
    note = generate(ledger, ledger_path="ledger.yaml", ending="session budget 78% used", session="abc")
    assert note.startswith("Session abc ended: session budget 78% used.")
    assert "db-18 waiting on human approval for cutover (asked by agent:abc since 2026-09-10T02:11:07Z)" in note
    assert "Do NOT retry link on db-18: irreversible, already done (checkpoint 0/9A3F2C10)" in note
    assert "db-20 blocked" in note and "PLAT-4412" in note
    assert "Nothing in flight." in note
    assert "Next:\n- db-19 checked, ready for link (needs approval)" in note


def test_note_names_what_is_in_flight() -> None:
    ledger = demo()
    ledger.targets["db-21"].in_flight = InFlight(step="check", host="bastion-1", pid=4242, started_at="2026-09-10T02:12:00Z")
    note = generate(ledger, ledger_path="l.yaml", ending="SIGTERM received", session="s")
    assert "In flight:\n- db-21 check (on bastion-1 pid 4242 since 2026-09-10T02:12:00Z)." in note


def test_rules_are_read_from_the_note() -> None:
    note = demo().handoff_note
    assert rules_in(note) == ["Do NOT retry pg_upgrade on db-18, the --link step is irreversible."]


def test_a_carried_rule_is_marked_once_however_many_notes_carry_it() -> None:
    """Session after session, the previous note's rule comes forward with one "(kept from the
    previous note)", never one more per session, and every note passes the engine's review."""
    from engine.audit.review import review

    ledger = demo()
    ledger.targets["db-19"].state = "checked"
    previous = ledger.handoff_note
    for session in ("s1", "s2", "s3"):
        note = generate(ledger, ledger_path="l.yaml", ending="budget used", session=session, previous=previous)
        assert note.count("Do NOT retry pg_upgrade on db-18, the --link step is irreversible (kept from the previous note).") == 1
        assert "(kept from the previous note) (kept" not in note
        assert not [p for p in review(note, ledger, previous=previous, since=None) if "rule" in p], note
        previous = note


def test_autopilot_follows_runbook_and_target_order() -> None:
    """Deterministic: ledger order across targets, the first matching runbook step within one."""
    ledger = demo()
    actions = get_planner("autopilot").propose(ledger)
    assert [(a.target, a.step.name) for a in actions[:3]] == [("db-18", "replicate"), ("db-19", "check"), ("db-21", "check")]
    assert all(a.target not in ("db-20", "db-27") for a in actions)
    assert get_planner("autopilot").propose(ledger) == actions


def test_autopilot_asks_only_for_approvals_that_could_run() -> None:
    """With two touched slots, one taken and one promised to an awaiting link, nobody else is asked."""
    ledger = demo()
    for name in ("db-19", "db-21"):
        ledger.targets[name].state = "checked"
    link = ledger.step("link")
    planner = get_planner("autopilot")
    assert planner.should_ask(ledger, Action("db-19", link))
    ledger.targets["db-19"].state, ledger.targets["db-19"].awaiting = "awaiting_approval", "link"
    assert not planner.should_ask(ledger, Action("db-21", link))
    assert planner.should_ask(ledger, Action("db-18", ledger.step("cutover")))  # already holds its slot


def test_unknown_planner_is_a_usage_error() -> None:
    """A planner that does not exist is refused by name (exit 2), never replaced by autopilot."""
    with pytest.raises(UsageError, match="unknown planner 'gpt'; choose autopilot or claude"):
        get_planner("gpt")
