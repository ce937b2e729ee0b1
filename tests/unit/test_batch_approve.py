"""Batch approval (`handoff approve LEDGER --step cordon --targets 'prod-*'`): N single approvals,
each shown with its own command and hash, checked as one is, journaled one by one; one refused
target refuses the batch and nothing is recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from engine.api import open_ledger
from engine.errors import Refused
from tests.conftest import handoff
from tests.unit.tty_kit import on_terminal

FLEET = """\
task: k8s-roll
runbook:
  steps:
  - {name: preflight, from: queued, to: checked, reversible: true, run: [echo, preflight, "{target}"]}
  - {name: cordon, from: checked, to: cordoned, run: [echo, cordon, "{target}", "{checkpoint}"]}
  - {name: roll, from: cordoned, to: done, reversible: true, run: [echo, roll, "{target}"]}
targets:
  prod-1: {state: awaiting_approval, checkpoint: "v1", awaiting: cordon, awaiting_by: "agent:s1", awaiting_since: "2026-09-10T02:11Z"}
  prod-2: {state: checked, checkpoint: "v2"}
  prod-3: {state: queued}
  stage-1: {state: checked, checkpoint: "s1"}
"""


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(FLEET, encoding="utf-8")
    return path


def journal(path: Path, kind: str) -> list[dict]:
    journal_path = Path(str(path) + ".journal.jsonl")
    if not journal_path.exists():
        return []
    return [r for r in map(json.loads, journal_path.read_text().splitlines()) if r.get("kind") == kind]


def approvals(path: Path) -> dict[str, list[dict]]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {n: t.get("approvals", []) for n, t in data["targets"].items()}


def hashes(path: Path, names: tuple[str, ...] = ("prod-1", "prod-2")) -> dict[str, str]:
    """Each target's cordon hash, as a single approval would show it."""
    handle = open_ledger(str(path), read_only=True)
    ledger = handle.load()
    return {n: handle.pending_command(ledger, n, "cordon").hash for n in names}


def test_a_batch_shows_every_command_and_hash_and_records_one_approval_per_target(fleet: Path) -> None:
    """Without a terminal: what was printed is approved; prod-3 (queued) is named and left out; stage-1 is not matched."""
    want = hashes(fleet)
    result = handoff("approve", fleet, "--step", "cordon", "--targets", "prod-*", "--as", "alice", "--comment", "looked at both")
    assert result.returncode == 0, result.stdout + result.stderr
    for name, digest in want.items():
        assert f"{name}: cordon (IRREVERSIBLE) would run:" in result.stdout and f"  hash: {digest}" in result.stdout
        assert f"{name}: cordon approved by alice" in result.stdout and f"hash {digest}" in result.stdout
    assert "not in this batch: prod-3: prod-3 is queued; cordon runs only from checked" in result.stderr
    assert "2 approval(s) of cordon recorded, one per target" in result.stdout
    given = approvals(fleet)
    assert [a["hash"] for a in given["prod-1"]] == [want["prod-1"]] and [a["hash"] for a in given["prod-2"]] == [want["prod-2"]]
    assert given["prod-3"] == [] and given["stage-1"] == []
    records = journal(fleet, "approval")
    assert [(r["target"], r["hash"], r["comment"]) for r in records] == [
        ("prod-1", want["prod-1"], "looked at both"), ("prod-2", want["prod-2"], "looked at both")]
    assert yaml.safe_load(fleet.read_text())["targets"]["prod-1"]["state"] == "checked"  # its gate is open


def test_on_a_terminal_the_step_name_and_the_count_must_be_typed(fleet: Path) -> None:
    """A wrong step name or count approves nothing (the file is unchanged); the right ones approve both."""
    before = fleet.read_bytes()
    for typed, said in (("roll\n2\n", "the step's name did not match"), ("cordon\n3\n", "3 is not 2"), ("\x04", "nothing was approved")):
        result = on_terminal("approve", fleet, "--step", "cordon", "--targets", "prod-*", "--as", "alice", typed=typed)
        assert result.returncode == 1 and said in result.stderr, (typed, result.stdout, result.stderr)
        assert "Type the step's name (cordon)" in result.stdout
        assert fleet.read_bytes() == before
    result = on_terminal("approve", fleet, "--step", "cordon", "--targets", "prod-1,prod-2", "--as", "alice", typed="cordon\n2\n")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Type how many targets you approve it on (2)" in result.stdout
    assert len(journal(fleet, "approval")) == 2


