"""Under `approvals: {count: 2}` a run spends every approval that completes the count, not only
the one its `step_start` names: each gets a spent mark, and each is checked for one (and for a
journaled use) before the next run. A review found only the completing approval marked and
checked: the agent (daemon) cleared both `used_at`s and put the co-approval last, and the next
engineer's run spent the same two approvals again, the irreversible step ran twice; or one fresh
approval completed the count with a spent one beside it."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.conftest import cli_env, handoff
from tests.unit.test_spent_copies import MARK, _agent_writes, _as_agent, _runs, folder  # noqa: F401
from tests.unit.test_verified_approvers import _as_uid, _load


def _two_people_ledger(folder: Path) -> Path:  # noqa: F811
    (folder / "mark.py").write_text(MARK)
    data = {"task": "twice", "owner_shift": "test-oncall",
            "approvers": [{"name": "nob", "os_user": "nobody"}, {"name": "binny", "os_user": "bin"},
                          {"name": "cara", "os_user": "sys"}],
            "runbook": {"steps": [{"name": "link", "from": "checked", "to": "done", "approvals": {"count": 2},
                                   "run": ["{python}", "{ledger_dir}/mark.py", "{target}"]}]},
            "targets": {"db-19": {"state": "checked", "checkpoint": "0/19"}}}
    path = folder / "ledger.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    path.chmod(0o666)
    return path


def _approve_as(uid: int, ledger: Path, name: str) -> int:
    from engine.api import open_ledger

    return _as_uid(uid, lambda: open_ledger(str(ledger), actor=name).approve("db-19"))


def test_two_spent_approvals_reordered_never_run_the_step_again(folder: Path) -> None:  # noqa: F811
    ledger = _two_people_ledger(folder)
    assert _approve_as(65534, ledger, "nob") == 0
    assert _approve_as(2, ledger, "binny") == 0
    first = handoff("run", ledger, "db-19", "link")
    assert first.returncode == 0 and _runs(folder) == 1, first.stdout + first.stderr
    assert [bool(a.get("used_at")) for a in _load(ledger)["targets"]["db-19"]["approvals"]] == [True, True]

    def revive(led) -> None:
        t = led.targets["db-19"]
        for a in t.approvals:
            a.used_at = a.used_by = None
        t.approvals = list(reversed(t.approvals))  # the co-approval (no mark, no step_start) now completes the count
        t.state, t.evidence, t.touched_at, t.reason, t.last_action = "checked", None, None, None, None
    _as_agent(folder, lambda: _agent_writes(ledger, revive))  # the journal and its index untouched

    again = handoff("run", ledger, "db-19", "link", env=cli_env(XDG_STATE_HOME=str(folder / "next-engineer")))
    said = again.stdout + again.stderr
    assert _runs(folder) == 1, "the irreversible step ran twice on two spent approvals:\n" + said


def test_every_approval_a_counted_run_spends_is_marked(folder: Path) -> None:  # noqa: F811
    from engine.approvals.spent_marks import spent
    from engine.ledger.model import Approval

    ledger = _two_people_ledger(folder)
    assert _approve_as(65534, ledger, "nob") == 0
    assert _approve_as(2, ledger, "binny") == 0
    assert handoff("run", ledger, "db-19", "link").returncode == 0 and _runs(folder) == 1
    approvals = _load(ledger)["targets"]["db-19"]["approvals"]
    assert len(approvals) == 2
    for a in approvals:
        assert spent(str(ledger), "db-19", Approval.model_validate(a)) is not None, a


def test_a_fresh_approval_never_completes_a_count_with_a_spent_one(folder: Path) -> None:  # noqa: F811
    ledger = _two_people_ledger(folder)
    assert _approve_as(65534, ledger, "nob") == 0
    assert _approve_as(2, ledger, "binny") == 0
    assert handoff("run", ledger, "db-19", "link").returncode == 0 and _runs(folder) == 1

    def revive(led) -> None:  # binny's spent approval made unused again, nob's dropped, the target back
        t = led.targets["db-19"]
        t.approvals = [a for a in t.approvals if a.by == "binny"]
        t.approvals[0].used_at = t.approvals[0].used_by = None
        t.state, t.evidence, t.touched_at, t.reason, t.last_action = "checked", None, None, None, None
    _as_agent(folder, lambda: _agent_writes(ledger, revive))
    assert _approve_as(3, ledger, "cara") == 0  # one real new approval: it completes the count, binny's is its co

    again = handoff("run", ledger, "db-19", "link", env=cli_env(XDG_STATE_HOME=str(folder / "next-engineer")))
    assert _runs(folder) == 1, "a spent co-approval completed the count again:\n" + again.stdout + again.stderr
    # Refused when the intent is written (the journal names binny's use), settled as already run, never
    # left to the spawn's last check.
    assert "already started under the approval by binny" in again.stdout + again.stderr, again.stdout + again.stderr
