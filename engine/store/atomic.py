"""The only way a ledger reaches disk: write a temp file beside it, fsync, rename, fsync the folder.

A reader therefore sees the old file or the new one, never a torn one, even if the
writer is killed with SIGKILL at any instruction. Mode and owner are kept; a
symlinked ledger is written through to its real file and the link stays a link.
"""

from __future__ import annotations

import os
import tempfile


def real_path(path: str) -> str:
    """The file a (possibly symlinked) ledger path really names."""
    return os.path.realpath(path)


def fsync_dir(folder: str) -> None:
    """Make a rename in `folder` durable."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str, data: bytes, *, durable: bool = True) -> None:
    """Replace `path` (through symlinks) with `data`, atomically and (unless told it is
    only a cache) durably."""
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
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    try:
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise
    if durable:
        fsync_dir(folder)
