"""The HTML audit report shows the command that ran: a bidi override or a tag character in
it must be spelled out (as the CLI and the TUI spell it), not handed to the browser, which
would draw the rest of the argument backwards or not at all."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from engine.codec.textsafe import CONTROL_CODES
from tests.conftest import handoff

LEDGER = """\
task: audit-bidi
runbook:
  steps:
  - {name: link, from: queued, to: done, run: ["echo", "{target}", "--mode=\\u202edrawkcab", "x\\U000E0041y"]}
targets:
  db-1: {state: queued}
"""


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _ok(*args) -> str:
    result = handoff(*args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_the_html_report_spells_out_bidi_and_invisible_characters_of_the_argv(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(LEDGER)
    _ok("resume", ledger)
    _ok("approve", ledger, "db-1", "--as", "alice")
    _ok("resume", ledger)
    page = tmp_path / "report.html"
    _ok("report", ledger, "--format", "html", "-o", page)
    html = page.read_text(encoding="utf-8")
    parser = _Cells()
    parser.feed(html)
    text = "".join(parser.text)
    assert "--mode=" in text  # the row is there
    raw = sorted({f"U+{ord(c):04X}" for c in text if ord(c) in CONTROL_CODES})
    assert not raw, f"the report hands these to the browser as they are: {raw}"
