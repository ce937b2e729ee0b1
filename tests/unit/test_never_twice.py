"""An approval binds the command exactly as it will run: `{ledger_dir}` and `{python}`
rendered into its hash, so a ledger copied to another folder (whose script beside it
says something else) does not run under the approval given in the first folder."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import yaml

from tests.conftest import cli_env, handoff

SCRIPT = "import sys; open(sys.argv[1], 'a').write({word!r})\n"


def _ops(tmp_path: Path, runs: Path) -> Path:
    ops = tmp_path / "ops"
    ops.mkdir()
    (ops / "link.py").write_text(SCRIPT.format(word="approved "))
    data = {"task": "copied", "targets": {"a": {"state": "checked"}}, "runbook": {"steps": [
        {"name": "link", "from": "checked", "to": "linked", "reversible": False,
         "run": ["{python}", "{ledger_dir}/link.py", str(runs)]}]}}
    (ops / "ledger.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return ops / "ledger.yaml"


def test_an_approval_does_not_follow_a_ledger_copied_to_another_folder(tmp_path):
    runs = tmp_path / "runs.txt"
    ledger = _ops(tmp_path, runs)
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"))
    approved = handoff("approve", ledger, "a", "--as", "human-1", env=env)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    copy = tmp_path / "elsewhere"
    shutil.copytree(ledger.parent, copy)  # ledger, journal and sidecars: the approval comes along
    (copy / "link.py").write_text(SCRIPT.format(word="EVIL "))
    before = (copy / "ledger.yaml").read_bytes()

    ran = handoff("run", copy / "ledger.yaml", "a", env=env)
    said = ran.stdout + ran.stderr
    assert ran.returncode == 1, said  # nothing ran: it asks again
    assert not runs.exists(), said
    assert "link requires approval" in said and "EVIL" not in said, said
    target = yaml.safe_load((copy / "ledger.yaml").read_text())["targets"]["a"]
    assert target["state"] in ("checked", "awaiting_approval") and "in_flight" not in target

    here = handoff("run", ledger, "a", env=env)  # in its own folder the approval holds: the approved script runs
    assert here.returncode == 0, here.stdout + here.stderr
    assert runs.read_text() == "approved "
