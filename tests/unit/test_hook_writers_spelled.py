"""The pre-tool-use hook, read again by a review helper: lines an honest agent runs every day
pass (a variable in an argument, `cd "$X"`, an archive made, a reading `find -exec`, a sed or
awk script that names the ledger only as text), and the spellings that still wrote the ledger
or its files are denied (xargs, awk and interpreter commands, GNU option abbreviations, find's
case and options and real sidecars, `env -C` for any program, `eval cd`, unpackers, git
rewriting the work tree). The real hook process, fed Claude Code's PreToolUse JSON.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from session_kit import demo_copy

BIN = Path(sys.executable).parent


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "HANDOFF_AGENT"))}
    env.update(CLAUDECODE="1", CLAUDE_CODE_ENTRYPOINT="cli", PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
               XDG_CACHE_HOME=str(tmp / "xdg-cache"), XDG_STATE_HOME=str(tmp / "xdg-state"))
    return env


def hook(world, command: str, cwd: Path) -> tuple[str, str]:
    data = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(cwd),
            "tool_input": {"command": command, "description": "ledger work"}}
    p = subprocess.run([str(BIN / "handoff"), "hook", "pre-tool-use", str(world["ledger"])], input=json.dumps(data),
                       capture_output=True, text=True, env=world["env"], timeout=60)
    assert p.returncode == 0, p.stderr
    answer = json.loads(p.stdout or "{}").get("hookSpecificOutput") or {}
    return answer.get("permissionDecision", "none"), answer.get("permissionDecisionReason", "")


def _snap(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.md5(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def world(tmp_path: Path):
    """tmp/fleet/ledger.yaml (+ sidecars a real `handoff note` leaves), tmp/scratch (a forged copy, archives of it
    holding `ledger.yaml`, a diff), tmp/other (an unrelated folder); per-user files under tmp/xdg-*."""
    env = _env(tmp_path)
    ledger = demo_copy(tmp_path)
    subprocess.run([str(BIN / "handoff"), "note", str(ledger), "--set", "-"], input=b"note", capture_output=True,
                   env={k: v for k, v in env.items() if not k.startswith("CLAUDE")}, check=True)
    hookfacts = Path(env["XDG_CACHE_HOME"]) / "handoff"
    hookfacts.mkdir(parents=True, exist_ok=True)
    (hookfacts / "x.hook.json").write_text("{}")
    s = tmp_path / "scratch"
    s.mkdir()
    (tmp_path / "other").mkdir()
    (s / "forged.yaml").write_text(ledger.read_text().replace("state: blocked", "state: queued"))
    shutil.copy(s / "forged.yaml", s / "ledger.yaml")
    sh = lambda c, d: subprocess.run(["bash", "-c", c], cwd=d, check=True, capture_output=True)  # noqa: E731
    sh("tar -cf l.tar ledger.yaml && zip -q l.zip ledger.yaml && ar rc l.a ledger.yaml && gzip -k ledger.yaml"
       " && mv ledger.yaml.gz x.gz", s)
    sh(f"diff -u {ledger} ledger.yaml | sed '1s#^--- [^\\t]*#--- ledger.yaml#; 2s#^+++ [^\\t]*#+++ ledger.yaml#'"
       " > fix.diff; true", s)
    sh(f"tar -cPf abs.tar --transform='s#^{s}/forged.yaml#{ledger}#' {s}/forged.yaml", s)
    shutil.copy(s / "x.gz", ledger.parent / "x.gz")  # `cp ../scratch/x.gz .` is itself allowed (see BYPASSES)
    places = {"fleet": ledger.parent, "proj": tmp_path, "other": tmp_path / "other", "scratch": s}
    return {"ledger": ledger, "env": env, "tmp": tmp_path, "places": places, "cache": hookfacts}


ORDINARY = [
    # any non-reader given a run-time word: `_may_name` turns "$X" into `*`, which matches the ledger
    ("proj", 'ssh "$HOST" uptime'), ("proj", 'for t in db-18 db-19; do ssh "$t" uptime; done'),
    ("proj", 'kubectl get pods -n "$NS"'), ("proj", 'mkdir -p "$OUT"'), ("proj", 'python3 tools/check.py "$TARGET"'),
    ("proj", 'kubectl logs "$(kubectl get pods -o name | head -1)"'),
    ("proj", 'cd "$PROJ" && make build'), ("proj", 'cd "$PROJ"'),  # `cd` itself is "given $PROJ"
    # RecursionError in _names/_may_name: an absolute path after popd / cd - / cd "$X"
    ("proj", 'cd "$X" && cat /etc/hosts'), ("proj", "cd - && ls /tmp"), ("proj", "pushd /tmp; popd; ls /etc"),
    # non-readers that only read here
    ("fleet", "tar -czf {T}/b.tgz ledger.yaml"), ("fleet", "zip -q {T}/b.zip ledger.yaml ledger.yaml.journal.jsonl"),
    ("fleet", "uniq ledger.yaml"), ("fleet", "xxd ledger.yaml | head"),
    ("fleet", "python3 -m json.tool ledger.yaml.last-write.json"),
    # find: a reading -exec; -o / ( ) / -regex make every name "unknown"
    ("proj", "find . -name '*.yaml' -exec grep -l state {{}} +"), ("proj", "find . -name '*.yaml' -exec wc -l {{}} \\;"),
    # sed: the ledger's name anywhere in the script (an address, an s/// pattern), not only after w/W/e
    ("proj", "grep -rn ledger.yaml --include='*.md' . | sed 's/ledger.yaml/LEDGER/'"),
    ("proj", "sed -n '/ledger.yaml/p' notes.md"),
    # awk: its input files are joined into the "code", so reading the ledger + writing any file is denied
    ("proj", "awk '{{print > \"/tmp/out-\" NR}}' fleet/ledger.yaml"),
    # unpacking: -C/-d is added to where it runs (not instead of it); a `cd` away is not trusted
    ("proj", "tar -xzf /tmp/other.tgz -C /tmp/unpack"), ("proj", "unzip -o /tmp/other.zip -d build"),
]



FINE = [
    ("fleet", "python3 -c 'import yaml,sys; print(yaml.safe_load(sys.stdin)[\"task\"])' < ledger.yaml"),
    ("fleet", "yq '.targets | keys' ledger.yaml"), ("fleet", "jq . ledger.yaml.journal.jsonl"),
    ("fleet", "less ledger.yaml"), ("fleet", "head -50 ledger.yaml"), ("fleet", "git log -p ledger.yaml"),
    ("fleet", "git show HEAD:ledger.yaml"), ("fleet", "diff <(git show HEAD:ledger.yaml) ledger.yaml"),
    ("fleet", "cp ledger.yaml /tmp/x"), ("proj", "find . -name '*.log' -delete"), ("fleet", "find . -name '*.log' -delete"),
    ("proj", "cd fleet && cat ledger.yaml"), ("proj", "pushd /tmp; ls; popd; cat ledger.yaml"),
    ("fleet", "handoff --help"), ("fleet", "handoff -h"), ("fleet", "handoff status ledger.yaml --json | jq .targets"),
    ("fleet", "python3 sim.py --help"), ("proj", "find . -type d -name __pycache__ -exec rm -rf {{}} +"),
]


@pytest.mark.parametrize("where, line", ORDINARY + FINE)
def test_an_ordinary_line_passes(world, where: str, line: str) -> None:
    decision, reason = hook(world, line.format(T=world["tmp"]), world["places"][where])
    assert decision in ("none", "allow"), (line, decision, reason)


# Denied on purpose, though they write no protected file: find with `-o`, `!` or `-regex` (which names it may
# match is not worked out), and unpacking after a `cd` (the folder the line started in counts too).
CAUTIOUS = [("proj", "find . -name '*.tmp' -o -name '*.bak' -delete"), ("proj", "find . -regex '.*\\.log' -delete"),
            ("proj", "cd /tmp && tar -xzf other.tgz")]


@pytest.mark.parametrize("where, line", CAUTIOUS)
def test_what_the_hook_cannot_tell_apart_is_denied(world, where: str, line: str) -> None:
    decision, reason = hook(world, line, world["places"][where])
    assert decision == "deny" and "written only by the engine" in reason, (line, decision, reason)




BYPASSES = [
    ("fleet", "echo ledger.yaml | xargs rm", "ledger.yaml"),
    ("proj", "find . -name ledger.yaml | xargs sed -i 's/state: blocked/state: queued/'", "ledger.yaml"),
    ("fleet", "awk -v out=ledger.yaml '{{print > out}}' ../scratch/forged.yaml", "ledger.yaml"),
    ("fleet", "awk 'BEGIN{{system(\"cp ../scratch/forged.yaml ledger.yaml\")}}'", "ledger.yaml"),
    ("fleet", "awk 'BEGIN{{print \"x\" | \"cat >> ledger.yaml.journal.jsonl\"}}'", "ledger.yaml.journal.jsonl"),
    ("fleet", "perl -e 'system(\"cp ../scratch/forged.yaml ledger.yaml\")'", "ledger.yaml"),
    ("fleet", "python3 -c 'import os; os.popen(\"cp ../scratch/forged.yaml ledger.yaml\").read()'", "ledger.yaml"),
    ("fleet", "sed -n --expr='w ledger.yaml' ../scratch/forged.yaml", "ledger.yaml"),
    ("fleet", "sed --i 's/state: blocked/state: queued/' ledger.yaml", "ledger.yaml"),
    ("fleet", "find . -iname LEDGER.YAML -delete", "ledger.yaml"),
    ("other", "find -L {FLEET} -name ledger.yaml -delete", "ledger.yaml"),
    ("fleet", "find . -name '*.lock' -delete", "ledger.yaml.lock"),
    ("fleet", "find . -name '*.targets.json' -delete", "ledger.yaml.last-write.targets.json"),
    ("fleet", "find . -name '*.history.jsonl' -delete", "ledger.yaml.history.jsonl"),
    ("other", "find {CACHE}/.. -name '*.hook.json' -delete", "CACHE:x.hook.json"),
    ("proj", "env --chd=fleet sed -i 's/state: blocked/state: queued/' ledger.yaml", "ledger.yaml"),
    ("proj", "env -C fleet uniq ../scratch/forged.yaml ledger.yaml", "ledger.yaml"),
    ("proj", "eval cd fleet; sed -i 's/state: blocked/state: queued/' ledger.yaml", "ledger.yaml"),
    ("fleet", "tar -f ../scratch/l.tar --extr", "ledger.yaml"),
    ("fleet", "unzip -C -o ../scratch/l.zip", "ledger.yaml"),
    ("fleet", "ar x ../scratch/l.a", "ledger.yaml"),
    ("fleet", "gunzip -Nf x.gz", "ledger.yaml"),
    ("fleet", "git apply ../scratch/fix.diff", "ledger.yaml"),
    ("other", "tar -xPf ../scratch/abs.tar", "ledger.yaml"),
]



@pytest.mark.parametrize("where, template, victim", BYPASSES)
def test_a_spelling_that_writes_the_ledger_is_denied(world, where: str, template: str, victim: str) -> None:
    fleet, cache = world["ledger"].parent, world["cache"]
    line = template.format(FLEET=fleet, CACHE=cache)
    before = _snap(fleet)
    decision, reason = hook(world, line, world["places"][where])
    assert decision == "deny" and "written only by the engine" in reason, (line, decision, reason)
    assert _snap(fleet) == before


@pytest.mark.parametrize("line", ["git checkout .", "git stash", "git reset -q --hard", "git checkout main"])
def test_git_rewriting_the_work_tree_that_tracks_the_ledger_is_denied(world, line: str) -> None:
    """`git checkout -- ledger.yaml` was denied; `git checkout .`, `git stash`, `git reset --hard` write it too where
    git tracks it. Where git does not track it they pass, and so does a read (`git stash list`)."""
    fleet = world["ledger"].parent
    sh = lambda c: subprocess.run(["bash", "-c", c], cwd=fleet, check=True, capture_output=True, env=world["env"])  # noqa: E731
    sh("git init -q -b main . && git add -A && git -c user.email=a@b -c user.name=a commit -qm base")
    decision, reason = hook(world, line, fleet)
    assert decision == "deny" and "the ledger among them" in reason, (line, decision, reason)
    assert hook(world, "git stash list", fleet)[0] in ("none", "allow")
    sh("git rm -q --cached ledger.yaml && git -c user.email=a@b -c user.name=a commit -qm untrack")
    assert hook(world, line, fleet)[0] in ("none", "allow"), line
