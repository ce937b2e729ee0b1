"""The demo's script: makes the whole story happen within a minute of `handoff-tui --demo`.

1. A one-time failure is set up for db-23's `pg_upgrade --check`.
2. A first agent session runs: it verifies db-18's checkpoint, finishes its replication,
   asks for approval of db-18's cutover (irreversible), checks the queued databases
   (db-23 fails), asks for db-19's link and hands off with a note.
3. Someone changes db-18 outside the ledger (the simulator moves its replication LSN).
4. A second session starts, finds that the ledger and reality disagree on db-18, records
   the discrepancy, pages and stops (exit 3) without touching anything.
5. The on-call engineer checks db-18 and accepts what reality says (`handoff reconcile`).
6. A third session runs with `--wait`: it checks what is left, then stays (up to ten
   minutes) while only approvals are missing, so an approval given in the TUI runs
   while the newcomer watches.

Every session is planned by Claude (`--planner claude`) when ANTHROPIC_API_KEY is set,
and by the deterministic autopilot otherwise. Run by `handoff-tui --demo` as its own
detached process; stdlib only. If that screen dies without ending the demo (kill -9, a
crash, the OOM killer), the script ends the demo as leaving it does: SIGTERM to its own
process group (a session finishes its step and hands off), so nothing runs on unwatched.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

SCREEN = "HANDOFF_DEMO_SCREEN"  # the pid of the handoff-tui that started us (tui/demo.py)


def _run(args: list[str], **kw) -> int:
    return subprocess.run(args, stdin=subprocess.DEVNULL, **kw).returncode


def end_with_the_screen(screen: int) -> None:
    """Once the screen that started us is gone (we are someone else's child), end the demo."""
    def watch() -> None:
        while os.getppid() == screen:
            time.sleep(0.5)
        os.killpg(os.getpgrp(), signal.SIGTERM)

    threading.Thread(target=watch, name="screen-watch", daemon=True).start()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: director.py LEDGER", file=sys.stderr)
        return 2
    ledger = os.path.abspath(argv[0])
    here = os.path.dirname(ledger)
    if os.environ.get(SCREEN, "").isdigit():
        end_with_the_screen(int(os.environ.pop(SCREEN)))  # popped: the sessions need not know it
    # So that whoever started us (a test, a curious operator) can end the script:
    # `kill -- -$(cat director.pid)` stops it and the session it is running.
    with open(os.path.join(here, "director.pid"), "w", encoding="utf-8") as fh:
        fh.write(f"{os.getpid()}\n")
    sim = [sys.executable, os.path.join(here, "sim.py")]
    # With an Anthropic key the demo's sessions are planned by Claude; without one, by autopilot.
    planner = ["--planner", "claude"] if os.environ.get("ANTHROPIC_API_KEY") else []
    handoff = [sys.executable, "-m", "engine.cli.main"]
    _run([*sim, "fail", "db-23", "check", "2",
          "pg_upgrade --check: extension postgis 2.5 has no PostgreSQL 16 build; upgrade postgis first"])
    time.sleep(2.0)  # let the operator's screen settle before anything moves
    _run([*handoff, "resume", "--ledger", ledger, "--as", "demo-agent", *planner])
    time.sleep(6.0)  # approvals and the failure are on screen; then the world drifts
    _run([*sim, "drift", "db-18", "0/9A41D7F8"])
    _run([*handoff, "resume", "--ledger", ledger, "--as", "demo-agent", *planner])
    time.sleep(10.0)  # the drift is on screen; then a human resolves it
    _run([*handoff, "reconcile", ledger, "db-18", "--accept-checkpoint", "--as", "demo-oncall",
          "--reason", "checked by hand: replication was restarted at 0/9A41D7F8, data verified"])
    return _run([*handoff, "resume", "--ledger", ledger, "--as", "demo-agent",
                 "--wait", "--max-minutes", "10", "--max-steps", "60", *planner])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