def test_a_target_the_approver_asked_for_is_left_out_of_their_batch_saying_why(fleet: Path) -> None:
    """prod-1 was asked for by agent:s1: a batch by that name leaves it out, saying why, as it leaves
    out a target already approved; the rest is approved. Refused whole, it would approve nothing."""
    want = hashes(fleet)
    result = handoff("approve", fleet, "--step", "cordon", "--targets", "prod-*", "--as", "agent:s1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "not in this batch: prod-1: agent:s1" in result.stderr and "someone else must approve it" in result.stderr
    assert "prod-1: cordon (IRREVERSIBLE) would run:" not in result.stdout
    assert [(r["target"], r["hash"]) for r in journal(fleet, "approval")] == [("prod-2", want["prod-2"])]
    assert approvals(fleet)["prod-1"] == []


def test_the_requester_rule_applies_to_each_target_and_refuses_the_whole_batch(fleet: Path) -> None:
    """A batch holding a target its approver asked for (shown before the ask, or built by hand through
    the API) is refused whole, naming prod-1; nothing is recorded."""
    before = fleet.read_bytes()
    with pytest.raises(Refused) as refused:
        open_ledger(str(fleet), actor="agent:s1").approve_batch(hashes(fleet), step="cordon")
    assert "the batch approval of cordon on 2 target(s) was refused, nothing was approved; 1 refused: prod-1:" in refused.value.message
    assert "someone else must approve it" in refused.value.message
    assert fleet.read_bytes() == before and journal(fleet, "approval") == []


def test_a_two_person_policy_counts_each_target_apart(fleet: Path) -> None:
    """count: 2: alice's batch is 1 of 2 on each target; her second batch adds nothing; bob's completes both."""
    path = fleet
    path.write_text(FLEET.replace('run: [echo, cordon, "{target}", "{checkpoint}"]}',
                                  'run: [echo, cordon, "{target}", "{checkpoint}"], approvals: {count: 2}}'), encoding="utf-8")
    assert handoff("approve", path, "--step", "cordon", "--targets", "prod-*", "--as", "alice").returncode == 0
    data = yaml.safe_load(path.read_text())["targets"]
    assert data["prod-1"]["state"] == "awaiting_approval" and "1 of 2 approvals (alice)" in data["prod-1"]["next_action"]
    again = handoff("approve", path, "--step", "cordon", "--targets", "prod-*", "--as", "alice")
    assert again.returncode == 1 and "not in this batch: prod-1: already approved by alice" in again.stderr
    assert handoff("approve", path, "--step", "cordon", "--targets", "prod-*", "--as", "bob").returncode == 0
    data = yaml.safe_load(path.read_text())["targets"]
    assert data["prod-1"]["state"] == "checked" and [a["by"] for a in data["prod-2"]["approvals"]] == ["alice", "bob"]
    assert len(journal(path, "approval")) == 4


def test_what_changed_since_it_was_shown_refuses_the_batch(fleet: Path) -> None:
    """prod-2's checkpoint moves between the listing and the approval: nothing is approved, prod-2 is named."""
    handle = open_ledger(str(fleet), actor="alice")
    picked = handle.select_batch(handle.load(), "prod-*", "cordon")
    assert [n for n, _ in picked.chosen] == ["prod-1", "prod-2"]
    fleet.write_text(fleet.read_text().replace('checkpoint: "v2"', 'checkpoint: "v3"'), encoding="utf-8")
    before = fleet.read_bytes()
    with pytest.raises(Refused) as err:
        handle.approve_batch({n: p.hash for n, p in picked.chosen}, step="cordon")
    assert "1 refused: prod-2: prod-2: what cordon would run changed since you looked" in err.value.message
    assert fleet.read_bytes() == before and journal(fleet, "approval") == []


def test_a_batch_is_bound_to_the_hashes_shown_not_the_revision(fleet: Path) -> None:
    """A write elsewhere since the dialog was shown (a pause and unpause) does not refuse the
    batch: the binding is each target's hash, which that write did not change."""
    handle = open_ledger(str(fleet), actor="alice")
    ledger = handle.load()
    picked = handle.select_batch(ledger, "prod-*", "cordon")
    bob = open_ledger(str(fleet), actor="bob")
    bob.pause("hold on")
    bob.unpause()
    assert handle.load().revision > ledger.revision
    assert len(handle.approve_batch({n: p.hash for n, p in picked.chosen}, step="cordon")) == 2
    assert len(journal(fleet, "approval")) == 2


@pytest.mark.parametrize("args, said, code", [
    (["--targets", "prod-*"], "--targets needs --step STEP", 2),
    (["prod-1", "--step", "cordon", "--targets", "prod-*"], "give a TARGET or --targets PATTERN, not both", 2),
    (["--step", "cordon", "--targets", "prod-*", "--expect-hash", "abc"], "--expect-hash is for one target", 2),
    (["--step", "cordon", "--targets", "web-*"], "--targets 'web-*' matches no target in this ledger", 1),
    (["--step", "cordon", "--targets", " , "], "--targets is empty", 1),
    (["--step", "nope", "--targets", "prod-*"], "no runbook step named 'nope' in ", 2),  # usage, as a missing target
    ([], "say which target to approve: TARGET, or --step STEP --targets PATTERN", 2),
])
def test_bad_batches_say_what_to_do_and_change_nothing(fleet: Path, args: list[str], said: str, code: int) -> None:
    before = fleet.read_bytes()
    result = handoff("approve", fleet, *args, "--as", "alice")
    assert result.returncode == code and said in result.stderr, result.stdout + result.stderr
    assert fleet.read_bytes() == before and journal(fleet, "approval") == []


def test_a_batch_from_an_agent_is_refused(fleet: Path) -> None:
    """People approve: an agent's process gets the people-only refusal, and the ledger is unchanged."""
    before = fleet.read_bytes()
    from tests.conftest import cli_env

    result = handoff("approve", fleet, "--step", "cordon", "--targets", "prod-*", env=cli_env(CLAUDE_CODE_SESSION_ID="s-1"))
    assert result.returncode == 1, result.stdout + result.stderr
    assert fleet.read_bytes() == before and journal(fleet, "approval") == []


def test_whoever_started_the_asking_session_cannot_approve_its_asks_in_a_batch(fleet: Path) -> None:
    """count: 2: alice's session asks for cordon on prod-2 and prod-3; her batch is refused for both, bob's and carol's pass."""
    fleet.write_text(FLEET.replace('run: [echo, cordon, "{target}", "{checkpoint}"]}',
                                   'run: [echo, cordon, "{target}", "{checkpoint}"], approvals: {count: 2}}'), encoding="utf-8")
    session = handoff("resume", fleet, "--as", "alice")
    assert session.returncode == 0, session.stdout + session.stderr
    states = {n: t["state"] for n, t in yaml.safe_load(fleet.read_text())["targets"].items()}
    assert states["prod-2"] == states["prod-3"] == "awaiting_approval"
    before = fleet.read_bytes()
    mine = handoff("approve", fleet, "--step", "cordon", "--targets", "prod-2,prod-3", "--as", "alice")
    assert mine.returncode == 1, mine.stdout + mine.stderr
    for name in ("prod-2", "prod-3"):
        assert f"not in this batch: {name}: alice" in mine.stderr, mine.stderr
    assert "started the session" in mine.stderr and "no target matching 'prod-2,prod-3' can take an approval" in mine.stderr
    assert fleet.read_bytes() == before
    with pytest.raises(Refused) as refused:  # given anyway (through the API): refused whole
        open_ledger(str(fleet), actor="alice").approve_batch(hashes(fleet, ("prod-2", "prod-3")), step="cordon")
    assert "2 refused: prod-2: alice" in refused.value.message and "prod-3: alice" in refused.value.message
    assert fleet.read_bytes() == before
    for person in ("bob", "carol"):
        assert handoff("approve", fleet, "--step", "cordon", "--targets", "prod-2,prod-3", "--as", person).returncode == 0
    assert {n: t["state"] for n, t in yaml.safe_load(fleet.read_text())["targets"].items() if n in ("prod-2", "prod-3")} == {
        "prod-2": "checked", "prod-3": "checked"}
