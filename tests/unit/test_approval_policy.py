"""Approval policies: two people (never the requester) before an irreversible step runs;
reminders, escalation and expiry paged on time by an injected clock (no sleeps), through
the real journal, the real notify commands and a real store.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import yaml

from engine.api import open_ledger
from engine.codec.timefmt import now_iso, parse_iso
from engine.session.actor import Actor
from engine.session.tending import tend
from tests.conftest import handoff

MARK = "import sys, pathlib; pathlib.Path(__file__).with_name('spawned-' + sys.argv[1]).write_text('ran')\n"
PAGER = "import sys, pathlib; open(pathlib.Path(__file__).with_name('pages.log'), 'a').write(sys.argv[1] + ': ' + sys.argv[2] + '\\n')\n"


def _ledger(folder: Path, policy: dict, *, ledger_wide: bool = False, target: dict | None = None) -> Path:
    (folder / "mark.py").write_text(MARK)
    (folder / "pager.py").write_text(PAGER)
    step = {"name": "link", "from": "checked", "to": "done", "run": ["{python}", "{ledger_dir}/mark.py", "{target}"]}
    data = {"task": "policy", "owner_shift": "test-oncall",
            "notify": [{"run": [sys.executable, "{ledger_dir}/pager.py", "oncall"], "on": ["approval_needed", "blocked"]},
                       {"run": [sys.executable, "{ledger_dir}/pager.py", "manager"], "on": ["approval_escalated"]}],
            "runbook": {"steps": [step if ledger_wide else {**step, "approvals": policy}]},
            "targets": {"db-19": target or {"state": "checked", "checkpoint": "0/19"}}}
    if ledger_wide:
        data["approval_policy"] = policy
    path = folder / "ledger.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _target(path: Path) -> dict:
    return yaml.safe_load(path.read_text())["targets"]["db-19"]


def test_two_people_none_of_them_the_requester(tmp_path: Path) -> None:
    """A session started by carol asks; carol is refused; alice makes it "1 of 2" (still awaiting, nothing runs); bob completes it and it runs once."""
    ledger = _ledger(tmp_path, {"count": 2})
    asked = handoff("resume", "--ledger", ledger, "--as", "carol")
    assert asked.returncode == 0, asked.stdout + asked.stderr
    assert _target(ledger)["state"] == "awaiting_approval"
    carol = handoff("approve", ledger, "db-19", "--yes", "--as", "carol")
    assert carol.returncode == 1 and "needs 2 people other than the requester" in carol.stderr
    assert handoff("approve", ledger, "db-19", "--yes", "--as", "alice").returncode == 0
    target = _target(ledger)
    assert target["state"] == "awaiting_approval" and target["next_action"].startswith("1 of 2 approvals (alice)")
    status = handoff("status", ledger)
    assert "1 of 2 approvals (alice)" in status.stdout, status.stdout
    again = handoff("approve", ledger, "db-19", "--yes", "--as", "Alice ")
    assert again.returncode == 1 and "already holds an unused approval" in again.stderr
    run = handoff("run", ledger, "db-19", "link")
    assert run.returncode == 1 and not (tmp_path / "spawned-db-19").exists()
    assert handoff("approve", ledger, "db-19", "--yes", "--as", "bob").returncode == 0
    assert _target(ledger)["state"] == "checked"
    ran = handoff("run", ledger, "db-19", "link")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert (tmp_path / "spawned-db-19").exists()
    assert all(a["used_at"] for a in _target(ledger)["approvals"])  # both spent: neither can help a second run


def test_the_starter_of_the_asking_session_is_carried_with_the_request(tmp_path: Path) -> None:
    """The gate writes who started the asking session beside `awaiting_by`, and its journal record
    carries it too: with the session's id started again by dave (as every run of a Temporal ledger
    shares one id) and the ledger's note of the starter edited away, carol is still the starter."""
    ledger = _ledger(tmp_path, {"count": 2})
    asked = handoff("resume", "--ledger", ledger, "--as", "carol")
    assert asked.returncode == 0, asked.stdout + asked.stderr
    target = _target(ledger)
    assert target["awaiting_started_by"] == "carol" and target["awaiting_started_as"], target
    sid = target["awaiting_by"].removeprefix("agent:")
    open_ledger(str(ledger), actor="dave").journal.append("session_start", f"session {sid} started by dave",
                                                           actor=f"agent:{sid}", session=sid, by="dave", user="dave")
    data = yaml.safe_load(ledger.read_text())
    del data["targets"]["db-19"]["awaiting_started_by"], data["targets"]["db-19"]["awaiting_started_as"]
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    carol = handoff("approve", ledger, "db-19", "--yes", "--as", "carol")
    assert carol.returncode == 1 and "needs 2 people other than the requester" in carol.stderr, carol.stdout + carol.stderr


def _pages(folder: Path) -> list[str]:
    log = folder / "pages.log"
    return log.read_text().splitlines() if log.exists() else []


