"""Shared fixtures for the engine tests: the article's ledger, a small ledger with a
runbook, and a helper that runs the real `handoff` CLI in a subprocess.

Kept small on purpose; each test file builds what only it needs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# No test may reach the real Anthropic API: drop the caller's credentials and endpoint
# before anything starts (the demo's script plans with Claude when a key is set); the
# Claude planner's tests set their own, pointing at tests.fakes.messages_api.
for _name in [n for n in os.environ if n.startswith("ANTHROPIC_")]:
    del os.environ[_name]

# The engine keeps per-user state outside every ledger's folder (engine.store.highwater's marks,
# the Claude Code session secrets, "since you last looked"). The suite's own runs must not
# meet the marks an earlier run left on this machine (CI runs on the developer's machine),
# so every run gets a fresh state folder; a test that needs its own sets one itself.
os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="handoff-test-state-")


# The suite may be run from inside Claude Code (or a step the engine started): the
# engine refuses people-only operations there (engine.approvals.people), so neither this process
# nor the CLI it runs inherits an agent's markers; a test that wants them sets them.
def _agent_markers(env) -> list[str]:
    return [n for n in env if n == "CLAUDECODE" or n.startswith("CLAUDE_CODE_") or n == "HANDOFF_AGENT"]


for _name in _agent_markers(os.environ):
    del os.environ[_name]

# The article's sample ledger as it prints it, with its targets indented two spaces.
ARTICLE = """\
# ledger.yaml (the agent's only source of truth)
task: pg14-to-pg16-fleet-upgrade
owner_shift: platform-oncall
started: 2026-09-09T14:00Z
invariants:
- never run cutover on a db whose state != verified
- never touch more than 2 dbs concurrently
- pause if error_rate_5m > 0.5%
targets:
  db-17: {state: done, verified_at: "2026-09-10T01:52Z"}
  db-18: {state: replicating, checkpoint: "0/9A3F2C10",
    last_action: "pg_upgrade --link ok, logical replication started",
    next_action: "verify lag < 5s then cutover"}
  db-19: {state: queued}
  db-20: {state: blocked, reason: "pending app-team ack (ticket PLAT-4412)"}
handoff_note: >
  Started db-18 at 01:58Z. Replication lag was 2.1s at 02:07Z.
  Do NOT retry pg_upgrade on db-18, the --link step is irreversible.
  Nothing else is in flight.
"""

# A small fleet with a runbook: db-1 awaits approval of the irreversible cutover
# (asked for by the agent), db-2 is verified, db-3 failed in the irreversible link,
# db-4 failed in the reversible check, db-5 is queued.
RUNBOOK_LEDGER = """\
task: small-fleet
approvers_note: kept as an unknown key
invariants:
- never run cutover on a db whose state != verified
- never touch more than 2 dbs concurrently
runbook:
  steps:
  - {name: check, from: queued, to: checked, reversible: true, run: [echo, check, "{target}"]}
  - {name: link, from: checked, to: replicating, run: [echo, link, "{target}"]}
  - {name: sync, from: replicating, to: verified, reversible: true, run: [echo, sync, "{target}"]}
  - {name: cutover, from: verified, to: done, run: [echo, cutover, "{target}", "{checkpoint}"]}
targets:
  db-1: {state: awaiting_approval, checkpoint: "0/9A3F2C10", awaiting: cutover, awaiting_by: agent, awaiting_since: "2026-09-10T02:11Z"}
  db-2: {state: verified, checkpoint: "0/1"}
  db-3: {state: failed, reason: "link exited 1", evidence: {step: link, exit_code: 1}}
  db-4: {state: failed, reason: "check exited 1", evidence: {step: check, exit_code: 1}}
  db-5: {state: queued}
handoff_note: first note
"""


@pytest.fixture
def article(tmp_path: Path) -> Path:
    """The article's sample ledger, written as `ledger.yaml` in its own folder."""
    path = tmp_path / "ledger.yaml"
    path.write_text(ARTICLE, encoding="utf-8")
    return path


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    """The small fleet with a runbook (see RUNBOOK_LEDGER)."""
    path = tmp_path / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER, encoding="utf-8")
    return path


def cli_env(**extra: str) -> dict[str, str]:
    """The environment the CLI runs in: this checkout first on the path, no colour."""
    env = dict(os.environ)
    for name in _agent_markers(env):
        del env[name]
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("EDITOR", None)
    env.pop("VISUAL", None)
    env.update(extra)
    return env


