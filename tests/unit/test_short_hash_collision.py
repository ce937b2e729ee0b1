"""The hash people see and type is the first 16 hex digits of the approved command's sha256. An
agent that writes the runbook could try ~2^32 commands to find an evil one whose first 16 digits
equal a benign one's, have the benign one approved, then swap it in. The approval's journal record
keeps the whole digest, and the fence compares it before a spawn.

Proved at reduced strength, as the attack would run: the engine's processes are started with the
shown hash cut to 1 hex digit (a `sitecustomize` setting `engine.ledger.render.SHORT`), so a
colliding evil command is found in a few tries; everything else is the real engine."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from engine.ledger.model import Ledger
from engine.ledger.render import approval_digest
from tests.conftest import cli_env, handoff

SITE = "import engine.ledger.render as r\nr.SHORT = 1\n"
MARK = "import sys, pathlib; pathlib.Path(sys.argv[1]).write_text(sys.argv[2])\n"


def _data(tmp_path: Path, word: str) -> dict:
    return {"task": "collide", "targets": {"a": {"state": "checked", "checkpoint": "0/A"}}, "runbook": {"steps": [
        {"name": "link", "from": "checked", "to": "linked", "reversible": False,
         "run": [sys.executable, str(tmp_path / "mark.py"), str(tmp_path / "ran.txt"), word]}]}}


def _digest(tmp_path: Path, word: str) -> str:
    ledger = Ledger.model_validate(_data(tmp_path, word))
    return approval_digest("a", ledger.targets["a"], ledger.step("link"), ledger_dir=str(tmp_path.resolve()))


def test_an_evil_command_with_the_same_shown_hash_never_runs_under_the_benign_ones_approval(tmp_path: Path) -> None:
    (tmp_path / "mark.py").write_text(MARK)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITE)
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"), PYTHONPATH=f"{site}:{cli_env().get('PYTHONPATH', '')}")
    benign = _digest(tmp_path, "benign")
    evil = next(w for w in (f"evil-{i}" for i in range(2000)) if _digest(tmp_path, w)[:1] == benign[:1])
    assert _digest(tmp_path, evil) != benign  # another command, the same shown hash
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(yaml.safe_dump(_data(tmp_path, "benign"), sort_keys=False))
    approved = handoff("approve", ledger, "a", "--as", "human-1", "--yes", env=env)
    assert approved.returncode == 0 and f"hash: {benign[:1]}\n" in approved.stdout, approved.stdout + approved.stderr
    text = ledger.read_text()
    ledger.write_text(text.replace("- benign", f"- {evil}"))  # the agent swaps the command in
    assert evil in ledger.read_text()
    ran = handoff("run", ledger, "a", env=env)
    said = ran.stdout + ran.stderr
    assert not (tmp_path / "ran.txt").exists(), f"the evil command ran under the benign one's approval: {said}"
    assert ran.returncode == 1 and "approval for another command" in said, said
