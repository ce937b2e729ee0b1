"""A started-but-unknown irreversible step is never settled as a reversible one.

Root's `handoff run` of `link` (irreversible) is killed with SIGKILL while the step runs: the ledger
holds link's intent. The agent (daemon) edits the file by hand to say the intent is of `check`, a
reversible step. The next session must not clear it as reversible ("it will run again", the target
back in the work as if link had never started; a review found it did): the journal says which step
the intent's token started, so the target is blocked for a person, and the kept copy of the intent
(its token and step) shows the edit, so the target is flagged as changed outside the engine.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from tests.conftest import ROOT, cli_env, handoff
from tests.unit.test_spent_copies import _as_agent, _runs, folder  # noqa: F401
from tests.unit.test_verified_approvers import _approve_as_nobody, _load

SLOW = ("import sys, time, pathlib; p = pathlib.Path(__file__).with_name('runs-' + sys.argv[1]); "
        "p.open('a').write('ran\\n'); time.sleep(2)\n")


def test_a_killed_irreversible_intent_renamed_to_a_reversible_step_is_not_cleared(folder: Path) -> None:  # noqa: F811
    (folder / "mark.py").write_text(SLOW)
    data = {"task": "twice", "owner_shift": "test-oncall", "approvers": [{"name": "nob", "os_user": "nobody"}],
            "runbook": {"steps": [
                {"name": "check", "from": "queued", "to": "checked", "reversible": True, "run": ["true"]},
                {"name": "link", "from": "checked", "to": "done", "run": ["{python}", "{ledger_dir}/mark.py", "{target}"]}]},
            "targets": {"db-19": {"state": "checked", "checkpoint": "0/19"}}}
    ledger = folder / "ledger.yaml"
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    ledger.chmod(0o666)
    assert _approve_as_nobody(ledger, "db-19", "nob") == 0

    proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "run", str(ledger), "db-19", "link"],
                            env=cli_env(), cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while _runs(folder) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _runs(folder) == 1
    os.kill(proc.pid, signal.SIGKILL)  # the session dies; the step's own process group finishes on its own
    proc.wait()
    time.sleep(2.5)
    assert _load(ledger)["targets"]["db-19"]["in_flight"]["step"] == "link"

    def agent() -> None:
        text = ledger.read_text()
        ledger.write_text(text.replace("in_flight: {step: link", "in_flight: {step: check")
                          .replace("step: link, session:", "step: check, session:"))
    _as_agent(folder, agent)
    assert _load(ledger)["targets"]["db-19"]["in_flight"]["step"] == "check", ledger.read_text()

    after = handoff("resume", "--ledger", ledger, "--max-minutes", "1")
    said = after.stdout + after.stderr
    t = _load(ledger)["targets"]["db-19"]
    assert t["state"] == "blocked", said
    assert "the journal says this intent" in t["reason"] and "started link" in t["reason"], t["reason"]
    assert "in_flight" in (t.get("changed_outside") or {}).get("fields", []), t
