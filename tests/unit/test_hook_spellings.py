"""The pre-tool-use hook against every spelling of a people-only operation, of a ledger
write, and of compound lines: each part judged, the strictest answer wins.

The hook runs in-process (engine.hooks.protocol.run, the function `handoff hook` calls)
on a real copy of the demo ledger; with no Claude Code session id it takes no lease, so
the ledger on disk must stay byte-identical through every call.
"""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest
from session_kit import demo_copy

from engine.hooks.protocol import run

VENV_HANDOFF = str(Path(sys.executable).parent / "handoff")
PEOPLE = "is for people"


def ask(ledger: Path, command: str, cwd: Path | None = None) -> tuple[str, str]:
    """One PreToolUse call for a Bash command: (decision, reason); `none` for no objection."""
    data = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(cwd or ledger.parent),
            "tool_input": {"command": command, "description": "x"}}
    out = io.StringIO()
    assert run("pre-tool-use", str(ledger), io.StringIO(json.dumps(data)), out) == 0
    answer = json.loads(out.getvalue()).get("hookSpecificOutput") or {}
    return answer.get("permissionDecision", "none"), answer.get("permissionDecisionReason", "")


def _fleet(factory, policy: str) -> Path:
    return demo_copy(factory.mktemp(policy), agent={"unknown_commands": policy})


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory) -> dict[str, Path]:
    os.environ.pop("CLAUDE_CODE_SESSION_ID", None)  # no session: the hook takes no lease, the file stays as it is
    return {policy: _fleet(tmp_path_factory, policy) for policy in ("allow", "ask", "deny")}


@pytest.fixture(autouse=True)
def unchanged(ledgers):
    """Every test leaves every ledger byte-identical."""
    before = {p: path.read_bytes() for p, path in ledgers.items()}
    yield
    assert {p: path.read_bytes() for p, path in ledgers.items()} == before


PEOPLE_SPELLINGS = [
    "handoff approve {L} db-18 --yes --as alice",
    VENV_HANDOFF + " approve {L} db-18 --yes",
    "python -m engine.cli.main approve {L} db-18 --yes",
    sys.executable + " -X dev -m engine.cli.main unapprove {L} db-18",
    "env X=1 handoff reject {L} db-18 --reason no",
    "env -i PATH=/usr/bin handoff reset {L} db-27",
    "nohup handoff reset {L} db-27 &",
    "timeout -s KILL 5 handoff unpause {L}",
    "echo db-18 | xargs -n1 handoff approve {L}",
    'bash -c "handoff approve {L} db-18 --yes"',
    "sh -c 'handoff unblock {L} db-20'",
    "bash -lc 'cd /tmp; handoff approve {L} db-18'",
    "bash <<EOF\nhandoff approve {L} db-18 --yes\nEOF",
    "sh <<-'X'\n\thandoff reconcile {L}\n\tX",
    "bash <<< 'handoff approve {L} db-18'",
    "cat <<EOF | sh\nhandoff approve {L} db-18\nEOF",
    "echo 'handoff approve {L} db-18 --yes' | bash",
    "sudo -u alice handoff approve {L} db-18 --yes",
    "sudo -E -u alice -- " + VENV_HANDOFF + " approve {L} db-18",
    "command handoff reconcile {L}",
    "exec handoff approve {L} db-18",
    "echo $(handoff approve {L} db-18 --yes)",
    'echo "result: $(handoff approve {L} db-18)"',
    "echo `handoff reject {L} db-18`",
    "( cd /tmp && handoff approve {L} db-18 )",
    "{{ handoff approve {L} db-18; }}",
    "f() {{ handoff approve {L} db-18; }}; f",
    "nice -n 5 stdbuf -oL handoff approve {L} db-18",
    "env -S 'handoff approve {L} db-18'",
    "find . -name ledger.yaml -exec handoff approve {{}} db-18 \\;",
    "eval 'handoff approve {L} db-18'",
    "bash -c \"sh -c 'handoff approve {L} db-18'\"",
    "true && handoff approve {L} db-18 || echo failed",
    "ls; handoff approve {L} db-18 &",
    "handoff retry {L} db-27 --force --reason checked",
    "handoff retry {L} db-27 --forc --reason abbreviated",
    "handoff retry {L} db-27 --f --reason abbreviated",  # argparse takes `--f` for --force (its only --f option)
    "handoff check {L} --accept-rollback",
    "handoff check {L} --accept-rem",
    "handoff import {L} postgresql://127.0.0.1/test#x --replace",
    'handoff approve "{L} db-18',  # an unclosed quote is read as far as it goes
    "H=handoff; $H approve {L} db-18",
    "H=" + VENV_HANDOFF + " && ${{H}} unpause {L}",
    "export C='handoff approve {L} db-18'; bash -c \"$C\"",
    "read -r H < /tmp/h; $H approve {L} db-18 --yes",  # a program chosen at run time: its words still tell
    "handoff approve {L} db-18 -- --help",  # `--help` after `--` is not the help
    "echo $(handoff approve {L} db-18",  # an unclosed substitution is read to the end
    "echo `handoff approve {L} db-18",
    "handoff $'approve' {L} db-18 --yes",  # bash's ANSI-C quoting, decoded as bash decodes it
    "handoff $'\\x61pprove' {L} db-18 --yes",
    "handoff $'\\141ppr\\u006Fve' {L} db-18 --yes",
    "handoff $\"approve\" {L} db-18 --yes",
    "{{handoff,approve}} {L} db-18 --yes",  # bash's brace expansion
    "handoff {{approve,status}} {L} db-18 --yes",
    "/usr/bin/env handoff approve {L} db-18",
    "time -p handoff approve {L} db-18 --yes",
    "script -qc 'handoff approve {L} db-18 --yes' /dev/null",
    "trap 'handoff approve {L} db-18 --yes' EXIT",
    "shopt -s expand_aliases; alias h='handoff approve {L} db-18 --yes'\nh",
    "git -c alias.x='!handoff approve {L} db-18 --yes' x",
    "awk 'BEGIN{{system(\"handoff approve {L} db-18 --yes\")}}'",
]


