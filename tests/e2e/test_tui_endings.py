"""How the screen ends other than by a key (tui.endings): its terminal goes away with no
SIGHUP, or it gets SIGTERM.

The TUI runs on a pseudo-terminal it was never given as its controlling terminal (a new
session, as `setsid` or a supervisor starts it): when the terminal's other side closes,
the kernel sends nobody a hang-up. Without the app's own look at the terminal, Textual's
input thread reads end-of-file for ever at a full core and the process never ends. With
it, the screen ends as a hang-up ends it: by SIGHUP (the demo's script ended first), or,
where SIGHUP is ignored (`nohup`), by quitting. The ledger is never touched. Until it
looks, its frames go into a terminal that has gone: the screen's driver drops them
instead of blocking (Textual's writer thread dies of the first failed write).

SIGTERM (in tmux, a real terminal): the screen restores the terminal (no alternate screen,
no mouse reports left on), ends the demo's script and session, and then ends by SIGTERM.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import RUNBOOK_LEDGER
from tests.e2e.conftest import GONE_WITHIN, ROOT, group_alive, start_demo, tui_argv, wait_gone
from tui.endings import FrameWriter

pytestmark = pytest.mark.e2e

ENDS_WITHIN = 20.0  # seconds after the terminal closes (the app looks once a second; a loaded machine is slow)


class Orphaned:
    """A process on a pseudo-terminal that is not its controlling terminal."""

    def __init__(self, argv: list[str], tmp_path: Path, ignore_hangup: bool = False) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TEXTUAL", "NO_COLOR", "COLORTERM"))}
        env.update(TERM="xterm-256color", LANG="C.UTF-8", LC_ALL="C.UTF-8", PYTHONPATH=str(ROOT),
                   XDG_STATE_HOME=str(tmp_path / "state"))

        def setup() -> None:
            if ignore_hangup:
                signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as nohup leaves it

        # start_new_session: setsid() and no TIOCSCTTY, so the pty is nobody's controlling terminal.
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=str(ROOT),
                                     start_new_session=True, close_fds=True, preexec_fn=setup)
        os.close(slave)
        self.output = bytearray()

    def read_until(self, marker: bytes, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while marker not in self.output:
            left = deadline - time.monotonic()
            assert left > 0 and self.proc.poll() is None, (
                f"{marker!r} never drawn (exit {self.proc.poll()}): {bytes(self.output[-400:])!r}")
            if select.select([self.master], [], [], min(left, 0.5))[0]:
                try:
                    self.output += os.read(self.master, 1 << 16)
                except OSError:
                    pass

    def wait_watching(self, timeout: float = 30.0) -> None:
        """Wait (bounded) until the screen's watch on the ledger's folder is armed (an inotify watch
        among its descriptors): its workers have started by then (the journal's follower first,
        then the watch, from the same first-frame callback)."""
        deadline = time.monotonic() + timeout
        while not self._inotify_watches():
            assert time.monotonic() < deadline and self.proc.poll() is None, (
                f"the screen never armed its watch on the ledger (exit {self.proc.poll()})")
            time.sleep(0.05)

    def _inotify_watches(self) -> int:
        found = 0
        for info in Path(f"/proc/{self.proc.pid}/fdinfo").iterdir():
            try:
                found += info.read_text().count("inotify wd:")
            except OSError:
                continue  # closed while we looked
        return found

    def close_terminal(self) -> None:
        os.close(self.master)
        self.master = -1

    def wait(self, timeout: float = ENDS_WITHIN) -> int | None:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        if self.master >= 0:
            os.close(self.master)
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def _ledger(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    """The small fleet in its own folder; its folder's files as bytes."""
    folder = tmp_path / "fleet"
    folder.mkdir()
    path = folder / "ledger.yaml"
    path.write_text(RUNBOOK_LEDGER, encoding="utf-8")
    return path, _files(folder)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of `pid` so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_terminal_that_goes_away_ends_the_screen_as_a_hang_up(tmp_path: Path) -> None:
    ledger, before = _ledger(tmp_path)
    app = Orphaned(tui_argv(ledger, "--as", "night-shift"), tmp_path)
    try:
        app.read_until(b"db-1")
        app.wait_watching()  # the first frame is up and its workers have started (the watch, the journal)
        app.close_terminal()
        code = app.wait()
        assert code is not None, (
            f"the screen still runs {ENDS_WITHIN:.0f} s after its terminal went away "
            f"({_cpu_seconds(app.proc.pid):.1f} s of CPU so far)")
        assert code == -signal.SIGHUP, f"exit {code}: the screen must end as a hang-up ends it"
    finally:
        app.kill()
    assert _files(ledger.parent) == before, "the screen changed the ledger's folder"


