"""`handoff claude init LEDGER [--project DIR] [--check]`: wire a project's Claude Code to a ledger.

Writes (or merges into) `DIR/.claude/settings.json` one hook per event, each calling
`handoff hook EVENT --ledger LEDGER` by absolute paths (hooks run with Claude Code's
PATH, not this virtualenv's), with the matcher the event needs and a timeout, and a
`permissions.deny` rule for the subagent tools (`Agent`, `Task`). Every
setting and hook already there is kept; an earlier handoff hook for the same ledger is
replaced. A short section of `DIR/CLAUDE.md` (between markers, created or replaced)
tells the agent that the ledger is its memory and `handoff run` its hands.
`--check` says whether what is installed matches (exit 0) or not (exit 1, and what).
A settings file that is not valid JSON is never overwritten.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from engine.errors import UsageError
from engine.hooks import CLAUDE_NAMES, EVENTS, TIMEOUTS
from engine.store.atomic import atomic_write

BEGIN = "<!-- handoff:begin (written by `handoff claude init`; edit outside these markers) -->"
END = "<!-- handoff:end -->"
MATCHERS = {"pre-tool-use": "*", "post-tool-use": "*"}  # every tool: unknown_commands governs the rest
# Subagents' tool calls are reported to skip PreToolUse (anthropics/claude-code 40580, 88441),
# so while a ledger is wired there are none: Claude Code's own deny rule, and the hook's.
DENIED_TOOLS = ("Agent", "Task")


def handoff_command() -> list[str]:
    """How to run this very `handoff`, by absolute paths."""
    script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(script) == "handoff" and os.access(script, os.X_OK):
        return [script]
    # -P (Python 3.11+): Claude Code runs hooks in the project folder, which the agent writes, and
    # `-m` would put it first on sys.path: an `engine/` or `yaml.py` left there would be the hook.
    return [sys.executable, "-P", "-m", "engine.cli.main"]


def wanted(ledger: str) -> dict[str, list[dict]]:
    """The hooks block for `ledger`: Claude Code event name -> its matcher groups."""
    base = handoff_command()
    out = {}
    for event in EVENTS:
        command = shlex.join([*base, "hook", event, "--ledger", ledger])
        group: dict = {"hooks": [{"type": "command", "command": command, "timeout": TIMEOUTS[event]}]}
        if event in MATCHERS:
            group["matcher"] = MATCHERS[event]
        out[CLAUDE_NAMES[event]] = [group]
    return out


def _ours(group: dict, ledger: str) -> bool:
    return any(" hook " in str(h.get("command", "")) and shlex.quote(ledger) in str(h.get("command", ""))
               for h in group.get("hooks") or [] if isinstance(h, dict))


def _load(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (ValueError, UnicodeDecodeError) as err:
        raise UsageError(f"{path} is not valid JSON ({err}); fix it first: nothing was changed") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} must hold a JSON object; fix it first: nothing was changed")
    return data


def merged(settings: dict, ledger: str) -> dict:
    """`settings` with this ledger's hooks in place of any earlier ones and the subagent
    tools denied, everything else kept."""
    out = dict(settings)
    permissions = out.get("permissions", {})
    if not isinstance(permissions, dict) or not isinstance(permissions.get("deny", []), list):
        # Never replace what a person wrote: say what is wrong and change nothing.
        raise UsageError("settings.json: `permissions` must be an object and `permissions.deny` a list; "
                         "fix it first: nothing was changed")
    permissions = dict(permissions)
    deny = list(permissions.get("deny", []))
    permissions["deny"] = deny + [tool for tool in DENIED_TOOLS if tool not in deny]
    out["permissions"] = permissions
    hooks = dict(out.get("hooks") or {})
    for name, groups in wanted(ledger).items():
        kept = [g for g in hooks.get(name) or [] if not (isinstance(g, dict) and _ours(g, ledger))]
        hooks[name] = kept + groups
    out["hooks"] = hooks
    return out


def section(ledger: str) -> str:
    return "\n".join([
        BEGIN,
        "## The ledger is your memory; `handoff run` is your hands",
        "",
        f"This project's long-running job lives in the ledger `{ledger}`. It is the only memory of what is",
        "done, in flight and waiting: read it (`handoff status`) instead of trusting this conversation.",
        f"- Run every step as `handoff run {ledger} TARGET [STEP]`; never run a step's command directly and",
        "  never edit the ledger or the files beside it (hooks refuse both).",
        "- An irreversible step waits for a person's approval: `handoff run` exits 1 and says who was paged.",
        f"- Before you stop, write the handoff note: `handoff note {ledger} --set -` (the note on stdin).",
        "- Approving, rejecting, resetting, unpausing and the like are for people; subagents are off here.",
        END,
        "",
    ])


def install(ledger: str, project: str) -> list[str]:
    """Write the settings and the CLAUDE.md section; returns what changed, a line each."""
    ledger = os.path.abspath(ledger)
    root = Path(project).resolve()
    settings_path = root / ".claude" / "settings.json"
    settings = _load(settings_path)
    new = merged(settings, ledger)
    changed = []
    if new != settings:
        settings_path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(str(settings_path), (json.dumps(new, indent=2) + "\n").encode("utf-8"))
        changed.append(f"{settings_path}: hooks for {', '.join(CLAUDE_NAMES[e] for e in EVENTS)} -> handoff hook ... "
                       f"--ledger {ledger}; permissions.deny: {', '.join(DENIED_TOOLS)} (no subagents)")
    memo = root / "CLAUDE.md"
    text = memo.read_text(encoding="utf-8") if memo.exists() else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        updated = head + section(ledger) + rest.split(END, 1)[1].lstrip("\n")
    else:
        updated = (text.rstrip("\n") + "\n\n" if text.strip() else "") + section(ledger)
    if updated != text:
        atomic_write(str(memo), updated.encode("utf-8"))
        changed.append(f"{memo}: the handoff section ({'replaced' if BEGIN in text else 'added'})")
    return changed or ["nothing to change: the hooks and the CLAUDE.md section are already in place"]


def check(ledger: str, project: str) -> list[str]:
    """What differs from what `install` would write ([] when it all matches)."""
    ledger = os.path.abspath(ledger)
    root = Path(project).resolve()
    settings = _load(root / ".claude" / "settings.json")
    problems = []
    hooks = settings.get("hooks") or {}
    permissions = settings.get("permissions")
    permissions = permissions if isinstance(permissions, dict) else {}
    deny = permissions.get("deny")
    deny = deny if isinstance(deny, list) else []
    missing = [t for t in DENIED_TOOLS if t not in deny]
    if missing:
        problems.append(f"permissions.deny: {', '.join(missing)} missing (subagents may skip the hooks)")
    for name, groups in wanted(ledger).items():
        if not any(g == groups[0] for g in hooks.get(name) or []):
            problems.append(f"{name}: the handoff hook for {ledger} is missing or different")
    memo = root / "CLAUDE.md"
    text = memo.read_text(encoding="utf-8") if memo.exists() else ""
    if section(ledger).rstrip("\n") not in text:
        problems.append("CLAUDE.md: the handoff section is missing or different")
    return problems
