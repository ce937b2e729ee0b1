"""`handoff hook EVENT --ledger L`, fed the JSON the real Claude Code sends (recorded in
tests/fixtures/claude_code/, extra fields and all), answering as its hooks protocol says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from session_kit import ROOT, counts, demo_copy, env, handoff, journal, load

FIXTURES = ROOT / "tests" / "fixtures" / "claude_code"
SID = "cc-hooks-test"


def hook(event: str, fixture: str, ledger: Path, world: Path, **changes) -> dict:
    """Run the hook as Claude Code would: the recorded input, with `changes` applied; exit 0 always."""
    data = json.loads((FIXTURES / f"{fixture}.json").read_text())
    data.update(session_id=SID, cwd=str(ledger.parent), **changes)
    result = subprocess.run([sys.executable, "-m", "engine.cli.main", "hook", event, "--ledger", str(ledger)],
                            input=json.dumps(data), capture_output=True, text=True, timeout=60, cwd=str(ledger.parent),
                            env={**env(world), "CLAUDE_CODE_SESSION_ID": SID})
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return json.loads(result.stdout)


def bash(ledger: Path, world: Path, command: str) -> dict:
    return hook("pre-tool-use", "PreToolUse", ledger, world, tool_input={"command": command, "description": "x"})


def verdict(answer: dict) -> tuple[str, str]:
    out = answer.get("hookSpecificOutput") or {}
    return out.get("permissionDecision", "none"), out.get("permissionDecisionReason", "")


@pytest.fixture
def fleet(tmp_path: Path) -> tuple[Path, Path]:
    ledger = demo_copy(tmp_path)
    return ledger, tmp_path / "world"


def test_session_start_grounds_the_agent_in_the_ledger(fleet) -> None:
    """The context is the ledger brief plus how to act; the session takes the lease (no pid) and says so."""
    ledger, world = fleet
    answer = hook("session-start", "SessionStart-startup", ledger, world)
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert context.startswith(f"LEDGER {ledger}: task pg14-to-pg16-fleet-upgrade")
    assert "Waiting on people" in context and "db-20: blocked" in context
    assert f"`handoff run {ledger} TARGET [STEP]`" in context and "run_in_background" in context
    lease = load(ledger)["session"]
    assert lease["id"] == SID and lease["runtime"] == "claude-code" and "pid" not in lease
    assert any(r["kind"] == "claude_session_start" for r in journal(ledger))


def test_after_compaction_the_context_asks_for_the_note_when_the_ledger_moved(fleet) -> None:
    """source=compact: re-grounded in the ledger, and asked for the note first when it is older than the ledger."""
    ledger, world = fleet
    hook("session-start", "SessionStart-startup", ledger, world)
    assert handoff("pause", str(ledger), "--reason", "x", world=world).returncode == 0
    assert handoff("unpause", str(ledger), world=world).returncode == 0
    context = hook("session-start", "SessionStart-compact", ledger, world)["hookSpecificOutput"]["additionalContext"]
    assert "trust the ledger above, not the summary" in context
    assert "THE LEDGER CHANGED SINCE THE HANDOFF NOTE WAS WRITTEN" in context


@pytest.mark.parametrize("command, why", [
    ("handoff run {L} db-18 cutover", "the guard refuses cutover on db-18: db-18 is replicating; cutover runs only from verified"),
    ("cd /tmp && handoff run {L} db-27", "no runbook step starts there"),
    ("handoff run {L} db-99", "`handoff run` would exit 2: no target named 'db-99' in {L}; did you mean db-09, db-19 or db-29?"),
    ("python3 {D}/sim.py cutover db-18", "run it as `handoff run {L} db-18 cutover`"),
    ("echo '{{}}' > {L}", "it redirects output into"),
    ("sed -i s/queued/done/ ledger.yaml", "`sed` would edit ledger.yaml in place"),
    ("tee -a {L}.journal.jsonl < /dev/null", "`tee` would change"),
    ("mv /tmp/x {L}", "`mv` would change"),
])
def test_pre_tool_use_denies_with_the_reason(fleet, command, why) -> None:
    """Refused by the guard, a step's command run raw, writes to the ledger or its files: denied, with why."""
    ledger, world = fleet
    text = command.format(L=ledger, D=ledger.parent)
    kind, reason = verdict(bash(ledger, world, text))
    assert kind == "deny", (text, reason)
    assert why.format(L=ledger) in reason
    assert counts(world).get("db-18", {}).get("cutover_runs", 0) == 0


