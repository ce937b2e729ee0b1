"""Issue 27's goals that the `speed` work touched, each as a ratio measured side by side
in this one run (whole processes, in rotation), with met / NOT MET. Asserts nothing.

- one session step at 10,000 targets vs at 40 (bench/step_cost.py)            <= 1.5
- `resume` to its first decision at 10,000 vs a bare CSafeLoader load process  <= 2
- `status --json` 10k, engine layout and PyYAML-written, cold and warm, vs the
  bare load process                                                            <= 0.5 each
- `approve` 10k vs a naive load + change + dump process                        <= 0.3
- `hook pre-tool-use` and `post-tool-use` at 40 and 10k vs `python -c pass`    <= 5

    python3 bench/goals.py [--runs 5]
    python3 bench/goals.py --against REVISION   # and each row for REVISION's engine/ (git archive), in the
                                               # same rotation: a worse ratio is told from a busier machine
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resume_cost  # noqa: E402
import step_cost  # noqa: E402
from common import (  # noqa: E402
    ROOT,
    baseline_warning,
    engines_side_by_side,
    first_awaiting,
    forget_marks,
    interleaved,
    row,
    run_process,
    without_cache,
    write_engine_ledger,
)

FIXTURE = os.path.join(ROOT, "tests", "fixtures", "claude_code", "PreToolUse.json")


def _resume_first_decision(src: str, folder: str, runs: int, bare_argv: list[str]) -> tuple[float, float]:
    """Medians of (resume to its first decision, bare load process), alternated."""
    ours, bare = [], []
    for _ in range(runs):
        ours.append(resume_cost.first_decision(resume_cost.fresh_copy(Path(src), Path(folder) / "resume")))
        t0 = time.perf_counter()
        subprocess.run(bare_argv, check=True)
        bare.append(time.perf_counter() - t0)
    return sorted(ours)[len(ours) // 2], sorted(bare)[len(bare) // 2]


def fresh(path: str, pristine: bytes, env: dict[str, str], cache: bool, cwd: str = ROOT):
    """A setup: back to a ledger nobody has written yet (every sidecar the engine keeps beside
    it, record, lock, journal, history, their indexes, and this bench's high-water marks gone),
    its parse cache warm (one `status` run) or cold."""
    def setup() -> None:
        for side in glob.glob(glob.escape(path) + ".*"):
            os.unlink(side)
        forget_marks()
        with open(path, "wb") as fh:
            fh.write(pristine)
        if not cache:
            without_cache(path)
        else:
            run_process([sys.executable, "-m", "engine.cli.main", "status", path, "--json"], env=env, cwd=cwd)
    return setup


def written(path: str, pristine: bytes, env: dict[str, str], cwd: str = ROOT):
    """A setup: as a ledger is once a session has run: its history journal holds a first full
    record, so a write stores only its diff (a fresh ledger's first write stores the whole file)."""
    setup_fresh = fresh(path, pristine, env, True, cwd)

    def setup() -> None:
        setup_fresh()
        run_process([sys.executable, "-m", "engine.cli.main", "note", path, "--set", "bench: earlier shift"], env=env, cwd=cwd)
    return setup


def cli(env: dict[str, str], *args: str, cwd: str = ROOT):
    """One `handoff ARGS` process (another revision's engine: from a folder other than ROOT,
    whose own engine/ would come before PYTHONPATH)."""
    return lambda: run_process([sys.executable, "-m", "engine.cli.main", *args], env=env, cwd=cwd)


def hook_call(folder: str, env: dict[str, str]):
    """(hook(path, event) -> one `hook EVENT` process on ledger `path` (pre-tool-use or
    post-tool-use), fed a recorded Bash call (and its result), in one Claude Code session;
    the session's first call takes the lease and keeps the facts)."""
    stdins = {}
    for event, extra in (("pre-tool-use", {}), ("post-tool-use", {"hook_event_name": "PostToolUse", "tool_response": {
            "stdout": "3\n", "stderr": "", "interrupted": False}})):
        stdins[event] = os.path.join(folder, f"{event}.json")
        with open(FIXTURE) as src, open(stdins[event], "w") as fh:
            call = json.load(src)
            call.update(session_id="bench-session", cwd=folder, tool_input={"command": "grep -c lag /var/log/app.log"},
                        **extra)
            json.dump(call, fh)
    hook_env = dict(env, CLAUDE_CODE_SESSION_ID="bench-session")

    def hook(path: str, event: str = "pre-tool-use"):
        def run() -> None:
            with open(stdins[event], "rb") as fh:
                run_process([sys.executable, "-m", "engine.cli.main", "hook", event, "--ledger", path],
                            env=hook_env, cwd=folder, stdin=fh)
        return run
    return hook


def main(runs: int = 5, against: str | None = None) -> list[str]:
    out = [f"load: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f} (1, 5, 15 min), "
           f"{os.cpu_count()} CPUs, PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}"]
    out += baseline_warning()
    out += step_cost.main(runs, against)
    folder = tempfile.mkdtemp(prefix="bench-goals-")
    os.environ["XDG_CACHE_HOME"] = os.path.join(folder, "cache")
    os.environ["XDG_STATE_HOME"] = os.path.join(folder, "state")  # high-water marks: a bench ledger is new each run
    py, env = sys.executable, dict(os.environ, PYTHONPATH=ROOT)
    try:
        engine_10k = os.path.join(folder, "engine.yaml")
        raw = write_engine_ledger(engine_10k, 10_000)
        pyyaml_10k = os.path.join(folder, "pyyaml.yaml")
        data = yaml.load(raw, Loader=yaml.CSafeLoader)
        with open(pyyaml_10k, "w") as fh:
            yaml.dump(data, fh, Dumper=yaml.CSafeDumper, sort_keys=False)
        target = first_awaiting(data)
        bare = [py, "-c", f"import yaml; yaml.load(open({engine_10k!r}), Loader=yaml.CSafeLoader)"]
        naive = [py, "-c", f"import yaml; d = yaml.load(open({engine_10k!r}), Loader=yaml.CSafeLoader); "
                           f"d['targets'][{target!r}]['state'] = 'verified'; "
                           f"open({os.path.join(folder, 'naive.yaml')!r}, 'w').write(yaml.dump(d, Dumper=yaml.CSafeDumper))"]
        pristine = {p: open(p, "rb").read() for p in (engine_10k, pyyaml_10k)}
        small = os.path.join(folder, "small.yaml")
        write_engine_ledger(small, 40)
        sides = {"": (env, ROOT, hook_call(folder, env), engine_10k)}
        if against:  # both engines copied alike (bench/common.py), each with its own 10k ledger, in one rotation
            ours, theirs = engines_side_by_side(folder, against)
            for side, code in (("", ours), (" theirs", theirs)):
                home = os.path.join(folder, f"run{side.strip() or '-ours'}")
                os.makedirs(home)
                env_s = dict(os.environ, PYTHONPATH=code)
                main_10k = os.path.join(home, "engine.yaml")
                shutil.copyfile(engine_10k, main_10k)
                pristine[main_10k] = pristine[engine_10k]
                sides[side] = (env_s, home, hook_call(home, env_s), main_10k)

        # The hook's own 10k copy: the other rows reset the 10k ledger, which would drop the session's lease and
        # time a lease take on every call; a session's calls after its first find the lease held.
        cases: dict = {
            "bare": (lambda: run_process(bare, env=env), None),
            "pass": (lambda: run_process([py, "-c", "pass"]), None),
            "naive": (lambda: run_process(naive, env=env), None),
        }
        for side, (env_s, cwd, hook_s, main_10k) in sides.items():
            hook_10k = main_10k.replace(".yaml", "-hook.yaml")
            shutil.copyfile(engine_10k, hook_10k)
            small_s = small.replace(".yaml", side.strip() + ".yaml") if side else small
            if side:
                shutil.copyfile(small, small_s)
            for path in (small_s, main_10k, hook_10k):  # engine-written, its cache warm, as in a session
                run_process([py, "-m", "engine.cli.main", "status", path, "--json"], env=env_s, cwd=cwd)
            for path in (small_s, hook_10k):
                hook_s(path)()  # the session's first call: takes the lease, keeps the hook facts
            p10k = pristine[main_10k]
            cases.update({
                "status engine cold" + side: (cli(env_s, "status", main_10k, "--json", cwd=cwd), fresh(main_10k, p10k, env_s, False, cwd)),
                "status engine warm" + side: (cli(env_s, "status", main_10k, "--json", cwd=cwd), fresh(main_10k, p10k, env_s, True, cwd)),
                "status pyyaml cold" + side: (cli(env_s, "status", pyyaml_10k, "--json", cwd=cwd),
                                              fresh(pyyaml_10k, pristine[pyyaml_10k], env_s, False, cwd)),
                "status pyyaml warm" + side: (cli(env_s, "status", pyyaml_10k, "--json", cwd=cwd),
                                              fresh(pyyaml_10k, pristine[pyyaml_10k], env_s, True, cwd)),
                "approve" + side: (cli(env_s, "approve", main_10k, target, "--as", "bench", cwd=cwd), fresh(main_10k, p10k, env_s, True, cwd)),
                "approve written" + side: (cli(env_s, "approve", main_10k, target, "--as", "bench", cwd=cwd),
                                           written(main_10k, p10k, env_s, cwd)),
                "hook 40" + side: (hook_s(small_s), None),
                "hook 10k" + side: (hook_s(hook_10k), None),
                "post 40" + side: (hook_s(small_s, "post-tool-use"), None),
                "post 10k" + side: (hook_s(hook_10k, "post-tool-use"), None),
            })
        t = interleaved(cases, runs)
        src = resume_cost.make_ledger(Path(folder), 10_000)
        ours, base = _resume_first_decision(str(src), folder, runs, bare)
        out.append(row("resume to its first decision, 10k vs bare load process", ours, base, 2))
        rows = [
            ("status --json 10k, engine layout, cold vs bare load", "status engine cold", "bare", 0.5),
            ("status --json 10k, engine layout, warm vs bare load", "status engine warm", "bare", 0.5),
            ("status --json 10k, PyYAML-written, cold vs bare load", "status pyyaml cold", "bare", 0.5),
            ("status --json 10k, PyYAML-written, warm vs bare load", "status pyyaml warm", "bare", 0.5),
            ("approve 10k, its first write ever, vs naive load + change + dump", "approve", "naive", 0.3),
            ("approve 10k, after earlier writes, vs naive load + change + dump", "approve written", "naive", 0.3),
            ("hook pre-tool-use, 40 targets vs python -c pass", "hook 40", "pass", 5),
            ("hook pre-tool-use, 10k targets vs python -c pass", "hook 10k", "pass", 5),
            ("hook post-tool-use, 40 targets vs python -c pass", "post 40", "pass", 5),
            ("hook post-tool-use, 10k targets vs python -c pass", "post 10k", "pass", 5),
        ]
        for name, case, floor, goal in rows:
            out.append(row(name, t[case], t[floor], goal))
            if against:
                out.append(row(f"  {against[:12]}'s engine", t[case + " theirs"], t[floor], goal))
                out.append(row("  this checkout vs it", t[case], t[case + " theirs"]))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--against", metavar="REVISION", help="also time REVISION's engine, side by side")
    args = parser.parse_args()
    for line in main(args.runs, args.against):
        print(line, flush=True)
