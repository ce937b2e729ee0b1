"""How the screen ends other than by a key: its terminal gone, or SIGTERM.

When an SSH connection ends, the kernel hangs up the session's terminal and the screen
gets SIGHUP: it dies of it (the demo ends its script first, `tui.demo`). Where nothing
sends one (the process was started without a controlling terminal, under `setsid` or by a
supervisor; a connection whose sshd was killed; `nohup`), the terminal's input reads
end-of-file for ever, and Textual 8.2's input thread loops on it at a full core
(Textualize/textual#6690, open): an operator's dropped screen would burn a CPU of the
bastion host until someone finds it. So the app looks at its terminal once a second (one
`poll` call).

SIGTERM (`kill`, a supervisor, a shutdown) would kill Python at once: the terminal left in
the alternate screen with raw keys and mouse reports on, the demo's script and its agent
session running on with nobody watching.

Both end the same way: a quit without questions (the terminal restored, the demo ended,
the "since you last looked" mark saved), and then the process dies of the signal after
all (`die_of`: SIGTERM, or SIGHUP for the terminal that went away), so whoever watches it
sees what they expect; under `nohup` (hang-ups ignored) a lost terminal is a plain quit.
"""

from __future__ import annotations

import os
import select
import signal
import sys

CHECK_EVERY = 1.0  # seconds between two looks at the terminal
_GONE = select.POLLHUP | select.POLLERR | select.POLLNVAL


def terminal_fd() -> int | None:
    """The terminal Textual reads keys from (its Linux driver reads stdin), or None when
    stdin is not a terminal (a pipe, a browser's session, a test's headless app)."""
    stream = sys.__stdin__
    try:
        fd = stream.fileno() if stream is not None else -1
    except (OSError, ValueError):
        return None
    return fd if fd >= 0 and os.isatty(fd) else None


def hung_up(fd: int) -> bool:
    """Has the terminal on `fd` hung up (its other side closed, or the fd is gone)? Reads nothing."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)  # hang-up, error and invalid fd are reported whatever was asked
    return any(events & _GONE for _, events in poller.poll(0))


def die_of(signum: int) -> None:
    """After the screen has ended cleanly: end the process by `signum` after all, its default action."""
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