@pytest.mark.parametrize("command, word", [
    ("for t in db-18; do python3 {D}/sim.py cutover $t; done", "$t"),
    ("echo db-19 | xargs python3 {D}/sim.py link", "$XARGS"),
    ("python3 {D}/sim.py link \"$(head -1 todo.txt)\"", "$(head -1 todo.txt)"),
    ("while read -r t; do python3 {D}/sim.py link \"$t\"; done < todo.txt", "$t"),
    ("python3 {D}/sim.py cutover ${{T:-db-18}}", "${T:-db-18}"),
])
def test_a_step_s_command_for_a_target_only_the_shell_knows_is_denied(fleet, command, word) -> None:
    """A runbook step's command run raw with its target in a loop variable, a substitution or what xargs reads
    (Claude Code ran the irreversible cutover on db-18 this way, past the guard and any approval): denied, saying
    to run each target through `handoff run`; the ledger is byte-identical and the world saw nothing."""
    ledger, world = fleet
    bash(ledger, world, "true")  # the session's first call takes the lease (a write); the bytes are kept after it
    before = ledger.read_bytes()
    kind, reason = verdict(bash(ledger, world, command.format(D=ledger.parent)))
    assert kind == "deny", (command, reason)
    assert f"for a target only the shell knows ({word}), run outside the engine" in reason, reason
    assert f"`handoff run {ledger} TARGET" in reason and "one target a call" in reason, reason
    assert ledger.read_bytes() == before
    assert counts(world).get("db-18", {}).get("cutover_runs", 0) == 0
    # a program's other words only the shell knows are no target: not a step's command, no objection
    assert verdict(bash(ledger, world, f"python3 {ledger.parent}/sim.py counts \"$OUT\""))[0] == "none"


@pytest.mark.parametrize("command", [
    "grep -n cutover \"$PWD/sim.py\"",
    "sed -n 1,40p \"$(pwd)/sim.py\" link",
])
def test_a_step_s_script_named_through_the_shell_is_no_target(fleet, command) -> None:
    """Reading the step's own script by a path only the shell knows (`"$PWD/sim.py"`) is not the step run for a
    target only the shell knows: the word that names the script is not the target. No objection, as before the
    shell-only-target rule; the ledger is byte-identical."""
    ledger, world = fleet
    bash(ledger, world, "true")  # the session's first call takes the lease (a write); the bytes are kept after it
    before = ledger.read_bytes()
    assert verdict(bash(ledger, world, command)) == ("none", ""), command
    assert ledger.read_bytes() == before


def test_a_script_file_piped_into_a_shell_by_cat_is_read(fleet) -> None:
    """A script the agent wrote first (the Write tool), then fed to a shell as `cat go.sh | sh` (Claude Code ran the
    irreversible cutover on db-18 this way while `bash go.sh` and `sh < go.sh` were denied): read like `sh < go.sh`,
    denied as the step's command run raw; so is `bash -s db-19 < go.sh` (its words are the script's arguments, not
    a script file); the ledger is byte-identical."""
    ledger, world = fleet
    (ledger.parent / "go.sh").write_text(f"python3 {ledger.parent}/sim.py cutover db-18\n")
    bash(ledger, world, "true")  # the session's first call takes the lease (a write); the bytes are kept after it
    before = ledger.read_bytes()
    for line in ("cat go.sh | sh", "cat -- go.sh | bash -s", "bash go.sh", "sh < go.sh", "bash -s db-19 < go.sh",
                 "bash -xs -- db-19 < go.sh"):  # `-s`: the script on stdin, the words after it its arguments
        kind, reason = verdict(bash(ledger, world, line))
        assert kind == "deny" and f"run it as `handoff run {ledger} db-18 cutover`" in reason, (line, reason)
    assert ledger.read_bytes() == before
    assert counts(world).get("db-18", {}).get("cutover_runs", 0) == 0
    assert verdict(bash(ledger, world, "cat go.sh | wc -l"))[0] == "none"  # reading it is no run


