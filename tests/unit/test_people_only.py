"""People-only operations are refused by the engine itself in an agent's environment.

A hook is a net, not a lock: whatever spelling reaches the engine, a process started by
a Claude Code session (`CLAUDECODE`, `CLAUDE_CODE_*`) or by the engine for a step, a
probe or a metric (`HANDOFF_AGENT`) is refused approve, reject, unapprove, unblock,
reconcile, unpause, retry --force, check --accept-*, import --replace: exit 1, a
message saying why and what a person runs, the ledger byte-identical, one journal record.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from engine.api import open_ledger
from engine.approvals.refusal import PeopleOnlyRefused
from tests.conftest import cli_env, handoff

PY = sys.executable

# `check` (reversible) runs a command that tries to approve db-2's cutover: a real step process.
STEP_LEDGER = """\
task: people-only
owner_shift: test-oncall
runbook:
  steps:
  - {name: check, from: queued, to: checked, reversible: true,
     run: ["{python}", -m, engine.cli.main, approve, "{ledger_dir}/ledger.yaml", db-2, --yes, --as, alice]}
  - {name: cutover, from: verified, to: done, run: [echo, cutover, "{target}"]}
targets:
  db-1: {state: queued}
  db-2: {state: awaiting_approval, checkpoint: "0/1", awaiting: cutover, awaiting_by: "agent:s-1"}
