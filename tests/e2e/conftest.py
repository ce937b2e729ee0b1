"""Helpers for the end-to-end TUI tests: a tmux driver, ledger copies, and reading the result.

`Tmux` runs one command in a detached tmux session on a private socket (`-L`), so
parallel or leftover test servers never collide, with the status line off so the
pane is exactly the size asked for. Waiting is always a bounded poll of
`capture-pane`, never a bare sleep. The `tmux` fixture kills its server in a
finalizer whatever the test did.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "ledgers" / "demo"
POLL = 0.05  # seconds between two looks at the screen


def tui_argv(ledger: Path | str, *args: str) -> list[str]:
    """The real `handoff-tui` of this venv as an absolute argv (no shell PATH lookup)."""
    return [sys.executable, "-m", "tui.main", str(ledger), *args]


class Tmux:
    """One tmux server on a private socket, one session, one pane."""

    def __init__(self, folder: Path, width: int = 80, height: int = 24) -> None:
        self.socket = f"handoff-e2e-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.width, self.height = width, height
        self.config = folder / "tmux.conf"
        # No status line (the pane gets every row); keep a dead pane so its exit code can be read.
        # set-clipboard on: an application's OSC 52 lands in tmux's paste buffer, where a test can read it.
        self.config.write_text("set -g status off\nset -g remain-on-exit on\nset -g history-limit 2000\n"
                               "set -g set-clipboard on\n", encoding="utf-8")
        self.status_file = folder / "tmux-exit-status"
        self.started = False

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """Run one tmux command against this server."""
        return subprocess.run(["tmux", "-L", self.socket, "-f", str(self.config), *args],
                              capture_output=True, text=True, check=check, timeout=10)

    def start(self, argv: list[str], env: dict[str, str] | None = None, cwd: Path | str = ROOT) -> None:
        """Start `argv` in an 80x24 (or given size) pane, with exactly `env` added to a clean environment."""
        base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root"),
                "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TERM": "xterm-256color"}
        base.update(env or {})
        # `env -i`: the pane gets no COLORTERM, NO_COLOR or TEXTUAL_* from whoever runs the tests.
        # The shell records the program's exit status (128+N for signal N) for `wait_exit`.
        record = f'"$@"; echo $? > {shlex.quote(str(self.status_file))}'
        command = shlex.join(["env", "-i", *(f"{k}={v}" for k, v in base.items()), "sh", "-c", record, "sh", *argv])
        self.tmux("new-session", "-d", "-x", str(self.width), "-y", str(self.height), "-c", str(cwd), command)
        self.started = True

    def screen(self, escapes: bool = False) -> str:
        """What the pane shows now (with SGR escapes when `escapes`)."""
        args = ["capture-pane", "-p"] + (["-e"] if escapes else [])
        return self.tmux(*args).stdout

    def wait_for(self, want: str | Callable[[str], bool], timeout: float = 15.0, what: str = "") -> str:
        """Poll the screen until it contains `want` (or `want(screen)` holds); fail with the screen."""
        test = (lambda s: want in s) if isinstance(want, str) else want
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if test(screen):
                return screen
            if self.dead():
                break
            time.sleep(POLL)
        label = what or (want if isinstance(want, str) else "condition")
        pytest.fail(f"screen never showed {label!r} (pane dead: {self.dead()}):\n{screen}")

    def cursor(self) -> tuple[int, int]:
        """Where the terminal cursor is: Textual keeps it at the focused input's caret."""
        x, y = self.display("#{cursor_x},#{cursor_y}").split(",")
        return int(x), int(y)

    def wait_cursor(self, test: Callable[[str, int], bool], what: str, timeout: float = 10.0) -> None:
        """Poll until `test(line under the cursor, cursor column)` holds: the focus is where we want it.

        Focus moves through Textual's message queues, so keys sent right after a
        Tab or an Enter can land in the old field; tests wait on this first.
        """
        deadline = time.monotonic() + timeout
        line, x = "", 0
        while time.monotonic() < deadline:
            x, y = self.cursor()
            lines = self.screen().split("\n")
            line = lines[y] if y < len(lines) else ""
            if test(line, x):
                return
            time.sleep(POLL)
        pytest.fail(f"the cursor never reached {what}; it is at column {x} of {line!r}:\n{self.screen()}")

    def send(self, *keys: str) -> None:
        """Keys by tmux name (`Enter`, `C-s`, `Escape`, `/`)."""
        self.tmux("send-keys", *keys)

    def type(self, text: str) -> None:
        """Literal text, as typed."""
        self.tmux("send-keys", "-l", text)

    def display(self, fmt: str) -> str:
        """A tmux format for the pane (`#{pane_title}`, `#{pane_dead}`...)."""
        return self.tmux("display-message", "-p", fmt).stdout.rstrip("\n")

    def dead(self) -> bool:
        """True once the pane's command has ended (or the server is gone)."""
        result = self.tmux("display-message", "-p", "#{pane_dead}", check=False)
        return result.returncode != 0 or result.stdout.strip() == "1"

    def wait_exit(self, timeout: float = 10.0) -> int:
        """Wait for the pane's program to end; its exit status (128+N when killed by signal N)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.status_file.exists() and self.status_file.read_text().strip():
                return int(self.status_file.read_text())
            time.sleep(POLL)
        pytest.fail(f"the program did not exit; screen:\n{self.screen()}")

    def kill(self) -> None:
        if self.started:
            self.tmux("kill-server", check=False)
            self.started = False


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    """A private tmux server, killed afterwards whatever happened."""
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed; tests/run.sh installs it (apt-get install tmux)")
    driver = Tmux(tmp_path)
    try:
        yield driver
    finally:
        driver.kill()


def demo_with_db18_awaiting(folder: Path) -> Path:
    """A copy of the demo fleet where db-18's cutover waits on a human (asked by agent:test)."""
    folder.mkdir(parents=True, exist_ok=True)
    for item in DEMO.iterdir():
        if item.is_file():
            shutil.copy2(item, folder / item.name)
    path = folder / "ledger.yaml"
    text = path.read_text(encoding="utf-8")
    old = 'db-18: {state: replicating, checkpoint: "0/9A3F2C10",'
    assert old in text, "the demo ledger changed shape; update this helper"
    text = text.replace(old, 'db-18: {state: awaiting_approval, awaiting: cutover, awaiting_by: "agent:test", '
                             'checkpoint: "0/9A3F2C10",')
    path.write_text(text, encoding="utf-8")
    return path


