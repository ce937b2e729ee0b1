"""A long-running holder of a ledger (a session, a worker) opened through a folder link
(`current -> releases/1`, as deploy tools lay folders out) acts on the ledger it opened, or on
none: once the link is switched to another release (a copy of the folder, the approval in it),
nothing is started and nothing is written.

Before, the holder read and wrote the ledger the link now led to (releases/2) while its lock,
last-write record, history, journal and `{ledger_dir}` stayed with releases/1: an irreversible
step ran under the approval bound to releases/1 (one a fresh process refuses for releases/2's
ledger, "approval for another command"), its result was written into releases/2's ledger, and its
start and end were journaled in releases/1's journal: releases/2's journal holds no record of the
irreversible step its ledger says ran.

A real ledger, a real holder (fence_kit), the approval given through the real CLI, a real step
process that counts its own starts.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fence_kit import Fleet, holder, intent

from engine.errors import LedgerInvalid
from engine.session.steps import run_intent
from tests.conftest import handoff

STEP = "import sys, pathlib; pathlib.Path(sys.argv[1]).open('a').write(' '.join(sys.argv[2:]) + '\\n')\n"


def _release(tmp_path: Path, starts: Path) -> Path:
    one = tmp_path / "releases" / "1"
    one.mkdir(parents=True)
    (one / "step.py").write_text(STEP)
    (one / "ledger.yaml").write_text(f"""\
task: switched
owner_shift: test-oncall
runbook:
  steps:
  - {{name: link, from: checked, to: linked, run: ["{{python}}", "{{ledger_dir}}/step.py", "{starts}", "link", "{{target}}"]}}
targets:
  b: {{state: checked}}
""")
    return one


def test_a_holder_acts_on_no_ledger_once_its_folder_link_was_switched(tmp_path: Path) -> None:
    starts = tmp_path / "starts.log"
    one = _release(tmp_path, starts)
    current = tmp_path / "current"
    current.symlink_to(one)
    location = str(current / "ledger.yaml")
    actor = holder(Fleet(one, location, "file"))
    approved = handoff("approve", location, "b", "--yes", "--as", "alice")
    assert approved.returncode == 0, approved.stdout + approved.stderr
    it = intent(actor, "b", "link")

    two = tmp_path / "releases" / "2"
    shutil.copytree(one, two)  # the next release: the folder copied, the approval in it
    current.unlink()
    current.symlink_to(two)
    before = (one / "ledger.yaml").read_bytes(), (two / "ledger.yaml").read_bytes()

    with pytest.raises(LedgerInvalid, match="releases/2/ledger.yaml, not to .*releases/1/ledger.yaml"):
        run_intent(actor, it)
    assert not starts.exists(), f"started after the switch: {starts.read_text()!r}"
    assert ((one / "ledger.yaml").read_bytes(), (two / "ledger.yaml").read_bytes()) == before  # neither written
