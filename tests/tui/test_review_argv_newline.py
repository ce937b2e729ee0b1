"""Review (tui): a newline inside one argument breaks "one argument per line" and hides arguments.

`ArgvView` (the approval dialog, the batch dialog, a target's detail) shows `clean(shlex.quote(arg))`,
and `clean` keeps newlines. `argv_lines` counts one line per argument (plus its `↪` wraps) and the
widget's height is that count, but the rendered Text breaks at every newline inside an argument,
so each newline pushes one line out of the widget: the *last* arguments of the command are cut
off. A runbook step `run: ["cutover", "--target", "{target}\\n", "--drop-all-tables"]` is shown as
`cutover / --target / 'web-02 / '` and `--drop-all-tables` is nowhere on the screen, while the
approver types the name and approves exactly that command.

`handoff approve` on a terminal has the same hole in another form: `show()` prints `visible(arg)`,
which keeps newlines, so one argument `--target=web-02\\n    --dry-run` is printed as two argument
lines, and the person reads a `--dry-run` flag that is not one.

The approval-dialog test goes in tests/tui/; the CLI test needs tests.conftest (ROOT, cli_env, read_pty).
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import ROOT, cli_env, read_pty
from tests.tui.helpers import LEDGER, fixed_clock, screen_text, settle
from tui.app import make_app
from tui.screens.approve import ApproveScreen

CUTOVER = 'run: ["cutover", "--target", "{target}", "--checkpoint", "{checkpoint}"]'


async def test_a_newline_in_one_argument_hides_no_other_argument_of_the_approval(tmp_path: Path) -> None:
    path = tmp_path / "ledger.yaml"
    text = LEDGER.replace(CUTOVER, 'run: ["cutover", "--target", "{target}\\n", "--drop-all-tables"]')
    assert text != LEDGER
    path.write_text(text, encoding="utf-8")
    before = path.read_bytes()
    app = make_app(str(path), clock=fixed_clock, watch=False, actor="alice")
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        assert app.main.table.move_to("web-02")
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ApproveScreen)
        assert app.screen.pending.argv == ["cutover", "--target", "web-02\n", "--drop-all-tables"]  # what runs
        screen = screen_text(app)
    assert "Command, exactly as it will run" in screen
    assert "--drop-all-tables" in screen, f"the approval dialog does not show the command's last argument:\n{screen}"
    assert path.read_bytes() == before


def test_the_approve_prompt_prints_one_line_per_argument(tmp_path: Path) -> None:
    data = {"task": "t",
            "targets": {"db-01": {"state": "awaiting_approval", "awaiting": "cutover", "awaiting_by": "agent"}},
            "runbook": {"steps": [{"name": "cutover", "from": "verified", "to": "done", "reversible": False,
                                   "run": ["/usr/local/sbin/fleet-cutover", "--cluster={target}\n    --dry-run"]}]}}
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    before = ledger.read_bytes()
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "engine.cli.main", "approve", str(ledger), "db-01", "--as", "alice"],
                            stdin=child, stdout=child, stderr=child, env=cli_env(XDG_STATE_HOME=str(tmp_path / "state")),
                            cwd=str(ROOT), close_fds=True)
    os.close(child)
    try:
        seen = read_pty(main, lambda s: b"to approve it" in s).decode()
        os.write(main, b"no\n")
        assert proc.wait(30) == 1
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(main)
    lines = seen.replace("\r\n", "\n").split("\n")
    start = next(i for i, line in enumerate(lines) if "would run:" in line)
    end = next(i for i, line in enumerate(lines) if line.startswith("  checkpoint:"))
    shown = lines[start + 1:end]
    # Two arguments, so two lines; a third line reading `    --dry-run` is a flag that does not exist.
    assert len(shown) == 2, f"the approve prompt shows {len(shown)} argument lines for a 2-argument command: {shown}"
    assert ledger.read_bytes() == before
