"""`handoff report` and `handoff journal --verify` on a journal of a million records: time and peak memory.

    python3 bench/report_scale.py [RECORDS [ROUNDS]]   # default 1,000,000 records, 3 rounds

The journal is written once by the engine's own writer (engine.audit.journal.Journal: records
built by `make_record`, sealed, placed and indexed by `_put`, under one lock) and kept
in the temp folder for later runs (`handoff-bench-report-RECORDS`, rebuilt when the
generator changes). Its records are the shapes a fleet's sessions write, in cycles of 20
per target: a gate, an approval by a person, the irreversible step's start (argv, hash,
token) and end, transitions with a revision, and log lines. One cycle in 20 is
irreversible, so a million records give 50,000 report rows.

Whole processes, in rotation (`common.interleaved`): `handoff report LEDGER` (CSV to
/dev/null), `handoff journal LEDGER --verify`, and a bare process that `json.loads`
every line (what reading the journal costs when nothing is checked). Each process's peak
RSS comes from `os.wait4` (its own ru_maxrss). A quarter-size journal is measured too:
time should grow linearly with the journal, memory should not (both stream).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.common import interleaved, row  # noqa: E402

GENERATOR = "3"  # bump when the records written change: cached journals are then written again
LEDGER = """\
task: report at scale
owner_shift: bench
runbook:
  steps:
  - {name: check, from: queued, to: checked, reversible: true, run: ["true"]}
  - {name: link, from: checked, to: done, run: ["echo", "{target}"]}