def test_reminders_escalation_and_expiry_follow_the_clock(tmp_path: Path) -> None:
    """remind_after 1h, escalate_after 4h, expire_after 24h (ledger-wide), driven by an injected clock."""
    since = "2026-09-10T02:00:00Z"
    t0 = parse_iso(since)
    ledger = _ledger(tmp_path, {"remind_after": "1h", "escalate_after": "4h", "expire_after": "24h"}, ledger_wide=True,
                     target={"state": "awaiting_approval", "checkpoint": "0/19", "awaiting": "link", "awaiting_by": "agent:s-1",
                             "awaiting_since": since})
    actor = Actor(open_ledger(str(ledger), actor="agent:s-1"), "s-1", ledger_arg=str(ledger), stream=io.StringIO())

    def at(hours: float) -> list[str]:
        before = len(_pages(tmp_path))
        tend(actor, actor.store.read(), now=t0 + hours * 3600)
        return _pages(tmp_path)[before:]

    assert at(0.5) == []
    [first] = at(1)
    assert first.startswith("oncall: ") and "db-19: link still awaits approval (1h)" in first
    assert at(1.1) == []  # once per interval, however often the loop looks
    assert len(at(2)) == 1
    paged = at(4)
    assert sorted(p.split(":")[0] for p in paged) == ["manager", "oncall"]  # escalated once, and reminded
    assert [p for p in paged if p.startswith("manager")][0].count("escalated") == 1
    assert [p.split(":")[0] for p in at(5)] == ["oncall"]  # no second escalation
    # A new session (a fresh actor) does not page again for what the journal shows was sent.
    actor = Actor(open_ledger(str(ledger), actor="agent:s-2"), "s-2", ledger_arg=str(ledger), stream=io.StringIO())
    assert at(5.5) == []
    expired = at(24)
    assert len(expired) == 1 and "blocked: approval request expired after 24h" in expired[0]
    target = _target(ledger)
    assert target["state"] == "blocked" and target["reason"] == "approval request expired after 24h"
    assert not target.get("approvals")  # never approved by default
    kinds = [json.loads(line)["kind"] for line in Path(str(ledger) + ".journal.jsonl").read_text().splitlines()]
    assert kinds.count("approval_escalated") == 1 and kinds.count("approval_expired") == 1
    assert at(30) == []  # blocked: nothing more to tend


def test_an_approval_given_meanwhile_is_never_expired(tmp_path: Path) -> None:
    """The request was approved before the expiry ran: the approval stands, nothing is blocked."""
    ledger = _ledger(tmp_path, {"expire_after": "30m"},
                     target={"state": "awaiting_approval", "checkpoint": "0/19", "awaiting": "link", "awaiting_by": "agent:s-1",
                             "awaiting_since": now_iso()})
    actor = Actor(open_ledger(str(ledger), actor="agent:s-1"), "s-1", ledger_arg=str(ledger), stream=io.StringIO())
    stale_view = actor.store.read()
    assert handoff("approve", ledger, "db-19", "--yes", "--as", "alice").returncode == 0
    tend(actor, stale_view, now=parse_iso(now_iso()) + 3600)
    assert _target(ledger)["state"] == "checked" and _target(ledger)["approvals"][0]["by"] == "alice"


def test_a_bad_duration_names_the_file_and_line_and_changes_nothing(tmp_path: Path) -> None:
    """`remind_after: soon`: exit 2, file:line, what to write instead; the ledger byte-identical."""
    ledger = _ledger(tmp_path, {"remind_after": "soon"})
    before = ledger.read_bytes()
    result = handoff("check", ledger)
    assert result.returncode == 2
    assert f"{ledger}:" in result.stderr and "'soon' is not a duration" in result.stderr and "30m, 24h" in result.stderr
    assert handoff("approve", ledger, "db-19", "--yes", "--as", "alice").returncode == 2
    assert ledger.read_bytes() == before


def test_check_explain_shows_who_approves_and_the_policy(tmp_path: Path) -> None:
    """`check --explain` names the approvers and how they are verified, the count and the timers per irreversible step."""
    ledger = _ledger(tmp_path, {"count": 2, "expire_after": "24h"})
    data = yaml.safe_load(ledger.read_text())
    data["approvers"] = ["alice", {"name": "bob", "os_user": "bob"}]
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    out = handoff("check", ledger, "--explain").stdout
    assert "Who approves irreversible steps: alice (OS login, proves little), bob (os_user)" in out
    assert "link: 2 distinct people, never the requester; expires after 24h" in out


def test_an_approval_after_the_request_expired_is_refused_though_nothing_tended_it(tmp_path: Path) -> None:
    """No session looked since the request ran past `expire_after` (a Temporal workflow looks again
    only at its idle timer, 10 minutes): the approval itself is refused, in one line naming the
    target, the step and the expiry; the ledger's bytes are unchanged, and nothing runs."""
    asked = now_iso(parse_iso(now_iso()) - 3600)  # an hour ago
    ledger = _ledger(tmp_path, {"expire_after": "30m"},
                     target={"state": "awaiting_approval", "checkpoint": "0/19", "awaiting": "link", "awaiting_by": "agent:s-1",
                             "awaiting_since": asked})
    before = ledger.read_bytes()
    late = handoff("approve", ledger, "db-19", "--yes", "--as", "alice")
    assert late.returncode == 1, late.stdout + late.stderr
    assert (f"db-19: the request to approve link expired after 30m (asked at {asked}); an expired request is never "
            "approved. Nothing was approved") in late.stderr, late.stderr
    assert "`handoff unblock LEDGER db-19 --to checked --reason WHY` and it is asked again" in late.stderr, late.stderr
    assert ledger.read_bytes() == before
    assert handoff("run", ledger, "db-19", "link").returncode != 0
    assert not (tmp_path / "spawned-db-19").exists()
