"""Run one runbook step for real: an argv in its own process group, with a timeout.

A step is started with `start_new_session=True`, so it and everything it spawns share
one process group that (a) survives the death of the session that started it and
(b) can be killed as a whole on timeout. Nothing here goes through a shell: the argv
list is handed straight to exec, so data in it (target names, checkpoints) is never
parsed by anything.

Also here: waiting for a step left running by a dead session, reading the number a
probe or metric prints, `until` conditions, and pid liveness that a recycled pid
cannot fool (the process start time from /proc is compared too). Linux only.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Callable

from engine.compare import holds
from engine.timefmt import now_iso

# The whole output is kept up to this size (its end, which is where a probe's answer is).
STDOUT_CAP = 64 * 1024
# How long SIGTERM gets before SIGKILL, as the brief and most service managers do.
TERM_GRACE = 2.0
# After the step's own process exits, a background child may still hold the pipe open;
# read what it writes for this long, then stop instead of hanging on it.
PIPE_GRACE = 0.5
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass
class StepResult:
    """What one run of an argv did.

    `exit_code` is the process's exit status (negative: killed by that signal), 127 when
    the program does not exist, 126 when it cannot be executed, and None when the step
    timed out and was killed by us (`timed_out` is then True).
    """

    argv: list[str]
    exit_code: int | None
    duration: float
    timed_out: bool
    output_tail: str
    stdout: str
    started_at: str
    pid: int
    pgid: int

    @property
    def ok(self) -> bool:
        """True when the step exited 0 on its own."""
        return self.exit_code == 0 and not self.timed_out


def _spawn_failure(argv: list[str], error: OSError, started_at: str, t0: float) -> StepResult:
    # Shells answer 127 / 126 for these; an operator reading evidence knows the codes.
    program = argv[0] if argv else ""
    if isinstance(error, FileNotFoundError):
        code, text = 127, f"handoff: cannot run {program!r}: program not found\n"
    else:
        code, text = 126, f"handoff: cannot run {program!r}: {error.strerror or error}\n"
    return StepResult(list(argv), code, time.monotonic() - t0, False, text, text, started_at, 0, 0)


def run_step(
    argv: list[str],
    *,
    timeout: float | None,
    cwd: str | None = None,
    env: dict | None = None,
    on_start: Callable[[int, int], None] | None = None,
    tail_bytes: int = 4000,
) -> StepResult:
    """Run `argv` (no shell) in a new process group and return what happened.

    stdout and stderr are merged; `stdout` keeps the last ~64 KB of it, `output_tail`
    the last `tail_bytes`, both decoded as UTF-8 with replacement. `env`, when given,
    is the child's whole environment. `on_start(pid, pgid)` runs right after the spawn
    so the caller can record them as write-ahead intent; if it raises, the step's
    process group is killed (a step nobody recorded must not keep running) and the
    error propagates. On timeout the group gets SIGTERM, then SIGKILL after ~2 s.
    A program that does not exist gives exit_code 127, never an exception.
    """
    if isinstance(argv, (str, bytes)):
        # A string would be split into characters; a command line is never a string here.
        raise TypeError("run_step takes an argv list, not a command string")
    if not argv:
        raise ValueError("run_step needs a non-empty argv")
    argv = [str(a) for a in argv]
    started_at = now_iso()
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
        )
    except OSError as error:
        return _spawn_failure(argv, error, started_at, t0)
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        pgid = proc.pid  # already gone and reaped; with a new session pgid == pid
    try:
        if on_start is not None:
            on_start(proc.pid, pgid)
        buf, timed_out = _collect(proc, pgid, timeout, t0)
    except BaseException:
        _kill_group(pgid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        raise
    cap = max(STDOUT_CAP, tail_bytes)
    return StepResult(
        argv=argv,
        exit_code=None if timed_out else proc.returncode,
        duration=time.monotonic() - t0,
        timed_out=timed_out,
        output_tail=_decode(buf[-tail_bytes:] if tail_bytes > 0 else b""),
        stdout=_decode(buf[-cap:]),
        started_at=started_at,
        pid=proc.pid,
        pgid=pgid,
    )


def _decode(data: bytes | bytearray) -> str:
    return bytes(data).decode("utf-8", errors="replace")


def _collect(proc: subprocess.Popen, pgid: int, timeout: float | None, t0: float):
    """Read the merged output until EOF while enforcing the timeout; returns (bytes, timed_out)."""
    cap = STDOUT_CAP + 64 * 1024  # trimmed to the caller's cap at the end
    buf = bytearray()
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    deadline = None if timeout is None else t0 + timeout
    timed_out = False
    term_at: float | None = None  # when we sent SIGTERM and have not escalated yet
    exited_at: float | None = None  # when the step's own process was seen gone
    open_pipe = True
    try:
        while True:
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if deadline is not None and not timed_out and exited_at is None and now >= deadline:
                timed_out, term_at = True, now
                _kill_group(pgid, signal.SIGTERM)
            if term_at is not None:
                if exited_at is not None and not _group_alive(pgid):
                    term_at = None  # everybody left after SIGTERM: nothing to escalate
                elif now - term_at >= TERM_GRACE:
                    _kill_group(pgid, signal.SIGKILL)
                    term_at = None
            if exited_at is not None and term_at is None:
                if not open_pipe:
                    break
                if now - exited_at >= PIPE_GRACE:
                    break  # a background child still holds the pipe: do not wait on it
            if not open_pipe:
                time.sleep(0.02)
                continue
            for _key, _events in sel.select(0.05):
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    open_pipe = False
                    sel.unregister(fd)
                    break
                buf += chunk
                if len(buf) > cap:
                    del buf[: len(buf) - cap]
        proc.wait()
    finally:
        sel.close()
        proc.stdout.close()
    return buf, timed_out


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone (or was never ours): nothing left to signal


def _group_alive(pgid: int) -> bool:
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
        gone = not pid_alive(pid) and (pgid is None or not _group_alive(pgid))
        if gone:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


# -- readings and `until` ----------------------------------------------------------

_NUMBER = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$")


def parse_reading(text: str) -> tuple[float, bool]:
    """The number a probe or metric printed: its last non-empty line, maybe ending
    in `%`. Returns (value, is_percent); raises ValueError saying what was printed."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if not lines:
        raise ValueError("the command printed nothing; expected a number such as 4.2 or 37%")
    line = lines[-1]
    is_percent = line.endswith("%")
    number = line[:-1].strip() if is_percent else line
    if not _NUMBER.match(number) or not math.isfinite(float(number)):
        shown = line if len(line) <= 80 else line[:77] + "..."
        raise ValueError(
            f"expected a number such as 4.2 or 37% on the last line of output, got {shown!r}"
        )
    return float(number), is_percent


