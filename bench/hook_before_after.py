"""`handoff hook pre-tool-use` of this checkout against an earlier revision, side by side in
one run: each side has its own copy of the 40- and 10,000-target ledgers and its own
per-user cache, both hold the session's lease (the steady state of a Claude Code
session: every call after the first), and `python -c pass` is the floor.

    python bench/hook_before_after.py [REVISION] [RUNS]   (REVISION: default HEAD~3)
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, baseline_warning, engines_side_by_side, interleaved, row, run_process, write_engine_ledger  # noqa: E402

FIXTURE = os.path.join(ROOT, "tests", "fixtures", "claude_code", "PreToolUse.json")


def main(revision: str = "HEAD~3", runs: int = 9) -> list[str]:
    folder = tempfile.mkdtemp(prefix="bench-hook-ab-")
    py = sys.executable
    try:
        after, before = engines_side_by_side(folder, revision)
        cases = {"pass": (lambda: run_process([py, "-c", "pass"]), None)}
        for side, code in (("before", before), ("after", after)):
            home = os.path.join(folder, side)
            os.makedirs(home, exist_ok=True)
            env = dict(os.environ, PYTHONPATH=code, XDG_CACHE_HOME=os.path.join(home, "cache"),
                       XDG_STATE_HOME=os.path.join(home, "state"), CLAUDE_CODE_SESSION_ID="bench-session")
            stdin = os.path.join(home, "call.json")
            with open(FIXTURE) as src, open(stdin, "w") as fh:
                call = json.load(src)
                call.update(session_id="bench-session", cwd=home, tool_input={"command": "grep -c lag /var/log/app.log"})
                json.dump(call, fh)
            for size, name in ((40, "40"), (10_000, "10k")):
                path = os.path.join(home, f"{name}.yaml")
                write_engine_ledger(path, size)

                def hook(path=path, env=env, stdin=stdin, home=home):
                    with open(stdin, "rb") as fh:
                        run_process([py, "-m", "engine.cli.main", "hook", "pre-tool-use", "--ledger", path],
                                    env=env, cwd=home, stdin=fh)
                hook()  # takes the lease and keeps the facts, as a session's first call does
                cases[f"{side} {name}"] = (hook, None)
        t = interleaved(cases, runs)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    out = baseline_warning()
    for name in ("40", "10k"):
        out += [row(f"hook {name}: {revision} vs python -c pass", t[f"before {name}"], t["pass"], 5),
                row(f"hook {name}: this checkout vs python -c pass", t[f"after {name}"], t["pass"], 5),
                row(f"hook {name}: this checkout vs {revision}", t[f"after {name}"], t[f"before {name}"])]
    return out


if __name__ == "__main__":
    args = sys.argv[1:]
    for line in main(args[0] if args else "HEAD~3", int(args[1]) if len(args) > 1 else 9):
        print(line)