@pytest.fixture
def copies(fleet) -> tuple[Path, Path]:
    """The fleet with the step's script copied and linked by an earlier call (`cp`, `ln -s`, `ln`), and the
    session's lease taken by a first call (a write), so the ledger's bytes are kept from here on."""
    ledger, world = fleet
    sim = ledger.parent / "sim.py"
    (ledger.parent / "mig.py").write_bytes(sim.read_bytes())
    (ledger.parent / "mig.py").chmod(0o755)
    (ledger.parent / "soft.py").symlink_to("sim.py")
    (ledger.parent / "hard.py").hardlink_to(sim)
    bash(ledger, world, "true")
    return ledger, world


@pytest.mark.parametrize("command, how", [
    ("python3 mig.py cutover db-18", "mig.py is sim.py under another name"),
    ("./mig.py cutover db-18", "./mig.py is sim.py under another name"),
    ("python3 soft.py cutover db-18", "soft.py is sim.py under another name"),
    ("python3 hard.py cutover db-18", "hard.py is sim.py under another name"),
    ("python3 s*.py cutover db-18", "s*.py is sim.py under another name"),
    ("cp sim.py x.py && python3 x.py cutover db-18", "the hook cannot read x.py before it runs, so it may be sim.py"),
    ("cat sim.py > x.py; python3 x.py cutover db-18", "the hook cannot read x.py before it runs"),
    ("ln -s sim.py x.py; python3 -u x.py cutover db-18", "the hook cannot read x.py before it runs"),
    ("install -m 755 sim.py /tmp/x && /tmp/x cutover db-18", "the hook cannot read /tmp/x before it runs"),
    ("python3 $(ls s*.py) cutover db-18", "the hook cannot read $(ls s*.py) before it runs"),
    ("python3 <(cat sim.py) cutover db-18", "the hook cannot read <(cat sim.py) before it runs"),
    ("python3 - cutover db-18 < sim.py", "the code it is fed is sim.py"),
    ("cat sim.py | python3 - cutover db-18", "the code it is fed is sim.py"),
    ("python3 /dev/stdin cutover db-18 < mig.py", "the code it is fed is sim.py"),
    ("python3 -c \"$(cat sim.py)\" cutover db-18", "the code it is fed is sim.py"),
    ("python3 -c \"$(< mig.py)\" cutover db-18", "the code it is fed is sim.py"),
    ("python3 -c \"import sys; sys.argv = ['x', 'cutover', 'db-18']; exec(open('sim.py').read())\"",
     "the code it runs names the step's script"),
    ("python3 -c \"import runpy, sys; sys.argv = ['x', 'cutover', 'db-18']; runpy.run_path('sim.py', run_name='__main__')\"",
     "the code it runs names the step's script"),
    ("python3 -c \"import subprocess; subprocess.run(['python3', 'sim.py', 'cutover', 'db-18'])\"",
     "the code it runs names the step's script"),
    ("python3 - <<'EOF'\nimport sys\nsys.argv = ['x', 'cutover', 'db-18']\nimport sim\nsim.main()\nEOF",
     "the code it runs names the step's script"),
], ids=["copy", "copy-run-as-program", "symlink", "hardlink", "glob", "cp-same-line", "cat-same-line", "ln-same-line",
        "install-same-line", "named-at-run-time", "process-substitution", "stdin-redirect", "stdin-cat-pipe", "dev-stdin", "dash-c-cat",
        "dash-c-lt", "exec-open", "runpy", "subprocess", "import"])
