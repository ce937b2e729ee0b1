"""Steps run for real: timeouts, retries, gates, invariants and metrics, secrets, hostile names."""

from __future__ import annotations

import json
from pathlib import Path

from session_kit import handoff, journal, load, resume, tool, tool_ledger


def _one(name: str, run: list[str], **extra) -> dict:
    return {"name": name, "from": "queued", "to": "checked", "reversible": True, "run": run, **extra}


def test_timeout_kills_the_step_and_fails_the_target(tmp_path: Path) -> None:
    """A step past its timeout is killed and the target is failed with the reason and evidence."""
    ledger = tool_ledger(tmp_path, [_one("check", tool("sleep", "30"), timeout=0.5)], {"a": {}})
    result = resume(ledger, world=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    a = load(ledger)["targets"]["a"]
    assert a["state"] == "failed" and "timed out" in a["reason"]
    assert a["evidence"]["timed_out"] is True and a["evidence"]["step"] == "check"
    assert "a: check failed: timed out" in result.stdout


def test_reversible_step_is_retried(tmp_path: Path) -> None:
    """A reversible step with retries runs again after a failure."""
    ledger = tool_ledger(tmp_path, [_one("check", tool("flaky", "{target}"), retries=1)], {"a": {}})
    result = resume(ledger, world=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert load(ledger)["targets"]["a"]["state"] == "checked"
    assert "a: retrying check (attempt 2/2, reversible)" in result.stdout
    ends = [r for r in journal(ledger) if r["kind"] == "step_end"]
    assert [r["exit_code"] for r in ends] == [1, 0]


def test_irreversible_step_is_gated_then_runs_once_and_is_never_retried(tmp_path: Path) -> None:
    """No approval: awaiting_approval and a page. Approved: it runs once; failing, it is not retried.
    (`retries` on an irreversible step is refused before a session starts: tests/unit/test_check_findings.py.)"""
    steps = [{"name": "link", "from": "queued", "to": "linked", "reversible": False, "run": tool("fail", "{target}")}]
    pager = [{"run": ["{python}", "{ledger_dir}/tool.py", "say"]}]
    ledger = tool_ledger(tmp_path, steps, {"a": {}}, notify=pager)
    first = resume(ledger, world=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    a = load(ledger)["targets"]["a"]
    assert a["state"] == "awaiting_approval" and a["awaiting"] == "link" and a["awaiting_by"].startswith("agent:")
    assert "a: link requires approval (irreversible). Paging test-oncall." in first.stdout
    argv_log = (ledger.parent / "argv.log").read_text().splitlines()
    page = json.loads(argv_log[0])
    assert page[0] == "say" and page[-1].startswith("[tool-test] a: link requires approval (irreversible)")
    assert not any(json.loads(line)[0] == "fail" for line in argv_log)
    assert handoff("approve", str(ledger), "a", "--as", "carol", world=tmp_path).returncode == 0
    second = resume(ledger, world=tmp_path)
    assert second.returncode == 0
    a = load(ledger)["targets"]["a"]
    assert a["state"] == "failed" and "may have half-happened" in a["next_action"]
    assert a["touched_at"]  # a failed irreversible step leaves it touched
    runs = [json.loads(line) for line in (ledger.parent / "argv.log").read_text().splitlines()]
    assert sum(1 for argv in runs if argv[0] == "fail") == 1
    (approval,) = a["approvals"]
    assert approval["used_at"] and approval["used_by"].startswith("agent:")


def test_secrets_never_reach_the_journal(tmp_path: Path) -> None:
    """Step output is redacted (defaults and the ledger's own patterns) before it is journaled."""
    ledger = tool_ledger(tmp_path, [_one("check", tool("say", "PGPASSWORD=hunter2", "id=ACME-42-SECRET"))], {"a": {}},
                         redact=[r"ACME-\d+-SECRET"])
    result = resume(ledger, world=tmp_path)
    assert result.returncode == 0
    text = Path(str(ledger) + ".journal.jsonl").read_text()
    assert "hunter2" not in text and "ACME-42-SECRET" not in text and "[REDACTED]" in text
    # The runbook names it; the target's evidence and actions must not.
    assert "hunter2" not in repr(load(ledger)["targets"]["a"])


HOSTILE = ["; rm -rf x", "$(touch pwned)", "`touch pwned2`", "-rf", "--help", "a b\nc"]


def test_hostile_target_names_reach_no_shell_and_no_option_parser(tmp_path: Path) -> None:
    """Names full of shell syntax or starting with `-` arrive as one plain argument each."""
    steps = [_one("check", tool("echo-target", "{target}"))]
    ledger = tool_ledger(tmp_path, steps, {name: {} for name in HOSTILE})
    folder = ledger.parent
    (folder / "x").write_text("still here")
    result = resume(ledger, "--max-steps", "20", world=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    runs = [json.loads(line) for line in (folder / "argv.log").read_text().splitlines()]
    assert sorted(argv[1] for argv in runs) == sorted(HOSTILE)
    assert all(len(argv) == 2 for argv in runs)
    assert (folder / "x").read_text() == "still here"
    assert not (folder / "pwned").exists() and not (folder / "pwned2").exists()
    assert not Path("pwned").exists()
    assert all(t["state"] == "checked" for t in load(ledger)["targets"].values())
    assert "a b\\nc" not in result.stdout.replace("\n           ", "")  # printed text has no raw control chars


def test_metric_over_threshold_pauses_and_exits_4(tmp_path: Path) -> None:
    """A violated pause threshold pauses the ledger with the reason, pages, and exits 4; nothing runs."""
    ledger = tool_ledger(tmp_path, [_one("check", tool("say", "ok"))], {"a": {}},
                         invariants=["pause if err_rate > 0.5%"], metrics={"err_rate": {"run": tool("metric")}})
    (ledger.parent / "metric.txt").write_text("0.9%\n")
    result = resume(ledger, world=tmp_path)
    assert result.returncode == 4, result.stdout + result.stderr
    data = load(ledger)
    assert "err_rate 0.9%" in data["paused"]["why"] and data["paused"]["by"].startswith("agent:")
    assert data["targets"]["a"] == {}  # never touched: still written as the test wrote it (queued by default)
    readings = [r for r in journal(ledger) if r["kind"] == "metric"]
    assert readings[-1]["metric"] == "err_rate" and readings[-1]["value"] == 0.9 and readings[-1]["percent"] is True
    assert "invariant check: err_rate 0.9% violated" in result.stdout


def test_metric_under_threshold_lets_work_go_on(tmp_path: Path) -> None:
    """A reading under the threshold is ok and printed with its value."""
    ledger = tool_ledger(tmp_path, [_one("check", tool("say", "ok"))], {"a": {}},
                         invariants=["pause if err_rate > 0.5%"], metrics={"err_rate": {"run": tool("metric")}})
    (ledger.parent / "metric.txt").write_text("0.02%\n")
    result = resume(ledger, world=tmp_path)
    assert result.returncode == 0
    assert "invariant check: err_rate 0.02% ok" in result.stdout
    assert load(ledger)["targets"]["a"]["state"] == "checked"


def test_unreadable_metric_pauses(tmp_path: Path) -> None:
    """A threshold that cannot be read is treated as unsafe: pause, exit 4."""
    ledger = tool_ledger(tmp_path, [_one("check", tool("say", "ok"))], {"a": {}},
                         invariants=["pause if err_rate > 0.5%"], metrics={"err_rate": {"run": tool("metric")}})
    (ledger.parent / "metric.txt").write_text("banana\n")
    result = resume(ledger, world=tmp_path)
    assert result.returncode == 4
    assert "cannot be checked" in load(ledger)["paused"]["why"]


def test_threshold_without_a_metric_source_is_a_usage_error(tmp_path: Path) -> None:
    """exit 2 naming the metric that has no source."""
    ledger = tool_ledger(tmp_path, [_one("check", tool("say", "ok"))], {"a": {}}, invariants=["pause if err_rate > 0.5%"])
    result = resume(ledger, world=tmp_path)
    assert result.returncode == 2
    assert "err_rate" in result.stdout + result.stderr and "no source" in result.stdout + result.stderr
    assert load(ledger).get("session") is None


def test_operator_pause_exits_4_without_running_anything(tmp_path: Path) -> None:
    ledger = tool_ledger(tmp_path, [_one("check", tool("say", "ok"))], {"a": {}})
    assert handoff("pause", str(ledger), "--reason", "change freeze", world=tmp_path).returncode == 0
    result = resume(ledger, world=tmp_path)
    assert result.returncode == 4
    assert "change freeze" in result.stdout
    assert not (ledger.parent / "argv.log").exists()


def test_json_prints_journal_records(tmp_path: Path) -> None:
    """--json: every line on stdout is a journal record."""
    ledger = tool_ledger(tmp_path, [_one("check", tool("say", "ok"))], {"a": {}})
    result = resume(ledger, "--json", world=tmp_path)
    assert result.returncode == 0
    records = [json.loads(line) for line in result.stdout.splitlines()]
    kinds = [r["kind"] for r in records]
    assert kinds[0] == "session_start" and kinds[-1] == "session_end" and "step_end" in kinds
    assert all("seq" in r and "ts" in r for r in records)


def test_concurrency_never_exceeds_the_touch_limit(tmp_path: Path) -> None:
    """With "never touch more than 2", at most two irreversible steps are ever in flight at once."""
    steps = [{"name": "go", "from": "queued", "to": "done", "reversible": False, "run": tool("sleep", "0.3")}]
    names = [f"t{i}" for i in range(5)]
    ledger = tool_ledger(tmp_path, steps, {n: {} for n in names}, invariants=["never touch more than 2 dbs concurrently"])
    for n in names:
        assert handoff("approve", str(ledger), n, "--step", "go", "--as", "dave", world=tmp_path).returncode == 0
    result = resume(ledger, "--max-steps", "20", world=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    running, peak = 0, 0
    for r in journal(ledger):
        if r["kind"] == "step_start":
            running += 1
            peak = max(peak, running)
        elif r["kind"] == "step_end":
            running -= 1
    assert peak == 2
    assert all(t["state"] == "done" for t in load(ledger)["targets"].values())