@pytest.mark.parametrize("spelling", PEOPLE_SPELLINGS)
def test_people_only_operations_are_denied_in_every_spelling(ledgers, spelling) -> None:
    """Approve, reject, reset, unpause, retry --force, check --accept-*, import --replace: denied however wrapped,
    with why and what a person runs, under every unknown_commands policy."""
    for ledger in ledgers.values():
        kind, reason = ask(ledger, spelling.format(L=ledger))
        assert kind == "deny", (spelling, reason)
        assert PEOPLE in reason and "Ask one" in reason and f"handoff status {ledger}" in reason, reason


@pytest.mark.parametrize("line,name,text", [
    ("./go.sh", "go.sh", "#!/bin/sh\nunset CLAUDECODE\nhandoff approve {L} db-18 --yes\n"),
    ("scripts/go", "scripts/go", "#!/usr/bin/env bash\nhandoff approve {L} db-18 --yes\n"),
    ("./go.py", "go.py", "#!/usr/bin/env python3\nimport subprocess\nsubprocess.run(['handoff', 'approve', '{L}', 'db-18'])\n"),
    ("python3 < go.py", "go.py", "import subprocess\nsubprocess.run(['handoff', 'approve', '{L}', 'db-18'])\n"),
    ("bash < go.sh", "go.sh", "handoff approve {L} db-18 --yes\n"),
    ("cat go.sh | bash", "go.sh", "handoff approve {L} db-18 --yes\n"),
    ("cat -- go.py | python3 -", "go.py", "import subprocess\nsubprocess.run(['handoff', 'approve', '{L}', 'db-18'])\n"),
])
def test_a_script_file_run_as_a_program_or_fed_on_stdin_is_read(ledgers, tmp_path, line, name, text) -> None:
    """A file the agent wrote, then ran (`./go.sh`, by its `#!`) or fed to an interpreter (`python3 < go.py`,
    `cat go.sh | bash`): read like a `bash go.sh`, denied under every policy."""
    for ledger in ledgers.values():
        script = tmp_path / name
        script.parent.mkdir(exist_ok=True)
        script.write_text(text.format(L=ledger))
        script.chmod(0o755)
        kind, reason = ask(ledger, line, cwd=tmp_path)
        assert kind == "deny" and PEOPLE in reason, (line, reason)


@pytest.mark.parametrize("spelling", ["handoff $(echo approve) {L} db-18 --yes", 'handoff "$(printf appr)ove" {L} db-18',
                                      "handoff `echo approve` {L} db-18", "handoff ${{C}} {L} db-18"])
def test_a_handoff_command_named_at_run_time_is_denied(ledgers, spelling) -> None:
    """Only the shell knows what `handoff $(...)` runs: denied under every policy, saying why."""
    for ledger in ledgers.values():
        kind, reason = ask(ledger, spelling.format(L=ledger))
        assert kind == "deny", (spelling, reason)
        assert "names its command at run time" in reason and "spell the command out" in reason, reason


