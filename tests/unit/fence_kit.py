"""Shared by the one-condition-at-a-time fence tests: a real ledger (a file, or a row in
the local PostgreSQL), a real holder of its lease, a real intent, and a real step process
that counts its own starts.

Each test builds the state in which every fence condition holds, breaks exactly one (the
way the world breaks it: another holder's lease, a human's reconcile, a later attempt, an
editor's stale buffer, a backup restored), and asks the engine to spawn.
"""

from __future__ import annotations

import io
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

from engine.lease import leasing
from engine.ledger.access import open_writer
from engine.planners.autopilot import Action
from engine.session.actor import Actor
from engine.session.steps import Intent, write_intent
from tests.conftest import handoff

SID = "fences-0000-4000-8000-000000000001"
PG = "postgresql://127.0.0.1/test"

# The step: one line in starts.log per process started (the count every test reads).
STEP = "import sys, pathlib; pathlib.Path(sys.argv[1]).open('a').write(' '.join(sys.argv[2:]) + '\\n')\n"
# The probe of `link`'s target state: proves the link happened only once linked.txt exists.
PROBE = ("import sys, pathlib; p = pathlib.Path(sys.argv[1]) / 'linked.txt'\n"
         "sys.exit(1) if not p.exists() else print(p.read_text().strip())\n")

LEDGER = """\
task: fences-one-by-one
owner_shift: test-oncall
runbook:
  steps:
  - {{name: check, from: queued, to: checked, reversible: true, run: ["{py}", "{d}/step.py", "{d}/starts.log", "check", "{{target}}"]}}
  - {{name: link, from: checked, to: linked, run: ["{py}", "{d}/step.py", "{d}/starts.log", "link", "{{target}}"]{verify}}}
targets:
  a: {{state: queued}}
  b: {{state: checked, checkpoint: "0/B"}}
"""


@dataclass
class Fleet:
    """One ledger, its folder (where the step writes starts.log) and its location."""

    folder: Path
    location: str
    kind: str

    def starts(self) -> list[str]:
        """The step processes started so far, one line each ("check a", "link b")."""
        log = self.folder / "starts.log"
        return log.read_text().splitlines() if log.exists() else []

    def handle(self):
        return open_writer(self.location, actor="tester")

    def cli(self, *args: str):
        """`handoff ARGS` as a person runs it (a real process)."""
        done = handoff(*args)
        assert done.returncode == 0, done.stdout + done.stderr
        return done


def make_fleet(tmp_path: Path, kind: str, *, probe: bool = False) -> Fleet:
    """Targets `a` (queued; `check` is reversible) and `b` (checked; `link` is irreversible)."""
    folder = tmp_path / "ops"
    folder.mkdir()
    (folder / "step.py").write_text(STEP)
    (folder / "probe.py").write_text(PROBE)
    verify = f', verify: ["{sys.executable}", "{folder}/probe.py", "{folder}"]' if probe else ""
    text = LEDGER.format(py=sys.executable, d=folder, verify=verify)
    path = folder / "ledger.yaml"
    path.write_text(text)
    if kind == "file":
        return Fleet(folder, str(path), kind)
    location = f"{PG}#fences-{uuid.uuid4().hex[:12]}"
    done = handoff("import", str(path), location)
    assert done.returncode == 0, done.stdout + done.stderr
    return Fleet(folder, location, kind)


def holder(fleet: Fleet, sid: str = SID) -> Actor:
    """A holder of the ledger's lease, as `handoff run` is one (this process, its pid)."""
    handle = fleet.handle()
    lease = leasing.session_lease(sid, user="tester", planner="autopilot")
    leasing.acquire(handle.store, fleet.location, lease)
    return Actor(handle, sid, ledger_arg=fleet.location, stream=io.StringIO())


def intent(actor: Actor, target: str, step: str) -> Intent:
    """The intent of `step` on `target`, written ahead as every runtime writes it."""
    ledger = actor.store.read()
    it = write_intent(actor, Action(target, ledger.step(step)), [])
    assert isinstance(it, Intent), it
    return it


def said(actor: Actor) -> str:
    """What the holder said (its Out stream)."""
    return actor.out.stream.getvalue()
