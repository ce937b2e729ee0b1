"""Named points where a test can freeze this process: `HANDOFF_FAILPOINTS=name[,name]`.

At a listed point the process stops itself with SIGSTOP (every thread, its heartbeat
included), exactly as `kill -STOP` would, but at a known instant: right after a session
wrote an intent, say. The test resumes it with SIGCONT. Each point fires once per
process. Nothing else reads the variable; unset, a point costs one dict lookup.
"""

from __future__ import annotations

import os
import signal

_fired: set[str] = set()


def reached(name: str) -> None:
    """Stop here if the environment asks for it (tests only)."""
    wanted = os.environ.get("HANDOFF_FAILPOINTS")
    if not wanted or name in _fired or name not in wanted.split(","):
        return
    _fired.add(name)
    os.kill(os.getpid(), signal.SIGSTOP)