def journal(ledger: Path) -> list[dict]:
    """Every journal record, read through the engine."""
    from engine.api import open_ledger

    records, _ = open_ledger(str(ledger), read_only=True).journal.read(0)
    return records


def listed(screen: str) -> list[str]:
    """Names in the target table's first column (the lines under its header)."""
    lines = screen.splitlines()
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("Target ")), None)
    if start is None:
        return []
    names = []
    for line in lines[start + 1:]:
        cell = line[3:].split(" ")[0].strip()  # after the gutter: cursor mark, attention bar, space
        if not cell or cell.startswith(("▊", "no target matches")):
            break
        names.append(cell)
    return names


def row_of(screen: str, name: str) -> str:
    """The table line showing target `name` ('' when not on screen)."""
    pattern = re.compile(rf"^(?:\x1b\[[0-9;]*m|\W)*{re.escape(name)}\s", re.M)
    match = pattern.search(screen)
    if match is None:
        return ""
    end = screen.find("\n", match.start())
    return screen[match.start(): end if end >= 0 else None]


NOTE_ADDITION = " Cutover of db-18 approved at shift change by the incoming operator."


def filter_to(term: Tmux, text: str, name: str) -> str:
    """`/`, type `text`, enter: only matching rows stay and the table has the focus on `name`."""
    term.send("/")  # the box takes the keys typed right behind it
    term.type(text)
    term.wait_for(lambda s: any(line.strip(" ▊▎") == text for line in s.splitlines()[-4:])
                  and [n for n in listed(s) if text in n] == listed(s) != [], what=f"the table filtered by {text!r}")
    term.send("Enter")  # keep the filter, back to the table
    # The table puts the terminal cursor on its selected row once it has the focus.
    term.wait_cursor(lambda line, x: row_of(line, name) != "", f"the {name} row (the table focused)")
    return term.screen()


