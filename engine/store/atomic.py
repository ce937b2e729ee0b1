"""The only way a ledger reaches disk: write a temp file beside it, fsync, swap it in, fsync the folder.

A reader therefore sees the old file or the new one, never a torn one, even if the
writer is killed with SIGKILL at any instruction. Mode and owner are kept; a
symlinked ledger is written through to its real file and the link stays a link.

Compare-and-swap with people who do not take our lock (an editor's save): with
`expect`, the new file is swapped in with Linux's atomic RENAME_EXCHANGE and what
came out is compared with `expect`. If someone saved in between, their file is
swapped straight back and returned, so the caller re-applies its change on top of
it: no window between "compare" and "rename" in which a save can be lost. The file is
also compared just before the swap (after the temp file is written and fsynced), so a
save made while the engine was writing is seen there and never swapped out even for a
moment; where the filesystem cannot exchange, that compare is the only one.

Sidecars (`sidecar_of=LEDGER`) are never written through a symlink, and a new one
takes the ledger's group and read/write bits (see engine.store.sidecar).
"""

from __future__ import annotations

import errno
import functools
import os
import tempfile
from collections.abc import Callable

from engine.host import failpoints
from engine.store.sidecar import SidecarRefused, ledger_mode

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


@functools.cache
def _renameat2() -> Callable[..., int] | None:
    """glibc's renameat2, or None (not glibc, or too old: compare-then-rename). Looked up at
    the first exchange: ctypes costs every process that imports this module 2 ms, and a
    Claude Code hook, on every tool call, writes only a heartbeat."""
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None


def real_path(path: str) -> str:
    """The file a (possibly symlinked) ledger path really names."""
    return os.path.realpath(path)


def file_identity(path: str) -> tuple[int, int, int] | None:
    """(inode, size, mtime) of the file at `path` (not followed), or None: whether a file a
    process wrote or read is still the very one there."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def fsync_dir(folder: str) -> None:
    """Make a rename in `folder` durable."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _exchange(a: str, b: str) -> bool:
    """Atomically swap two paths; False when this system or filesystem cannot."""
    renameat2 = _renameat2()
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    import ctypes

    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), b)


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def atomic_write(path: str, data: bytes, *, durable: bool = True, expect: bytes | None = None,
                 sidecar_of: str | None = None, before_swap: Callable[[], None] | None = None) -> bytes | None:
    """Replace `path` with `data`, atomically and (unless told it is only a cache) durably.

    `expect`: the bytes the caller's change was based on. If the file holds anything
    else at the moment of the swap, nothing is replaced and what it holds is returned
    (the caller re-applies on top of it); None means `data` is in place.
    `sidecar_of`: `path` is a file beside that ledger: a symlink there is refused,
    never followed, and a new file takes the ledger's group and mode bits.
    `before_swap`: called once `data` is on disk beside `path` (written, fsynced when
    durable) and before it is swapped in; what it raises stops the write."""
    if sidecar_of is not None:
        target = os.path.abspath(path)
        if os.path.islink(target):
            raise SidecarRefused(f"{path} is a symlink; the engine never follows one beside a ledger: remove it (nothing was changed)")
    else:
        target = real_path(path)
    folder = os.path.dirname(target) or "."
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=folder)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if st is not None:
            os.fchmod(fd, st.st_mode & 0o7777)
            if (st.st_uid, st.st_gid) != (os.getuid(), os.getgid()):
                try:
                    os.fchown(fd, st.st_uid, st.st_gid)
                except PermissionError:
                    pass  # not root: the file becomes ours, as any editor's save would
        elif sidecar_of is not None:
            mode, gid = ledger_mode(sidecar_of)
            os.fchmod(fd, mode)
            if gid is not None and gid != os.getgid():
                try:
                    os.fchown(fd, -1, gid)
                except PermissionError:
                    pass  # not in the ledger's group: the folder's setgid bit is the other way
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    try:
        if before_swap is not None:
            before_swap()
        theirs = _swap_in(tmp, target, data, expect)
    except BaseException:
        _unlink(tmp)
        raise
    if theirs is None:
        failpoints.reached(f"swapped {os.path.basename(target)}")  # tests: killed the instant the new file is in
        if durable:
            fsync_dir(folder)
    return theirs


def _swap_in(tmp: str, target: str, data: bytes, expect: bytes | None) -> bytes | None:
    if expect is None or not os.path.exists(target):
        if expect is not None:
            return b""  # the file went away under us: nothing to re-apply on
        os.replace(tmp, target)
        return None
    # Compared first, as late as it can be (after the temp file is written and fsynced): a
    # save that landed meanwhile is returned here and never swapped out, not even for the
    # microseconds of the exchange below, where an editor re-reading the file would see it gone.
    try:
        now = _read(target)
    except FileNotFoundError:
        now = b""
    if now != expect:
        _unlink(tmp)
        return now
    if not _exchange(tmp, target):
        os.replace(tmp, target)
        return None
    old = _read(tmp)
    if old == expect:
        _unlink(tmp)
        return None
    # Someone saved between our read and our swap: put their file straight back.
    _exchange(tmp, target)
    out = _read(tmp)
    if out != data:
        # A third writer built on ours in those microseconds; theirs is newest: keep it.
        _exchange(tmp, target)
        theirs = _read(target)
    else:
        theirs = old
    _unlink(tmp)
    return theirs


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass  # already renamed or removed
