"""A long-running process and the terminal it was started from, which can go away first.

Started from an SSH session, `handoff resume` (built-in or LangGraph), `handoff worker` or
`handoff slack` outlives its terminal in two ways: a hang-up (SIGHUP) when the connection drops, and a terminal gone
without one (a `disown`ed or `setsid` job after logout), where every write fails (EIO; a
closed pipe: EPIPE). What such a process prints is a courtesy copy of what its journal or
its effects already hold, so a line that cannot be written is dropped, never an error; and
a hang-up stops it on purpose as SIGTERM does, unless hang-ups are ignored (`nohup`).
"""

from __future__ import annotations

import signal
import sys
from typing import TextIO


def say(text: str, stream: TextIO | None = None) -> None:
    """Print one line (to stdout, or `stream`), flushed; nothing when nobody can read it."""
    try:
        print(text, file=stream or sys.stdout, flush=True)
    except (OSError, ValueError):  # a terminal gone, a closed pipe; ValueError: a stream already closed
        pass


def hangups_ignored() -> bool:
    """Is SIGHUP ignored in this process (started under `nohup`)?"""
    return signal.getsignal(signal.SIGHUP) is signal.SIG_IGN


def stop_signals() -> list[signal.Signals]:
    """The signals that stop such a process on purpose: SIGTERM, Ctrl-C, and SIGHUP unless ignored."""
    hup = [] if hangups_ignored() else [signal.SIGHUP]
    return [signal.SIGTERM, signal.SIGINT, *hup]
