"""Named points where a test can freeze this process: `HANDOFF_FAILPOINTS=name[,name]`.

At a listed point the process stops itself with SIGSTOP (every thread, its heartbeat
included), exactly as `kill -STOP` would, but at a known instant: right after a session
wrote an intent, say. The test resumes it with SIGCONT. Each point fires once per
process. Nothing else reads the variable; unset, a point costs one dict lookup.

With `HANDOFF_FAILPOINT_PAUSE=FILE` a point pauses only the thread that reached it: it
creates FILE and waits until the test removes it, while the process's other threads run
on. That is the freeze to use where another thread may hold a file lock at that instant
(a Temporal worker's keeper appending to the journal): a whole-process stop would keep
the lock, and the test's own `approve` would wait on it for ever.
"""

from __future__ import annotations

import os
import signal
import time

_fired: set[str] = set()


def reached(name: str) -> None:
    """Stop here if the environment asks for it (tests only)."""
    wanted = os.environ.get("HANDOFF_FAILPOINTS")
    if not wanted or name in _fired or name not in wanted.split(","):
        return
    _fired.add(name)
    marker = os.environ.get("HANDOFF_FAILPOINT_PAUSE")
    if marker:
        _pause(marker)
    else:
        os.kill(os.getpid(), signal.SIGSTOP)


def _pause(marker: str) -> None:
    """This thread waits until `marker`, which it creates, is removed."""
    with open(marker, "x", encoding="ascii") as fh:
        fh.write(f"{os.getpid()}\n")
    while os.path.exists(marker):
        time.sleep(0.05)