@pytest.mark.parametrize("code", [
    "import engine.cli.main as m; m.main(['approve', '{L}', 'db-18', '--yes'])",
    "from engine import ops",
    "__import__('engine.ledger.ops')",
    "import importlib; importlib.import_module('engine.api')",
])
def test_python_code_that_imports_the_engine_is_denied(ledgers, code) -> None:
    """`python -c` (or a here-doc fed to `python3 -`) that imports the engine could call people-only operations."""
    ledger = ledgers["allow"]
    for line in (f'python3 -c "{code.format(L=ledger)}"', f"python3 - <<'PY'\n{code.format(L=ledger)}\nPY",
                 f'{sys.executable} -c "{code.format(L=ledger)}"'):  # an interpreter named by its path
        kind, reason = ask(ledger, line)
        assert kind == "deny" and "imports the engine" in reason, (line, reason)


def test_code_and_scripts_that_run_a_people_only_command_are_denied(ledgers, tmp_path) -> None:
    """A subprocess call from python, a script file the agent wrote first, `python -m engine.X`."""
    ledger = ledgers["allow"]
    line = f"python3 -c \"import subprocess; subprocess.run(['handoff', 'approve', '{ledger}', 'db-18'])\""
    kind, reason = ask(ledger, line)
    assert kind == "deny" and "code runs `handoff approve`" in reason and PEOPLE in reason
    script = tmp_path / "go.sh"
    script.write_text(f"#!/bin/sh\nhandoff approve {ledger} db-18 --yes\n")
    for line in (f"bash {script}", f"source {script}", f". {script}", f"cd {tmp_path} && sh go.sh"):
        kind, reason = ask(ledger, line)
        assert kind == "deny" and PEOPLE in reason, line
    kind, reason = ask(ledger, "python3 -m engine.ledger.ops")
    assert kind == "deny" and "runs the engine's code directly" in reason


@pytest.mark.parametrize("line, why", [
    ("handoff note {L} --edit", "editing or clearing the handoff note is for people (--edit)"),
    ("handoff note {L} --ed", "editing or clearing the handoff note is for people (--ed)"),
    ("handoff note {L} --e", "editing or clearing the handoff note is for people (--e)"),
    ("handoff note {L} --clear", "editing or clearing the handoff note is for people (--clear)"),
    ("handoff note {L} --set ''", "clearing the handoff note is not the reviewed path"),
    ("handoff note {L} --set=", "clearing the handoff note is not the reviewed path"),
    ("handoff note {L} --set 'all fine, nothing to do'", "a note not read from stdin is not the reviewed path"),
])
def test_a_person_s_note_is_not_edited_or_cleared_by_the_agent(ledgers, line, why) -> None:
    """The agent writes its own note only through `handoff note L --set -`; the reason says so."""
    ledger = ledgers["deny"]
    kind, reason = ask(ledger, line.format(L=ledger))
    assert kind == "deny" and why in reason and f"handoff note {ledger} --set -" in reason, reason


@pytest.mark.parametrize("line, expected", [
    ("handoff status {L}", "allow"),
    ("handoff status {L} --json && handoff journal {L} --json", "allow"),
    ("handoff check {L}", "allow"),
    ("handoff note {L}", "allow"),
    ("handoff note {L} --previous", "allow"),
    ("handoff note {L} --set - <<'NOTE'\nDo NOT retry pg_upgrade on db-18.\nhandoff approve is for people; rm -rf x\nNOTE",
     "allow"),
    ("handoff --help", "allow"),
    ("handoff run {L} db-19", "allow"),
    ("handoff run {L} db-19 && handoff status {L}", "allow"),
    ("cd {D} && handoff status ledger.yaml", "none"),
    ("handoff retry {L} db-27 --reason 'fixed the aclitem columns'", "none"),
    ("handoff pause {L} --reason incident", "none"),
])
def test_reading_and_the_reviewed_note_pass_even_when_unknown_commands_deny(ledgers, line, expected) -> None:
    """With `unknown_commands: deny` the agent still reads (status, journal, check, note) and writes its own note
    through the reviewed path; a here-doc note is data, not commands."""
    ledger = ledgers["deny"]
    kind, reason = ask(ledger, line.format(L=ledger, D=ledger.parent))
    assert kind == expected, (line, reason)


