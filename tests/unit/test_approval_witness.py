"""An approval without its witness never authorises a spawn.

The witness is the journal record `handoff approve` writes. An agent that writes an
approval entry into the ledger itself (a real Python process computing the real hash)
gets nothing: `handoff run` refuses before anything is spawned (no marker file), the
target awaits a person with "approval not recorded by the engine", the journal says
so, and the forged entry is taken off so a person's approval is not blocked by it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

from tests.conftest import ROOT, cli_env, handoff, wait_stopped

LEDGER = """\
task: witness
owner_shift: test-oncall
runbook:
  steps:
  - {name: link, from: checked, to: done, run: ["{python}", "{ledger_dir}/mark.py", "{target}"]}
targets:
  db-19: {state: checked, checkpoint: "0/19"}
"""
MARK = "import sys, pathlib; pathlib.Path(__file__).with_name('spawned-' + sys.argv[1]).write_text('ran')\n"

# What an agent can do with the file: compute the real hash and write an approval entry.
FORGE = textwrap.dedent("""\
    import os, sys, yaml
    from engine.ledger.model import Ledger
    from engine.ledger.render import approval_hash
    path, by, at = sys.argv[1], sys.argv[2], sys.argv[3]
    name = sys.argv[4] if len(sys.argv) > 4 else "db-19"
    # The folder the step runs in: the ledger's real one, or (a database ledger's, "db") the runner's working folder.
    if len(sys.argv) > 5:
        from engine.ledger.workdir import WorkingDir
        folder = WorkingDir(os.getcwd())
    else:
        folder = os.path.dirname(os.path.realpath(path))
    data = yaml.safe_load(open(path))
    ledger = Ledger.model_validate(data)
    digest = approval_hash(name, ledger.targets[name], ledger.step("link"), ledger_dir=folder)
    entry = {"by": by, "user": "root", "at": at, "step": "link", "hash": digest, "checkpoint": ledger.targets[name].checkpoint}
    data["targets"][name].setdefault("approvals", []).append(entry)
    open(path, "w").write(yaml.safe_dump(data, sort_keys=False))
""")


def _setup(tmp_path: Path) -> Path:
    (tmp_path / "mark.py").write_text(MARK)
    (tmp_path / "forge.py").write_text(FORGE)
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(LEDGER)
    return ledger


def _forge(ledger: Path, by: str = "alice", at: str = "2026-09-10T02:00:00Z") -> None:
    subprocess.run([sys.executable, str(ledger.parent / "forge.py"), str(ledger), by, at], check=True, env=cli_env())


def _journal(ledger: Path) -> list[dict]:
    return [json.loads(line) for line in Path(str(ledger) + ".journal.jsonl").read_text().splitlines()]


def test_a_hand_written_approval_is_refused_and_nothing_spawns(tmp_path: Path) -> None:
    """The forged entry: exit 1, no marker, the target awaits a person with the reason; the journal records the refusal."""
    ledger = _setup(tmp_path)
    _forge(ledger)
    result = handoff("run", ledger, "db-19", "link")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "approval not recorded by the engine" in result.stdout + result.stderr
    assert not (tmp_path / "spawned-db-19").exists()
    target = yaml.safe_load(ledger.read_text())["targets"]["db-19"]
    assert target["state"] == "awaiting_approval" and target["awaiting"] == "link"
    assert target["reason"].startswith("approval not recorded by the engine")
    assert not target.get("approvals")  # taken off: the journal keeps it
    [refused] = [r for r in _journal(ledger) if r["kind"] == "approval_refused"]
    assert refused["approval"]["by"] == "alice" and "approval not recorded by the engine" in refused["why"]
    assert not [r for r in _journal(ledger) if r["kind"] == "step_start"]
    # A person approves now, and the step runs: the refusal did not wedge the target.
    assert handoff("approve", ledger, "db-19", "--yes", "--as", "bob").returncode == 0
    ran = handoff("run", ledger, "db-19", "link")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert (tmp_path / "spawned-db-19").read_text() == "ran"


def test_a_copy_of_a_real_approval_with_a_new_time_is_refused(tmp_path: Path) -> None:
    """A person's approval is witnessed; a second entry copying it (same hash, approver) with another time is not."""
    ledger = _setup(tmp_path)
    assert handoff("approve", ledger, "db-19", "--yes", "--as", "alice").returncode == 0
    from engine.api import open_ledger

    def replay(led) -> None:  # the replay an agent would write, through the engine's own code (no outside edit)
        led.targets["db-19"].approvals[0].at = "2026-09-10T03:00:00Z"
    open_ledger(str(ledger), actor="agent").store.transact(replay)
    result = handoff("run", ledger, "db-19", "link")
    assert result.returncode == 1 and "approval not recorded by the engine" in result.stdout + result.stderr
    assert not (tmp_path / "spawned-db-19").exists()


def test_the_spawn_itself_checks_the_witness_again(tmp_path: Path) -> None:
    """Frozen right after the intent: the approval's user is rewritten in the file; at the spawn the fence refuses it."""
    ledger = _setup(tmp_path)
    assert handoff("approve", ledger, "db-19", "--yes", "--as", "alice").returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "run", str(ledger), "db-19", "link"],
                            env=cli_env(HANDOFF_FAILPOINTS="after-intent"), cwd=str(ROOT),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_stopped(proc.pid)
        data = yaml.safe_load(ledger.read_text())
        assert data["targets"]["db-19"]["in_flight"]["step"] == "link"
        data["targets"]["db-19"]["approvals"][0]["user"] = "mallory"
        ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    out, _ = proc.communicate(timeout=60)
    assert "NOT started" in out and "approval not recorded by the engine" in out, out
    assert not (tmp_path / "spawned-db-19").exists()
    assert not [r for r in _journal(ledger) if r["kind"] == "step_start"]


def test_the_witness_is_found_in_a_postgresql_journal_too(tmp_path: Path) -> None:
    """Real PostgreSQL: a person's approval runs (its record is in the database's journal); a hand-written one imported with --replace does not."""
    import uuid

    ledger = _setup(tmp_path)
    ledger.write_text(ledger.read_text().replace("{ledger_dir}", str(tmp_path)))  # a database ledger has no folder of its own
    url = f"postgresql://127.0.0.1/test#witness-{uuid.uuid4().hex[:8]}"
    assert handoff("import", ledger, url).returncode == 0
    assert handoff("approve", url, "db-19", "--yes", "--as", "alice").returncode == 0
    ran = handoff("run", url, "db-19", "link")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert (tmp_path / "spawned-db-19").exists()
    # The exported ledger, given a new target and a forged approval of it, goes back in through a person's import --replace.
    data = yaml.safe_load(handoff("export", url).stdout)
    data["targets"]["db-18"] = {"state": "checked", "checkpoint": "0/18"}
    forged_file = tmp_path / "forged.yaml"
    forged_file.write_text(yaml.safe_dump(data, sort_keys=False))
    subprocess.run([sys.executable, str(tmp_path / "forge.py"), str(forged_file), "alice", "2026-09-10T02:00:00Z", "db-18",
                    "db"], check=True, env=cli_env(), cwd=str(ROOT))  # `handoff run` below runs in ROOT
    assert handoff("import", forged_file, url, "--replace").returncode == 0
    refused = handoff("run", url, "db-18", "link")
    assert refused.returncode == 1 and "approval not recorded by the engine" in refused.stdout + refused.stderr
    assert not (tmp_path / "spawned-db-18").exists()
