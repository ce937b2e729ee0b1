"""The pre-tool-use hook denies what a review helper found it let through (each a real write of
the ledger or its journal when bash ran it): awk's and sed's own file writing, programs that
write files they are given or unpack (uniq, iconv, curl, xxd, tar, patch, find -exec/-delete,
python's shutil, git diff --output), a change of folder spelled as pushd, builtin cd, env -C,
and `handoff -v COMMAND`. Reading stays allowed. The real hook process, fed Claude Code's
PreToolUse JSON; the ledger is byte-identical after each denied line.
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from session_kit import demo_copy

BIN = Path(sys.executable).parent
ENGINE_ONLY = "written only by the engine"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "HANDOFF_AGENT"))}
    env.update(CLAUDECODE="1", CLAUDE_CODE_ENTRYPOINT="cli", PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}")
    return env


def hook(ledger: Path, command: str, cwd: Path) -> tuple[str, str]:
    """(decision, reason) of the real hook for a Bash tool call; `none`: no objection."""
    data = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(cwd),
            "tool_input": {"command": command, "description": "ledger work"}}
    p = subprocess.run([str(BIN / "handoff"), "hook", "pre-tool-use", str(ledger)], input=json.dumps(data),
                       capture_output=True, text=True, env=_env(), timeout=60)
    assert p.returncode == 0, p.stderr
    answer = json.loads(p.stdout or "{}").get("hookSpecificOutput") or {}
    return answer.get("permissionDecision", "none"), answer.get("permissionDecisionReason", "")


@pytest.fixture
def fleet(tmp_path: Path):
    """(the demo ledger, a copy of it elsewhere, an archive holding that copy as ledger.yaml, a patch to it)."""
    ledger = demo_copy(tmp_path)
    forged = tmp_path / "scratch" / "forged.yaml"
    forged.parent.mkdir()
    forged.write_text(ledger.read_text().replace("state: blocked", "state: queued"))
    archive = forged.parent / "update.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(forged, arcname="ledger.yaml")
    diff = forged.parent / "fix.diff"
    diff.write_text("".join(difflib.unified_diff(ledger.read_text().splitlines(True), forged.read_text().splitlines(True),
                                                 "ledger.yaml", "ledger.yaml")))
    (ledger.parent / "ledger.yaml.journal.jsonl").write_text('{"kind": "approval", "target": "db-19"}\n')
    return ledger, forged, archive, diff


DENIED = [
    ("awk '{{print > \"ledger.yaml\"}}' {F}", "awk code names ledger.yaml"),
    ("awk '{{print >> \"ledger.yaml.journal.jsonl\"}}' {F}", "awk code names ledger.yaml"),
    ("sed -n 'w ledger.yaml' {F}", "`sed`'s script writes or runs something naming the ledger"),
    ("sed -n 's/x/x/w ledger.yaml.journal.jsonl' {F}", "`sed`'s script writes or runs something naming the ledger"),
    ("uniq {F} ledger.yaml", "`uniq` is given ledger.yaml, and the hook cannot tell whether it writes it"),
    ("iconv -f utf-8 -t utf-8 -o ledger.yaml {F}", "`iconv` is given ledger.yaml"),
    ("xxd {F} | xxd -r - ledger.yaml", "`xxd` is given ledger.yaml"),
    ("curl -s -o ledger.yaml file://{F}", "`curl` is given ledger.yaml"),
    ("tar -xf {TAR}", "`tar` would write the files it unpacks in the ledger's folder"),
    ("tar xf {TAR}", "`tar` would write the files it unpacks"),
    ("tar -C . --extract -f {TAR}", "`tar` would write the files it unpacks"),
    ("patch -p0 < {DIFF}", "`patch` would write the files it unpacks"),
    ("find . -name ledger.yaml -exec cp {F} {{}} \\;", "`find -exec` would act on what it finds"),
    ("find . -name 'ledger.yaml.j*' -delete", "`find -delete` would act on what it finds"),
    ("find . -type f -delete", "`find -delete` would act on what it finds"),
    ("python3 -c \"import shutil as s; s.copy('{F}', 'ledger.yaml')\"", "python3 code names ledger.yaml"),
    ("git diff --no-index --output=ledger.yaml /dev/null {F}", "`git diff` would change"),
    ("python3 fix.py ledger.yaml", "`python3` is given ledger.yaml, and the hook cannot tell whether it writes it"),
]


@pytest.mark.parametrize("template, said", DENIED)
def test_a_program_that_may_write_the_ledger_is_denied(fleet, template: str, said: str) -> None:
    ledger, forged, archive, diff = fleet
    line = template.format(F=forged, TAR=archive, DIFF=diff)
    before = ledger.read_bytes()
    decision, reason = hook(ledger, line, ledger.parent)
    assert decision == "deny" and said in reason and ENGINE_ONLY in reason, (line, decision, reason)
    assert ledger.read_bytes() == before


FOLDERS = [
    "pushd fleet >/dev/null && sed -i 's/state: blocked/state: queued/' ledger.yaml",
    "builtin cd fleet && sed -i 's/state: blocked/state: queued/' ledger.yaml",
    "command cd fleet; sed -i 's/state: blocked/state: queued/' ledger.yaml",
    "X=1 cd fleet && cp scratch/forged.yaml ledger.yaml",
    "env -C fleet sed -i 's/state: blocked/state: queued/' ledger.yaml",
    "env --chdir=fleet cp ../scratch/forged.yaml ledger.yaml",
    "sudo -D fleet sed -i 's/state: blocked/state: queued/' ledger.yaml",
    "git -C fleet checkout -- ledger.yaml",
    "cd fleet && cd /tmp && popd; sed -i 's/state: blocked/state: queued/' ledger.yaml",
    "cd \"$WHERE\" && sed -i 's/state: blocked/state: queued/' ledger.yaml",
]


@pytest.mark.parametrize("line", FOLDERS)
def test_a_change_of_folder_however_spelled_is_followed(fleet, line: str) -> None:
    """Claude Code's cwd is the project; the ledger is one folder down (fleet/): plain `cd fleet` was followed, and
    so are pushd, builtin/command cd, an assignment before cd, env -C, sudo -D, git -C, and a folder only the shell
    knows (popd, `cd "$WHERE"`), which may be the ledger's."""
    ledger = fleet[0]
    decision, reason = hook(ledger, line, ledger.parent.parent)
    assert decision == "deny" and ENGINE_ONLY in reason, (line, decision, reason)


