"""The CLI habits platform engineers expect: completion, info, --json on read commands, a version key, positional ledgers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.version import version
from tests.conftest import ROOT, RUNBOOK_LEDGER, cli_env


def handoff(*args, env: dict | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.cli.main", *map(str, args)], capture_output=True, text=True,
                          timeout=60, env=env or cli_env(), input=stdin, cwd=str(ROOT))


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER, encoding="utf-8")
    return path


def complete(line: str, tmp_path: Path) -> list[str]:
    """What the shell's TAB gets for `line`, through argcomplete's own protocol (as the sourced script calls it)."""
    out = tmp_path / "completions"
    env = cli_env(_ARGCOMPLETE="1", COMP_LINE=line, COMP_POINT=str(len(line)), _ARGCOMPLETE_STDOUT_FILENAME=str(out))
    result = handoff(env=env)
    assert result.returncode == 0, result.stderr
    return [w.strip() for w in out.read_text().split("\v") if w.strip()]


def test_completion_scripts_and_what_tab_offers(fleet: Path, tmp_path: Path) -> None:
    """bash, zsh and fish scripts; bash registers `handoff`; TAB completes commands, flags and the ledger's targets."""
    for shell in ("bash", "zsh", "fish"):
        result = handoff("completion", shell)
        assert result.returncode == 0 and "handoff" in result.stdout, result.stderr
    bash = subprocess.run(["bash", "-c", 'eval "$(' + f"{sys.executable} -m engine.cli.main completion bash" + ')"; complete -p handoff'],
                          capture_output=True, text=True, timeout=60, env=cli_env(), cwd=str(ROOT))
    assert bash.returncode == 0 and "handoff" in bash.stdout, bash.stderr
    assert complete("handoff appr", tmp_path) == ["approve"]
    assert complete(f"handoff approve {fleet} db-", tmp_path) == ["db-1", "db-2", "db-3", "db-4", "db-5"]
    assert "--live" in complete("handoff check --l", tmp_path)
    assert complete(f"handoff approve {tmp_path / 'missing.yaml'} db-", tmp_path) == []  # no ledger: nothing, no traceback
    assert handoff("completion", "tcsh").returncode == 2


def test_info_says_where_everything_lives(tmp_path: Path) -> None:
    env = cli_env(XDG_CACHE_HOME=str(tmp_path / "c"), XDG_STATE_HOME=str(tmp_path / "s"), HANDOFF_LOCK_TIMEOUT="7")
    result = handoff("info", env=env)
    assert result.returncode == 0, result.stderr
    assert f"cache:     {tmp_path / 'c' / 'handoff'}" in result.stdout
    assert f"state:     {tmp_path / 's' / 'handoff-tui'}" in result.stdout
    assert f"marks:     {tmp_path / 's' / 'handoff'} (" in result.stdout
    assert "config:    none" in result.stdout and "HANDOFF_LOCK_TIMEOUT=7" in result.stdout
    data = json.loads(handoff("info", "--json", env=env).stdout)
    assert data["version"] == version() and Path(data["templates"], "k8s-rollout.yaml").is_file()
    assert data["engine_state"] == str(tmp_path / "s" / "handoff")


def test_read_commands_speak_json_and_status_names_its_version(fleet: Path) -> None:
    assert json.loads(handoff("status", fleet, "--json").stdout)["version"] == version()
    assert json.loads(handoff("note", fleet, "--json").stdout) == {"note": "first note", "by": None, "at": None}
    assert json.loads(handoff("note", fleet, "--previous", "--json").stdout) is None
    assert handoff("note", fleet, "--set", "second note", "--as", "bob").returncode == 0
    previous = json.loads(handoff("note", fleet, "--previous", "--json").stdout)
    assert previous["note"] == "first note"
    templates = json.loads(handoff("init", "--list", "--json").stdout)
    assert {t["name"] for t in templates} >= {"blank", "k8s-rollout", "pg-fleet", "tls-rotation"}
    before = fleet.read_bytes()
    refused = handoff("note", fleet, "--set", "x", "--json")
    assert refused.returncode == 2 and "--json reads the note" in refused.stderr
    assert fleet.read_bytes() == before


def test_resume_and_hook_take_the_ledger_positionally(fleet: Path) -> None:
    """`resume LEDGER` as every other command; `--ledger` still works; none or two different is a usage error."""
    assert handoff("resume", fleet, "--dry-run").returncode == 0
    assert handoff("resume", "--ledger", fleet, "--dry-run").returncode == 0
    before = fleet.read_bytes()
    none = handoff("resume")
    assert none.returncode == 2 and "say which ledger: LEDGER (or --ledger LEDGER)" in none.stderr
    two = handoff("resume", fleet, "--ledger", "other.yaml")
    assert two.returncode == 2 and "two ledgers given" in two.stderr
    assert handoff("hook", "session-start").returncode == 2
    assert fleet.read_bytes() == before  # usage errors write nothing
    hook = handoff("hook", "session-start", fleet, stdin=json.dumps({"hook_event_name": "SessionStart", "session_id": "x"}))
    assert hook.returncode == 0, hook.stderr
    assert "first note" in hook.stdout  # the hook read this ledger: its note goes to Claude Code


def test_quiet_and_verbose_sessions(tmp_path: Path) -> None:
    """-q prints only what needs a person and how it ended; -v adds what is only journaled; the journal is the same."""
    counts = {}
    for flag in ("-q", None, "-v"):
        path = tmp_path / f"fleet{flag or ''}.yaml"
        path.write_text(RUNBOOK_LEDGER, encoding="utf-8")
        args = ["resume", path, "--dry-run"] + ([flag] if flag else [])
        result = handoff(*args)
        assert result.returncode == 0, result.stderr
        assert "ended (exit 0)" in result.stdout.splitlines()[-1]
        counts[flag] = len(result.stdout.splitlines())
    assert counts["-q"] < counts[None] < counts["-v"]
    quiet = handoff("-q", "resume", tmp_path / "fleet-q.yaml", "--dry-run").stdout
    assert "loaded ledger" not in quiet and "ended (exit 0)" in quiet  # before the command works the same


def test_status_names_every_target_that_needs_a_person_and_why(fleet: Path) -> None:
    """Failed, drifted (blocked on a checkpoint drift) and open-discrepancy targets, each with why; secrets masked; --json has them all."""
    text = RUNBOOK_LEDGER.replace('db-5: {state: queued}',
                                  'db-5: {state: blocked, reason: "checkpoint drift: the ledger says 0/1, lsn says 0/2"}\n'
                                  '  db-6: {state: queued, reason: "token=hunter2secret seen in the log"}')
    fleet.write_text(text, encoding="utf-8")
    out = handoff("status", fleet).stdout
    assert "needs a person: db-3 (failed) failed: link exited 1" in out
    assert "needs a person: db-4 (failed) failed: check exited 1" in out
    assert "needs a person: db-5 (blocked) drifted: checkpoint drift: the ledger says 0/1, lsn says 0/2" in out
    assert "needs a person: db-6 (queued) open discrepancy: token=[REDACTED] seen in the log" in out
    assert "hunter2secret" not in out
    data = json.loads(handoff("status", fleet, "--json").stdout)
    assert [i["target"] for i in data["needs_person"]] == ["db-3", "db-4", "db-5", "db-6"]
    assert fleet.read_text(encoding="utf-8") == text
