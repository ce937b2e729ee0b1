"""Ledger text (and a served link's text) never reaches the terminal without `tui.text`.

Textual sends a notification's message and a `Text` built from a plain str to the terminal as
they are: `markup=False` stops markup, not escape sequences. A review found three paths that
skipped `clean`/`clean_line` (mended: `HandoffApp.notify` cleans every toast):

- the detail screen's "Would run next" when the step cannot be rendered: the engine's message
  quotes the step's name, in --read-only and in `serve` too (where a `?target=` link opens the
  detail by itself);
- the operator's toasts: "NAME is STATE; only ... can be rejected", and the done-messages of
  requests ("Blocked NAME", "Approved STEP on NAME", ...);
- a served link's `?filter=`: a C1 CSI (U+009B) or a bidi override is refused as C0 controls are.

Each test reads what would be painted (segments) or the toast's own message, and asks that no
character `engine.api.visible` would make visible is still there.
"""

from __future__ import annotations

from pathlib import Path

from engine.codec.textsafe import CONTROL_CODES
from tests.escape_ledgers import STATE, UNRENDERABLE
from tests.tui.helpers import LEDGER, fixed_clock, settle
from tui.app import make_app
from tui.screens.detail import DetailScreen
from tui.viewer import ServedView


def raw_controls(text: str) -> list[str]:
    return sorted({f"U+{ord(c):04X}" for c in text if ord(c) in CONTROL_CODES and c not in "\n\t"})


def painted(app) -> str:
    """Every segment's text of the current screen (what the driver writes, styles aside)."""
    return "".join(seg.text for strip in app.screen._compositor.render_strips() for seg in strip)


def write(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "fleet"
    folder.mkdir()
    path = folder / "ledger.yaml"
    path.write_text(text, encoding="utf-8")
    return path


async def test_read_only_detail_of_an_unrenderable_step_paints_no_escape(tmp_path: Path) -> None:
    """--read-only, Enter on the target: the "could not render" line shows the step's name made visible."""
    ledger = write(tmp_path, UNRENDERABLE)
    app = make_app(str(ledger), read_only=True, clock=fixed_clock, watch=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert "could not render the next command" in painted(app)
        assert raw_controls(painted(app)) == [], "the step's name reached the terminal with its escapes"


async def test_a_served_target_link_to_it_paints_no_escape(tmp_path: Path) -> None:
    """serve: `?target=a` opens the same detail without a key."""
    ledger = write(tmp_path, UNRENDERABLE)
    app = make_app(str(ledger), read_only=True, watch=False, served=ServedView(None, target="a"))
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert raw_controls(painted(app)) == []


async def test_a_refusal_toast_shows_the_state_made_visible(tmp_path: Path) -> None:
    """Operator: x on a target in a state with an OSC in its name; the toast must not carry it raw."""
    ledger = write(tmp_path, STATE)
    app = make_app(str(ledger), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        for key in ("x", "a", "r"):
            await pilot.press(key)
            await settle(pilot)
        messages = [str(n.message) for n in app._notifications]
        assert any("only awaiting_approval targets can be rejected" in m for m in messages), messages
        assert [raw_controls(m) for m in messages] == [[] for _ in messages], messages


async def test_a_done_toast_shows_the_target_name_made_visible(tmp_path: Path) -> None:
    """Operator: a request on a target whose name carries an OSC; its "done" toast quotes the name raw."""
    name = "web\x1b]0;pwned\x07"
    ledger = write(tmp_path, LEDGER.replace("web-05:", '"web\\e]0;pwned\\a":'))
    app = make_app(str(ledger), actor="alice", clock=fixed_clock, watch=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        assert app.main.table.move_to(name)
        await pilot.press("b")
        await settle(pilot)
        await pilot.press(*"maintenance", "enter")
        await settle(pilot)
        messages = [str(n.message) for n in app._notifications]
        assert any(m.startswith("Blocked web") for m in messages), messages
        assert [raw_controls(m) for m in messages] == [[] for _ in messages], messages


async def test_copy_command_refusal_toast_paints_no_escape(tmp_path: Path) -> None:
    """Y on a target whose next step cannot be rendered (allowed in --read-only): 'Nothing copied: ...'."""
    ledger = write(tmp_path, UNRENDERABLE)
    app = make_app(str(ledger), read_only=True, clock=fixed_clock, watch=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await pilot.press("Y")
        await settle(pilot)
        messages = [str(n.message) for n in app._notifications]
        assert any(m.startswith("Nothing copied") for m in messages), messages
        assert [raw_controls(m) for m in messages] == [[] for _ in messages], messages


async def test_a_served_filter_link_with_c1_and_bidi_paints_them_visible(ledger_path: Path) -> None:
    """serve: `?filter=web%C2%9B2J%E2%80%AE`: a C1 CSI and an RTL override must not be painted raw
    (the viewer module's promise: the link's values are shown with escapes made visible)."""
    app = make_app(str(ledger_path), read_only=True, watch=False, served=ServedView(None, filter="web\x9b2J\u202ex"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.pause(0.2)
        assert raw_controls(painted(app)) == []
