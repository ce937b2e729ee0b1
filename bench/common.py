"""Shared pieces of the benchmarks: a realistic generated ledger and a median timer.

`make_ledger(n)` builds a fleet of `n` targets shaped like the article's (states spread
the way a two-week rollout looks halfway through; checkpoints like `0/9A3F2C10`; last
and next actions in words; some approvals and evidence), with the article's invariants
and a three-step runbook. At 10,000 targets the engine writes it as about 1.8 MB.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

RUNBOOK = {
    "steps": [
        {"name": "check", "from": "queued", "to": "checked", "reversible": True,
         "run": ["pg_upgrade", "--check", "--old-datadir=/var/lib/postgresql/14/{target}"]},
        {"name": "link", "from": "checked", "to": "replicating", "reversible": False,
         "run": ["pg_upgrade", "--link", "--old-datadir=/var/lib/postgresql/14/{target}"]},
        {"name": "verify", "from": "replicating", "to": "verified", "reversible": True,
         "run": ["check-lag", "{target}", "--under", "5s"]},
        {"name": "cutover", "from": "verified", "to": "done", "reversible": False,
         "run": ["cutover", "{target}", "--at", "{checkpoint}"]},
    ]
}

_STATES = (
    ["done"] * 40 + ["queued"] * 35 + ["checked"] * 6 + ["replicating"] * 5 + ["verified"] * 4
    + ["awaiting_approval"] * 4 + ["blocked"] * 3 + ["failed"] * 3
)
_LAST = [
    "pg_upgrade --check passed (0 warnings)",
    "pg_upgrade --link ok, logical replication started",
    "replication lag 1.4s, under 5s",
    "cutover done, app pointed at pg16 primary",
    "pg_upgrade --check failed: aclitem columns in user tables",
]
_NEXT = [
    "verify lag < 5s then cutover",
    "run pg_upgrade --link on the standby copy",
    "wait for app-team ack, then resume",
    "drop or convert the aclitem columns, then retry",
]


def _checkpoint(rng: random.Random) -> str:
    return f"{rng.randint(0, 15):X}/{rng.getrandbits(32):08X}"


def make_target(rng: random.Random, i: int) -> dict[str, Any]:
    """One target with realistic fields for its state."""
    state = rng.choice(_STATES)
    day, hour, minute = 9 + i % 12, i % 24, i % 60
    stamp = f"2026-09-{day:02d}T{hour:02d}:{minute:02d}Z"
    t: dict[str, Any] = {"state": state}
    if state == "done":
        t["verified_at"] = stamp
        t["checkpoint"] = _checkpoint(rng)
        t["last_action"] = _LAST[3]
    elif state == "queued":
        if rng.random() < 0.3:
            t["next_action"] = "pg_upgrade --check (dry run, reversible)"
    elif state in ("checked", "replicating", "verified"):
        t["checkpoint"] = _checkpoint(rng)
        t["last_action"] = rng.choice(_LAST[:3])
        t["next_action"] = rng.choice(_NEXT[:2])
        t["changed_at"] = stamp
    elif state == "awaiting_approval":
        t["checkpoint"] = _checkpoint(rng)
        t["last_action"] = _LAST[2]
        t["next_action"] = "cutover needs a human approval"
        t["awaiting"] = "cutover"
        t["awaiting_by"] = "agent-session"
        t["awaiting_since"] = stamp
    elif state == "blocked":
        t["reason"] = f"pending app-team ack (ticket PLAT-{4000 + i % 900})"
        t["next_action"] = _NEXT[2]
    else:  # failed
        t["reason"] = _LAST[4]
        t["next_action"] = _NEXT[3]
        t["evidence"] = {"step": "check", "exit_code": 1, "duration": round(rng.uniform(5, 90), 1), "at": stamp}
    if state in ("done", "replicating", "verified") and rng.random() < 0.25:
        t["evidence"] = {"step": "link", "exit_code": 0, "duration": round(rng.uniform(10, 900), 1),
                         "at": stamp, "journal": rng.randint(1000, 9_000_000)}
    if state == "done" and rng.random() < 0.2:
        t["approvals"] = [{"by": "alice", "user": "alice", "at": stamp, "step": "cutover",
                           "hash": f"{rng.getrandbits(64):016x}", "checkpoint": t["checkpoint"],
                           "used_at": stamp}]
    return t


def make_ledger(n: int = 10_000, seed: int = 7) -> dict[str, Any]:
    """A whole ledger with `n` targets as plain data."""
    rng = random.Random(seed)
    return {
        "task": "pg14-to-pg16-fleet-upgrade",
        "owner_shift": "platform-oncall",
        "started": "2026-09-09T14:00Z",
        "invariants": [
            "never run cutover on a db whose state != verified",
            "never touch more than 2 dbs concurrently",
            "pause if error_rate_5m > 0.5%",
        ],
        "runbook": RUNBOOK,
        "targets": {f"db-{i:05d}": make_target(rng, i) for i in range(n)},
        "handoff_note": "Started db-00018 at 01:58Z. Replication lag was 2.1s at 02:07Z.\n"
                        "Do NOT retry pg_upgrade on db-00018, the --link step is irreversible.\n",
    }


def write_engine_ledger(path: str, n: int = 10_000, seed: int = 7) -> bytes:
    """Write the generated ledger the way the engine writes it (canonical layout)."""
    from engine.codec.canonical import emit_document
    from engine.ledger.model import Ledger
    from engine.store.convert import to_data

    data = to_data(Ledger.model_validate(make_ledger(n, seed)))
    text, _ = emit_document(data, "# generated by bench/common.py\n")
    raw = text.encode("utf-8")
    with open(path, "wb") as fh:
        fh.write(raw)
    return raw


def add_comments(text: str) -> str:
    """The engine's text as a team keeps it in git: a comment above every 50th target,
    one at the end of every 20th target's line, and a few in the top part."""
    out = []
    count = 0
    for line in text.split("\n"):
        if line.startswith("  db-"):
            if count % 50 == 0:
                out.append(f"  # batch {count // 50}: app team signs off before cutover")
            if count % 20 == 7 and line.endswith("}"):
                line += "   # owner: app team, ticket PLAT-" + str(4000 + count)
            count += 1
        elif line.startswith(("invariants:", "runbook:", "targets:")):
            out.append(f"# {line.rstrip(':')} as agreed in the change review")
        out.append(line)
    return "\n".join(out)


