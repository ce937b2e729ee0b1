"""Shared by the session tests: small real ledgers, real processes, the demo simulator.

Nothing here mocks the engine: sessions run as `python -m engine.cli.main resume`
subprocesses on ledger files in a temp folder, and steps call real scripts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "ledgers" / "demo"
SIM = DEMO / "sim.py"
SPEED = "50"

# A step tool for behaviours the simulator does not have: sleeping, printing secrets,
# recording the argv it was given. It takes no options: every argument is data.
TOOL = textwrap.dedent('''\
    import json, os, sys, time
    here = os.path.dirname(os.path.abspath(__file__))
    cmd, args = sys.argv[1], sys.argv[2:]
    with open(os.path.join(here, "argv.log"), "a") as fh:
        fh.write(json.dumps(sys.argv[1:]) + "\\n")
    if cmd == "sleep":
        time.sleep(float(args[0]))
    elif cmd == "say":
        print(" ".join(args))
    elif cmd == "fail":
        print("boom: " + " ".join(args)); sys.exit(3)
    elif cmd == "flaky":
        import hashlib
        mark = os.path.join(here, "flaky." + hashlib.sha1(args[0].encode()).hexdigest()[:12])
        if not os.path.exists(mark):
            open(mark, "w").close(); print("first try fails"); sys.exit(1)
        print("second try ok")
    elif cmd == "metric":
        print(open(os.path.join(here, "metric.txt")).read().strip())
    elif cmd == "echo-target":
        print(args[0])
''')


def env(world: Path) -> dict[str, str]:
    return {**os.environ, "HANDOFF_SIM_WORLD": str(world), "HANDOFF_SIM_SPEED": SPEED, "PYTHONUNBUFFERED": "1"}


def demo_copy(tmp: Path, targets: dict | None = None, **top) -> Path:
    """The demo ledger copied into `tmp` (sim.py and seed beside it), optionally with
    other targets or top-level fields; returns the ledger path."""
    folder = tmp / "fleet"
    folder.mkdir()
    for name in ("sim.py", "world.seed.json"):
        (folder / name).write_bytes((DEMO / name).read_bytes())
    data = yaml.safe_load((DEMO / "ledger.yaml").read_text())
    if targets is not None:
        data["targets"] = targets
    data.update(top)
    path = folder / "ledger.yaml"
    if targets is None and not top:
        path.write_bytes((DEMO / "ledger.yaml").read_bytes())
    else:
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def tool_ledger(tmp: Path, steps: list[dict], targets: dict, **top) -> Path:
    """A ledger whose runbook calls tool.py beside it."""
    folder = tmp / "tl"
    folder.mkdir()
    (folder / "tool.py").write_text(TOOL)
    data = {"task": "tool-test", "owner_shift": "test-oncall", "targets": targets, "runbook": {"steps": steps}, **top}
    path = folder / "ledger.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def tool(*args: str) -> list[str]:
    return ["{python}", "{ledger_dir}/tool.py", *args]


def handoff(*args: str, world: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.cli.main", *args], env=env(world), capture_output=True,
                          text=True, timeout=timeout, cwd=str(ROOT))


def start(*args: str, world: Path, preexec_fn=None) -> subprocess.Popen:
    """`handoff ARGS` in its own process group (so a test can kill the whole group)."""
    return subprocess.Popen([sys.executable, "-m", "engine.cli.main", *args], env=env(world), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=str(ROOT), start_new_session=True,
                            preexec_fn=preexec_fn)


def resume(ledger: Path, *extra: str, world: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    return handoff("resume", "--ledger", str(ledger), *extra, world=world, timeout=timeout)


def sim(world: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SIM), *args], env=env(world), capture_output=True, text=True, timeout=30)


def counts(world: Path) -> dict:
    return json.loads(sim(world, "counts").stdout)


def load(ledger: Path) -> dict:
    """The ledger as plain data, read by PyYAML (an independent reader)."""
    return yaml.safe_load(ledger.read_text())


def journal(ledger: Path) -> list[dict]:
    path = Path(str(ledger) + ".journal.jsonl")
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def wait_for(predicate, timeout: float = 20.0, what: str = "condition"):
    """What `predicate()` returned once it was true (bounded by `timeout`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if got := predicate():
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")
