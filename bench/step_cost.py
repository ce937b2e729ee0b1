"""One session step at 10,000 targets against one at 40 (issue 27: goal <= 1.5x).

A step is what `handoff resume` does per step: propose, guard (with "never touch more
than 2 dbs concurrently"), write the intent, run the command (`true`), record the
result, go on. Measured as whole processes, so nothing is left out: the time of
`resume --max-steps 41` minus the time of `resume --max-steps 1` on a fresh copy of the
same engine-written ledger, divided by 40, at 40 and at 10,000 targets, the four runs
taken in rotation. Reversible steps only (no approval is asked), 40% of targets done.
Prints figures and ratios; asserts nothing.

    python3 bench/step_cost.py [--runs 5]
    python3 bench/step_cost.py --against REVISION   # and REVISION's engine/ (git archive), all in one rotation,
                                                    # both engines copied alike (common.engines_side_by_side)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, engines_side_by_side, forget_marks, interleaved  # noqa: E402

FEW, MANY = 1, 41  # 40 steps between them: the process-to-process noise of a 10k start (~0.1 s) is spread thin


def make_ledger(path: str, n: int) -> None:
    """An engine-written ledger of `n` targets with a two-step reversible runbook."""
    from engine.codec.canonical import emit_document
    from engine.ledger.model import Ledger
    from engine.store.convert import to_data

    done = n * 2 // 5
    data = {
        "task": f"step-cost-{n}", "owner_shift": "bench",
        "invariants": ["never touch more than 2 dbs concurrently"],
        "runbook": {"steps": [
            {"name": "check", "from": "queued", "to": "checked", "reversible": True, "run": ["true", "{target}"]},
            {"name": "sync", "from": "checked", "to": "done", "reversible": True, "run": ["true", "{target}"]},
        ]},
        "targets": {f"db-{i:05d}": ({"state": "done", "verified_at": "2026-09-10T01:52Z", "checkpoint": f"0/{i:08X}"}
                                    if i < done else {"state": "queued", "next_action": "check"}) for i in range(n)},
    }
    text, _ = emit_document(to_data(Ledger.model_validate(data)), "# bench/step_cost.py\n")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def session(src: str, work: str, steps: int, code: str = ROOT):
    """(fn, setup) for interleaved: a fresh copy in a fresh folder, then one session of
    the engine found in `code` (first on PYTHONPATH; run from the work folder)."""
    ledger = os.path.join(work, "ledger.yaml")
    env = dict(os.environ, PYTHONPATH=code + os.pathsep + os.environ.get("PYTHONPATH", ""))

    def setup() -> None:
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        shutil.copyfile(src, ledger)
        forget_marks()

    def run() -> None:
        proc = subprocess.run([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", ledger, "--json",
                               "--max-steps", str(steps), "--handoff-at", "1"], capture_output=True, text=True,
                              cwd=work, env=env)
        started = proc.stdout.count('"kind": "step_start"')
        if proc.returncode != 0 or started != steps:
            raise SystemExit(f"resume on {ledger}: exit {proc.returncode}, {started} steps started, not {steps}:\n"
                             f"{proc.stderr[-800:]}")
    return run, setup


def measure(runs: int, against: str | None = None) -> dict[tuple[str, int], float]:
    """Seconds per step at 40 and at 10,000 targets, for this checkout ("ours") and, with
    `against`, that revision's engine ("theirs"), all cases in one rotation."""
    folder = tempfile.mkdtemp(prefix="bench-step-")
    os.environ["XDG_CACHE_HOME"] = os.path.join(folder, "cache")
    os.environ["XDG_STATE_HOME"] = os.path.join(folder, "state")  # high-water marks: a bench ledger is new each run
    try:
        sides = {"ours": ROOT}
        if against:
            sides["ours"], sides["theirs"] = engines_side_by_side(folder, against)
        cases = {}
        for n in (40, 10_000):
            src = os.path.join(folder, f"src-{n}.yaml")
            make_ledger(src, n)
            for side, code in sides.items():
                for steps in (FEW, MANY):
                    cases[(side, n, steps)] = session(src, os.path.join(folder, f"w-{side}-{n}-{steps}"), steps, code)
        times = interleaved(cases, runs)
        return {(side, n): (times[(side, n, MANY)] - times[(side, n, FEW)]) / (MANY - FEW) for side in sides for n in (40, 10_000)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(runs: int = 5, against: str | None = None) -> list[str]:
    per = measure(runs, against)
    out = []
    for side, label in (("theirs", f"{against}'s engine"), ("ours", "this checkout")):
        if (side, 40) not in per:
            continue
        ratio = per[(side, 10_000)] / per[(side, 40)]
        name = "one session step, 10,000 vs 40 targets" + (f" ({label})" if against else "")
        out.append(f"{name:<58} {per[(side, 10_000)] * 1000:9.1f} ms vs {per[(side, 40)] * 1000:9.1f} ms  "
                   f"ours/theirs {ratio:6.3f}  goal <= 1.5   {'met' if ratio <= 1.5 else 'NOT MET'}")
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--against", metavar="REVISION", help="also run REVISION's engine/, in the same rotation")
    args = parser.parse_args()
    for line in main(args.runs, args.against):
        print(line)
