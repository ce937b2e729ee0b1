"""A write never builds on the per-user parse cache's word. The cache is a file of the
process's user, in the folder its environment names (`XDG_CACHE_HOME`, `HOME`): an agent's
user can write its own, with or without the agent markers in its environment. A forged
entry (a target's very text mapped to other data) made `handoff run` put a failed target
back (a people-only `unblock`) and run its step; the engine then wrote the forged state as
its own, so `handoff check` saw nothing. Now the first write of a process that read through
the cache reads the file alone, and a wrong cache is written again from the file. Real
processes, real files; the forged cache is made as an agent would make it."""

from __future__ import annotations

import glob
import json
import marshal
import os
from pathlib import Path

from tests.conftest import RUNBOOK_LEDGER, cli_env, handoff


def _forge(folder: Path, **targets: dict) -> None:
    """Map each named target's text in the cache under `folder` to other data."""
    (path,) = glob.glob(str(folder / "handoff" / "*.parse"))
    doc = marshal.loads(Path(path).read_bytes())
    for text, (name, _) in list(doc["targets"].items()):
        if name in targets:
            doc["targets"][text] = (name, targets[name])
    Path(path).write_bytes(marshal.dumps(doc, 4))
    os.chmod(path, 0o600)


def _forged_fleet(tmp_path: Path, **targets: dict) -> tuple[Path, dict[str, str]]:
    ledger = tmp_path / "fleet.yaml"
    ledger.write_text(RUNBOOK_LEDGER)
    env = cli_env(XDG_CACHE_HOME=str(tmp_path / "cache"))  # no agent marker: the rule is not the environment's
    assert handoff("note", ledger, "--set", "a person's note", env=env).returncode == 0  # the engine's own file
    assert handoff("status", ledger, env=env).returncode == 0  # the cache of this file, in that folder
    _forge(tmp_path / "cache", **targets)
    seen = json.loads(handoff("status", ledger, "--json", env=env).stdout)["targets"]
    assert all(seen[name].items() >= data.items() for name, data in targets.items())  # the forged cache is read
    return ledger, env


def test_a_forged_cache_never_puts_a_failed_target_back_nor_runs_its_step(tmp_path):
    ledger, env = _forged_fleet(tmp_path, **{"db-4": {"state": "queued"}, "db-2": {"state": "queued"}})
    before = ledger.read_bytes()

    ran = handoff("run", ledger, "db-4", "check", env=env)
    assert ran.returncode != 0, ran.stdout
    assert "check passed" not in ran.stdout
    assert "db-4 is failed" in ran.stdout, ran.stdout  # what the file says of db-4, not what the cache said
    after = ledger.read_bytes()
    assert b"db-4: {state: failed" in after and b"db-2: {state: verified" in after
    assert after.count(b"state: failed") == before.count(b"state: failed") == 2  # db-3 and db-4, as they were
    # The cache found wrong is written again from the file: the next reader sees db-4 failed.
    again = json.loads(handoff("status", ledger, "--json", env=env).stdout)["targets"]
    assert again["db-4"]["state"] == "failed" and again["db-2"]["state"] == "verified"
    check = handoff("check", ledger, env=env)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_person_shown_a_forged_command_approves_nothing(tmp_path):
    forged = {"state": "awaiting_approval", "checkpoint": "0/FORGED", "awaiting": "cutover", "awaiting_by": "agent",
              "awaiting_since": "2026-09-10T02:11Z"}
    ledger, env = _forged_fleet(tmp_path, **{"db-1": forged})
    before = ledger.read_bytes()
    shown = handoff("approve", ledger, "db-1", "--as", "alice", "--yes", env=env)  # not a driver: checks what it changes
    assert shown.returncode != 0, shown.stdout
    assert "0/FORGED" in shown.stderr  # what the person was shown
    assert "changed since you looked" in shown.stderr and "echo cutover db-1 0/9A3F2C10" in shown.stderr, shown.stderr
    assert ledger.read_bytes() == before  # nothing approved
    # The cache found wrong is written again from the file: the next reader sees the true checkpoint.
    again = json.loads(handoff("status", ledger, "--json", env=env).stdout)["targets"]
    assert again["db-1"]["checkpoint"] == "0/9A3F2C10"


def test_a_forged_cache_never_frees_a_place_under_the_touched_limit(tmp_path):
    """db-2 is touched (verified) and db-1 awaits approval: with `never touch more than 2`, db-5's
    check must wait. A cache saying db-2 is queued would free a place; a driver reads the file."""
    ledger, env = _forged_fleet(tmp_path, **{"db-2": {"state": "queued"}})
    before = ledger.read_bytes()
    ran = handoff("run", ledger, "db-5", "check", env=env)
    assert ran.returncode != 0, ran.stdout
    assert "never touch more than 2" in ran.stdout and "touched 2/2; db-5 would make 3" in ran.stdout, ran.stdout
    assert b"db-5: {state: queued}" in ledger.read_bytes() and b"db-2: {state: verified" in before
