"""Probe before an irreversible run: an irreversible step whose own `verify` proves its
effect already happened (exit 0 and a checkpoint) is recorded and not run; a probe that
fails proves nothing and the step runs once. Real sessions on real ledger files."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from tests.conftest import cli_env, handoff

# link counts its runs in world/runs and leaves world/linked; its verify prints the
# checkpoint only once world/linked exists (and fails before: it proves nothing then).
LINK = "import os, sys; w = sys.argv[1]; open(os.path.join(w, 'runs'), 'a').write('x'); open(os.path.join(w, 'linked'), 'w').write('0/ABC')"
PROBE = "import os, sys; p = os.path.join(sys.argv[1], 'linked'); sys.exit(1) if not os.path.exists(p) else print(open(p).read())"


def _ledger(tmp_path: Path) -> tuple[Path, Path]:
    world = tmp_path / "world"
    world.mkdir()
    data = {"task": "probe-first", "targets": {"a": {"state": "checked"}}, "runbook": {"steps": [
        {"name": "link", "from": "checked", "to": "linked", "reversible": False,
         "run": [sys.executable, "-c", LINK, str(world)], "verify": [sys.executable, "-c", PROBE, str(world)]}]}}
    path = tmp_path / "ops" / "ledger.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path, world


def _env(tmp_path: Path) -> dict[str, str]:
    return cli_env(XDG_STATE_HOME=str(tmp_path / "state"))


def _runs(world: Path) -> int:
    runs = world / "runs"
    return len(runs.read_text()) if runs.exists() else 0


def test_a_step_whose_probe_proves_it_happened_is_recorded_not_run(tmp_path):
    """The effect is already in the world (say, a restored backup forgot it): link is not spawned;
    the target moves to linked with the probe's checkpoint, and the journal says why."""
    ledger, world = _ledger(tmp_path)
    env = _env(tmp_path)
    assert handoff("approve", ledger, "a", "--as", "human-1", env=env).returncode == 0
    (world / "linked").write_text("0/F00D")  # it happened, and the ledger does not know
    done = handoff("resume", "--ledger", ledger, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _runs(world) == 0, done.stdout
    assert "a: link already happened: probe says 0/F00D; not run" in done.stdout
    target = yaml.safe_load(ledger.read_text())["targets"]["a"]
    assert target["state"] == "linked" and target["checkpoint"] == "0/F00D" and "in_flight" not in target
    journal = (ledger.parent / "ledger.yaml.journal.jsonl").read_text()
    assert "already happened: probe says 0/F00D; not run" in journal and '"step_start"' not in journal


def test_a_failing_probe_proves_nothing_and_the_step_runs_once(tmp_path):
    """The probe fails (not linked yet): link runs, once, and its verify then gives the checkpoint."""
    ledger, world = _ledger(tmp_path)
    env = _env(tmp_path)
    assert handoff("approve", ledger, "a", "--as", "human-1", env=env).returncode == 0
    done = handoff("resume", "--ledger", ledger, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _runs(world) == 1 and "already happened" not in done.stdout
    target = yaml.safe_load(ledger.read_text())["targets"]["a"]
    assert target["state"] == "linked" and target["checkpoint"] == "0/ABC"


def test_handoff_run_says_nothing_ran_when_the_probe_proves_it(tmp_path):
    """`handoff run` on a step already done: exit 1 (nothing ran), the target recorded at linked."""
    ledger, world = _ledger(tmp_path)
    env = _env(tmp_path)
    assert handoff("approve", ledger, "a", "--as", "human-1", env=env).returncode == 0
    (world / "linked").write_text("0/BEEF")
    done = handoff("run", ledger, "a", env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert _runs(world) == 0 and "already happened: probe says 0/BEEF; not run" in done.stdout
    assert yaml.safe_load(ledger.read_text())["targets"]["a"]["state"] == "linked"