def test_with_hang_ups_ignored_it_quits(tmp_path: Path) -> None:
    """Under `nohup` SIGHUP is ignored: the screen quits on its own (exit 0)."""
    ledger, before = _ledger(tmp_path)
    app = Orphaned(tui_argv(ledger, "--as", "night-shift"), tmp_path, ignore_hangup=True)
    try:
        app.read_until(b"db-1")
        app.wait_watching()
        app.close_terminal()
        code = app.wait()
        assert code is not None, f"the screen still runs {ENDS_WITHIN:.0f} s after its terminal went away"
        assert code == 0, f"exit {code}"
    finally:
        app.kill()
    assert _files(ledger.parent) == before


# The screen's own driver, started and stopped as Textual's app does, writing 100 frames into
# a terminal that has gone (stdin elsewhere, so the start does not stop at the hung-up tty).
DRAWS_INTO_A_GONE_TERMINAL = """
import asyncio, sys
from tui.app import make_app

async def draw() -> None:
    app = make_app(sys.argv[1], watch=False)
    driver = app.driver_class(app)
    driver.start_application_mode()
    for _ in range(100):
        driver.write("\\x1b[H" + "db-1 done " * 50)
    driver.stop_application_mode()
    driver.close()

asyncio.run(draw())
print("ended", flush=True)
"""


def test_frames_drawn_into_a_terminal_that_has_gone_do_not_block_the_screen(tmp_path: Path) -> None:
    """Textual's writer thread dies of the first write that fails (EIO) and its queue holds 30
    writes, so the 31st frame would hang the screen before it looks at its terminal (the CI
    run where the demo never ended). The screen's driver drops them."""
    ledger, before = _ledger(tmp_path)
    master, slave = os.openpty()
    os.close(master)  # the terminal has gone before the first frame: every write fails
    try:
        done = subprocess.run([sys.executable, "-c", DRAWS_INTO_A_GONE_TERMINAL, str(ledger)], cwd=str(ROOT),
                              env={**os.environ, "PYTHONPATH": str(ROOT), "XDG_STATE_HOME": str(tmp_path / "state")},
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, timeout=ENDS_WITHIN)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the driver still blocks {ENDS_WITHIN:.0f} s after 100 frames into a terminal that has gone")
    finally:
        os.close(slave)
    assert (done.returncode, done.stdout) == (0, b"ended\n")
    assert _files(ledger.parent) == before


