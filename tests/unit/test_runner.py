"""Steps run for real: process groups, timeouts, no shell, readings and until loops."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time

import pytest

from engine.host.procs import pid_alive, process_start_time, wait_for_pid
from engine.session.runner import (
    StepResult,
    parse_reading,
    parse_until,
    run_step,
    run_until,
)

PY = sys.executable


def py(code: str) -> list[str]:
    return [PY, "-c", textwrap.dedent(code)]


def test_exit_code_output_and_stamp():
    """A step's exit code, merged stdout/stderr and UTC start stamp are recorded."""
    r = run_step(
        py("import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"), timeout=30
    )
    assert isinstance(r, StepResult)
    assert r.exit_code == 3 and not r.timed_out and not r.ok
    assert "out" in r.stdout and "err" in r.stdout
    assert r.output_tail == r.stdout
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r.started_at)
    assert r.duration >= 0 and r.pid > 0


def test_own_process_group_and_launch():
    """The step leads a new process group, started through the caller's launch hook."""
    seen = []

    def launch(start):
        proc = start()
        seen.append(proc.pid)
        return proc

    r = run_step(py("import os; print(os.getpgrp())"), timeout=30, launch=launch)
    assert seen == [r.pid]
    assert r.pgid == r.pid == int(r.stdout.strip())
    assert r.pgid != os.getpgrp()


def test_a_launch_that_refuses_starts_nothing(tmp_path):
    """A launch hook that raises (a fenced session) starts no process at all."""
    marker = tmp_path / "ran"

    def refuse(start):
        raise LookupError("not ours any more")

    with pytest.raises(LookupError):
        run_step(py(f"open({str(marker)!r}, 'w').close()"), timeout=30, launch=refuse)
    time.sleep(0.2)
    assert not marker.exists()


def test_an_error_of_the_launch_itself_is_never_the_programs(tmp_path):
    """An OSError raised by the launch hook before or after the spawn (the session's own:
    its journal, its terminal) propagates; only the program's own is "cannot run" (126/127)."""
    marker = tmp_path / "ran"

    def broken_before(start):
        raise OSError(5, "Input/output error")

    with pytest.raises(OSError):
        run_step(py(f"open({str(marker)!r}, 'w').close()"), timeout=30, launch=broken_before)
    assert not marker.exists()

    def passes_through(start):
        return start()

    r = run_step(["/nonexistent/handoff-no-such-program"], timeout=5, launch=passes_through)
    assert r.exit_code == 127 and "not found" in r.stdout
    r = run_step([str(tmp_path)], timeout=5, launch=passes_through)  # a folder: it cannot be executed
    assert r.exit_code == 126 and "cannot run" in r.stdout


def test_missing_program_is_127():
    """A program that does not exist is exit 127 with a message, not an exception."""
    r = run_step(["/nonexistent/handoff-no-such-program", "x"], timeout=5)
    assert r.exit_code == 127
    assert "not found" in r.stdout and "handoff-no-such-program" in r.output_tail


def test_hostile_argv_reaches_no_shell(tmp_path):
    """Shell syntax and option-looking words in argv arrive literally and run nothing."""
    hostile = ["; rm -rf x", "$(touch pwned)", "`touch pwned2`", "-rf", "a && touch pwned3", "|"]
    (tmp_path / "x").mkdir()
    r = run_step(
        [PY, "-c", "import sys, json; print(json.dumps(sys.argv[1:]))", *hostile],
        timeout=30,
        cwd=str(tmp_path),
    )
    assert r.exit_code == 0
    assert json.loads(r.stdout) == hostile
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x"]


def test_timeout_kills_whole_group_including_grandchild(tmp_path):
    """On timeout the whole group dies, grandchild included, and exit_code is None."""
    code = f"""
        import subprocess, sys, time
        child = subprocess.Popen([{PY!r}, "-c", "import time; time.sleep(60)"])
        print(child.pid, flush=True)
        time.sleep(60)
    """
    r = run_step(py(code), timeout=1.0)
    assert r.timed_out and r.exit_code is None
    grandchild = int(r.stdout.split()[0])
    assert wait_for_pid(grandchild, r.pgid, timeout=5)
    assert not pid_alive(grandchild)
    assert not pid_alive(r.pid)
    assert r.duration < 20  # generous: it must not have waited for the 60 s sleeps


def test_timeout_escalates_to_sigkill():
    """A group that ignores SIGTERM is SIGKILLed after the grace period."""
    code = f"""
        import signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen([{PY!r}, "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"])
        print(child.pid, flush=True)
        time.sleep(60)
    """
    r = run_step(py(code), timeout=0.8)
    assert r.timed_out and r.exit_code is None
    assert wait_for_pid(int(r.stdout.split()[0]), r.pgid, timeout=5)


def test_background_child_holding_the_pipe_does_not_hang():
    """A step that exits while a detached child keeps stdout open still returns."""
    code = f"""
        import os, subprocess, sys
        child = subprocess.Popen([{PY!r}, "-c", "import time; time.sleep(30)"], start_new_session=True)
        print(child.pid, flush=True)
    """
    r = run_step(py(code), timeout=30)
    assert r.exit_code == 0 and not r.timed_out
    child = int(r.stdout.split()[0])
    os.kill(child, 9)
    assert wait_for_pid(child, None, timeout=5)


def test_output_is_capped_and_decoded_with_replacement():
    """Big output keeps only its end; bad UTF-8 becomes replacement characters."""
    code = """
        import sys
        sys.stdout.buffer.write(b"\\xff\\xfe bad\\n")
        sys.stdout.buffer.write(b"y" * 200_000 + b"\\nEND\\n")
    """
    r = run_step(py(code), timeout=30, tail_bytes=10)
    assert r.exit_code == 0
    assert len(r.stdout.encode()) <= 64 * 1024 + 16
    assert r.stdout.endswith("END\n") and r.output_tail.endswith("END\n")
    assert len(r.output_tail) <= 10
    small = run_step(py('import sys; sys.stdout.buffer.write(b"\\xff ok")'), timeout=30)
    assert small.stdout == "\ufffd ok"


