"""Review (tui): characters that draw nothing still reach the approval dialog and `handoff status` raw.

engine.codec.textsafe.CONTROL_CODES lists the invisible characters one by one, and misses several
that terminals (glibc wcwidth, tmux) and Rich/Textual (cell width 0) draw as nothing: the Mongolian
free variation selectors U+180B..U+180D and U+180F (U+180E is listed), the Khmer inherent vowels
U+17B4/U+17B5, the deprecated format controls U+206A..U+206F (the isolates U+2066..U+2069 are
listed, the range stops there), the interlinear annotation controls U+FFF9..U+FFFB, the shorthand
format controls U+1BCA0..U+1BCA3, the musical format controls U+1D173..U+1D17A and the Egyptian
hieroglyph format controls U+13430... (all of Unicode's Default_Ignorable_Code_Point or category
Cf). A runbook step `run: ["cutover\\u180b", ...]` runs a different program than `cutover`
(argv never goes through a shell: the name is looked up as it is on PATH), yet the approval
dialog shows `cutover` and the approver types the name and approves it.

Goes in tests/tui/ (uses tests.tui.helpers; the CLI half uses tests.conftest's handoff).
"""

from __future__ import annotations

from pathlib import Path

from rich.cells import cell_len

from tests.conftest import cli_env, handoff
from tests.tui.helpers import LEDGER, fixed_clock, screen_text, settle
from tui.app import make_app
from tui.screens.approve import ApproveScreen

# One of each kind the list misses; each is drawn as zero cells by Rich (so by the TUI).
UNSEEN = ["\u180b", "\u180f", "\u17b4", "\u206a", "\u206f", "\ufff9", "\U0001bca0", "\U0001d173", "\U00013430"]


def _ledger(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.yaml"
    hidden = "".join(f"\\U{ord(c):08x}" for c in UNSEEN)  # as YAML escapes, in a double-quoted scalar
    text = LEDGER.replace('run: ["cutover", "--target", "{target}"', f'run: ["cutover{hidden}", "--target", "{{target}}"')
    assert text != LEDGER
    path.write_text(text, encoding="utf-8")
    return path


async def test_the_approval_dialog_spells_out_every_character_that_draws_nothing(tmp_path: Path) -> None:
    # Why it matters: the TUI (Rich) gives each no cell at all, so `cutover` + them looks like `cutover`.
    for char in UNSEEN:
        assert cell_len(f"cutover{char}") == len("cutover"), f"U+{ord(char):04X}"
    path = _ledger(tmp_path)
    before = path.read_bytes()
    app = make_app(str(path), clock=fixed_clock, watch=False, actor="alice")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.main.table.move_to("web-02")
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ApproveScreen)
        assert app.screen.pending.argv[0] == "cutover" + "".join(UNSEEN)  # what would run
        screen = screen_text(app)
    raw = [f"U+{ord(c):04X}" for c in UNSEEN if c in screen]
    assert raw == [], f"the approval dialog shows `cutover` while the program is `cutover` + {raw}"
    assert path.read_bytes() == before


def test_handoff_status_spells_out_every_character_that_draws_nothing(tmp_path: Path) -> None:
    path = _ledger(tmp_path)
    out = handoff("status", path, env=cli_env(XDG_STATE_HOME=str(tmp_path / "state")))
    assert out.returncode == 0, out.stderr
    line = next(line for line in out.stdout.splitlines() if "would run:" in line and "web-02" in line)
    raw = [f"U+{ord(c):04X}" for c in UNSEEN if c in line]
    assert raw == [], f"handoff status shows `{line.strip()}` with these characters raw: {raw}"
