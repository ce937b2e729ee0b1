"""Opening a ledger file: only a regular file, never a hang, and every way a path can be
wrong said in one line (what it is and what to do), never a traceback.

A FIFO, a socket or a device named as the ledger would block `open()` (a FIFO waits for
a writer) or feed the parser endless bytes: the path is opened non-blocking and refused
at once unless it is a regular file. A symlink loop, a part of the path that is a file,
and a path or name longer than the system allows each get their own sentence.
"""

from __future__ import annotations

import errno
import os
import stat

from engine.errors import LedgerUnreadable, os_error_text

_WHY = {
    errno.ENOENT: "no such ledger file; check the path",
    errno.EISDIR: "is a folder, not a ledger file",
    errno.EACCES: "cannot be read (permission denied)",
    errno.EPERM: "cannot be read (permission denied)",
    errno.ELOOP: "is a symlink loop (links that point at each other); fix the links or name the real file",
    errno.ENOTDIR: "a part of this path is a file, not a folder; check the path",
    errno.ENAMETOOLONG: "the path, or a name in it, is longer than this system allows; use a shorter path",
}


def open_ledger_file(path: str) -> int:
    """A read-only descriptor of the regular file at `path` (following a symlink to it);
    LedgerUnreadable saying what is wrong otherwise. Never blocks."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        why = (_WHY.get(err.errno) if err.errno is not None else None) or f"cannot be opened: {os_error_text(err)}"
        raise LedgerUnreadable(why, path=path) from None
    try:
        mode = os.fstat(fd).st_mode
    except OSError as err:
        os.close(fd)
        raise LedgerUnreadable(f"cannot be read: {os_error_text(err)}", path=path) from None
    if stat.S_ISDIR(mode):
        os.close(fd)
        raise LedgerUnreadable(_WHY[errno.EISDIR], path=path)
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
        raise LedgerUnreadable(f"is {kind}, not a regular file; a ledger is a YAML file: name the file itself", path=path)
    os.set_blocking(fd, True)
    return fd
