"""An approval is bound to "the command exactly as it will run": docs/ledger.md (target
`approvals`): the hash renders `{ledger_dir}` and `{python}` in, so "a ledger copied to
another folder ... asks for a new approval". Every step runs "in the ledger's folder
(`{ledger_dir}`) as its working folder", so a relative path in `run` (`./link.sh`,
`scripts/link.py`, the usual way to call a script beside the ledger) names a file of that
folder just as `{ledger_dir}/link.py` does; but the folder is in the hash only when the
text `{ledger_dir}` is. Copied elsewhere, the approval given in the first folder runs the
other folder's script."""

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
         # the script beside the ledger, named relative to the step's working folder (the ledger's)
         "run": [sys.executable, "link.py", str(runs)]}]}}
    (ops / "ledger.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return ops / "ledger.yaml"


def test_an_approval_of_a_relative_script_does_not_follow_a_ledger_copied_to_another_folder(tmp_path):
    """Promise: a ledger copied to another folder asks for a new approval (its script beside it may
    say something else). Instead: with the script named relative to the ledger's folder, the copy
    runs the other folder's script under the approval given for the first one."""
    runs = tmp_path / "runs.txt"
    ledger = _ops(tmp_path, runs)
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"))
    approved = handoff("approve", ledger, "a", "--as", "human-1", env=env)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    copy = tmp_path / "elsewhere"
    shutil.copytree(ledger.parent, copy)  # ledger, journal and sidecars: the approval comes along
    (copy / "link.py").write_text(SCRIPT.format(word="EVIL "))

    ran = handoff("run", copy / "ledger.yaml", "a", env=env)
    said = ran.stdout + ran.stderr
    assert not runs.exists(), f"the copy's script ran under the first folder's approval: {runs.read_text()!r}; {said}"
    assert ran.returncode == 1, said  # nothing ran: it asks again


def test_an_approval_does_not_follow_a_ledger_folder_swapped_behind_a_symlink(tmp_path):
    """The same promise, with `{ledger_dir}` in the command: the ledger is opened through a folder
    link (`ops/current -> releases/1`, as deploy tools lay folders out). The hash renders the
    folder as the path's text (os.path.abspath, not realpath), so once `current` points at
    another folder (a copy of the first with another `link.py`), the approval given for
    releases/1/link.py runs releases/2/link.py."""
    runs = tmp_path / "runs.txt"
    releases = tmp_path / "releases"
    one = releases / "1"
    one.mkdir(parents=True)
    (one / "link.py").write_text(SCRIPT.format(word="approved "))
    data = {"task": "swapped", "targets": {"a": {"state": "checked"}}, "runbook": {"steps": [
        {"name": "link", "from": "checked", "to": "linked", "reversible": False,
         "run": ["{python}", "{ledger_dir}/link.py", str(runs)]}]}}
    (one / "ledger.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    current = tmp_path / "current"
    current.symlink_to(one)
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"))
    approved = handoff("approve", current / "ledger.yaml", "a", "--as", "human-1", env=env)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    assert f"{one}/link.py" in approved.stdout  # what human-1 was shown: the real folder, the link resolved

    two = releases / "2"
    shutil.copytree(one, two)
    (two / "link.py").write_text(SCRIPT.format(word="EVIL "))
    current.unlink()
    current.symlink_to(two)

    ran = handoff("run", current / "ledger.yaml", "a", env=env)
    said = ran.stdout + ran.stderr
    assert not runs.exists(), f"another folder's script ran under the approval: {runs.read_text()!r}; {said}"
