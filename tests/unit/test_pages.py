"""Pages that were sent, and only those: the log says "Paging X" only when a page went
out, says plainly when nobody could be paged, and journals a failed page (after its
retries) with its own kind, `page_failed`, for the TUI to show."""

from __future__ import annotations

from tests.unit.session_kit import journal, resume, tool, tool_ledger

GATED = [{"name": "cutover", "from": "queued", "to": "done", "run": tool("say", "cutover")}]


def _gate_line(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if "requires approval" in line)


def test_with_no_notify_entry_nobody_is_said_to_be_paged(tmp_path):
    """No `notify:`: the gate line says nobody was paged, and no line claims a page."""
    ledger = tool_ledger(tmp_path, GATED, {"a": {}})
    result = resume(ledger, world=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert _gate_line(result.stdout).endswith("a: cutover requires approval (irreversible). Nobody was paged.")
    assert "Paging" not in result.stdout
    [none] = [r for r in journal(ledger) if r["kind"] == "page_none"]
    assert none["event"] == "approval_needed" and "no notify: entry" in none["msg"]


def test_a_pager_that_keeps_failing_is_retried_then_journaled_as_failed(tmp_path):
    """A pager command that exits 1 is tried three times; the failure is a `page_failed` record, and nobody is said to be paged."""
    pager = [{"run": ["{python}", "-c", "import sys; print('no route to pager'); sys.exit(1)"]}]
    ledger = tool_ledger(tmp_path, GATED, {"a": {}}, notify=pager)
    result = resume(ledger, world=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert _gate_line(result.stdout).endswith("Nobody was paged.")
    [failed] = [r for r in journal(ledger) if r["kind"] == "page_failed"]
    assert failed["attempts"] == 3 and failed["error"] == "exit 1: no route to pager" and failed["ok"] is False
    assert "failed after 3 tries: exit 1: no route to pager" in result.stdout


def test_a_notifier_that_does_not_listen_for_the_event_pages_nobody(tmp_path):
    """`on: [drift]` does not hear approval_needed: said plainly, not 'Paging'."""
    pager = [{"run": tool("say"), "on": ["drift"]}]
    ledger = tool_ledger(tmp_path, GATED, {"a": {}}, notify=pager)
    result = resume(ledger, world=tmp_path)
    assert "Paging" not in result.stdout
    [none] = [r for r in journal(ledger) if r["kind"] == "page_none"]
    assert "no notify: entry listens for approval_needed" in none["msg"]
    assert not (ledger.parent / "argv.log").exists() or "say" not in (ledger.parent / "argv.log").read_text()


def test_a_page_that_went_out_is_said_as_the_article_says_it(tmp_path):
    """A working pager: `Paging test-oncall.` and a `page` record with ok."""
    ledger = tool_ledger(tmp_path, GATED, {"a": {}}, notify=[{"run": tool("say")}])
    result = resume(ledger, world=tmp_path)
    assert _gate_line(result.stdout).endswith("a: cutover requires approval (irreversible). Paging test-oncall.")
    [sent] = [r for r in journal(ledger) if r["kind"] == "page"]
    assert sent["ok"] is True and sent["attempts"] == 1