def first_awaiting(data: dict[str, Any]) -> str:
    return next(name for name, t in data["targets"].items() if t["state"] == "awaiting_approval")


def median_time(fn: Callable[[], Any], runs: int = 7, setup: Callable[[], Any] | None = None) -> float:
    """Median wall time of `fn()` in seconds over `runs` runs (setup not timed)."""
    times = []
    for _ in range(runs):
        if setup is not None:
            setup()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


Case = tuple[Callable[[], Any], "Callable[[], Any] | None"]


def interleaved(cases: dict[str, Case], runs: int) -> dict[str, float]:
    """Median wall time of each case's `fn()` over `runs` runs, taken in rotation (one run
    of each, then the next round), so every side gets the same number of runs under the
    same load: a busy minute on a shared machine slows both sides, not one. Each case
    is (fn, setup); setup is not timed. A `fn` that times itself returns its seconds (a
    screen timed to its first row, then closed), and that is taken instead."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, (fn, setup) in cases.items():
            if setup is not None:
                setup()
            start = time.perf_counter()
            measured = fn()
            times[name].append(measured if isinstance(measured, float) else time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def engines_side_by_side(folder: str, revision: str) -> tuple[str, str]:
    """(this checkout's engine, REVISION's engine), each an `engine/` under its own new
    folder in `folder`, for PYTHONPATH. This checkout's is copied (working tree, no
    caches) rather than run in place: the same code timed from the checkout and from a
    copy under /tmp differed by 3-5% a process here (an `approve` at 10k, 16 pairs), which
    would read as a regression of ours against REVISION's archive."""
    ours, theirs = os.path.join(folder, "engine-ours"), os.path.join(folder, "engine-theirs")
    shutil.copytree(os.path.join(ROOT, "engine"), os.path.join(ours, "engine"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    os.makedirs(theirs)
    archive = subprocess.run(["git", "-C", ROOT, "archive", revision, "engine"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", theirs], input=archive.stdout, check=True)
    return ours, theirs


def cache_path(ledger: str) -> str:
    """Where the store keeps its parse cache for `ledger` (the per-user cache folder)."""
    from engine.store.parse_cache import cache_path as path_for

    return path_for(os.path.realpath(ledger))


def without_cache(ledger: str) -> None:
    """Forget the parse cache, as after a hand edit, on a new host, or in CI (and the `.json`
    one an engine before cache version 3 keeps, which `--against` an older revision times)."""
    path = cache_path(ledger)
    for name in (path, os.path.splitext(path)[0] + ".json"):
        try:
            os.unlink(name)
        except FileNotFoundError:
            pass  # already cold


def run_process(argv: list[str], **kw: Any) -> None:
    """Run a whole process; fail loudly if it fails (a benchmark of an error is no benchmark)."""
    proc = subprocess.run(argv, capture_output=True, **kw)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:4]}... exited {proc.returncode}: {proc.stderr.decode()[-500:]}")


def baseline_warning() -> list[str]:
    """A line to print when this interpreter loads an editable install's import finder into
    every process (setuptools' default editable mode): `python -c pass` then pays for it
    too (11 of 21 ms here), and every ratio against it reads kinder than for an installed
    handoff-tui. tests/run.sh makes its venv in compat mode, which has no finder."""
    probe = "import sys; print(' '.join(m for m in sys.modules if m.startswith('__editable__')))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.split()
    if not loaded:
        return []
    return [f"WARNING: {sys.executable} loads {', '.join(loaded)} into every process: ratios against `python -c pass` "
            "are too kind; run from the venv tests/run.sh makes (editable_mode=compat), or a non-editable install"]


def row(name: str, ours: float, theirs: float, goal: float | None = None) -> str:
    """One line of the side-by-side table: both times, then ours/theirs (below 1 means we
    are faster), and against `goal` (the highest ratio that meets it) when there is one."""
    ratio = ours / theirs if theirs else float("inf")
    verdict = "(no goal)" if goal is None else f"goal <= {goal:<5g} {'met' if ratio <= goal else 'NOT MET'}"
    return f"{name:<58} {ours * 1000:9.1f} ms vs {theirs * 1000:9.1f} ms  ours/theirs {ratio:6.3f}  {verdict}"


def forget_marks() -> None:
    """Forget this bench's high-water marks: a bench copies the same fresh ledger in place
    again and again, which the engine (rightly) takes for a folder restored from a backup.
    Only ever under the bench's private XDG_STATE_HOME (a temp folder, set by the bench)."""
    state = os.environ.get("XDG_STATE_HOME", "")
    if not state.startswith(tempfile.gettempdir()):
        raise SystemExit("bench: XDG_STATE_HOME must be the bench's own temp folder before marks are forgotten")
    from engine.store.highwater import mark_dir

    shutil.rmtree(mark_dir(), ignore_errors=True)