"""


def _journal(path: Path) -> list[dict]:
    jpath = Path(str(path) + ".journal.jsonl")
    return [json.loads(line) for line in jpath.read_text().splitlines()] if jpath.exists() else []


def test_a_step_process_the_engine_spawned_cannot_approve(tmp_path: Path) -> None:
    """`handoff run L db-1 check` whose step runs `python -m engine.cli.main approve ...`: refused, no approval."""
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(STEP_LEDGER)
    result = handoff("run", ledger, "db-1", "check")
    assert result.returncode == 7, result.stdout + result.stderr  # the step (the approve) exited 1
    data = yaml.safe_load(ledger.read_text())
    assert not data["targets"]["db-2"].get("approvals")
    assert data["targets"]["db-2"]["state"] == "awaiting_approval"
    [refusal] = [r for r in _journal(ledger) if r["kind"] == "people_only_refused"]
    assert refusal["command"] == "approve" and refusal["target"] == "db-2"
    assert refusal["caller"].startswith("a process the engine started for ")
    assert "approving is for people" in refusal["msg"] and f"A person runs: handoff approve {ledger} db-2" in refusal["msg"]
    step_end = [r for r in _journal(ledger) if r["kind"] == "step_end"][-1]
    assert "approving is for people" in step_end["output_tail"]


# (argv after the ledger, the command's words in the refusal) for the small fleet (tests.conftest).
PEOPLE_ONLY_CALLS = [
    (["approve", "{L}", "db-1", "--yes"], "approving is for people"),
    (["unapprove", "{L}", "db-1"], "withdrawing an approval is for people"),
    (["reject", "{L}", "db-1", "--reason", "no"], "rejecting a step is for people"),
    (["unblock", "{L}", "db-3", "--to", "checked", "--reason", "fixed"], "unblocking a target is for people"),
    (["reconcile", "{L}", "db-3", "--to", "checked", "--reason", "fixed"], "reconciling the ledger with reality is for people"),
    (["unpause", "{L}"], "unpausing the ledger is for people"),
    (["retry", "{L}", "db-3", "--force", "--reason", "checked"], "retrying an irreversible step is for people"),
    (["check", "{L}", "--accept-rollback"], "accepting a rollback of the ledger is for people"),
    (["check", "{L}", "--accept-removal"], "accepting that targets were removed is for people"),
]


@pytest.mark.parametrize("argv,words", PEOPLE_ONLY_CALLS, ids=[c[0][0] + (c[0][-1] if c[0][0] == "check" else "") for c in PEOPLE_ONLY_CALLS])
def test_each_people_only_command_is_refused_in_a_claude_code_session(fleet: Path, argv, words) -> None:
    """Exit 1, why and what a person runs, the ledger byte-identical, one `people_only_refused` record."""
    _refused(fleet, argv, words, {"CLAUDECODE": "1"})


@pytest.mark.parametrize("marker", [{"CLAUDE_CODE_SESSION_ID": "c-42"}, {"HANDOFF_AGENT": "s-9"}, {"CLAUDECODE": ""},
                                    {"CLAUDE_CODE_ENTRYPOINT": ""}, {"HANDOFF_AGENT": ""}])
def test_every_agent_marker_is_enough(fleet: Path, marker) -> None:
    """A Claude Code session id alone, or the engine's HANDOFF_AGENT alone, makes the caller an agent; so does a
    Claude Code variable, or HANDOFF_AGENT, set empty (`CLAUDECODE= handoff approve ...` run from the agent's shell)."""
    _refused(fleet, ["approve", "{L}", "db-1", "--yes"], "approving is for people", marker)


def _refused(fleet: Path, argv: list[str], words: str, marker: dict[str, str]) -> None:
    before = fleet.read_bytes()
    result = handoff(*[str(fleet) if a == "{L}" else a for a in argv], env=cli_env(**marker))
    assert result.returncode == 1, result.stdout + result.stderr
    assert words in result.stderr and "an agent's process (" in result.stderr
    assert f"A person runs: handoff {argv[0]} {fleet}" in result.stderr
    assert fleet.read_bytes() == before
    records = [r for r in _journal(fleet) if r["kind"] == "people_only_refused"]
    assert len(records) == 1 and records[0]["command"] == argv[0]


def test_import_replace_is_refused_before_the_database_changes(fleet: Path) -> None:
    """`handoff import F URL --replace` under CLAUDECODE: exit 1 and the ledger in PostgreSQL (real) is not replaced."""
    import uuid

    url = f"postgresql://127.0.0.1/test#people-only-{uuid.uuid4().hex[:8]}"
    assert handoff("import", fleet, url).returncode == 0
    first = handoff("export", url).stdout
    fleet.write_text(fleet.read_text().replace("task: small-fleet", "task: replaced-by-an-agent"))
    result = handoff("import", fleet, url, "--replace", env=cli_env(CLAUDECODE="1"))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "replacing a ledger in the database is for people" in result.stderr
    assert handoff("export", url).stdout == first
    records = handoff("journal", url, "--json").stdout.splitlines()
    assert [json.loads(r)["command"] for r in records if '"people_only_refused"' in r] == ["import"]


def test_the_same_commands_work_for_a_person(fleet: Path) -> None:
    """Without an agent's markers the same approve and unblock are recorded (the refusal is not a blanket one)."""
    assert handoff("approve", fleet, "db-1", "--yes", "--as", "alice").returncode == 0
    assert handoff("retry", fleet, "db-3", "--force", "--reason", "checked").returncode == 0
    data = yaml.safe_load(fleet.read_text())
    assert data["targets"]["db-1"]["approvals"][0]["by"] == "alice"
    assert data["targets"]["db-3"]["state"] == "checked"
    assert not [r for r in _journal(fleet) if r["kind"] == "people_only_refused"]


def test_an_agent_still_reads_and_writes_its_own_note_but_never_erases_a_persons(fleet: Path) -> None:
    """status, journal and note work under CLAUDECODE; `note --set --as` the note's own author keeps the person's note as previous_note."""
    env = cli_env(CLAUDECODE="1")
    assert handoff("note", fleet, "--set", "alice's words", "--as", "alice").returncode == 0  # a person's note, set outside
    assert handoff("status", fleet, env=env).returncode == 0
    assert handoff("journal", fleet, env=env).returncode == 0
    assert handoff("check", fleet, env=env).returncode in (0, 1)  # a plain check changes nothing and is not people-only
    written = handoff("note", fleet, "--set", "agent overwrites", "--as", "alice", env=env)
    assert written.returncode == 0, written.stderr
    data = yaml.safe_load(fleet.read_text())
    assert data["handoff_note"] == "agent overwrites"
    assert data["previous_note"]["text"] == "alice's words"


def test_the_api_refuses_too_not_only_the_cli(fleet: Path, monkeypatch) -> None:
    """The TUI and scripts use LedgerHandle: its approve refuses in an agent's environment; nothing written."""
    monkeypatch.setenv("CLAUDECODE", "1")  # this process's own environment: the API reads os.environ
    handle = open_ledger(str(fleet), actor="alice")
    before = fleet.read_bytes()
    with pytest.raises(PeopleOnlyRefused, match="approving is for people"):
        handle.approve("db-1")
    with pytest.raises(PeopleOnlyRefused, match="unpausing"):
        handle.unpause()
    assert fleet.read_bytes() == before
    assert len([r for r in _journal(fleet) if r["kind"] == "people_only_refused"]) == 2


def test_a_pager_the_engine_runs_cannot_approve_what_it_pages_about(tmp_path: Path) -> None:
    """The approval_needed page's command tries `handoff approve` on the very target: refused, the target still awaits."""
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(STEP_LEDGER.replace("task: people-only\n", (
        "task: people-only\nnotify:\n"
        f"- run: [{json.dumps(PY)}, -m, engine.cli.main, approve, {json.dumps(str(ledger))}, db-3, --yes, --as, alice, --comment]\n"
    )) + "  db-3: {state: verified, checkpoint: \"0/3\"}\n")
    result = handoff("run", ledger, "db-3", "cutover")
    assert result.returncode == 1, result.stdout + result.stderr
    target = yaml.safe_load(ledger.read_text())["targets"]["db-3"]
    assert target["state"] == "awaiting_approval" and not target.get("approvals")
    refusals = [r for r in _journal(ledger) if r["kind"] == "people_only_refused"]  # one per delivery attempt
    assert refusals and all(r["target"] == "db-3" and "the engine's pager" in r["caller"] for r in refusals)
