"""The guard: pause, position, preconditions, the touched limit, metric thresholds, and
approvals bound to the exact command and checkpoint."""

from __future__ import annotations

import yaml

from engine.ledger import guard, ops
from engine.ledger.invariants import evaluate
from engine.ledger.model import Ledger
from tests.conftest import RUNBOOK_LEDGER

WHO = ops.Who("bob", "bob")


def fleet(**changes) -> Ledger:
    data = yaml.safe_load(RUNBOOK_LEDGER)
    for name, fields in changes.items():
        data["targets"][name] = fields
    return Ledger.model_validate(data)


def test_irreversible_step_needs_an_approval():
    """cutover on verified db-2 is refused as needing approval, with the hash it would be bound to."""
    l = fleet()
    d = guard.check(l, "db-2", l.step("cutover"), ledger_dir="/srv")
    assert not d.allowed and d.needs_approval and d.hash


def test_approval_allows_exactly_the_approved_command_and_checkpoint():
    """After approve, cutover on db-1 is allowed; if the checkpoint or the command changes, the approval stops counting."""
    l = fleet()
    ops.approve(l, "db-1", WHO, step=None, comment="lag ok", ledger_dir="/srv")
    assert l.targets["db-1"].state == "verified"
    step = l.step("cutover")
    d = guard.check(l, "db-1", step, ledger_dir="/srv")
    assert d.allowed and d.approval.by == "bob"
    l.targets["db-1"].checkpoint = "0/FFFFFFFF"
    d = guard.check(l, "db-1", step, ledger_dir="/srv")
    assert not d.allowed and "no longer matches" in d.reason and "0/9A3F2C10" in d.reason
    l.targets["db-1"].checkpoint = "0/9A3F2C10"
    step.run = ["cutover", "{target}", "--force"]  # the runbook's command changed since
    d = guard.check(l, "db-1", step, ledger_dir="/srv")
    assert not d.allowed and d.needs_approval


def test_used_approval_does_not_count_again():
    """An approval marked used does not allow a second run."""
    l = fleet()
    ops.approve(l, "db-1", WHO, step=None, comment=None, ledger_dir="/srv")
    l.targets["db-1"].approvals[0].used_at = "2026-09-10T03:00Z"
    d = guard.check(l, "db-1", l.step("cutover"), ledger_dir="/srv")
    assert not d.allowed and d.needs_approval


def test_paused_ledger_refuses_every_step():
    """A paused ledger refuses even a reversible step, saying who paused and why."""
    l = fleet()
    ops.pause(l, WHO, "error rate spike")
    d = guard.check(l, "db-5", l.step("check"), ledger_dir="/srv")
    assert not d.allowed and "paused by bob: error rate spike" in d.reason


def test_step_from_the_wrong_state_is_refused():
    """check runs only from queued; on verified db-2 it is refused naming both states."""
    l = fleet()
    d = guard.check(l, "db-2", l.step("check"), ledger_dir="/srv")
    assert not d.allowed and "db-2 is verified; check runs only from queued" == d.reason


def test_in_flight_target_is_refused():
    """A target with a step in flight takes no second step."""
    l = fleet(**{"db-5": {"state": "queued", "in_flight": {"step": "check"}}})
    d = guard.check(l, "db-5", l.step("check"), ledger_dir="/srv")
    assert not d.allowed and "in flight" in d.reason


def test_touched_limit_blocks_a_third_target():
    """With 2 touched (limit 2), an irreversible link on a checked target is refused with the count."""
    l = fleet(**{"db-5": {"state": "checked"}, "db-4": {"state": "replicating"}})
    # touched now: db-1 (awaiting cutover, at verified), db-2 (verified), db-4 (replicating) = 3 > 2
    d = guard.check(l, "db-5", l.step("link"), ledger_dir="/srv")
    assert not d.allowed and "touched 3/2" in d.reason and "would make 4" in d.reason


def test_touched_limit_lets_an_already_touched_target_go_on():
    """A target that is already touched may take its next step even at the limit."""
    l = fleet(**{"db-4": {"state": "replicating"}})
    d = guard.check(l, "db-4", l.step("sync"), ledger_dir="/srv")
    assert d.allowed


def test_violated_metric_refuses():
    """A metric invariant that evaluates violated refuses any step, showing its value."""
    data = yaml.safe_load(RUNBOOK_LEDGER)
    data["invariants"].append("pause if error_rate_5m > 0.5%")
    data["metrics"] = {"error_rate_5m": {"run": "echo 1%"}}
    data["targets"]["db-2"]["state"] = "done"  # room under the touched limit
    l = Ledger.model_validate(data)
    statuses = evaluate(l, lambda name: (0.9, True, 0.0), now=10.0)
    d = guard.check(l, "db-5", l.step("check"), statuses=statuses, ledger_dir="/srv")
    assert not d.allowed and "error_rate_5m 0.9%" in d.reason


def test_reversible_step_is_allowed_when_invariants_hold():
    """check on queued db-5 is allowed without any approval while there is room under the limit."""
    l = fleet(**{"db-2": {"state": "done"}})
    assert guard.check(l, "db-5", l.step("check"), ledger_dir="/srv").allowed


def test_a_running_check_counts_against_the_touched_limit():
    """Any running step touches its target: at 2/2 even a reversible check waits."""
    l = fleet()  # db-1 awaiting cutover (at verified) and db-2 verified: touched 2/2
    d = guard.check(l, "db-5", l.step("check"), ledger_dir="/srv")
    assert not d.allowed and "touched 2/2" in d.reason


def test_approval_binds_the_interpreter_and_the_ledger_folder():
    """An approval binds the command exactly as it will run: `{python}` and `{ledger_dir}` rendered in.
    The same approval in another folder (a copied ledger) or with another interpreter does not match."""
    from engine.ledger.render import approval_hash

    l = fleet()
    step = l.step("cutover")
    step.run = ["{python}", "{ledger_dir}/sim.py", "cutover", "{target}"]
    target = l.targets["db-1"]
    ops.approve(l, "db-1", WHO, step=None, comment=None, ledger_dir="/srv/a")
    assert l.targets["db-1"].approvals[0].hash == approval_hash("db-1", target, step, ledger_dir="/srv/a")
    assert guard.check(l, "db-1", step, ledger_dir="/srv/a").allowed
    moved = guard.check(l, "db-1", step, ledger_dir="/srv/b")
    assert not moved.allowed and moved.needs_approval and "no longer matches" in moved.reason
    assert approval_hash("db-1", target, step, ledger_dir="/srv/a", python="/usr/bin/python3.12") != \
        l.targets["db-1"].approvals[0].hash