_UNTIL = re.compile(
    r"^\s*(?:value\s*)?(<=|>=|==|!=|<|>)\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*%?\s*$"
)


@dataclass(frozen=True)
class Condition:
    """A parsed `until` condition; call it with a reading. `str()` gives it back."""

    op: str
    threshold: float

    def __call__(self, value: float) -> bool:
        return holds(value, self.op, self.threshold)

    def __str__(self) -> str:
        return f"value {self.op} {self.threshold:g}"


def parse_until(expr: str) -> Callable[[float], bool]:
    """Parse `value < 5`, `value <= 0.5`, `value == 0`, `> 10` (also >=, !=) into a
    predicate on a reading. Nothing is evaluated; anything else raises ValueError."""
    match = _UNTIL.match(expr or "")
    if not match:
        raise ValueError(
            f"cannot read the until condition {expr!r}: write it as 'value OP NUMBER' "
            f"with OP one of < <= > >= == != (for example 'value < 5')"
        )
    return Condition(match.group(1), float(match.group(2)))


def run_until(
    argv: list[str],
    condition: str | Callable[[float], bool],
    *,
    interval: float,
    timeout: float,
    step_timeout: float | None = None,
    cwd: str | None = None,
    env: dict | None = None,
    on_start: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    tail_bytes: int = 4000,
) -> tuple[StepResult, bool, float | None]:
    """Re-run `argv` every `interval` seconds until the number it prints satisfies
    `condition` (a string for parse_until, or a predicate), or `timeout` passes.

    Returns (result, reached, last_value). `result` is the last attempt's, except
    `started_at` and `duration`, which cover the whole loop, and `timed_out`, which
    is True when the loop ran out of time. No attempt starts after `timeout`; each
    attempt may run `step_timeout` (default: `timeout`). The loop stops early, with
    reached False, when an attempt fails (non-zero exit or its own timeout), when it
    prints no number (`parse_reading(result.stdout)` repeats why), or when
    `should_stop()` says so (checked between attempts).
    """
    check = parse_until(condition) if isinstance(condition, str) else condition
    started_at = now_iso()
    t0 = time.monotonic()
    deadline = t0 + timeout
    last_value: float | None = None

    def finish(result: StepResult, reached: bool, ran_out: bool) -> tuple[StepResult, bool, float | None]:
        whole = dataclasses.replace(
            result,
            started_at=started_at,
            duration=time.monotonic() - t0,
            timed_out=result.timed_out or ran_out,
        )
        return whole, reached, last_value

    while True:
        result = run_step(
            argv,
            timeout=step_timeout if step_timeout is not None else timeout,
            cwd=cwd,
            env=env,
            on_start=on_start,
            tail_bytes=tail_bytes,
        )
        if not result.ok:
            return finish(result, False, False)
        try:
            last_value, _ = parse_reading(result.stdout)
        except ValueError:
            return finish(result, False, False)
        if check(last_value):
            return finish(result, True, False)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return finish(result, False, True)
        if should_stop is not None and should_stop():
            return finish(result, False, False)
        time.sleep(min(interval, remaining))
        if time.monotonic() >= deadline:
            return finish(result, False, True)