def test_a_step_s_script_under_another_name_is_denied(copies, command, how) -> None:
    """The step's script copied or linked under another name (by an earlier call, or earlier on the same line),
    fed to an interpreter on stdin, as `-c "$(cat ...)"` or through `<(cat ...)`, or run by code that names it (`exec`, `runpy`,
    `subprocess`, `import`): Claude Code ran the irreversible cutover on db-18 this way, unapproved, while
    `python3 sim.py cutover db-18` was denied. Denied, saying how the hook knew it and the `handoff run` line;
    the ledger is byte-identical and the world saw no cutover."""
    ledger, world = copies
    before = ledger.read_bytes()
    kind, reason = verdict(bash(ledger, world, command))
    assert kind == "deny", (command, reason)
    assert f"runbook step cutover's command for db-18 ({how}" in reason, reason
    assert f"run it as `handoff run {ledger} db-18 cutover`" in reason, reason
    assert ledger.read_bytes() == before
    assert not (ledger.parent / "x.py").exists()
    assert counts(world).get("db-18", {}).get("cutover_runs", 0) == 0


@pytest.mark.parametrize("command", [
    "cat mig.py", "less sim.py", "head -50 soft.py", "git diff --no-index sim.py mig.py", "diff sim.py hard.py",
    "sha256sum sim.py mig.py", "cp sim.py /tmp/sim-backup.py", "grep -n cutover sim.py mig.py",
    "python3 mig.py help", "python3 soft.py counts", "python3 - < sim.py", "python3 -m pytest -q -k cutover tests",
    "diff <(sort sim.py) <(sort mig.py)",
    "python3 -c \"print(open('sim.py').read().count('cutover'))\"",
    "python3 - <<'EOF'\nimport json\nprint(json.load(open('world/db-18.json'))['cutover_runs'])\nEOF",
], ids=["cat", "less", "head-link", "git-diff", "diff", "sha256sum", "backup", "grep", "copy-help", "link-counts", "diff-process-substitution",
        "stdin-no-step", "pytest", "code-reads-it", "code-reads-the-world"])
def test_reading_or_copying_a_step_s_script_is_no_raw_step(copies, command) -> None:
    """Reading a step's script or its copy, comparing them, backing it up, running its copy for no step or no
    target, running tests: no objection (a step's script is only a step's command with the step's words and a
    target)."""
    ledger, world = copies
    assert verdict(bash(ledger, world, command)) == ("none", ""), command


def test_pre_tool_use_allows_a_step_the_guard_allows(fleet) -> None:
    """`handoff run` on a step the guard allows is allowed (the engine checks again inside)."""
    ledger, world = fleet
    assert verdict(bash(ledger, world, f"handoff run {ledger} db-19"))[0] == "allow"
    assert verdict(bash(ledger, world, f"handoff run {ledger} db-18 replicate"))[0] == "allow"


@pytest.mark.parametrize("tool, key", [("Edit", "file_path"), ("Write", "file_path"), ("MultiEdit", "file_path"),
                                       ("NotebookEdit", "notebook_path")])
def test_editing_the_ledger_or_a_sidecar_is_denied(fleet, tool, key) -> None:
    """Any file tool on the ledger or a file beside it is denied, naming the engine's commands."""
    ledger, world = fleet
    for path in (str(ledger), str(ledger) + ".journal.jsonl", "ledger.yaml"):
        kind, reason = verdict(hook("pre-tool-use", "PreToolUse", ledger, world, tool_name=tool, tool_input={key: path}))
        assert kind == "deny" and "`handoff note`" in reason, (tool, path)
    other = hook("pre-tool-use", "PreToolUse", ledger, world, tool_name=tool, tool_input={key: str(ledger.parent / "notes.md")})
    assert verdict(other)[0] == "none"


