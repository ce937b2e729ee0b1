"""A stop that was asked for is on screen until the session ends: the header's session item says
"stopping (asked by NAME)" while the holder is live, and stops saying it once it is not."""

from __future__ import annotations

from pathlib import Path

from tests.tui.helpers import fixed_clock, settle
from tui.app import make_app
from tui.widgets.header import HeaderInfo, status_items

SESSION = """\
session: {id: s-1, host: bastion-1, pid: 999999, started_at: "2026-11-29T02:00:00Z", stop_requested: true, stop_requested_by: alice}
"""


def first_item(info: HeaderInfo) -> str:
    return status_items(info)[0].forms[0]


def test_the_session_item_says_stopping_while_live() -> None:
    """Live and asked to stop: 'stopping (asked by alice)'; not live: the plain word."""
    live = HeaderInfo(session_status="live", stop_requested_by="alice")
    assert first_item(live).startswith("● session stopping (asked by alice)")
    for status in ("none", "dead", "stale"):
        assert "stopping" not in first_item(HeaderInfo(session_status=status, stop_requested_by="alice"))
    assert "stopping" not in first_item(HeaderInfo(session_status="live"))


def test_the_asker_is_shown_as_data() -> None:
    """A name with markup or an escape is shown as text in the item."""
    item = first_item(HeaderInfo(session_status="live", stop_requested_by="[b]x\x1b[2J"))
    assert "[b]x␛[2J" in item and "\x1b" not in item


async def test_the_header_reads_the_request_from_the_ledger(ledger_path: Path) -> None:
    """The ledger's session.stop_requested_by reaches the header's facts from the same reading."""
    ledger_path.write_text(ledger_path.read_text(encoding="utf-8") + SESSION, encoding="utf-8")
    app = make_app(str(ledger_path), actor="bob", clock=fixed_clock, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.main.header_info().stop_requested_by == "alice"
