"""The `handoff` CLI contract, run as real processes: exit codes 0/1/2, the JSON shape of
`status`, and each command's effect on the ledger and the journal."""

from __future__ import annotations

import json
import re

from engine.audit.journal import journal_path
from tests.conftest import handoff


def _journal(path):
    with open(journal_path(str(path)), encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def test_status_json_shape(article):
    """status --json has task, revision, counts, targets (every field), awaiting, touched, invariants, handoff_note."""
    result = handoff("status", article, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert {"task", "revision", "counts", "targets", "awaiting", "touched", "invariants", "handoff_note"} <= set(data)
    assert data["task"] == "pg14-to-pg16-fleet-upgrade" and data["revision"] == 0
    assert data["counts"] == {"done": 1, "replicating": 1, "queued": 1, "blocked": 1}
    assert data["targets"]["db-18"]["checkpoint"] == "0/9A3F2C10"
    assert {"state", "checkpoint", "last_action", "next_action", "verified_at", "reason", "changed_at", "in_flight",
            "awaiting", "awaiting_by", "awaiting_since", "approvals", "evidence"} <= set(data["targets"]["db-19"])
    assert data["awaiting"] == [] and data["touched"] == 1
    assert [i["status"] for i in data["invariants"]] == ["ok", "ok", "unknown"]
    assert data["invariants"][1] == {"text": "never touch more than 2 dbs concurrently", "status": "ok", "value": "touched 1/2",
                                     "stale": False}
    assert data["handoff_note"].startswith("Started db-18 at 01:58Z.")


def test_status_text_has_the_articles_summary(article):
    """status prints the article's summary words, touched count, invariants and the note; it writes nothing."""
    before = article.read_bytes()
    result = handoff("status", article)
    assert result.returncode == 0
    assert "1 done, 1 replicating, 1 queued, 1 blocked" in result.stdout
    assert "touched: 1" in result.stdout and "Do NOT retry pg_upgrade" in result.stdout
    assert article.read_bytes() == before
    assert sorted(p.name for p in article.parent.iterdir()) == ["ledger.yaml"]


def test_status_lists_awaiting_approvals(fleet):
    """An awaiting target appears in `awaiting` with its step and asker."""
    data = json.loads(handoff("status", fleet, "--json").stdout)
    assert data["awaiting"] == [{"target": "db-1", "step": "cutover", "by": "agent", "since": "2026-09-10T02:11Z",
                                 "argv": ["echo", "cutover", "db-1", "0/9A3F2C10"], "checkpoint": "0/9A3F2C10",
                                 "hash": data["awaiting"][0]["hash"]}]
    assert re.fullmatch(r"[0-9a-f]{16}", data["awaiting"][0]["hash"])


def test_check_exit_codes(tmp_path, article):
    """check: 0 valid; 1 for a violated invariant or an inconsistent state; --strict makes unenforced a problem; 2 unreadable."""
    assert handoff("check", article).returncode == 0
    over = article.read_text().replace("db-19: {state: queued}", "db-19: {state: replicating}").replace(
        "db-17: {state: done,", "db-17: {state: verified,")
    bad = tmp_path / "over.yaml"
    bad.write_text(over)
    result = handoff("check", bad, "--json")
    assert result.returncode == 1 and any("touched 3/2" in p for p in json.loads(result.stdout)["problems"])
    odd = tmp_path / "odd.yaml"
    odd.write_text("task: t\ntargets:\n  a: {state: awaiting_approval}\n")
    assert handoff("check", odd).returncode == 1
    loose = tmp_path / "loose.yaml"
    loose.write_text("task: t\ninvariants:\n- be nice\ntargets:\n  a: {state: queued}\n")
    assert handoff("check", loose).returncode == 0
    strict = handoff("check", loose, "--strict")
    assert strict.returncode == 1 and "unenforced" in strict.stdout
    assert handoff("check", tmp_path / "missing.yaml").returncode == 2


def test_approve_then_unapprove(fleet):
    """approve exits 0 and journals who (name and OS user) and the hash; unapprove withdraws it; a second unapprove exits 1."""
    result = handoff("approve", fleet, "db-1", "--comment", "lag 1.4s", "--as", "bob")
    assert result.returncode == 0, result.stderr
    assert "cutover approved by bob" in result.stdout
    data = json.loads(handoff("status", fleet, "--json").stdout)
    approval = data["targets"]["db-1"]["approvals"][0]
    assert approval["by"] == "bob" and approval["user"] and approval["checkpoint"] == "0/9A3F2C10"
    assert data["targets"]["db-1"]["state"] == "verified" and data["revision"] == 1
    record = _journal(fleet)[-1]
    assert record["kind"] == "approval" and record["actor"] == "bob" and record["rev"] == 1 and record["hash"] == approval["hash"]
    assert handoff("unapprove", fleet, "db-1", "--as", "bob").returncode == 0
    again = handoff("unapprove", fleet, "db-1", "--as", "bob")
    assert again.returncode == 1 and "no unused approval" in again.stderr


def test_refused_approval_exits_1_and_changes_nothing(fleet):
    """Self-approval by the asker is refused with exit 1 and the reason; the file is unchanged."""
    before = fleet.read_bytes()
    result = handoff("approve", fleet, "db-1", "--as", "agent")
    assert result.returncode == 1 and "someone else must approve" in result.stderr
    assert fleet.read_bytes() == before


def test_reject_blocks(fleet):
    """reject --reason sets blocked with `rejected by WHO: REASON`."""
    assert handoff("reject", fleet, "db-1", "--reason", "lag too high", "--as", "carol").returncode == 0
    target = json.loads(handoff("status", fleet, "--json").stdout)["targets"]["db-1"]
    assert target["state"] == "blocked" and target["reason"] == "rejected by carol: lag too high"


def test_note_print_set_and_stdin(fleet):
    """note prints the note; --set TEXT and --set - (stdin) set it with the author; each edit is journaled."""
    assert handoff("note", fleet).stdout.strip() == "first note"
    assert handoff("note", fleet, "--set", "db-1 waits on carol", "--as", "bob").returncode == 0
    assert handoff("note", fleet, "--set", "-", "--as", "dave", input="from stdin\nline two\n").returncode == 0
    out = handoff("note", fleet).stdout
    assert out.startswith("# by dave at ") and "from stdin\nline two" in out
    assert [r["kind"] for r in _journal(fleet)] == ["note", "note"]


def test_note_edit_uses_editor(fleet, tmp_path):
    """note --edit runs $EDITOR on the note and saves what it leaves."""
    editor = tmp_path / "ed.sh"
    editor.write_text("#!/bin/sh\necho 'edited in editor' > \"$1\"\n")
    editor.chmod(0o755)
    from tests.conftest import cli_env

    result = handoff("note", fleet, "--edit", env=cli_env(EDITOR=str(editor)))
    assert result.returncode == 0, result.stderr
    assert handoff("note", fleet).stdout.strip().endswith("edited in editor")


def test_pause_unpause(fleet):
    """pause --reason then unpause; a second unpause exits 1."""
    assert handoff("pause", fleet, "--reason", "error spike").returncode == 0
    assert json.loads(handoff("status", fleet, "--json").stdout)["paused"]["why"] == "error spike"
    assert handoff("unpause", fleet).returncode == 0
    assert handoff("unpause", fleet).returncode == 1


def test_retry_irreversible_needs_force_and_reason(fleet):
    """retry of db-3 (failed in irreversible link) exits 1; --force without --reason exits 1; with both exits 0."""
    first = handoff("retry", fleet, "db-3")
    assert first.returncode == 1 and "--force --reason" in first.stderr
    assert handoff("retry", fleet, "db-3", "--force").returncode == 1
    assert handoff("retry", fleet, "db-3", "--force", "--reason", "link never started").returncode == 0
    assert json.loads(handoff("status", fleet, "--json").stdout)["targets"]["db-3"]["state"] == "checked"
    assert handoff("retry", fleet, "db-4").returncode == 0


def test_block_unblock(fleet):
    """block --reason and unblock --to STATE --reason round-trip; a bad --to state exits 1 naming the choices."""
    assert handoff("block", fleet, "db-5", "--reason", "freeze").returncode == 0
    bad = handoff("unblock", fleet, "db-5", "--to", "nowhere", "--reason", "x")
    assert bad.returncode == 2 and f"no state named 'nowhere' in {fleet}" in bad.stderr, bad.stderr  # not a state: usage
    bad = handoff("unblock", fleet, "db-5", "--to", "awaiting_approval", "--reason", "x")
    assert bad.returncode == 1 and "choose one of" in bad.stderr
    assert handoff("unblock", fleet, "db-5", "--to", "queued", "--reason", "freeze over").returncode == 0
    assert json.loads(handoff("status", fleet, "--json").stdout)["targets"]["db-5"]["state"] == "queued"


def test_usage_errors_exit_2_with_one_line(fleet):
    """Unknown command, missing argument, blank --reason: exit 2, one line, no traceback."""
    for args in (("frobnicate",), ("approve", fleet), ("block", fleet, "db-5", "--reason", "  "), ()):
        result = handoff(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert "Traceback" not in result.stderr and result.stderr.strip().count("\n") == 0, result.stderr


def test_journal_text_and_json(fleet):
    """journal prints one line per record; --json prints parseable records."""
    handoff("pause", fleet, "--reason", "r1")
    handoff("unpause", fleet)
    text = handoff("journal", fleet).stdout.splitlines()
    assert len(text) == 2 and "ledger paused by" in text[0]
    records = [json.loads(line) for line in handoff("journal", fleet, "--json").stdout.splitlines()]
    assert [r["kind"] for r in records] == ["pause", "unpause"]


def test_schema_is_json_schema():
    """schema prints a JSON Schema naming task and targets as required."""
    result = handoff("schema")
    schema = json.loads(result.stdout)
    assert result.returncode == 0 and set(schema["required"]) == {"task", "targets"}
    assert "$schema" in schema


def test_control_characters_in_ledger_text_are_shown_not_executed(tmp_path):
    """A note with a terminal escape is printed with the escape made visible."""
    path = tmp_path / "l.yaml"
    path.write_text('task: t\ntargets:\n  a: {state: queued}\nhandoff_note: "\\e[2Jgone"\n')
    out = handoff("note", path).stdout
    assert "\x1b" not in out and "\\x1b[2Jgone" in out


def test_status_and_check_agree_a_stale_reading_is_not_ok(tmp_path):
    """An 8-minute-old metric reading: `status` says unknown (stale); `check` does not read it at all."""
    from datetime import datetime, timedelta, timezone

    path = tmp_path / "ledger.yaml"
    path.write_text("task: t\ninvariants:\n  - pause if error_rate_5m > 0.5%\nmetrics:\n  error_rate_5m: {run: [echo, '0.02%']}\n"
                    "targets:\n  a: {state: queued}\n", encoding="utf-8")
    old = (datetime.now(timezone.utc) - timedelta(minutes=8)).strftime("%Y-%m-%dT%H:%M:%SZ")
    # What a session wrote 8 minutes ago (the journal is append-only JSON lines).
    with open(journal_path(str(path)), "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"ts": old, "kind": "metric", "msg": "error_rate_5m = 0.02%", "actor": "s",
                             "metric": "error_rate_5m", "value": 0.02, "percent": True}) + "\n")
    status = handoff("status", path)
    assert status.returncode == 0, status.stderr
    assert "invariant unknown (stale) pause if error_rate_5m > 0.5%" in status.stdout
    assert "(8m ago): older than max_age 5m" in status.stdout
    data = json.loads(handoff("status", path, "--json").stdout)
    assert [(i["status"], i["stale"]) for i in data["invariants"]] == [("unknown", True)]
    # `check` judges the file, not the clock: it reads no metric without --live (tests/unit/test_check_live.py).
    check = handoff("check", path)
    assert check.returncode == 0 and "stale" not in check.stdout