def test_env_and_cwd(tmp_path):
    """cwd and a full environment reach the step."""
    r = run_step(
        py("import os; print(os.getcwd()); print(os.environ.get('HANDOFF_T'))"),
        timeout=30,
        cwd=str(tmp_path),
        env={"HANDOFF_T": "yes", "PATH": os.environ.get("PATH", "")},
    )
    assert r.stdout.split() == [os.path.realpath(tmp_path), "yes"]


# -- pids ----------------------------------------------------------------------------


def test_pid_alive_and_start_time():
    """Our own pid is alive with its real start time, and not with another one."""
    me = os.getpid()
    start = process_start_time(me)
    assert start is not None and start > 0
    assert pid_alive(me)
    assert pid_alive(me, start)
    assert not pid_alive(me, start - 1.0)  # a recycled pid: same number, other process


def test_dead_and_zombie_pids_are_not_alive():
    """An exited process (even an unreaped zombie) is not alive; wait_for_pid sees it."""
    proc = subprocess.Popen([PY, "-c", "pass"])
    deadline = time.monotonic() + 10
    while pid_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not pid_alive(proc.pid)  # still a zombie: we have not reaped it
    assert wait_for_pid(proc.pid, None, timeout=1)
    proc.wait()
    assert process_start_time(proc.pid) is None
    assert not pid_alive(0) and not pid_alive(-5)


def test_wait_for_pid_times_out_on_a_live_process():
    """wait_for_pid returns False while the process keeps running."""
    proc = subprocess.Popen([PY, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        assert wait_for_pid(proc.pid, proc.pid, timeout=0.3) is False
    finally:
        proc.kill()
        proc.wait()


# -- readings and until ----------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("4.2\n", (4.2, False)),
        ("lag report\n\n  37%  \n\n", (37.0, True)),
        ("-1e3", (-1000.0, False)),
        (".5 %", (0.5, True)),
    ],
)
def test_parse_reading(text, expected):
    """The last non-empty line is the reading; a trailing % is noted."""
    assert parse_reading(text) == expected


@pytest.mark.parametrize("text", ["", "\n  \n", "about 5", "5 s", "nan", "inf", "1,5"])
def test_parse_reading_rejects(text):
    """Anything but a finite number is a ValueError that says what was printed."""
    with pytest.raises(ValueError, match="number"):
        parse_reading(text)


@pytest.mark.parametrize(
    "expr, yes, no",
    [
        ("value < 5", 4.9, 5),
        ("value <= 0.5", 0.5, 0.6),
        ("value == 0", 0, 0.1),
        ("value > 10", 11, 10),
        ("< 5", 1, 7),
        ("value >= -2", -2, -3),
        ("value != 1", 2, 1),
    ],
)
def test_parse_until(expr, yes, no):
    """Simple comparisons against a number parse into predicates."""
    cond = parse_until(expr)
    assert cond(yes) is True and cond(no) is False


@pytest.mark.parametrize(
    "expr",
    ["", "value", "value < five", "__import__('os').system('x') < 1", "value < 5 or True", "lag = 5", "5 > value"],
)
def test_parse_until_rejects(expr):
    """Anything else is refused, never evaluated."""
    with pytest.raises(ValueError, match="until"):
        parse_until(expr)


def _counter_probe(tmp_path, values):
    """A probe printing the next of `values` on each run (state kept in a file)."""
    state = tmp_path / "n"
    state.write_text("0")
    code = f"""
        import pathlib
        p = pathlib.Path({str(state)!r}); n = int(p.read_text()); p.write_text(str(n + 1))
        vals = {values!r}
        print(vals[min(n, len(vals) - 1)])
    """
    return py(code), state


def test_run_until_reaches(tmp_path):
    """The argv is re-run until its reading satisfies the condition."""
    argv, state = _counter_probe(tmp_path, [30, 12, 4.5])
    starts = []
    result, reached, last = run_until(
        argv, "value < 5", interval=0.05, timeout=30, launch=lambda start: starts.append(start()) or starts[-1]
    )
    assert reached and last == 4.5 and not result.timed_out
    assert state.read_text() == "3" and len(starts) == 3


def test_run_until_times_out(tmp_path):
    """A condition that never holds ends with timed_out and the last reading."""
    argv, state = _counter_probe(tmp_path, [30])
    result, reached, last = run_until(argv, parse_until("value < 5"), interval=0.05, timeout=0.6)
    assert not reached and result.timed_out and last == 30
    assert int(state.read_text()) >= 2


def test_run_until_stops_on_failure_and_garbage(tmp_path):
    """A failing attempt or one that prints no number ends the loop at once."""
    result, reached, last = run_until(py("import sys; sys.exit(2)"), "value < 5", interval=0.05, timeout=30)
    assert not reached and result.exit_code == 2 and last is None
    result, reached, last = run_until(py("print('lagging')"), "value < 5", interval=0.05, timeout=30)
    assert not reached and result.exit_code == 0 and not result.timed_out
    with pytest.raises(ValueError):
        parse_reading(result.stdout)


def test_run_until_should_stop(tmp_path):
    """should_stop ends the loop between attempts."""
    argv, state = _counter_probe(tmp_path, [30])
    result, reached, _ = run_until(
        argv, "value < 5", interval=0.05, timeout=30, should_stop=lambda: True
    )
    assert not reached and not result.timed_out and state.read_text() == "1"