@pytest.mark.parametrize("line", ["handoff -v note ledger.yaml --set ''", "handoff --quiet note ledger.yaml --set 'fine'",
                                  "handoff -v approve ledger.yaml db-18 --yes", "handoff -q unpause ledger.yaml",
                                  "python3 -m engine.cli.main -v retry ledger.yaml db-27 --force --reason x"])
def test_an_option_before_the_command_does_not_hide_it(fleet, line: str) -> None:
    ledger = fleet[0]
    decision, reason = hook(ledger, line, ledger.parent)
    assert decision == "deny" and ("is for people" in reason or "the reviewed path" in reason
                                   or "runs the engine's code directly" in reason), (line, reason)


READS = [
    "cat ledger.yaml", "grep -c state ledger.yaml", "tail -n 5 ledger.yaml.journal.jsonl", "wc -l ledger.yaml",
    "jq -c .kind ledger.yaml.journal.jsonl", "sed -n '/db-18/p' ledger.yaml", "awk '/state/ {{n++}} END {{print n}}' ledger.yaml",
    "diff ledger.yaml {F}", "git diff ledger.yaml", "tar -tf {TAR}", "find . -name '*.yaml' -print",
    "find {S} -name ledger.yaml -delete", "cat ledger.yaml | python3 -c 'import sys; print(len(sys.stdin.read()))'",
    "handoff status ledger.yaml", "handoff -v status ledger.yaml", "sha256sum ledger.yaml",
]


@pytest.mark.parametrize("template", READS)
def test_reading_the_ledger_stays_allowed(fleet, template: str) -> None:
    """Reading is not writing: readers, a sed or awk script that names no file, an archive listed, find acting
    elsewhere or only printing, a pipe into any program, and `handoff` itself pass (Claude Code's permissions apply)."""
    ledger, forged, archive, _ = fleet
    line = template.format(F=forged, TAR=archive, S=forged.parent)
    decision, reason = hook(ledger, line, ledger.parent)
    assert decision in ("none", "allow"), (line, decision, reason)
