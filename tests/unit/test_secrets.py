"""Secrets stay out of everything people can read: the journal, the ledger's stored fields,
status, pages, notes and errors; never masked in the argv that runs. A probe or metric
that prints a secret is a failed probe or reading, never a masked checkpoint."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.audit.redact import MASK, Redactor
from tests.conftest import ROOT, RUNBOOK_LEDGER, cli_env
from tests.conftest import handoff as cli
from tests.unit.session_kit import handoff, journal, load, resume, tool, tool_ledger

PAGER = [{"run": ["{python}", "{ledger_dir}/tool.py", "say"]}]


@pytest.mark.parametrize(
    "text, secret",
    [
        ('{"password": "x-Json-Pw"}', "x-Json-Pw"),
        ("pg_dump --password FlagPw1 app", "FlagPw1"),
        ("curl -H 'Authorization: Basic dXNlcjpCYXNpY1B3' https://h", "dXNlcjpCYXNpY1B3"),
        ("X-Api-Key: key-HeaderKey42", "key-HeaderKey42"),
        ("redis://:RedisPw8@cache:6379/0", "RedisPw8"),
        ("token glpat-AbCdEfGhIjKlMnOpQrSt", "glpat-AbCdEfGhIjKlMnOpQrSt"),
        ("key AIzaSyA5_iVawFQ8ABuTZNUdcwERLJv_a_p4wtM", "AIzaSyA5_iVawFQ8ABuTZNUdcwERLJv_a_p4wtM"),
        ('PGPASSWORD="two words" psql', "two words"),
        ("psql: FATAL: password=Hunter2Leak", "Hunter2Leak"),
        ("connected postgresql://app:VerifyPw9@db/app", "VerifyPw9"),
    ],
)
def test_the_reproduced_pattern_gaps_are_closed(text, secret):
    """Each shape the review found in clear is masked, and only the secret part of it."""
    out = Redactor().text(text)
    assert secret not in out and MASK in out
    assert Redactor().find(text) is not None


def test_a_private_key_whose_begin_line_was_cut_off_is_masked():
    """A 4,000-byte output tail that starts mid-key still journals none of its lines."""
    body = ["MIIEpAIBAAKCAQEA" + f"{i:04d}" + "x7Qk" * 20 for i in range(50)]
    key = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END RSA PRIVATE KEY-----\nexit 1: boom\n"
    tail = key[-4000:]
    assert not tail.startswith("-----BEGIN")
    out = Redactor().text(tail)
    assert not any(line in out for line in body[1:])
    assert "exit 1: boom" in out
    assert Redactor().find(tail) == "a private key"


def test_a_key_printed_without_its_end_line_is_masked_to_the_end():
    """A step killed mid-print leaves BEGIN and no END: everything after BEGIN is masked."""
    out = Redactor().text("dumping\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq\nhkiG9w0BAQEFAASC")
    assert out == "dumping\n" + MASK


def test_ordinary_operations_text_is_left_alone():
    """LSNs, lags, hosts, tickets, plain URLs, counts of tokens and `user=` stay as written."""
    r = Redactor()
    for text in ("replication lag 1.4s at 0/9A3F2C10", "PLAT-4412 https://db-18.internal:5432/app", "user=postgres",
                 "budget: 40000 tokens, 3 secrets rotated", "pg_upgrade --check passed (0 warnings)", "disk-04 ok"):
        assert r.text(text) == text and r.find(text) is None


@pytest.mark.timeout(60)
def test_redaction_is_linear_on_a_one_megabyte_token():
    """Unbroken 1 MB tokens of the shapes that made a backtracking pattern quadratic finish at once
    (20 s of CPU for 100 KB before; quadratic would be hours at 1 MB: the timeout catches it)."""
    r = Redactor(["corp-[0-9]{6}"])
    mb = 1_000_000
    shapes = [
        "a." * (mb // 2),
        "sk-" * (mb // 3),
        "a://" * (mb // 4),
        "A" * mb,
        "-----BEGIN PRIVATE KEY-----\n" + ("A" * 63 + "\n") * (mb // 64),
        ("A" * 63 + "\n") * (mb // 64) + "-----END PRIVATE KEY-----\n",
    ]
    for shape in shapes:
        out = r.text(shape)
        assert len(out) <= len(shape)
    assert r.text(shapes[4]) == MASK
    assert r.text(shapes[5]) == MASK + "\n-----END PRIVATE KEY-----\n"


def test_a_failing_steps_output_never_reaches_the_ledger_status_or_page(tmp_path):
    """The reproduced leak: `psql: FATAL: password=Hunter2Leak` became the reason, the status and the page."""
    steps = [{"name": "check", "from": "queued", "to": "checked", "reversible": True,
              "run": ["{python}", "-c", "print('psql: FATAL: password=' + 'Hunter2' + 'Leak'); raise SystemExit(2)"]}]
    ledger = tool_ledger(tmp_path, steps, {"a": {}}, notify=PAGER)
    result = resume(ledger, world=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    target = load(ledger)["targets"]["a"]
    assert target["state"] == "failed" and MASK in target["reason"]
    status = handoff("status", str(ledger), "--json", world=tmp_path)
    pages = (ledger.parent / "argv.log").read_text()
    for where in (ledger.read_text(), status.stdout, result.stdout, pages, Path(str(ledger) + ".journal.jsonl").read_text()):
        assert "Hunter2Leak" not in where
    assert "a: check failed" in pages  # the page went out, masked


def test_a_probe_that_prints_a_secret_is_a_failed_probe_not_a_checkpoint(tmp_path):
    """A verify printing a URL with a password blocks the target with a clear reason; no checkpoint is stored."""
    steps = [{"name": "link", "from": "queued", "to": "linked", "reversible": True, "run": tool("say", "linked"),
              "verify": ["{python}", "-c", "print('connected postgresql://app:' + 'Verify' + 'Pw9@db/app')"]}]
    ledger = tool_ledger(tmp_path, steps, {"a": {}})
    result = resume(ledger, world=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    target = load(ledger)["targets"]["a"]
    assert target["state"] == "blocked" and "checkpoint" not in target
    assert "looks like a secret (a URL with a password)" in target["reason"]
    assert "VerifyPw9" not in ledger.read_text() and "VerifyPw9" not in result.stdout


def test_a_metric_error_is_masked_in_the_pause_and_a_secret_reading_is_unreadable(tmp_path):
    """A failing metric's output line reaches `paused.why` masked; a reading that prints a secret is refused."""
    steps = [{"name": "check", "from": "queued", "to": "checked", "reversible": True, "run": tool("say", "ok")}]
    failing = ["{python}", "-c", "print('auth failed: password=' + 'Metric' + 'Pw1'); raise SystemExit(1)"]
    ledger = tool_ledger(tmp_path, steps, {"a": {}}, invariants=["pause if lag > 5"], metrics={"lag": {"run": failing}})
    result = resume(ledger, world=tmp_path)
    assert result.returncode == 4, result.stdout + result.stderr
    why = load(ledger)["paused"]["why"]
    assert "MetricPw1" not in why and MASK in why
    assert "MetricPw1" not in ledger.read_text() + result.stdout

    secret = ["{python}", "-c", "print('token=' + 'Metric' + 'Tok2'); print(1.5)"]
    data = load(ledger)
    data.pop("paused")
    data["metrics"]["lag"]["run"] = secret
    ledger.write_text(json.dumps(data))
    again = resume(ledger, world=tmp_path)
    assert again.returncode == 4
    assert "looks like a secret" in load(ledger)["paused"]["why"]
    assert "MetricTok2" not in ledger.read_text() + again.stdout


