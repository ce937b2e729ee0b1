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
from collections.abc import Callable
from dataclasses import dataclass

from engine.codec.timefmt import now_iso
from engine.host.procs import group_alive, kill_group
from engine.ledger.compare import holds

# The whole output is kept up to this size (its end, which is where a probe's answer is).
STDOUT_CAP = 64 * 1024
# How long SIGTERM gets before SIGKILL, as the brief and most service managers do.
TERM_GRACE = 2.0
# After the step's own process exits, a background child may still hold the pipe open;
# read what it writes for this long, then stop instead of hanging on it.
PIPE_GRACE = 0.5
# A step process still running this long after its spawn is one somebody may look for:
# `run_step`'s `running` hears of it then (a session notes its pid in the ledger).
RUNNING_AFTER = 0.5


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


Launch = Callable[[Callable[[], subprocess.Popen]], subprocess.Popen]
"""A wrapper around the spawn: called with a function that starts the process, it
returns the started process or raises to start nothing (a session fences its steps
with it: the spawn happens under the ledger's lock, after re-checking the lease)."""


def run_step(
    argv: list[str],
    *,
    timeout: float | None,
    cwd: str | None = None,
    env: dict | None = None,
    launch: Launch | None = None,
    tail_bytes: int = 4000,
    running: Callable[[subprocess.Popen], None] | None = None,
) -> StepResult:
    """Run `argv` (no shell) in a new process group and return what happened.

    stdout and stderr are merged; `stdout` keeps the last ~64 KB of it, `output_tail`
    the last `tail_bytes`, both decoded as UTF-8 with replacement. `env`, when given,
    is the child's whole environment. `launch`, when given, does the spawning (see
    `Launch`); whatever it raises propagates and nothing was started. `running`, when
    given, is called once with the process if it still runs RUNNING_AFTER seconds after
    its spawn (from this thread: it must not block). On timeout the group gets SIGTERM,
    then SIGKILL after ~2 s.
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

    cannot: list[OSError] = []  # the program's own spawn error, told apart from the launch's

    def start() -> subprocess.Popen:
        try:
            return subprocess.Popen(
                argv,
                start_new_session=True,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=env,
            )
        except OSError as error:
            cannot.append(error)
            raise

    try:
        proc = launch(start) if launch is not None else start()
    except OSError as error:
        if not cannot or error is not cannot[0]:
            raise  # the launch's own (the session's), not "cannot run" the step's program
        return _spawn_failure(argv, error, started_at, t0)
    pgid = proc.pid  # start_new_session: the child leads its own group
    assert proc.stdout is not None  # start() asks for stdout=PIPE
    try:
        buf, timed_out = _collect(proc, pgid, timeout, t0, running)
    except BaseException:
        kill_group(pgid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        raise
    cap = max(STDOUT_CAP, tail_bytes)
    return StepResult(
        argv=argv,
        exit_code=None if timed_out else proc.returncode,
        duration=time.monotonic() - t0,
        timed_out=timed_out,
        output_tail=_tail(buf[-cap:], tail_bytes),
        stdout=_decode(buf[-cap:]),
        started_at=started_at,
        pid=proc.pid,
        pgid=pgid,
    )


def _decode(data: bytes | bytearray) -> str:
    return bytes(data).decode("utf-8", errors="replace")


def _tail(data: bytes | bytearray, tail_bytes: int) -> str:
    """The last `tail_bytes` of the output, cut after masking the whole of it: a tail cut
    first could start between a key ("password:") and its secret on the next line."""
    from engine.audit.redact import redact

    if tail_bytes <= 0:
        return ""
    masked = redact(_decode(data)).encode("utf-8")
    return masked[-tail_bytes:].decode("utf-8", errors="ignore")  # a character cut in two is dropped, not replaced


def _collect(proc: subprocess.Popen, pgid: int, timeout: float | None, t0: float,
             running: Callable[[subprocess.Popen], None] | None = None):
    """Read the merged output until EOF while enforcing the timeout; returns (bytes, timed_out).
    `running(proc)` is called once, if the process is still there RUNNING_AFTER seconds from now."""
    running_at = time.monotonic() + RUNNING_AFTER
    cap = STDOUT_CAP + 64 * 1024  # trimmed to the caller's cap at the end
    buf = bytearray()
    assert proc.stdout is not None  # run_step starts it with stdout=PIPE
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
            if running is not None and exited_at is None and now >= running_at:
                running(proc)
                running = None
            if deadline is not None and not timed_out and exited_at is None and now >= deadline:
                timed_out, term_at = True, now
                kill_group(pgid, signal.SIGTERM)
            if term_at is not None:
                if exited_at is not None and not group_alive(pgid):
                    term_at = None  # everybody left after SIGTERM: nothing to escalate
                elif now - term_at >= TERM_GRACE:
                    kill_group(pgid, signal.SIGKILL)
                    term_at = None
            if exited_at is not None and term_at is None:
                if not open_pipe:
                    break
                if now - exited_at >= PIPE_GRACE:
                    break  # a background child still holds the pipe: do not wait on it
            if not open_pipe:
                # The output has ended. While the step's own process is leaving, be back as
                # soon as it is gone; once it is (a group member lingers), every 20 ms.
                if proc.returncode is None:
                    try:
                        proc.wait(timeout=0.02)
                    except subprocess.TimeoutExpired:
                        pass
                else:
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
    launch: Launch | None = None,
    should_stop: Callable[[], bool] | None = None,
    tail_bytes: int = 4000,
    on_reading: Callable[[float], None] | None = None,
    running: Callable[[subprocess.Popen], None] | None = None,
) -> tuple[StepResult, bool, float | None]:
    """Re-run `argv` every `interval` seconds until the number it prints satisfies
    `condition` (a string for parse_until, or a predicate), or `timeout` passes.

    Returns (result, reached, last_value). `result` is the last attempt's, except
    `started_at` and `duration`, which cover the whole loop, and `timed_out`, which
    is True when the loop ran out of time. No attempt starts after `timeout`; each
    attempt may run `step_timeout` (default: `timeout`). The loop stops early, with
    reached False, when an attempt fails (non-zero exit or its own timeout), when it
    prints no number (`parse_reading(result.stdout)` repeats why), or when
    `should_stop()` says so (checked between attempts). `on_reading(value)` hears every
    reading as it is taken (engine.session.until_progress journals them, throttled).
    `running` is each attempt's, as for `run_step`.
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
            launch=launch,
            tail_bytes=tail_bytes,
            running=running,
        )
        if not result.ok:
            return finish(result, False, False)
        try:
            last_value, _ = parse_reading(result.stdout)
        except ValueError:
            return finish(result, False, False)
        if check(last_value):
            return finish(result, True, False)
        if on_reading is not None:  # a reading that ends the wait is the step's own result
            on_reading(last_value)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return finish(result, False, True)
        if should_stop is not None and should_stop():
            return finish(result, False, False)
        time.sleep(min(interval, remaining))
        if time.monotonic() >= deadline:
            return finish(result, False, True)
