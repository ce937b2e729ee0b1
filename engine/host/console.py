"""A long-running process and the terminal it was started from, which can go away first.

Started from an SSH session, `handoff resume` (built-in or LangGraph), `handoff worker`,
`handoff slack`, `handoff journal --follow` or `handoff resume --runtime temporal --follow`
outlives its terminal in two ways: a hang-up (SIGHUP) when the connection drops, and a
terminal gone without one (a `disown`ed or `setsid` job after logout), where writes fail
(EIO; a closed pipe: EPIPE) or, sometimes, still go into a buffer nobody reads (`gone`
asks the terminal itself). What such a process prints is a courtesy copy of what its
journal or its effects already hold, so a line that cannot be written is dropped, never an
error (a follower, which only prints, then stops); and a hang-up stops it on purpose as
SIGTERM does, unless hang-ups are ignored (`nohup`).
"""

from __future__ import annotations

import select
import signal
import sys
from collections.abc import Callable
from typing import TextIO


def say(text: str, stream: TextIO | None = None) -> bool:
    """Print one line (to stdout, or `stream`), flushed; nothing when nobody can read it.
    False then (the write failed, or went into a terminal that has hung up: `gone`): a
    process that only prints (a follower) has nothing left to do."""
    try:
        print(text, file=stream or sys.stdout, flush=True)
    except (OSError, ValueError):  # a terminal gone, a closed pipe; ValueError: a stream already closed
        return False
    return not gone(stream)


def gone(stream: TextIO | None = None) -> bool:
    """Has the terminal or pipe `stream` (stdout) prints to gone away? A pseudo-terminal
    whose other side closed (the SSH connection dropped) can still take a write into its
    buffer, sometimes, with nobody left to read it: poll says so at once (a hang-up, or
    an error for a pipe whose reader closed). A file or a live terminal is never gone."""
    try:
        fd = (stream or sys.stdout).fileno()
    except (OSError, ValueError, AttributeError):  # not a file (a test's StringIO), or closed
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _fd, events in poller.poll(0))


def hangups_ignored() -> bool:
    """Is SIGHUP ignored in this process (started under `nohup`)?"""
    return signal.getsignal(signal.SIGHUP) is signal.SIG_IGN


def stop_signals() -> list[signal.Signals]:
    """The signals that stop such a process on purpose: SIGTERM, Ctrl-C, and SIGHUP unless ignored."""
    hup = [] if hangups_ignored() else [signal.SIGHUP]
    return [signal.SIGTERM, signal.SIGINT, *hup]


def catch_stop_signals(asked: Callable[[signal.Signals], None]) -> Callable[[], None]:
    """From now on a stop signal calls `asked(sig)` (it should only note the wish: it runs
    between two bytecodes of the main thread) instead of ending the process. Returns what
    puts the old handlers back. Only the main thread can set handlers: elsewhere nothing changes."""
    import threading  # here: console is on the Claude Code hook's path, which never starts a thread

    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, _frame) -> None:
        asked(signal.Signals(signum))

    old = {sig: signal.signal(sig, handler) for sig in stop_signals()}

    def restore() -> None:
        for sig, previous in old.items():
            signal.signal(sig, previous)

    return restore
