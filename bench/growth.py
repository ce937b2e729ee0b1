"""How the costs grow with the fleet (issue 27): `status --json` (warm), `approve` (after
earlier writes), `hook pre-tool-use` and `post-tool-use`, one session step and TUI first
paint, at 1,000, 10,000 and 100,000 targets, all in one rotation (whole processes), medians.

Goals: each grows at most linearly (10x the targets: at most 10x the time; the column
"x prev" is that factor), and both hooks at 100,000 targets within 10x `python -c pass`.
The ledgers are bench/common.py's fleet (engine-written); the step is bench/step_cost.py's
(`resume --max-steps 13` minus `--max-steps 1`, divided by 12, on its own two-step fleet).
Asserts nothing.

    python3 bench/growth.py [--runs 3] [--sizes 1000,10000,100000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import step_cost  # noqa: E402
from common import ROOT, baseline_warning, first_awaiting, interleaved, run_process, write_engine_ledger  # noqa: E402
from goals import cli, hook_call, written  # noqa: E402
from tui_common import PtyApp, env_for_app, make_fleet, tui_argv  # noqa: E402

FIRST_ROW = b"db-00000"


def first_paint(ledger: str, env: dict[str, str]):
    """One handoff-tui process on a real pseudo-terminal: seconds until its first row is
    drawn (its close after that is not counted)."""
    def run() -> float:
        app = PtyApp(tui_argv(ledger), env)
        try:
            return app.read_until(FIRST_ROW) - app.started
        finally:
            app.close()
    return run


def main(runs: int, sizes: list[int]) -> list[str]:
    folder = tempfile.mkdtemp(prefix="bench-growth-")
    os.environ["XDG_CACHE_HOME"] = os.path.join(folder, "cache")
    os.environ["XDG_STATE_HOME"] = os.path.join(folder, "state")  # high-water marks: a bench ledger is new each run
    env = dict(os.environ, PYTHONPATH=ROOT)
    tui_env = env_for_app(os.path.join(folder, "tui-state"))
    hook = hook_call(folder, env)
    try:
        cases = {"pass": (lambda: run_process([sys.executable, "-c", "pass"]), None)}
        for n in sizes:
            base = os.path.join(folder, str(n))
            os.makedirs(base)
            ledger = os.path.join(base, "ledger.yaml")
            raw = write_engine_ledger(ledger, n)
            target = first_awaiting(yaml.load(raw, Loader=yaml.CSafeLoader))
            # The hook's own copy, its session's lease taken by a first call (as in a session).
            hooked = os.path.join(base, "hook.yaml")
            shutil.copyfile(ledger, hooked)
            run_process([sys.executable, "-m", "engine.cli.main", "status", hooked, "--json"], env=env, cwd=ROOT)
            hook(hooked)()
            status = os.path.join(base, "status.yaml")
            shutil.copyfile(ledger, status)
            run_process([sys.executable, "-m", "engine.cli.main", "status", status, "--json"], env=env, cwd=ROOT)
            screen = make_fleet(os.path.join(base, "screen"), n)
            steps = os.path.join(base, "steps.yaml")
            step_cost.make_ledger(steps, n)
            cases.update({
                ("status", n): (cli(env, "status", status, "--json"), None),
                ("approve", n): (cli(env, "approve", ledger, target, "--as", "bench"), written(ledger, raw, env)),
                ("hook", n): (hook(hooked), None),
                ("post-tool-use", n): (hook(hooked, "post-tool-use"), None),
                ("first paint", n): (first_paint(screen, tui_env), None),
            })
            for count in (step_cost.FEW, step_cost.MANY):
                cases[("step", n, count)] = step_cost.session(steps, os.path.join(base, f"steps-{count}"), count)
        t = interleaved(cases, runs)
        for n in sizes:
            t[("step", n)] = (t[("step", n, step_cost.MANY)] - t[("step", n, step_cost.FEW)]) / (step_cost.MANY - step_cost.FEW)
        out = [f"load: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} (1, 5 min); medians of {runs}, in one rotation",
               *baseline_warning(), f"{'':<34}" + "".join(f"{n:>12,}  x prev" for n in sizes)]
        for what in ("status", "approve", "hook", "post-tool-use", "step", "first paint"):
            line, prev, worst = f"{what:<34}", None, 0.0
            for n in sizes:
                here = t[(what, n)]
                grow = "" if prev is None else f"{here / prev:5.1f}x"
                if prev is not None:
                    worst = max(worst, (here / prev) / 10)  # per 10x the targets
                line += f"{here * 1000:9.1f} ms {grow:>6}"
                prev = here
            out.append(line + f"   {'linear or better' if worst <= 1 else 'WORSE THAN LINEAR'}")
        if 100_000 in sizes:
            for what, name in (("hook", "pre-tool-use"), ("post-tool-use", "post-tool-use")):
                ratio = t[(what, 100_000)] / t["pass"]
                out.append(f"hook {name} at 100,000 targets vs python -c pass: {ratio:.2f}  "
                           f"goal <= 10 {'met' if ratio <= 10 else 'NOT MET'}")
        return out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", default="1000,10000,100000")
    args = parser.parse_args()
    for printed in main(args.runs, [int(s) for s in args.sizes.split(",")]):
        print(printed, flush=True)
