"""Processes by pid on Linux: is one still the process we think it is, is its group
alive, wait for one we did not start, and which boot and pid namespace we run in.

A recycled pid cannot fool `pid_alive`: the process start time from /proc is compared
too. A pid means something only on the same host, the same boot and the same pid
namespace (a container with the host's network still has its own pids): `boot_id`
and `pid_namespace` let a lease record where its pid is valid.
"""

from __future__ import annotations

import os
import time

_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def boot_id() -> str | None:
    """This machine's boot id (a new one after every reboot), or None where unknown."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def pid_namespace() -> str | None:
    """The pid namespace this process sees pids in (`pid:[4026531836]`), or None."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone (or was never ours): nothing left to signal


def group_alive(pgid: int) -> bool:
    """True while a live (non-zombie) process is in group `pgid`."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        # No /proc: fall back to the kernel's answer, which counts zombies as members.
        try:
            os.killpg(pgid, 0)
            return True
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
    for entry in entries:
        if not entry.isdigit():
            continue
        fields = _stat_fields(int(entry))
        # fields[0] is the state (stat field 3), fields[2] the pgrp (field 5).
        if fields and fields[0] != "Z" and fields[2] == str(pgid):
            return True
    return False


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat from field 3 (state) on; None if the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read().decode("ascii", errors="replace")
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses; it ends at the last ')'.
    end = raw.rfind(")")
    if end < 0:
        return None
    return raw[end + 1 :].split()


def process_start_time(pid: int) -> float | None:
    """When `pid` started, in seconds since boot (/proc/<pid>/stat field 22); None if gone."""
    fields = _stat_fields(pid)
    if not fields or len(fields) < 20:
        return None
    try:
        return int(fields[19]) / _CLK_TCK  # field 22 is index 19 counted from field 3
    except ValueError:
        return None


def pid_alive(pid: int, start_time: float | None = None) -> bool:
    """True if `pid` runs (zombies do not count) and, when `start_time` is given,
    it is still the process that started then, not a later one that got the pid."""
    if not pid or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    fields = _stat_fields(pid)
    if fields is None:
        if os.path.isdir("/proc/self"):
            return False  # it exited between kill(0) and reading /proc
        return start_time is None  # no /proc at all: the start time cannot be checked
    if fields[0] == "Z":
        return False
    if start_time is not None:
        actual = process_start_time(pid)
        # Start times are whole clock ticks; half a tick absorbs float round-trips.
        if actual is None or abs(actual - float(start_time)) > 0.5 / _CLK_TCK:
            return False
    return True


def wait_for_pid(pid: int, pgid: int | None, timeout: float) -> bool:
    """Wait up to `timeout` seconds for a process we did not start (a step left
    by a dead session) and, if `pgid` is given, its whole group, to be gone.

    Such a process is not our child, so waitpid cannot be used: /proc and kill(0)
    are polled instead. Returns True when gone, False on timeout.
    """
    deadline = time.monotonic() + max(0.0, timeout)
    while True:
        gone = not pid_alive(pid) and (pgid is None or not group_alive(pgid))
        if gone:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
