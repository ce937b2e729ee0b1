"""A PostgreSQL ledger's `{ledger_dir}` is each process's own working folder
(engine.ledger.workdir.WorkingDir), and the approval hash leaves it unrendered
(engine/ledger/render.py approval_hash). So the person approving is shown the command
rendered with THEIR working folder, and the session that spends the approval runs it
rendered with ITS working folder: another program, under the same approval.

Promise (docs/operating.md, Approving): "The approval screen shows the exact command that
will run"; README: "An approval approves exactly what was shown"; `handoff approve` prints
"what was approved (argv, checkpoint, hash)"; docs/ledger.md: `{ledger_dir}` is "the
absolute folder the ledger file is in", one value, not one per process."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import yaml

from tests.conftest import cli_env

SCRIPT = "import sys; open(sys.argv[1], 'a').write({word!r})\n"


def _cli(*args, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.cli.main", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=str(cwd), timeout=120)


def test_the_command_run_under_a_database_approval_is_the_one_the_approver_was_shown(tmp_path: Path) -> None:
    """Alice, in ~alice/ops, is shown `python /…/alice-ops/link.py` and approves it; a session started in
    another folder spends that approval on `python /…/runner/link.py`: a program nobody was shown."""
    runs = tmp_path / "runs.txt"
    alice, runner = tmp_path / "alice-ops", tmp_path / "runner"
    for folder, word in ((alice, "approved "), (runner, "UNSEEN ")):
        folder.mkdir()
        (folder / "link.py").write_text(SCRIPT.format(word=word))
    data = {"task": "pg-workdir", "targets": {"a": {"state": "checked"}}, "runbook": {"steps": [
        {"name": "link", "from": "checked", "to": "linked", "reversible": False,
         "run": [sys.executable, "{ledger_dir}/link.py", str(runs)]}]}}
    source = tmp_path / "ledger.yaml"
    source.write_text(yaml.safe_dump(data, sort_keys=False))
    url = f"postgresql://127.0.0.1/test#workdir-{uuid.uuid4().hex[:8]}"
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"))
    imported = _cli("import", source, url, cwd=tmp_path, env=env)
    assert imported.returncode == 0, imported.stderr

    approved = _cli("approve", url, "a", "--as", "human-1", "--yes", cwd=alice, env=env)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    shown = json.loads(next(line for line in approved.stdout.splitlines() if "argv:" in line).split("argv:", 1)[1])
    assert shown == [sys.executable, f"{alice}/link.py", str(runs)]  # what human-1 approved

    ran = _cli("run", url, "a", "link", cwd=runner, env=env)
    said = ran.stdout + ran.stderr
    what_ran = runs.read_text() if runs.exists() else ""
    assert what_ran in ("", "approved "), (
        f"the approval of {shown} ran another program: {what_ran!r} ({runner}/link.py); exit {ran.returncode}: {said}")
