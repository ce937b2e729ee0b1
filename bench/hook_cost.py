"""The Claude Code hook is on the path of every tool call: `handoff hook pre-tool-use`, as the
whole process Claude Code starts, fed a recorded Bash tool call. Side by side, in rotation:
- on a 40-target ledger, against `handoff status --json` on the same ledger (goal: at most 1.2x);
- on an engine-written 10,000-target ledger, against a bare process doing a naive
  `yaml.load` (libyaml) of that ledger (goal: at most 0.5x)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, interleaved, row, run_process, write_engine_ledger  # noqa: E402

from engine.store.file import FileStore  # noqa: E402

FIXTURE = os.path.join(ROOT, "tests", "fixtures", "claude_code", "PreToolUse.json")


def main(runs: int = 7) -> list[str]:
    folder = tempfile.mkdtemp(prefix="bench-hook-")
    os.environ["XDG_CACHE_HOME"] = os.path.join(folder, "cache")
    os.environ["XDG_STATE_HOME"] = os.path.join(folder, "state")  # high-water marks: a bench ledger is new each run
    small, large = os.path.join(folder, "small.yaml"), os.path.join(folder, "large.yaml")
    write_engine_ledger(small, 40)
    write_engine_ledger(large, 10_000)
    for path in (small, large):
        FileStore(path).transact(lambda ledger: None)
    data = json.load(open(FIXTURE))
    data.update(session_id="bench-session", cwd=folder, tool_input={"command": "grep -c lag /var/log/app.log"})
    stdin = os.path.join(folder, "call.json")
    with open(stdin, "w") as fh:
        json.dump(data, fh)
    env = dict(os.environ, PYTHONPATH=ROOT, CLAUDE_CODE_SESSION_ID="bench-session")
    py = sys.executable

    def hook(path: str):
        def run() -> None:
            with open(stdin, "rb") as fh:
                run_process([py, "-m", "engine.cli.main", "hook", "pre-tool-use", "--ledger", path], env=env, cwd=folder, stdin=fh)
        return run

    bare = f"import yaml; yaml.load(open({large!r}), Loader=yaml.CSafeLoader)"
    t = interleaved({
        "hook 40": (hook(small), None),
        "status 40": (lambda: run_process([py, "-m", "engine.cli.main", "status", small, "--json"], env=env, cwd=folder), None),
        "hook 10k": (hook(large), None),
        "bare 10k": (lambda: run_process([py, "-c", bare], env=env), None),
    }, runs)
    shutil.rmtree(folder)
    return [
        row("process: handoff hook pre-tool-use vs status --json, 40 targets", t["hook 40"], t["status 40"], 1.2),
        row("process: handoff hook pre-tool-use, 10k vs bare yaml.load 10k", t["hook 10k"], t["bare 10k"], 0.5),
        row("process: handoff hook pre-tool-use, 40 vs bare yaml.load 10k", t["hook 40"], t["bare 10k"]),
    ]


if __name__ == "__main__":
    print("\n".join(main()))
