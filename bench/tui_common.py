"""Shared pieces of the TUI benchmarks: a real terminal (a pty), the apps to start in it, memory.

How "first paint" is measured, the same way for every app: the parent takes the
time, starts the process in a fresh pseudo-terminal (120x40, TERM=xterm-256color)
and reads what the process writes to it until a marker text arrives: for the
empty app its one label, for handoff-tui the first target's name (the table row;
Textual writes a whole frame at once, so the row's bytes mean the frame is out).
That covers interpreter start, imports, reading the ledger and the first frame
reaching the terminal. No hook inside the app is needed.

The "empty Textual app" is `bench/tui_empty_app.py`: an `App` with one `Static`,
started with the same interpreter, environment and terminal.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import statistics
import struct
import subprocess
import sys
import termios
import time
from typing import Sequence

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
if BENCH not in sys.path:
    sys.path.insert(0, BENCH)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from common import write_engine_ledger  # noqa: E402  (bench/common.py: the shared generated fleet)

EMPTY_APP = os.path.join(BENCH, "tui_empty_app.py")
EMPTY_MARKER = b"empty-app-ready"
COLS, ROWS = 120, 40


def env_for_app(state_dir: str) -> dict[str, str]:
    """One environment for every app: same terminal, no colour overrides, private XDG state."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEXTUAL", "NO_COLOR", "COLORTERM"))}
    env.update(TERM="xterm-256color", LANG="C.UTF-8", LC_ALL="C.UTF-8", XDG_STATE_HOME=state_dir,
               COLUMNS=str(COLS), LINES=str(ROWS), PYTHONPATH=ROOT)
    return env


def make_fleet(folder: str, n: int) -> str:
    """A ledger of `n` generated targets (bench/common.py's fleet) in `folder`; its path.

    Then one engine transaction, so the folder is as a session leaves it (with the
    store's parse sidecar): the state an operator's TUI opens at shift change.
    """
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "ledger.yaml")
    write_engine_ledger(path, n)
    from engine.api import open_ledger

    def touch(ledger):
        ledger.handoff_note = (ledger.handoff_note or "") + "Benchmark fleet.\n"

    open_ledger(path, actor="bench").store.transact(touch)
    return path


def tui_argv(ledger: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "tui.main", ledger, "--as", "bench", *extra]


def empty_argv(*extra: str) -> list[str]:
    return [sys.executable, EMPTY_APP, *extra]


class PtyApp:
    """A process on its own pseudo-terminal; we read everything it draws."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], cwd: str = ROOT) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(list(argv), stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd,
                                     start_new_session=True, close_fds=True)
        os.close(slave)
        self.buffer = bytearray()

    def read_until(self, marker: bytes, timeout: float = 60.0, start: int = 0) -> float:
        """Read the terminal until `marker` shows up after byte `start`; the perf_counter time it did."""
        deadline = time.perf_counter() + timeout
        while True:
            if self.buffer.find(marker, start) >= 0:
                return time.perf_counter()
            left = deadline - time.perf_counter()
            if left <= 0 or self.proc.poll() is not None:
                tail = bytes(self.buffer[-600:]).decode("utf-8", "replace")
                raise RuntimeError(f"{marker!r} never drawn (exit {self.proc.poll()}); last output: {tail!r}")
            ready, _, _ = select.select([self.master], [], [], min(left, 0.5))
            if ready:
                try:
                    self.buffer += os.read(self.master, 1 << 16)
                except OSError:
                    pass

    def drain(self, seconds: float) -> None:
        """Keep reading (so the app never blocks on a full pty) for `seconds`."""
        end = time.perf_counter() + seconds
        while (left := end - time.perf_counter()) > 0:
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    self.buffer += os.read(self.master, 1 << 16)
                except OSError:
                    return

    def memory_kib(self) -> tuple[int, int]:
        """(VmRSS, VmHWM) of the process, in KiB, from /proc."""
        fields = {}
        with open(f"/proc/{self.proc.pid}/status") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    fields[key] = int(value.split()[0])
        return fields["VmRSS"], fields["VmHWM"]

    def close(self) -> None:
        """SIGTERM, reading the terminal meanwhile as a terminal does: the app's last frames and
        the terminal's restore would otherwise fill the pty and block its exit; SIGKILL after 5 s."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            end = time.perf_counter() + 5
            while self.proc.poll() is None and time.perf_counter() < end:
                self.drain(0.05)
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        os.close(self.master)


def first_paint(argv: Sequence[str], marker: bytes, env: dict[str, str]) -> float:
    """Seconds from process start to `marker` on the terminal."""
    app = PtyApp(argv, env)
    try:
        return app.read_until(marker) - app.started
    finally:
        app.close()


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"
