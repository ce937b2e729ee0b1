"""The history journal (every revision the engine wrote) is checked like the journal.

Secrets in the ledger are redacted in it, as in the journal. A record of `<ledger>.history.jsonl` changed by hand (same length: only its hash can
tell) is a `handoff check` problem at its line and a `handoff journal --verify` break,
exit 1 both, in text and JSON, and neither writes anything.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.conftest import handoff

LEDGER = """\
task: history chain
owner_shift: test-oncall
targets:
  db-1: {state: queued}
"""


def _files(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_an_edited_history_record_is_a_check_problem_and_a_verify_break(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(LEDGER)
    for args in (("pause", "--reason", "freeze"), ("unpause",), ("note", "--set", "db-1 next")):
        assert handoff(args[0], ledger, *args[1:], "--as", "alice").returncode == 0
    assert handoff("journal", ledger, "--verify").returncode == 0
    history = Path(f"{ledger}.history.jsonl")
    lines = history.read_text().splitlines(keepends=True)
    [at] = [i for i, line in enumerate(lines) if '"why":"freeze"' in line]
    lines[at] = lines[at].replace('"why":"freeze"', '"why":"frozen"')
    history.write_text("".join(lines))
    before = _files(tmp_path)
    check = handoff("check", ledger)
    assert check.returncode == 1, check.stdout
    assert f"{history}:{at + 1}" in check.stdout and "history journal chain broken at seq" in check.stdout, check.stdout
    verify = handoff("journal", ledger, "--verify")
    assert verify.returncode == 1
    assert f"{history}: line {at + 1} (seq " in verify.stdout and "changed after it was written" in verify.stdout
    assert f"{history}: chain BROKEN (1 break)" in verify.stdout
    as_json = handoff("journal", ledger, "--verify", "--json")
    assert as_json.returncode == 1
    body = json.loads(as_json.stdout)
    assert body["ok"] is False and body["breaks"] == [] and body["history"]["ok"] is False
    assert [b["line"] for b in body["history"]["breaks"]] == [at + 1]
    assert _files(tmp_path) == before


def test_a_secret_in_the_ledger_is_redacted_in_the_history_and_in_show(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(LEDGER.replace("{state: queued}", '{state: failed, reason: "check said password=HandPw4"}'))
    assert handoff("pause", ledger, "--reason", "freeze", "--as", "alice").returncode == 0
    history = Path(f"{ledger}.history.jsonl").read_text()
    assert '"full":' in history and "HandPw4" not in history and "password=" in history
    shown = handoff("show", ledger, "--at", "1")
    assert shown.returncode == 0 and "HandPw4" not in shown.stdout and "reason:" in shown.stdout
