"""How the screen ends other than by a key: its terminal gone, or SIGTERM.

When an SSH connection ends, the kernel hangs up the session's terminal and the screen
gets SIGHUP: it dies of it (the demo ends its script first, `tui.demo`). Where nothing
sends one (the process was started without a controlling terminal, under `setsid` or by a
supervisor; a connection whose sshd was killed; `nohup`), the terminal's input reads
end-of-file for ever, and Textual 8.2's input thread loops on it at a full core
(Textualize/textual#6690, open): an operator's dropped screen would burn a CPU of the
bastion host until someone finds it. So the app looks at its terminal once a second (one
`poll` call).

Until it looks, the screen goes on drawing into the terminal, and writes into a terminal
that has gone fail. Textual 8.2's writer thread dies of the first failed write, and its
queue holds 30 writes: the 31st would block the screen's event loop for ever, and the look
would never come (the process hung, the demo never ended). The screen's driver hands that
thread a writer that drops what a gone terminal cannot take (`terminal_driver`, `FrameWriter`).

A browser viewer's process (`handoff-tui serve`) is told to quit by its server; a server
killed outright (SIGKILL, the OOM killer) tells it nothing, and the viewer would hold its
70 MB for ever with nobody to serve. So it looks at its server's pipe the same way, and
quits when that has hung up. Until then its writes to the server are dropped
(`ServerWriter`): a BrokenPipeError raised into the screen could stall it before it looked.

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
from collections.abc import Callable
from typing import IO, Any

CHECK_EVERY = 1.0  # seconds between two looks at the terminal
_GONE = select.POLLHUP | select.POLLERR | select.POLLNVAL


def _stdin_fd() -> int | None:
    stream = sys.__stdin__
    try:
        fd = stream.fileno() if stream is not None else -1
    except (OSError, ValueError):
        return None
    return fd if fd >= 0 else None


def terminal_fd() -> int | None:
    """The terminal Textual reads keys from (its Linux driver reads stdin), or None when
    stdin is not a terminal (a pipe, a browser's session, a test's headless app)."""
    fd = _stdin_fd()
    return fd if fd is not None and os.isatty(fd) else None


def server_fd() -> int | None:
    """A browser viewer's link to `handoff-tui serve`: the pipe on its stdin (textual-serve
    writes the browser's keys into it), which hangs up when the server is gone."""
    return _stdin_fd()


def hung_up(fd: int) -> bool:
    """Has the terminal on `fd` hung up (its other side closed, or the fd is gone)? Reads nothing."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)  # hang-up, error and invalid fd are reported whatever was asked
    return any(events & _GONE for _, events in poller.poll(0))


def die_of(signum: int) -> None:
    """After the screen has ended cleanly: end the process by `signum` after all, its default action."""
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


class FrameWriter:
    """The terminal for Textual's writer thread: each frame written whole to the terminal's
    fd, unbuffered. A terminal that has gone (EIO, a closed fd) takes no more frames: they
    are dropped instead of raising into the thread. A terminal whose fd is non-blocking (a
    program sharing it turned that on) and full is slow, not gone: the writer waits until it
    takes the rest, where a text stream would raise, or drop the part it could not write."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._fd = stream.fileno()
        self.gone = False

    def write(self, text: str) -> None:
        if self.gone:
            return
        rest = memoryview(text.encode(self._stream.encoding, self._stream.errors or "strict"))
        while rest:
            try:
                rest = rest[os.write(self._fd, rest):]
            except BlockingIOError:
                select.select([], [self._fd], [], CHECK_EVERY)  # a hang-up wakes it too: the next write fails
            except OSError:  # EIO from a hung-up terminal, EBADF once it is closed
                self.gone = True
                return

    def flush(self) -> None:
        """Nothing to do: every write went straight to the terminal."""

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, encoding: the terminal's own
        return getattr(self._stream, name)


class ServerWriter:
    """A browser viewer's writes to its server (`handoff-tui serve`, over the pipe on its
    stdout): once the server has gone (EPIPE), every write is dropped instead of raising
    BrokenPipeError into the screen, which then stalled for good instead of ending. The
    viewer's look at its server's pipe (`server_fd`) ends it."""

    def __init__(self, write: Callable[[bytes], int]) -> None:
        self._write = write
        self.gone = False

    def __call__(self, data: bytes) -> int:
        if not self.gone:
            try:
                return self._write(data)
            except OSError:  # EPIPE: the server has gone; EBADF once the pipe is closed
                self.gone = True
        return len(data)


def terminal_driver(driver_class: type) -> type:
    """`driver_class` (Textual's choice), its writes made safe for an ending: Textual's Linux
    driver writes through `FrameWriter`, its web driver (a `handoff-tui serve` viewer) through
    `ServerWriter`; any other driver (headless, a test's) as it is."""
    from textual.drivers.linux_driver import LinuxDriver
    from textual.drivers.web_driver import WebDriver

    if driver_class is LinuxDriver:
        class TerminalDriver(LinuxDriver):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self._file = FrameWriter(self._file)

        return TerminalDriver
    if driver_class is WebDriver:
        class ViewerDriver(WebDriver):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self._write = ServerWriter(self._write)

        return ViewerDriver
    return driver_class
