"""Snapshot tests (pytest-textual-snapshot) through the same factory the CLI uses.

Deterministic: fixed clock, a relative ledger path (the header shows it), no
file watching, fixed terminal sizes. Update with `pytest --snapshot-update`
after looking at the new SVGs.
"""

from __future__ import annotations

import fcntl
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tui.helpers import LEDGER, fixed_clock, settle
from tui.app import make_app


# One folder per test, the same in every run: an approval's hash binds the folder its step runs in, and
# the approval modal shows the hash. A lock keeps two suites on one machine (snapshots are one xdist
# group) apart.
FIXED = Path(tempfile.gettempdir()) / "handoff-tui-snapshots"


@pytest.fixture
def rel_ledger(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The test fleet at a relative path in a fixed folder, so the header and the hash read the same on every machine."""
    FIXED.mkdir(mode=0o700, exist_ok=True)
    home = FIXED / request.node.name
    with open(FIXED / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(home, ignore_errors=True)
        (home / "fleet").mkdir(parents=True)
        (home / "fleet" / "ledger.yaml").write_text(LEDGER, encoding="utf-8")
        monkeypatch.chdir(home)
        yield "fleet/ledger.yaml"
        monkeypatch.chdir(FIXED)
        shutil.rmtree(home, ignore_errors=True)


async def _settled(pilot) -> None:
    await settle(pilot)


async def _approve_web02(pilot) -> None:
    await settle(pilot)
    pilot.app.main.table.move_to("web-02")
    await pilot.press("a")
    await settle(pilot)


def test_main_screen_80x24(snap_compare, rel_ledger: str) -> None:
    """The main screen at 80x24: header, summary, note, first rows, footer."""
    app = make_app(rel_ledger, actor="alice", clock=fixed_clock, watch=False)
    assert snap_compare(app, terminal_size=(80, 24), run_before=_settled)


def test_main_screen_wide(snap_compare, rel_ledger: str) -> None:
    """The main screen at 140x40 with the side pane (invariants and log)."""
    app = make_app(rel_ledger, actor="alice", clock=fixed_clock, watch=False)
    assert snap_compare(app, terminal_size=(140, 40), run_before=_settled)


def test_read_only(snap_compare, rel_ledger: str) -> None:
    """Read-only mode: the badge, and a footer without mutating actions."""
    app = make_app(rel_ledger, read_only=True, clock=fixed_clock, watch=False)
    assert snap_compare(app, terminal_size=(100, 30), run_before=_settled)


def test_approval_modal(snap_compare, rel_ledger: str) -> None:
    """The approval modal of an irreversible step."""
    app = make_app(rel_ledger, actor="alice", clock=fixed_clock, watch=False)
    assert snap_compare(app, terminal_size=(120, 40), run_before=_approve_web02)


def test_invalid_ledger_banner(snap_compare, rel_ledger: str) -> None:
    """The file stops parsing: banner with file:line:col over the last good state."""
    app = make_app(rel_ledger, actor="alice", clock=fixed_clock, watch=False)

    async def break_it(pilot) -> None:
        await settle(pilot)
        Path(rel_ledger).write_text("task: x\ntargets: {a: [\n", encoding="utf-8")
        await pilot.press("R")
        await settle(pilot)

    assert snap_compare(app, terminal_size=(100, 30), run_before=break_it)


def test_note_conflict(snap_compare, rel_ledger: str) -> None:
    """The note editor's conflict view: mine and theirs side by side."""
    from engine.api import open_ledger

    app = make_app(rel_ledger, actor="alice", clock=fixed_clock, watch=False)

    async def conflict(pilot) -> None:
        await settle(pilot)
        await pilot.press("e")
        open_ledger(rel_ledger, actor="carol").set_note("carol: web-02 cutover postponed to 04:00Z")
        pilot.app.screen.query_one("TextArea").text = "alice: web-02 approved, cutover running"
        await pilot.press("ctrl+s")
        await settle(pilot)

    assert snap_compare(app, terminal_size=(120, 36), run_before=conflict)


def test_approval_modal_80x24(snap_compare, rel_ledger: str) -> None:
    """The approval dialog at 80x24: argv one per line, checkpoint, IRREVERSIBLE, invariants and the name field together."""
    app = make_app(rel_ledger, actor="alice", clock=fixed_clock, watch=False)
    assert snap_compare(app, terminal_size=(80, 24), run_before=_approve_web02)


def test_shrunk_ledger_banner(snap_compare, rel_ledger: str) -> None:
    """A file cut short after an engine write: the loud banner, and the missing targets kept as rows."""
    from engine.api import open_ledger

    handle = open_ledger(rel_ledger, actor="bob")
    handle.block("web-05", "hold")
    Path(handle.journal.path).unlink()  # its timestamps are today's: the log pane would differ from run to run
    lines = Path(rel_ledger).read_text("utf-8").splitlines(keepends=True)
    Path(rel_ledger).write_text("".join(line for line in lines if not line.lstrip().startswith(("web-06", "web-07"))),
                                encoding="utf-8")
    app = make_app(rel_ledger, actor="alice", clock=fixed_clock, watch=False)
    assert snap_compare(app, terminal_size=(100, 30), run_before=_settled)


def test_help_80x24(snap_compare, rel_ledger: str) -> None:
    """Help at 80x24: keys from the bindings, the long tail scrolls."""
    app = make_app(rel_ledger, actor="alice", clock=fixed_clock, watch=False)

    async def open_help(pilot) -> None:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=open_help)


def test_detail_80x24(snap_compare, rel_ledger: str) -> None:
    """The detail of web-02 at 80x24: the header stays, and what would run next is spelled out."""
    app = make_app(rel_ledger, actor="alice", clock=fixed_clock, watch=False)

    async def open_detail(pilot) -> None:
        await settle(pilot)
        pilot.app.main.table.move_to("web-02")
        await pilot.press("enter")
        await settle(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=open_detail)