def test_a_full_non_blocking_terminal_gets_every_frame_whole() -> None:
    """A program sharing the terminal turned O_NONBLOCK on, and the terminal is full (a slow
    SSH link): the frames wait and arrive whole, in order; the terminal is not taken for gone."""
    master, slave = os.openpty()
    fcntl.fcntl(slave, fcntl.F_SETFL, fcntl.fcntl(slave, fcntl.F_GETFL) | os.O_NONBLOCK)
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST  # the bytes as written (no newline translation)
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    stream = open(slave, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 (the fd is closed below)
    terminal = FrameWriter(stream)
    frames = [f"\x1b[H frame {i} " + "█ db-1 done " * 2000 + "\n" for i in range(20)]  # 480 KB, past any pty buffer
    writer = threading.Thread(target=lambda: [terminal.write(f) for f in frames])
    try:
        writer.start()
        time.sleep(0.5)  # the terminal fills; nobody reads yet
        assert writer.is_alive() and not terminal.gone
        expected = "".join(frames).encode("utf-8")
        got = bytearray()
        deadline = time.monotonic() + 30
        while len(got) < len(expected) and time.monotonic() < deadline:
            if select.select([master], [], [], 0.5)[0]:
                got += os.read(master, 1 << 16)
        writer.join(10)
        assert not writer.is_alive() and not terminal.gone
        assert bytes(got) == expected, f"{len(got)} of {len(expected)} bytes arrived, or not in order"
    finally:
        stream.close()
        os.close(slave)
        os.close(master)


@pytest.mark.parametrize("nohup", [False, True], ids=["hang-up", "nohup"])
def test_the_demo_ends_with_its_terminal(tmp_path: Path, nohup: bool) -> None:
    """The demo's script and its agent session do not run on with nobody watching (under
    `nohup` too: the screen quits, and ends the demo on its way out though it can no longer say so)."""
    folder = tmp_path / "demo"
    app = Orphaned([sys.executable, "-m", "tui.main", "--demo", str(folder), "--as", "newcomer"], tmp_path,
                   ignore_hangup=nohup)
    pgid = None
    try:
        app.read_until(b"session running", timeout=60)
        pgid = int((folder / "director.pid").read_text())
        assert group_alive(pgid)
        app.close_terminal()
        code = app.wait(ENDS_WITHIN + GONE_WITHIN)  # under nohup, quitting waits for a running demo step
        assert code == (0 if nohup else -signal.SIGHUP), f"the demo's screen did not end with its terminal (exit {code})"
        assert wait_gone(pgid), "the demo's script or its session still runs after its terminal went away"
    finally:
        app.kill()
        if pgid is not None and group_alive(pgid):
            os.killpg(pgid, signal.SIGKILL)


def _program_pid(tmux) -> int:
    """The program in the pane (the pane's shell runs it as its one child, tests.e2e.conftest.Tmux)."""
    shell = int(tmux.display("#{pane_pid}"))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        children = Path(f"/proc/{shell}/task/{shell}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.05)
    raise AssertionError("the pane's shell started no program")


def _exit_or_stacks(tmux, pid: int, timeout: float) -> int:
    """The program's exit status; if it does not end in `timeout` s, fail with where each of
    its threads is (faulthandler, on the SIGABRT sent then; the program runs with
    PYTHONFAULTHANDLER=1): seen once in a loaded full run, never reproduced alone."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if tmux.status_file.exists() and tmux.status_file.read_text().strip():
            return int(tmux.status_file.read_text())
        time.sleep(0.05)
    os.kill(pid, signal.SIGABRT)
    time.sleep(2.0)
    stacks = tmux.tmux("capture-pane", "-p", "-S", "-2000", check=False).stdout
    pytest.fail(f"the program did not exit {timeout:g} s after SIGTERM; its threads then:\n{stacks}")


def test_sigterm_restores_the_terminal_then_ends_by_the_signal(tmux, tmp_path: Path) -> None:
    ledger, before = _ledger(tmp_path)
    tmux.start(tui_argv(ledger, "--as", "night-shift"),
               env={"XDG_STATE_HOME": str(tmp_path / "state"), "PYTHONFAULTHANDLER": "1"})
    tmux.wait_for("db-1", timeout=30)
    assert tmux.display("#{alternate_on}") == "1"  # the screen is up, in the alternate screen
    pid = _program_pid(tmux)
    os.kill(pid, signal.SIGTERM)
    assert _exit_or_stacks(tmux, pid, 30) == 128 + signal.SIGTERM
    modes = tmux.display("#{alternate_on} #{mouse_any_flag} #{mouse_sgr_flag} #{keypad_flag}")
    assert modes == "0 0 0 0", f"the terminal was left as the screen had it (alternate, mouse, keypad): {modes}"
    assert "night-shift" not in tmux.screen(), tmux.screen()
    assert _files(ledger.parent) == before


def test_sigterm_ends_the_demo(tmux, tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    pgid = start_demo(tmux, folder, tmp_path)
    try:
        os.kill(_program_pid(tmux), signal.SIGTERM)
        assert tmux.wait_exit(timeout=GONE_WITHIN + 10) == 128 + signal.SIGTERM, tmux.screen()
        assert wait_gone(pgid), "the demo's script or its session still runs after SIGTERM"
    finally:
        if group_alive(pgid):
            os.killpg(pgid, signal.SIGKILL)