@pytest.mark.parametrize("policy, expected", [("allow", "none"), ("ask", "ask"), ("deny", "deny")])
def test_other_commands_follow_agent_unknown_commands(tmp_path, policy, expected) -> None:
    """`agent.unknown_commands`: allow (no objection), ask a person, or deny."""
    ledger = demo_copy(tmp_path, agent={"unknown_commands": policy})
    kind, _ = verdict(bash(ledger, tmp_path / "world", "ls -la && grep lag *.log"))
    assert kind == expected


def test_a_paused_ledger_denies_every_handoff_run(fleet) -> None:
    """While paused, `handoff run` is denied with the pause's reason."""
    ledger, world = fleet
    assert handoff("pause", str(ledger), "--reason", "error budget burnt", world=world).returncode == 0
    kind, reason = verdict(bash(ledger, world, f"handoff run {ledger} db-19"))
    assert kind == "deny" and "error budget burnt" in reason


def test_post_tool_use_journals_one_redacted_line(fleet) -> None:
    """Each tool call is one journal line the TUI's log shows; a secret in it is masked."""
    ledger, world = fleet
    hook("post-tool-use", "PostToolUse", ledger, world,
         tool_input={"command": "psql postgresql://app:Hunter2Leak@db/app -c 'select 1'"})
    (line,) = [r for r in journal(ledger) if r["kind"] == "tool_use"]
    assert line["msg"].startswith("claude code: Bash psql") and "Hunter2Leak" not in line["msg"]


def test_pre_compact_is_journaled_and_never_blocks(fleet) -> None:
    ledger, world = fleet
    answer = hook("pre-compact", "PreCompact", ledger, world)
    assert "decision" not in answer and "The ledger is the memory" in answer["systemMessage"]
    assert any(r["kind"] == "compaction" for r in journal(ledger))


def test_stop_blocks_once_until_the_note_is_current_then_writes_its_own(fleet) -> None:
    """Changed the ledger, no note since: blocked with how to write it; with stop_hook_active never
    blocked, and the engine writes the note; once a current note exists, the stop goes through."""
    ledger, world = fleet
    hook("session-start", "SessionStart-startup", ledger, world)
    assert hook("stop", "Stop", ledger, world) == {}  # nothing changed yet: no nagging
    run = subprocess.run([sys.executable, "-m", "engine.cli.main", "run", str(ledger), "db-19"], capture_output=True,
                         text=True, timeout=60, env={**env(world), "CLAUDE_CODE_SESSION_ID": SID}, cwd=str(ROOT))
    assert run.returncode == 0, run.stdout + run.stderr
    blocked = hook("stop", "Stop", ledger, world)
    assert blocked["decision"] == "block" and f"handoff note {ledger} --set -" in blocked["reason"]
    assert "older than this session's last change" in blocked["reason"]
    forced = hook("stop", "Stop", ledger, world, stop_hook_active=True)
    assert forced == {}
    assert load(ledger)["handoff_note_by"] == f"agent:{SID}" and "db-19" in load(ledger)["handoff_note"]
    assert any(r["kind"] == "note_forced" for r in journal(ledger))
    assert hook("stop", "Stop", ledger, world) == {}


def test_stop_failure_writes_the_engine_s_note_and_gives_the_lease_back(fleet) -> None:
    """A turn that ended on an API error (StopFailure, as recorded from the real CLI): the session changed the
    ledger and wrote no note, so the engine writes its own, says why in the journal, and releases the lease."""
    ledger, world = fleet
    hook("session-start", "SessionStart-startup", ledger, world)
    run = subprocess.run([sys.executable, "-m", "engine.cli.main", "run", str(ledger), "db-19"], capture_output=True,
                         text=True, timeout=60, env={**env(world), "CLAUDE_CODE_SESSION_ID": SID}, cwd=str(ROOT))
    assert run.returncode == 0, run.stdout + run.stderr
    assert hook("stop-failure", "StopFailure", ledger, world, error="rate_limit") == {}
    data = load(ledger)
    assert data.get("session") is None
    assert data["handoff_note_by"] == f"agent:{SID}" and "db-19" in data["handoff_note"]
    assert "turn ended on an API error (rate_limit)" in data["handoff_note"]
    (failure,) = [r for r in journal(ledger) if r["kind"] == "claude_stop_failure"]
    assert "the engine wrote the handoff note" in failure["msg"] and "lease released" in failure["msg"]
    assert any(r["kind"] == "note_forced" for r in journal(ledger))