def test_the_approval_page_is_masked_but_the_approved_argv_runs_as_written(tmp_path):
    """The approval-needed page carries the argv with its secret masked; the step itself gets the real value."""
    steps = [{"name": "cutover", "from": "queued", "to": "done", "run": tool("say", "PGPASSWORD=GatePw7")}]
    ledger = tool_ledger(tmp_path, steps, {"a": {}}, notify=PAGER)
    assert resume(ledger, world=tmp_path).returncode == 0
    page = json.loads((ledger.parent / "argv.log").read_text().splitlines()[0])
    assert page[0] == "say" and "requires approval" in page[-1]
    assert "GatePw7" not in page[-1] and MASK in page[-1]
    assert handoff("approve", str(ledger), "a", "--as", "carol", world=tmp_path).returncode == 0
    assert resume(ledger, world=tmp_path).returncode == 0
    ran = [json.loads(line) for line in (ledger.parent / "argv.log").read_text().splitlines()]
    assert ["say", "PGPASSWORD=GatePw7"] in ran
    assert "GatePw7" not in json.dumps(load(ledger)["targets"]) + Path(str(ledger) + ".journal.jsonl").read_text()


def test_what_people_type_is_stored_masked(fleet):
    """Notes, reasons and pause reasons are masked in the ledger itself, not only in the journal."""
    assert cli("note", fleet, "--set", "use PGPASSWORD=NotePw3 for the replica").returncode == 0
    assert cli("block", fleet, "db-5", "--reason", "vendor token=BlockTok9 leaked").returncode == 0
    assert cli("pause", fleet, "--reason", "rotating; old key AIzaSyA5_iVawFQ8ABuTZNUdcwERLJv_a_p4wtM").returncode == 0
    text = fleet.read_text()
    for secret in ("NotePw3", "BlockTok9", "AIzaSyA5_iVawFQ8ABuTZNUdcwERLJv_a_p4wtM"):
        assert secret not in text
    assert text.count(MASK) == 3


