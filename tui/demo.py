"""The demo's lifecycle: `handoff-tui --demo` starts the demo's script, and leaving the demo ends it.

The script (`ledgers/demo/director.py`) and the sessions it runs share one
process group of their own (so a step is never killed by a Ctrl-C meant for the
screen). Ending the demo sends that group SIGTERM: a session finishes the step it
is running (steps run in their own groups), hands off and exits; the script
exits at once. Whatever is left after `grace` seconds gets SIGKILL. A hang-up
(SSH logout) ends the demo the same way, without waiting. A screen that dies without
a word (kill -9, a crash) cannot end it: the script watches for that itself (it is told
the screen's pid) and then ends its group the same way.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from engine.api import hangups_ignored

POLL = 0.1


def running_steps(ledger: Any) -> list[str]:
    """`db-19 (check)` for every target with a step in flight."""
    if ledger is None:
        return []
    return [f"{name} ({t.in_flight.step})" for name, t in ledger.targets.items() if t.in_flight is not None]


class DemoRun:
    """The demo's script and its sessions: one process group."""

    def __init__(self, ledger: Path) -> None:
        self.ledger = ledger
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> int:
        """Start the script; returns its pid (also its process group id)."""
        self.proc = subprocess.Popen(
            [sys.executable, str(self.ledger.parent / "director.py"), str(self.ledger)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
            cwd=str(self.ledger.parent),
            env={**os.environ, "HANDOFF_DEMO_SCREEN": str(os.getpid())},  # director.py ends the demo if we die
        )
        return self.proc.pid

    @property
    def pgid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def alive(self) -> bool:
        """Whether anything of the demo (the script or a session it started) still runs."""
        if self.pgid is None:
            return False
        if self.proc is not None:
            self.proc.poll()  # reap the script if it ended, so its pid is not a zombie in the group
        try:
            os.killpg(self.pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def terminate(self) -> None:
        """SIGTERM to the whole group, without waiting (a hang-up: no time to wait)."""
        if self.pgid is not None:
            try:
                os.killpg(self.pgid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def stop(self, grace: float = 30.0) -> bool:
        """End the demo: SIGTERM, wait up to `grace` s for running steps to finish, then SIGKILL.
        Returns True when it ended within the grace time."""
        if not self.alive():
            return True
        self.terminate()
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if not self.alive():
                return True
            time.sleep(POLL)
        try:
            os.killpg(self.pgid, signal.SIGKILL)  # type: ignore[arg-type]
        except ProcessLookupError:
            return True
        if self.proc is not None:
            self.proc.wait(timeout=5)
        return False

    def end_on_hangup(self) -> None:
        """On SIGHUP (the SSH connection dropped), end the demo, then die of the hang-up as usual.
        Under `nohup` (SIGHUP ignored) a hang-up ends nothing; a terminal that is gone still
        ends the screen (tui.endings), and the screen's exit ends the demo (tui.main)."""
        if hangups_ignored():
            return

        def hangup(signum: int, _frame: Any) -> None:
            self.terminate()
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

        signal.signal(signal.SIGHUP, hangup)
