"""A `flock` taken within a bound, and who holds it when it is not (/proc/locks).

Every flock the engine takes waits at most a given time (`take_within`): a holder
that is stopped (SIGSTOP, a frozen VM) or stuck on a disk would otherwise hang every
process that comes after it, with no word. A lock that carries no record of its
holder (the journal's, the Slack record's, the per-user state's: each is held for
milliseconds) can still be named then: the kernel lists every lock with the pid that
took it and the file's device and inode (`flock_holder`).
"""

from __future__ import annotations

import fcntl
import os
import time

from engine.codec.textsafe import visible


def take_within(fd: int, how: int, limit: float) -> bool:
    """Take flock `how` (fcntl.LOCK_EX or LOCK_SH) on `fd` within `limit` seconds; False
    when it could not be had (then nothing is held). Polls, from 2 ms up to every 10 ms:
    the holders are brief, a waiter should follow one soon after it lets go (a reader of a
    busy 10,000-target ledger waits on each write), and a blocking flock cannot be given a
    timeout."""
    deadline = time.monotonic() + limit
    pause = 0.002
    while True:
        try:
            fcntl.flock(fd, how | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(0.01, pause * 2)


def flock_holder(fd: int) -> str:
    """`pid 4242 (python3 -m engine.cli.main resume ...), which is stopped: let it go on
    (kill -CONT 4242) or end it` for the process holding a flock on the file open at `fd`:
    who, and what a person can do about it (one line: the command is shown with its
    whitespace folded)."""
    st = os.fstat(fd)
    where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            rows = [line.split() for line in fh if "->" not in line]  # "->": a waiter, not a holder
    except OSError:
        return "another process (the kernel's lock table cannot be read here): if it is stuck, end it"
    pids = [row[4] for row in rows if len(row) >= 6 and row[1] == "FLOCK" and row[5] == where]
    if not pids or not pids[0].isdigit() or pids[0] == "0":
        return "another process (not one this system's process table shows): if it is stuck, end it"
    return _describe(int(pids[0]))


def _describe(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = [os.path.basename(part) if i == 0 else part
                    for i, part in enumerate(fh.read().decode("utf-8", "replace").split("\0")) if part]
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            state = fh.read().rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return f"pid {pid}: if it is stuck, end it"
    command = " ".join(" ".join(argv).split())
    text = f"pid {pid}" + (f" ({visible(command[:200])})" if command else "")
    if state in ("T", "t"):
        return f"{text}, which is stopped: let it go on (kill -CONT {pid}) or end it"
    if state == "D":
        return f"{text}, which is waiting on the disk: if it stays stuck, end it"
    return f"{text}: if it is stuck, end it"
