"""A served viewer's process (what `handoff-tui serve` starts per browser tab): the link's
?target= / ?filter= open that view or say in one line why not; "since you last looked" is
kept per viewer, and a tab that shows an older reading never moves its viewer's mark back.
The end-to-end run in a real browser is tests/e2e/test_tui_serve_viewers.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.api import open_ledger
from tests.tui.helpers import screen_text, settle, wait_until
from tui.app import make_app
from tui.screens.detail import DetailScreen
from tui.viewer import ServedView


@pytest.fixture(autouse=True)
def short_look(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tab counts as a look after 1 ms here (the default is 15 s)."""
    monkeypatch.setenv("HANDOFF_SERVE_SEEN_AFTER", "0.001")


def served(ledger: Path, viewer: str | None = "user-alice-0123456789abcdef", **link: str):
    return make_app(str(ledger), read_only=True, watch=False, served=ServedView(viewer, **link))


def marks(state: Path) -> list[Path]:
    """The TUI's per-user marks (the engine keeps other state beside them, under handoff/)."""
    return sorted((state / "handoff-tui").glob("*.json"))


def warnings(app) -> list[str]:
    return [n.message for n in app._notifications if n.severity == "warning"]


async def test_a_target_link_opens_its_detail(ledger_path: Path) -> None:
    """?target=web-04: the cursor on web-04 and its detail screen on top."""
    app = served(ledger_path, target="web-04")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen) and app.screen.target_name == "web-04"
        assert "ticket PLAT-1" in screen_text(app)
        assert app.main.table.cursor_name == "web-04"
        assert warnings(app) == []


async def test_a_filter_link_filters_the_table(ledger_path: Path) -> None:
    app = served(ledger_path, filter="state:failed")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.main.table.visible_names() == ["web-03", "web-07"]
        assert warnings(app) == []


@pytest.mark.parametrize("link, says", [
    ({"target": "db-99"}, "Link: no target 'db-99' in this ledger."),
    ({"filter": "is:bogus"}, "Link: filter 'is:bogus' not applied (is: takes attention, drifted, outside)."),
    ({"target": "\x1b[31mweb-01\n"}, "Link: no target '␛[31mweb-01 ⏎ ' in this ledger."),
    ({"filter": "state:queued", "target": "web-03"}, "Link: 'web-03' is not shown under the filter."),
])
async def test_a_link_that_cannot_be_followed_says_so_in_one_line(ledger_path: Path, link: dict[str, str], says: str) -> None:
    """Unknown target, bad filter, an escape sequence (shown, never sent): the app opens normally, one line says why."""
    app = served(ledger_path, **link)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert not isinstance(app.screen, DetailScreen)
        assert warnings(app) == [says]
        assert "\n" not in says and "\x1b" not in screen_text(app)


async def visit(ledger: Path, viewer: str | None) -> str:
    """One tab of `viewer`, opened and closed; the screen's text while open."""
    app = served(ledger, viewer)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        text = " ".join(screen_text(app).split())
        await pilot.press("q")
    return text


async def test_each_viewer_has_their_own_mark(ledger_path: Path, private_state: Path) -> None:
    """alice looks, bob looks, a change, alice looks again: bob still sees it, alice does not."""
    alice, bob = "user-alice-0123456789abcdef", "user-bob-0123456789abcdef"
    await visit(ledger_path, alice)
    await visit(ledger_path, bob)
    open_ledger(str(ledger_path), actor="carol").reject("web-02", "lag too high")
    assert "web-02: awaiting_approval → blocked" in await visit(ledger_path, alice)
    assert "web-02: awaiting_approval → blocked" not in await visit(ledger_path, alice)
    assert "web-02: awaiting_approval → blocked" in await visit(ledger_path, bob)
    keys = sorted(json.loads(p.read_text())["key"].rsplit("#", 1)[1] for p in marks(private_state))
    assert keys == [f"viewer={alice}", f"viewer={bob}"]  # one mark per viewer, none for the OS user


async def test_an_anonymous_viewer_keeps_no_mark(ledger_path: Path, private_state: Path) -> None:
    """A token viewer without a browser id: no mark read or written (never the OS user's)."""
    await visit(ledger_path, None)
    assert marks(private_state) == []


async def test_an_older_tab_never_moves_the_mark_back(ledger_path: Path) -> None:
    """Tab A opens, the ledger changes, tab B opens and closes (mark: the new reading), then A
    closes still showing the old reading: the mark stays, and a third tab lists nothing old."""
    alice = "user-alice-0123456789abcdef"
    await visit(ledger_path, alice)
    old_tab = served(ledger_path, alice)  # watch=False: it keeps the reading it opened with
    async with old_tab.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        open_ledger(str(ledger_path), actor="carol").reject("web-02", "lag too high")
        assert "web-02: awaiting_approval → blocked" in await visit(ledger_path, alice)
        await pilot.press("q")
    assert "web-02: awaiting_approval → blocked" not in await visit(ledger_path, alice)


async def test_a_glance_is_not_a_look(ledger_path: Path, private_state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tab closed before HANDOFF_SERVE_SEEN_AFTER seconds (a wrong link) leaves the mark alone."""
    monkeypatch.setenv("HANDOFF_SERVE_SEEN_AFTER", "600")
    await visit(ledger_path, "user-alice-0123456789abcdef")
    assert marks(private_state) == []


async def test_a_slow_read_of_the_mark_never_hides_what_changed(ledger_path: Path, private_state: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The viewer's previous mark is read after the first paint, in a worker: on a loaded
    machine that took longer than the look's wait, and the look's save moved the mark to
    the new reading before it was read, so "since you last looked" listed nothing (the
    browser run saw it). The look counts from when the changes are on screen."""
    import time

    alice = "user-alice-0123456789abcdef"
    await visit(ledger_path, alice)
    open_ledger(str(ledger_path), actor="carol").reject("web-02", "lag too high")
    monkeypatch.setenv("HANDOFF_SERVE_SEEN_AFTER", "0.2")  # after the screen has mounted, before the read ends
    app = served(ledger_path, alice)
    load = app.controller.load_user_state

    def slow_load():
        time.sleep(1.0)
        return load()

    app.controller.load_user_state = slow_load
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        text = " ".join(screen_text(app).split())
        await wait_until(pilot, lambda: app._looked)  # shown for SEEN_AFTER: this tab's look counts
        await pilot.press("q")
    assert "Since you last looked" in text and "web-02: awaiting_approval → blocked" in text, text
    assert "web-02: awaiting_approval → blocked" not in await visit(ledger_path, alice)  # and that was a look
