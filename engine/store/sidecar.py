"""Files beside a ledger (lock, journal, heartbeat, session log): opened safely.

Two rules hold for every one of them:
- never through a symlink: a planted `ledger.yaml.lock -> /etc/passwd` must not be
  truncated or written, so sidecars are opened with O_NOFOLLOW and a symlink is
  refused with a one-line error;
- a shared ops folder works: a sidecar this process creates takes the ledger file's
  group and the ledger's group/other read-write bits (the owner always reads and
  writes), so Bob in the ledger's group can append to the journal Alice's session
  created.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from typing import BinaryIO

from engine.approvals.identity import os_user
from engine.errors import HandoffError


class SidecarRefused(HandoffError):
    """A file beside the ledger is a symlink, a folder, or cannot be opened."""

    title = "Cannot use a file beside the ledger"
    exit_code = 1


def ledger_mode(ledger: str) -> tuple[int, int | None]:
    """(mode for a new sidecar, group id to give it) from the ledger file at `ledger`."""
    try:
        st = os.stat(ledger)
    except OSError:
        return 0o644, None
    return 0o600 | (st.st_mode & 0o066), st.st_gid


def open_sidecar(path: str, flags: int, *, ledger: str) -> int:
    """`os.open(path, flags | O_NOFOLLOW)`; a file it creates gets the ledger's group and
    group/other read-write bits. Raises SidecarRefused with what to do."""
    mode, gid = ledger_mode(ledger)
    created = False
    try:
        if flags & os.O_CREAT:
            try:
                fd = os.open(path, (flags | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW) & ~os.O_TRUNC, mode)
                created = True
            except FileExistsError:
                fd = os.open(path, (flags & ~os.O_CREAT) | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO: refused, not waited on
        else:
            fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        raise refusal(path, err) from None
    if created:
        try:
            os.fchmod(fd, mode)  # not the umask's idea of it: the ledger's
            if gid is not None and os.fstat(fd).st_gid != gid:
                os.fchown(fd, -1, gid)
        except PermissionError:
            pass  # not a member of the ledger's group: the folder's setgid bit is the other way
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise SidecarRefused(f"{path} is not a regular file; move it away (the engine keeps its own file there)")
    os.set_blocking(fd, True)
    return fd


def cannot_write(path: str) -> str | None:
    """Why this user could not write the existing sidecar at `path`, or None (also when
    it does not exist yet: it will be created with the ledger's group bits)."""
    if not os.path.lexists(path) or os.path.isdir(path) or os.path.islink(path):
        return None  # a folder or a symlink is refused, with its own message, when opened
    if os.access(path, os.W_OK):
        return None
    return f"{path} is not writable by {os_user()}; ask its owner to give the ledger's group write access (chmod g+w)"


def unusable(path: str) -> str | None:
    """Why the engine could not write the sidecar at `path` as it is now (a symlink, a folder,
    not a regular file, not writable by this user), or None (also when it does not exist
    yet). Asked before a change, so that no file the change writes after the ledger itself
    can fail it half done."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return str(refusal(path, OSError(errno.ELOOP if stat.S_ISLNK(st.st_mode) else errno.EISDIR, "")))
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file; move it away, the engine keeps its own file there (nothing was changed)"
    return cannot_write(path)


def open_to_read(path: str) -> BinaryIO | None:
    """`path` (a journal, its index, its gaps) open for reading, or None if it does not exist.
    Never blocks (a FIFO put there is refused, not waited on) and never a traceback: a folder,
    a pipe or a file this user may not read is a SidecarRefused saying what to do."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as err:
        if err.errno in (errno.EACCES, errno.EPERM):
            raise SidecarRefused(f"{path} cannot be read by {os_user()} ({err.strerror}); ask its owner to give the "
                                 "ledger's group read access (chmod g+r)") from None
        raise refusal(path, err) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise refusal(path, OSError(errno.EISDIR, "")) if stat.S_ISDIR(mode) else SidecarRefused(
            f"{path} is not a regular file; move it away (the engine keeps its own file there)")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def refusal(path: str, err: OSError) -> SidecarRefused:
    """The one-line error for a sidecar that cannot be opened."""
    if err.errno == errno.ELOOP or (os.path.islink(path)):
        return SidecarRefused(f"{path} is a symlink; the engine never follows one beside a ledger: remove it (nothing was changed)")
    if err.errno == errno.EISDIR or os.path.isdir(path):
        return SidecarRefused(f"{path} is a folder; move it away, the engine keeps its own file there (nothing was changed)")
    if err.errno == errno.ENXIO:  # a FIFO opened to write with no reader
        return SidecarRefused(f"{path} is not a regular file; move it away (the engine keeps its own file there)")
    if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return SidecarRefused(f"{path} cannot be written ({err.strerror}); ask the folder's owner for group write access (nothing was changed)")
    return SidecarRefused(f"{path}: {err.strerror or err}")


_READ: dict[str, tuple[bytes, dict]] = {}  # path -> (the exact bytes last parsed, what they parsed to)
_READ_MAX = 16


def remember(path: str, raw: bytes, data: dict) -> None:
    """`raw` was just written to `path` as the JSON of `data` (JSON's own types only, and
    never changed afterwards): the next read of those very bytes needs no parse."""
    _READ.pop(path, None)
    _READ[path] = (raw, data)
    while len(_READ) > _READ_MAX:
        del _READ[next(iter(_READ))]


def read_record(path: str, ledger: str) -> dict | None:
    """A JSON record kept beside `ledger` (its last write, its per-target record), or None
    (never written, unreadable, torn or refused). The file is read every time; only the
    parse of bytes identical to the last ones read from `path` is reused (a copy of the
    mapping is returned: what a caller changes in it never reaches the next caller)."""
    try:
        fd = open_sidecar(path, os.O_RDONLY, ledger=ledger)
    except SidecarRefused:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            raw = fh.read()
        last = _READ.get(path)
        if last is not None and last[0] == raw:
            return dict(last[1])
        data = json.loads(raw or b"null")
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    remember(path, raw, data)
    return dict(data)
