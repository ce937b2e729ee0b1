"""The demo's script: makes the whole story happen within a minute of `handoff-tui --demo`.

1. A one-time failure is set up for db-23's `pg_upgrade --check`.
2. A first agent session runs: it verifies db-18's checkpoint, finishes its replication,
   asks for approval of db-18's cutover (irreversible), checks the queued databases
   (db-23 fails), asks for db-19's link and hands off with a note.
3. Someone changes db-18 outside the ledger (the simulator moves its replication LSN).
4. A second session starts, finds that the ledger and reality disagree on db-18, records
   the discrepancy, pages and stops (exit 3) without touching anything.
The operator is left with approvals to give, a failure to retry and a drift to reconcile.

Run by `handoff-tui --demo` as its own detached process; stdlib only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time


def _run(args: list[str], **kw) -> int:
    return subprocess.run(args, stdin=subprocess.DEVNULL, **kw).returncode


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: director.py LEDGER", file=sys.stderr)
        return 2
    ledger = os.path.abspath(argv[0])
    here = os.path.dirname(ledger)
    sim = [sys.executable, os.path.join(here, "sim.py")]
    handoff = [sys.executable, "-m", "engine.cli.main"]
    _run([*sim, "fail", "db-23", "check", "2",
          "pg_upgrade --check: extension postgis 2.5 has no PostgreSQL 16 build; upgrade postgis first"])
    time.sleep(2.0)  # let the operator's screen settle before anything moves
    _run([*handoff, "resume", "--ledger", ledger, "--as", "demo-agent"])
    time.sleep(6.0)  # approvals and the failure are on screen; then the world drifts
    _run([*sim, "drift", "db-18", "0/9A41D7F8"])
    return _run([*handoff, "resume", "--ledger", ledger, "--as", "demo-agent"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