def test_stop_failure_keeps_a_current_note(fleet) -> None:
    """Nothing changed in the session: the note the session found stands; the lease is still given back."""
    ledger, world = fleet
    hook("session-start", "SessionStart-startup", ledger, world)
    before = load(ledger)["handoff_note"]
    assert hook("stop-failure", "StopFailure", ledger, world) == {}
    assert load(ledger)["handoff_note"] == before and load(ledger).get("session") is None
    assert not any(r["kind"] == "note_forced" for r in journal(ledger))


def test_session_end_gives_the_lease_back(fleet) -> None:
    ledger, world = fleet
    hook("session-start", "SessionStart-startup", ledger, world)
    assert load(ledger)["session"]["id"] == SID
    assert hook("session-end", "SessionEnd", ledger, world) == {}
    assert load(ledger).get("session") is None


def test_a_second_claude_code_session_is_told_who_holds_the_ledger(fleet) -> None:
    """Another live holder: the context says so, and `handoff run` is denied naming it."""
    ledger, world = fleet
    hook("session-start", "SessionStart-startup", ledger, world)
    data = json.loads((FIXTURES / "PreToolUse.json").read_text())
    data.update(session_id="cc-other", cwd=str(ledger.parent), tool_input={"command": f"handoff run {ledger} db-19"})
    result = subprocess.run([sys.executable, "-m", "engine.cli.main", "hook", "pre-tool-use", "--ledger", str(ledger)],
                            input=json.dumps(data), capture_output=True, text=True, timeout=60, env=env(world), cwd=str(ROOT))
    kind, reason = verdict(json.loads(result.stdout))
    assert kind == "deny" and f"Claude Code session {SID}" in reason


@pytest.mark.parametrize("stdin", ["not json at all", "[1, 2]", ""])
def test_bad_input_or_a_broken_ledger_fails_closed(fleet, stdin) -> None:
    """Garbage on stdin, or a ledger that does not parse: exit 0, a denial with the reason, no traceback."""
    ledger, world = fleet
    result = subprocess.run([sys.executable, "-m", "engine.cli.main", "hook", "pre-tool-use", "--ledger", str(ledger)],
                            input=stdin, capture_output=True, text=True, timeout=60, env=env(world), cwd=str(ROOT))
    assert result.returncode == 0 and "Traceback" not in result.stderr
    answer = json.loads(result.stdout)
    if stdin == "not json at all":
        assert verdict(answer)[0] == "deny" and "could not check this" in verdict(answer)[1]
    ledger.write_text(ledger.read_text().replace("targets:", "targets: [", 1))
    before = ledger.read_bytes()
    broken = bash(ledger, world, "ls")
    kind, reason = verdict(broken)
    assert kind == "deny" and "ledger.yaml" in reason and ledger.read_bytes() == before


def test_the_lease_a_hook_takes_is_journaled_with_its_revision(fleet) -> None:
    """Taking the lease is a write of the ledger: its journal record carries the revision, so
    `handoff check` run while the Claude Code session holds it finds the journal whole."""
    ledger, world = fleet
    assert verdict(bash(ledger, world, "ls"))[0] in ("allow", "none")
    taken = [r for r in journal(ledger) if r.get("kind") == "lease_take"]
    assert taken and taken[-1].get("rev") == load(ledger)["revision"], taken
    checked = handoff("check", str(ledger), world=world)
    assert "journal chain broken" not in checked.stdout + checked.stderr, checked.stdout + checked.stderr