def engine_write(ledger, change) -> None:
    """`change(ledger)` made through the engine's own write, as an agent running the engine's code
    (or a script of its own importing it) would: no edit outside the engine for the next reader to flag."""
    from engine.api import open_ledger

    open_ledger(str(ledger), actor="agent").store.transact(change)


def handoff(*args: str, input: str | None = None, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run `handoff ARGS...` as a real process; returns the finished process (text mode)."""
    return subprocess.run(
        [sys.executable, "-m", "engine.cli.main", *map(str, args)],
        capture_output=True,
        text=True,
        input=input,
        env=env or cli_env(),
        cwd=str(ROOT),
        timeout=timeout,
    )


def ok(done: subprocess.CompletedProcess) -> None:
    """`done` (a finished `handoff`) exited 0; else its output is the failure message."""
    assert done.returncode == 0, done.stdout + done.stderr


class OlderEngine:
    """The engine at commit `rev` of this checkout's history (an upgrade: what an earlier
    engine left beside a ledger, read by this one). `run("approve", ...)` is its `handoff
    approve ...`, `run("-c", code)` its Python; `start` the same as a running process."""

    def __init__(self, tmp_path: Path, rev: str) -> None:
        self.folder = tmp_path / f"engine-{rev}"
        self.folder.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "engine"], capture_output=True)
        assert archive.returncode == 0, f"this test runs an earlier engine from git history: {archive.stderr.decode()}"
        subprocess.run(["tar", "-x", "-C", str(self.folder)], input=archive.stdout, check=True)

    def _argv(self, args: tuple) -> list[str]:
        return [sys.executable, *(map(str, args) if args[0] == "-c" else ("-m", "engine.cli.main", *map(str, args)))]

    def run(self, *args, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(self._argv(args), capture_output=True, text=True, env=cli_env(PYTHONPATH=str(self.folder)),
                              cwd=str(self.folder), timeout=timeout)

    def start(self, *args, **env: str) -> subprocess.Popen:
        return subprocess.Popen(self._argv(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=cli_env(PYTHONPATH=str(self.folder), **env), cwd=str(self.folder))


# Parallel runs (tests/run.sh: pytest-xdist, `--dist loadgroup`). Tests that share one
# thing outside their own tmp_path run one after another on one worker; everything else
# spreads. Shared are: the PostgreSQL server (fixed ledger names, a role created once),
# kill -9 and concurrency chaos (their kill points count on a machine not also running
# a second chaos test), the pinned Claude Code CLI and sshd, and the snapshot files.
# The Temporal tests start a dev server of their own per module and use queues of their
# own: one group of theirs (their kill and freeze points count on no second Temporal test
# beside them), beside the PostgreSQL group instead of after it; the one among them with a
# PostgreSQL ledger carries the postgres group itself.
_GROUPS = (
    ("tests/integration/test_temporal", "temporal"),
    ("tests/integration/", "postgres"),
    ("tests/unit/test_no_traceback.py", "postgres"),
    ("tests/chaos/", "chaos"),
    ("tests/e2e/test_claude_code.py", "claude-code"),
    ("tests/e2e/test_tui_ssh.py", "sshd"),
    ("tests/tui/test_snapshots.py", "snapshots"),
)


_HOLD_FLOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


def hold_flock(path) -> subprocess.Popen:
    """Another process holding an exclusive flock on `path` (created if missing) until its
    stdin is closed (`.communicate()`); returns once the lock is held."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_FLOCK, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


@contextmanager
def stopped_holder(path) -> Iterator[subprocess.Popen]:
    """Another process holding an exclusive flock on `path`, stopped with SIGSTOP, for the
    block; then let go on and ended."""
    import signal

    holder = hold_flock(path)
    try:
        holder.send_signal(signal.SIGSTOP)
        wait_stopped(holder.pid, 10)
        yield holder
    finally:
        holder.send_signal(signal.SIGCONT)
        holder.communicate(timeout=10)