def approve_db18_and_edit_note(term: Tmux, actor: str) -> None:
    """The operator's keys: filter to db-18, approve its cutover (typing the name), add to the note, quit.

    Asserts on the screen after every step; the caller checks the ledger and the journal.
    """
    first = term.wait_for("OPERATOR", timeout=20)
    assert f"OPERATOR: {actor}" in first
    term.wait_for(lambda s: "awaiting_approval" in row_of(s, "db-18") or "db-01" in s, what="the target table")

    screen = filter_to(term, "db-18", "db-18")
    assert "awaiting_approval" in row_of(screen, "db-18") and not row_of(screen, "db-17")

    term.send("a")
    # The dialog and the key bar below it are painted in turn: wait for both (under load a capture
    # fell between them, the dialog up and the bar still the table's).
    modal = term.wait_for(lambda s: "Type the target name" in s and "esc Cancel" in s.rstrip("\n").splitlines()[-1],
                          what="the approval modal and its keys")
    assert "Approve cutover on db-18" in modal and "IRREVERSIBLE" in modal and "checkpoint 0/9A3F2C10" in modal
    lines = modal.splitlines()
    comment = next(i for i, line in enumerate(lines) if "comment (optional" in line)
    assert "Approve" in lines[comment + 1] and "esc Cancel" in lines[-1], "the dialog and its keys must fit 80x24"
    term.type("db-1")  # a near miss; then Tab and Enter: muscle memory must not approve
    term.wait_cursor(lambda line, x: line[:x].rstrip().endswith("db-1"), "the end of db-1 in the confirm box")
    term.send("Tab")
    term.wait_cursor(lambda line, x: "comment (optional" in line, "the comment box")
    term.send("Enter")
    term.wait_for("Type the target name exactly to", what="the refusal to approve without the exact name")
    term.wait_cursor(lambda line, x: line[:x].rstrip().endswith("db-1"), "the confirm box (the focus went back to it)")
    term.send("Enter")  # Enter in the name box with a wrong name: the error stays, the focus too
    term.wait_for("(you typed 'db-1')", what="the error naming what was typed")
    term.wait_cursor(lambda line, x: line[:x].rstrip().endswith("db-1"), "the confirm box again")
    end_of_guess = term.cursor()[0]
    term.send("C-u")  # a binding: it runs after keys typed behind it, so wait for it first
    term.wait_cursor(lambda line, x: x <= end_of_guess - 4, "the start of the emptied confirm box")
    term.type("db-18")
    term.wait_cursor(lambda line, x: line[:x].rstrip().endswith("db-18"), "the end of db-18 in the confirm box")
    term.send("Tab")
    term.wait_cursor(lambda line, x: "comment (optional" in line, "the comment box")
    term.type("lag 1.4s, go")
    term.send("Enter")       # approve
    screen = term.wait_for(lambda s: "verified" in row_of(s, "db-18") and "Type the target" not in s,
                           what="db-18 verified after the approval")
    assert f"approved by {actor}" in row_of(screen, "db-18")

    term.send("e")
    editor = term.wait_for("What is in flight", what="the note editor")
    top = next(i for i, line in enumerate(editor.splitlines()) if "What is in flight" in line)
    # The caret goes to the end of the note, below the editor's hint line.
    term.wait_cursor(lambda line, x: term.cursor()[1] > top + 1 and "▊" in line, "the note editor's text area")
    term.type(NOTE_ADDITION)
    term.send("C-s")
    saved = term.wait_for(lambda s: "Edit handoff note" not in s, what="the editor closed")
    if "n expands" in saved:  # a short screen shows the note in one line: n opens it whole
        term.send("n")
    screen = term.wait_for(lambda s: "Edit handoff note" not in s and "approved at shift" in s.replace("\n", " "),
                           what="the saved note in the note panel")

    term.send("q")
    assert term.wait_exit() == 0, term.screen()


def check_db18_approved_with_note(ledger: Path, actor: str) -> None:
    """The ledger and the journal after `approve_db18_and_edit_note`."""
    import getpass

    import yaml

    data = yaml.safe_load(ledger.read_text(encoding="utf-8"))
    db18 = data["targets"]["db-18"]
    assert db18["state"] == "verified"
    [approval] = db18["approvals"]
    assert approval["by"] == actor and approval["user"] == getpass.getuser()
    assert approval["step"] == "cutover" and approval["checkpoint"] == "0/9A3F2C10"
    assert approval["comment"] == "lag 1.4s, go"
    assert data["handoff_note"].rstrip().endswith(NOTE_ADDITION.strip())
    assert data["handoff_note"].startswith("Started db-18 at 01:58Z.")
    assert data["handoff_note_by"] == actor

    records = journal(ledger)
    approvals = [r for r in records if r.get("kind") == "approval"]
    assert [(r["target"], r["actor"], r["user"], r["step"]) for r in approvals] == [("db-18", actor, getpass.getuser(), "cutover")]
    notes = [r for r in records if r.get("kind") == "note"]
    assert len(notes) == 1 and notes[0]["actor"] == actor


# -- the demo's processes (tests/e2e/test_tui_demo.py, test_tui_endings.py) --

GONE_WITHIN = 45.0  # seconds: a running demo step (at most a few seconds) finishes, the session hands off


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_gone(pgid: int) -> bool:
    deadline = time.monotonic() + GONE_WITHIN
    while time.monotonic() < deadline:
        if not group_alive(pgid):
            return True
        time.sleep(0.1)
    return False


def start_demo(tmux, folder: Path, tmp_path: Path) -> int:
    """Start the demo at 120x40, wait for its session, return the script's process group."""
    tmux.width, tmux.height = 120, 40
    tmux.start([sys.executable, "-m", "tui.main", "--demo", str(folder), "--as", "newcomer"],
               env={"XDG_STATE_HOME": str(tmp_path / "state")})
    tmux.wait_for("OPERATOR: newcomer", timeout=20)
    tmux.wait_for("session running", timeout=30, what="the demo session's heartbeat in the header")
    return int((folder / "director.pid").read_text())