targets:
"""
TARGETS = 500
PLAIN = "import json, sys\nfor raw in open(sys.argv[1], 'rb'): json.loads(raw)\n"


def _cycle(i: int, rev: int) -> list[tuple[str, str, dict]]:
    """(kind, actor, fields) of one cycle of 20 records about one target."""
    target = f"db-{i % TARGETS:03d}"
    out: list[tuple[str, str, dict]] = []
    if i % 20 == 0:  # an irreversible run: asked for, approved by a person, started, ended
        token, stamp, digest = f"t{i:08d}", "2026-12-01T10:00:00Z", f"{i:064x}"
        out += [
            ("gate", "agent:s1", {"target": target, "step": "link", "rev": rev, "msg": f"{target}: link waits for approval"}),
            ("approval", "alice", {"target": target, "step": "link", "hash": digest, "at": stamp, "user": "alice",
                                   "verified": "os_user", "rev": rev + 1, "msg": f"{target}: link approved by alice"}),
            ("step_start", "agent:s1", {"target": target, "step": "link", "token": token, "attempt": 1,
                                        "argv": ["echo", target], "approval_hash": digest, "approval_by": "alice",
                                        "approval_at": stamp, "rev": rev + 2, "msg": f"{target}: starting link"}),
            ("step_end", "agent:s1", {"target": target, "step": "link", "token": token, "exit_code": 0,
                                      "duration": 0.01, "msg": f"{target}: link exit 0"}),
            ("transition", "agent:s1", {"target": target, "to": "done", "rev": rev + 3,
                                        "msg": f"{target}: link passed. ledger updated: {target}.state = done"}),
        ]
    else:
        out += [("step_start", "agent:s1", {"target": target, "step": "check", "token": f"c{i:08d}", "attempt": 1,
                                            "argv": ["true"], "rev": rev, "msg": f"{target}: starting check (reversible)"}),
                ("step_end", "agent:s1", {"target": target, "step": "check", "token": f"c{i:08d}", "exit_code": 0,
                                          "duration": 0.01, "msg": f"{target}: check exit 0"}),
                ("transition", "agent:s1", {"target": target, "to": "checked", "rev": rev + 1,
                                            "msg": f"{target}: check passed. ledger updated: {target}.state = checked"})]
    out += [("log", "agent:s1", {"target": target, "msg": f"replication lag {(i * 7 + k) % 97} ms on {target}"})
            for k in range(20 - len(out))]
    return out


def write_journal(folder: str, n: int) -> tuple[str, bool]:
    """The ledger and its journal of `n` records in `folder` (kept for the next run): the
    ledger's path, and whether the journal was written now."""
    import fcntl

    from engine.audit.journal import Journal, journal_path
    from engine.audit.journal_base import make_record

    ledger = os.path.join(folder, "ledger.yaml")
    marker = os.path.join(folder, f"written-{GENERATOR}")
    if os.path.exists(marker):
        return ledger, False
    for name in os.listdir(folder):
        os.unlink(os.path.join(folder, name))
    with open(ledger, "w") as fh:
        fh.write(LEDGER + "".join(f"  db-{t:03d}: {{state: queued}}\n" for t in range(TARGETS)))
    journal = Journal(journal_path(ledger))
    # The bytes are what `append` writes; only its per-record fsync is left out (1M fsyncs
    # would take this shared machine most of an hour, and durability is not measured here).
    os.fsync = lambda fd: None  # noqa: E731 (this generator process only)
    fd = os.open(journal.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as `append` does, once for all of them
        journal.index.refresh()
        written, cycle, rev = 0, 0, 1
        while written < n:
            for kind, actor, fields in _cycle(cycle, rev)[: n - written]:
                fields = dict(fields)
                msg, record_rev, target = fields.pop("msg"), fields.pop("rev", None), fields.pop("target", None)
                journal._put(fd, make_record(journal.redactor, kind, msg, actor=actor, rev=record_rev, target=target,
                                             fields=fields))
                written += 1
            cycle, rev = cycle + 1, rev + 4
        journal.index.save()
    finally:
        os.close(fd)
    open(marker, "w").close()
    return ledger, True


def run(argv: list[str]) -> int:
    """Run one process to the end, output discarded; its peak RSS in KiB (exit must be 0)."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {err[-500:]}")
    return usage.ru_maxrss


def measure(ledger: str, rounds: int) -> tuple[dict[str, float], dict[str, int]]:
    """Median seconds and the largest peak RSS (KiB) of each side."""
    journal = ledger + ".journal.jsonl"
    sides = {
        "report": [sys.executable, "-m", "engine.cli.main", "report", ledger],
        "verify": [sys.executable, "-m", "engine.cli.main", "journal", ledger, "--verify"],
        "read": [sys.executable, "-c", PLAIN, journal],
    }
    peak: dict[str, int] = {name: 0 for name in sides}

    def case(name: str):
        def go() -> None:
            peak[name] = max(peak[name], run(sides[name]))
        return go, None

    times = interleaved({name: case(name) for name in sides}, runs=rounds)
    return times, peak


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    results = {}
    for size in (n // 4, n):
        folder = os.path.join(tempfile.gettempdir(), f"handoff-bench-report-{size}")
        os.makedirs(folder, exist_ok=True)
        started = time.perf_counter()
        ledger, fresh = write_journal(folder, size)
        made = time.perf_counter() - started
        mib = os.path.getsize(ledger + ".journal.jsonl") / 2**20
        print(f"journal of {size:,} records, {mib:.0f} MiB ({f'written in {made:.1f} s' if fresh else 'kept from an earlier run'})")
        times, peak = measure(ledger, rounds)
        results[size] = (times, peak)
        print(row(f"handoff report, {size:,} records vs json.loads of every line", times["report"], times["read"]))
        print(row(f"handoff journal --verify, {size:,} records vs the same", times["verify"], times["read"]))
        print(f"{'peak RSS: report / verify / plain read':<58} {peak['report'] / 1024:7.1f} / {peak['verify'] / 1024:.1f} / "
              f"{peak['read'] / 1024:.1f} MiB")
    (small_t, small_m), (big_t, big_m) = results[n // 4], results[n]
    for side in ("report", "verify"):
        print(f"{side + ': 4x the records takes':<58} {big_t[side] / small_t[side]:6.2f}x the time, "
              f"{big_m[side] / small_m[side]:5.2f}x the peak memory (linear: 4x and 1x)")


if __name__ == "__main__":
    main()