def test_a_secret_written_into_the_file_by_hand_is_not_shown_by_status(fleet):
    """status (text and JSON) masks what it shows, even a secret typed into the YAML."""
    fleet.write_text(RUNBOOK_LEDGER.replace('reason: "check exited 1"', 'reason: "check said password=HandPw4"'))
    for args in ((), ("--json",)):
        result = cli("status", fleet, *args)
        assert result.returncode == 0 and "HandPw4" not in result.stdout
    assert MASK in json.loads(cli("status", fleet, "--json").stdout)["targets"]["db-4"]["reason"]


def test_a_postgresql_password_never_reaches_an_error():
    """A URL's password is masked in the CLI's one-line error (here: nothing listens on port 1)."""
    result = cli("status", "postgresql://app:UrlPw5@127.0.0.1:1/test#fleet")
    assert result.returncode == 2
    assert "UrlPw5" not in result.stderr and "cannot reach PostgreSQL" in result.stderr


def test_an_invalid_redact_pattern_is_one_line_with_its_place(tmp_path):
    """`redact: ['abc((']` is reported with the pattern and its line:col by check, status and the TUI; nothing is written."""
    ledger = tmp_path / "fleet.yaml"
    ledger.write_text(RUNBOOK_LEDGER.replace("task: small-fleet\n", "task: small-fleet\nredact:\n- 'corp-[0-9]+'\n- 'abc(('\n"))
    before = ledger.read_bytes()
    for args in (("check",), ("status",), ("pause", "--reason", "x")):
        result = cli(*args[:1], ledger, *args[1:])
        assert result.returncode == 2, result.stderr
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
        assert f"{ledger}:4:3:" in result.stderr and "'abc(('" in result.stderr
    tui = subprocess.run([sys.executable, "-m", "tui.main", str(ledger)], capture_output=True, text=True, env=cli_env(),
                         cwd=str(ROOT), timeout=60)
    assert tui.returncode == 2 and f"{ledger}:4:3:" in tui.stderr and tui.stderr.count("\n") == 1
    assert ledger.read_bytes() == before