def read_pty(fd: int, done, timeout: float = 60.0) -> bytes:
    """What a process writes to the pseudo-terminal `fd` (its master side) until
    `done(bytes so far)`; fails, showing what came, after `timeout` s."""
    import select
    import time

    seen = b""
    deadline = time.monotonic() + timeout
    while not done(seen):
        assert time.monotonic() < deadline, f"timed out reading the terminal; it showed {seen!r}"
        if select.select([fd], [], [], 0.2)[0]:
            seen += os.read(fd, 4096)
    return seen


def wait_stopped(pid: int, limit: float = 30) -> None:
    """Block until `pid` stopped itself at its failpoint (engine.host.failpoints: its /proc state is T)."""
    import time

    for _ in range(int(limit / 0.05)):
        with open(f"/proc/{pid}/stat") as fh:
            if fh.read().rsplit(")", 1)[1].split()[0] == "T":
                return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} never reached its failpoint")


def freeze_holding_no_lock(pid: int, limit: float = 30) -> None:
    """SIGSTOP `pid` at an instant it holds no file lock (/proc/locks, read once it has
    stopped): a process frozen mid-append to the journal keeps the journal's lock, and every
    other writer, the test's included, would wait on it. Stopped with a lock, it is let go
    on for a moment and stopped again."""
    import signal
    import time

    deadline = time.monotonic() + limit
    while True:
        os.kill(pid, signal.SIGSTOP)
        wait_stopped(pid, limit)
        with open("/proc/locks", encoding="ascii") as fh:
            if not any(line.split()[4] == str(pid) for line in fh if "->" not in line):
                return
        os.kill(pid, signal.SIGCONT)
        assert time.monotonic() < deadline, f"process {pid} held a file lock at every try for {limit:.0f} s"
        time.sleep(0.01)


def wait_paused(marker, limit: float = 30) -> None:
    """Block until a thread paused at its failpoint (engine.host.failpoints with
    HANDOFF_FAILPOINT_PAUSE=marker: the file exists); removing the file lets it go on."""
    import time

    for _ in range(int(limit / 0.05)):
        if os.path.exists(marker):
            return
        time.sleep(0.05)
    raise AssertionError(f"no thread paused at its failpoint ({marker} never appeared)")


def killed_at_failpoint(point: str, *args, env: dict[str, str] | None = None) -> None:
    """`handoff ARGS` stopped at failpoint `point` (engine.host.failpoints), then killed -9 there."""
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", *map(str, args)],
                            env={**(env or cli_env()), "HANDOFF_FAILPOINTS": point}, cwd=str(ROOT),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_stopped(proc.pid)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)


def lock_taken_at_failpoint(command: subprocess.Popen, marker, path) -> tuple[int, str, int]:
    """`command` paused at its failpoint (HANDOFF_FAILPOINT_PAUSE=marker): take `path`'s lock
    (a journal's flock) then, and let it go on. (its exit code, its stderr, the holder's pid);
    the lock is let go before this returns."""
    holder = None
    try:
        wait_paused(marker)
        holder = hold_flock(path)
        os.unlink(marker)
        _, stderr = command.communicate(timeout=30)
        return command.returncode, stderr, holder.pid
    finally:
        if holder is not None:
            holder.communicate(timeout=10)
        if command.poll() is None:
            command.kill()


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into the node ids
def pytest_collection_modifyitems(config, items) -> None:
    """Give each test that shares something (above) its xdist group, unless it has one."""
    for item in items:
        path = Path(str(item.fspath)).resolve().relative_to(ROOT).as_posix()
        for prefix, group in _GROUPS:
            if path.startswith(prefix) and item.get_closest_marker("xdist_group") is None:
                item.add_marker(pytest.mark.xdist_group(group))
                break


# Servers a test starts in this process (the fakes of the Messages API and of Slack) end with it.
# One left serving after its socket closed spins on that socket: it took a core and this process's
# GIL for the rest of a worker's tests (in-process transactions ran 10-20 times slower).
_SERVER_THREADS = ("fake-messages-api", "fake-slack", "fake-slack-ws")


@pytest.fixture(autouse=True)
def _no_fake_server_left_running() -> Iterator[None]:
    before = {t.ident for t in threading.enumerate()}
    yield
    started = [t for t in threading.enumerate() if t.name in _SERVER_THREADS and t.ident not in before]
    for thread in started:
        thread.join(timeout=5)  # a stopped server's loop may be a moment from its end
    left = [t.name for t in started if t.is_alive()]
    assert not left, f"a fake server this test started is still serving after it: {left} (stop it, once)"
