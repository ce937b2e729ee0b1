"""Resume cost: from `handoff resume` process start to its first decision, as a ratio to
bare `python3 -c pass`, on ledgers of 40, 1,000 and 10,000 targets.

The first decision is the first journal record (read from `--json` stdout) that is a
guard outcome: a step started, a gate, or a dry-run decision. The ledgers carry no
checkpoints, so no probe subprocess runs before it (probes are the world's cost, not
ours); there is no metric invariant either. Each run gets a fresh copy of an
engine-written ledger (as after any session). Prints figures; asserts nothing.

    python3 bench/resume_cost.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.store.file import FileStore  # noqa: E402

from common import forget_marks  # noqa: E402

DECISIONS = ('"kind": "step_start"', '"kind": "gate"', '"kind": "decision"')


def make_ledger(folder: Path, n: int) -> Path:
    done = n * 2 // 5
    targets = {f"db-{i:05d}": ({"state": "done", "verified_at": "2026-09-10T01:52Z"} if i < done else {"state": "queued"})
               for i in range(n)}
    data = {
        "task": f"bench-{n}",
        "owner_shift": "bench",
        "invariants": ["never touch more than 2 dbs concurrently"],
        "runbook": {"steps": [
            {"name": "check", "from": "queued", "to": "checked", "reversible": True, "run": ["true"]},
            {"name": "link", "from": "checked", "to": "done", "reversible": False, "run": ["true"]},
        ]},
        "targets": targets,
    }
    path = folder / f"ledger-{n}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    FileStore(str(path)).transact(lambda ledger: None)  # engine-written, as after any session
    return path


def fresh_copy(src: Path, work: Path) -> Path:
    if work.exists():
        shutil.rmtree(work)
    work.mkdir()
    dst = work / "ledger.yaml"
    shutil.copyfile(src, dst)
    forget_marks()
    return dst


def first_decision(ledger: Path) -> float:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", str(ledger), "--json", "--max-steps", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=str(ROOT))
    elapsed = None
    for line in proc.stdout:
        if any(mark in line for mark in DECISIONS):
            elapsed = time.perf_counter() - t0
            break
    proc.stdout.close()
    proc.wait()
    if elapsed is None:
        raise SystemExit(f"no decision from the session on {ledger} (exit {proc.returncode})")
    return elapsed


def bare_python() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="resume-cost-") as tmp:
        folder = Path(tmp)
        os.environ["XDG_CACHE_HOME"], os.environ["XDG_STATE_HOME"] = str(folder / "cache"), str(folder / "state")
        base = statistics.median(bare_python() for _ in range(args.runs))
        print(f"bare `python3 -c pass`: {base * 1000:.0f} ms (median of {args.runs})")
        print(f"{'targets':>8}  {'size':>8}  {'first decision':>15}  {'ratio':>6}")
        for n in (40, 1000, 10000):
            src = make_ledger(folder, n)
            times = [first_decision(fresh_copy(src, folder / "work")) for _ in range(args.runs)]
            median = statistics.median(times)
            size = os.path.getsize(src)
            print(f"{n:>8}  {size / 1024:>6.0f}KB  {median * 1000:>12.0f} ms  {median / base:>5.1f}x")


if __name__ == "__main__":
    main()