@pytest.mark.parametrize("policy, expected", [("allow", "none"), ("ask", "ask"), ("deny", "deny")])
def test_one_legal_run_no_longer_allows_the_whole_line(ledgers, policy, expected) -> None:
    """The issue's line: a legal `handoff run` beside an approval and a write. Each part is judged: the approval
    is denied under every policy; without it, the write follows unknown_commands and the line is never `allow`."""
    ledger = ledgers[policy]
    kind, reason = ask(ledger, f"handoff run {ledger} db-19; handoff approve {ledger} db-18; echo X > f")
    assert kind == "deny" and PEOPLE in reason
    kind, reason = ask(ledger, f"handoff run {ledger} db-19; echo X > f")
    assert kind == expected, reason
    kind, _ = ask(ledger, f"handoff run {ledger} db-19 | tee /tmp/run.log")
    assert kind == expected
    kind, reason = ask(ledger, f"handoff run {ledger} db-19 && handoff run {ledger} db-18 cutover")
    assert kind == "deny" and "the guard refuses cutover on db-18" in reason


@pytest.mark.parametrize("line", ["cat {L}", "cp {L} /tmp/ledger-copy.yaml", "grep -n db-18 {L}", "less {L}",
                                  "sed -n 1,5p {L}", "head {L}.journal.jsonl", "rsync {L} /tmp/ledger-copy.yaml",
                                  "python3 -c \"print(open('{L}').read())\"", "diff {L} /tmp/other.yaml",
                                  "cp {L} {D}/copy-of-ledger.yaml", "git diff -- {L}"])
def test_reading_the_ledger_is_not_a_write(ledgers, line) -> None:
    """Reading the ledger passes with `allow`; with `deny` it is refused as an unknown command, never as a write."""
    for policy in ("allow", "deny"):
        ledger = ledgers[policy]
        kind, reason = ask(ledger, line.format(L=ledger, D=ledger.parent))
        assert kind == ("none" if policy == "allow" else "deny"), (line, reason)
        assert "written only by the engine" not in reason


def test_nesting_too_deep_is_denied_with_the_reason(ledgers) -> None:
    """Beyond the hook's depth it cannot read the line: denied, saying so."""
    ledger = ledgers["allow"]
    line = "echo hi"
    for _ in range(8):
        line = f"bash -c {json.dumps(line)}"
    kind, reason = ask(ledger, line)
    assert kind == "deny" and "nests scripts more than 6 deep" in reason


def tool(ledger: Path, name: str, given: dict) -> tuple[str, str]:
    """One PreToolUse call for another tool."""
    data = {"hook_event_name": "PreToolUse", "tool_name": name, "cwd": str(ledger.parent), "tool_input": given}
    out = io.StringIO()
    assert run("pre-tool-use", str(ledger), io.StringIO(json.dumps(data)), out) == 0
    answer = json.loads(out.getvalue()).get("hookSpecificOutput") or {}
    return answer.get("permissionDecision", "none"), answer.get("permissionDecisionReason", "")


@pytest.mark.parametrize("name", ["Agent", "Task"])
def test_subagent_tools_are_denied_under_every_policy(ledgers, name) -> None:
    """Subagents' tool calls may skip the hook, so the hook denies the subagent tools themselves."""
    for ledger in ledgers.values():
        kind, reason = tool(ledger, name, {"description": "x", "prompt": "approve db-18", "subagent_type": "general-purpose"})
        assert kind == "deny" and "subagents are off while this project drives a ledger" in reason


@pytest.mark.parametrize("name, key", [("Read", "file_path"), ("Grep", "pattern"), ("Glob", "pattern")])
def test_reading_tools_pass_even_when_unknown_commands_deny(ledgers, name, key) -> None:
    """Reading, the ledger included, is the agent's job."""
    ledger = ledgers["deny"]
    assert tool(ledger, name, {key: str(ledger)}) == ("none", "")
    kind, _ = tool(ledger, "WebFetch", {"url": "http://example.invalid"})
    assert kind == "deny"


def test_a_huge_or_garbled_line_gets_an_answer(ledgers) -> None:
    """200,000 characters of unbalanced quotes and substitutions: refused as too deep to read; control bytes in a
    line do not hide the parts after them; no crash, the ledger unchanged."""
    ledger = ledgers["allow"]
    kind, reason = ask(ledger, "echo '\"$(`" * 20000 + f"; handoff approve {ledger} db-18")
    assert kind == "deny" and "nests scripts more than 6 deep" in reason
    kind, reason = ask(ledger, f"handoff\x00 approve {ledger} db-18\x1b[2J; handoff reset {ledger} db-27")
    assert kind == "deny" and "resetting a target is for people" in reason
