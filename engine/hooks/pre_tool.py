"""pre-tool-use: the guard on every tool call a Claude Code session makes.

- `Bash` running `handoff run L T [S]`: the guard decides now, on the ledger as it is,
  and a refusal is a denial with the guard's reason, so the model learns why; otherwise
  it is allowed, and the engine checks everything again inside `handoff run`.
- `Bash` running a runbook step's command outside `handoff run`: denied, with the
  `handoff run` line to use instead.
- Any tool writing the ledger or a file beside it (`Edit`, `Write`, `MultiEdit`,
  `NotebookEdit`, or `Bash` with a redirection, `sed -i`, `tee`, `mv`, `cp`, ...):
  denied, naming the engine command that does it.
- While the ledger is paused, every `handoff run` is denied with the pause's reason.
- Anything else: the ledger's `agent.unknown_commands` (`allow`: no objection, Claude
  Code's own permissions apply; `ask`: a person is asked; `deny`).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from engine import guard
from engine.errors import HandoffError
from engine.hooks import commands
from engine.hooks.context import HookContext
from engine.invariants import journal_readings, evaluate

FILE_TOOLS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
ENGINE_COMMANDS = ("`handoff note` (the handoff note), `handoff approve`/`reject`, `handoff block`/`unblock`, "
                   "`handoff pause`/`unpause`, `handoff retry`, `handoff reconcile`, and `handoff run` for a step")


def decision(kind: str, reason: str = "") -> dict[str, Any]:
    """Claude Code's PreToolUse answer; `{}` means no objection (its permissions apply)."""
    if kind == "none":
        return {}
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": kind,
                                   "permissionDecisionReason": reason}}


def pre_tool_use(ctx: HookContext) -> dict[str, Any]:
    tool = str(ctx.data.get("tool_name") or "")
    given = ctx.data.get("tool_input")
    given = given if isinstance(given, dict) else {}
    cwd = str(ctx.data.get("cwd") or os.getcwd())
    ledger_real = os.path.realpath(ctx.ledger_path)
    ctx.touch_lease()
    if tool in FILE_TOOLS:
        path = str(given.get(FILE_TOOLS[tool]) or "")
        if commands.protected(ledger_real, path, cwd):
            return decision("deny", f"{path} is the ledger (or the engine's file beside it): never edit it directly. "
                                    f"Use the engine, which keeps the journal and the guard: {ENGINE_COMMANDS}")
    if tool == "Bash":
        return _bash(ctx, str(given.get("command") or ""), cwd, ledger_real)
    return _unknown(ctx, tool)


def _bash(ctx: HookContext, line: str, cwd: str, ledger_real: str) -> dict[str, Any]:
    parsed = commands.split(line)
    wrote = commands.writes_ledger(parsed, ledger_real, cwd)
    if wrote:
        return decision("deny", f"{wrote}: the ledger and the files beside it are written only by the engine. "
                                f"Use {ENGINE_COMMANDS}")
    runs = [r for r in commands.handoff_runs(parsed) if commands.protected(ledger_real, r.ledger, cwd)]
    if runs:
        return _handoff_run(ctx, runs)
    raw = commands.raw_step(parsed, ctx.ledger, ctx.writer.ledger_dir, sys.executable)
    if raw is not None:
        step, target = raw
        return decision("deny", f"that is runbook step {step}'s command for {target}, run outside the engine: run it as "
                                f"`handoff run {ctx.ledger_path} {target} {step}` so the ledger records it and the guard checks it")
    return _unknown(ctx, "Bash")


def _handoff_run(ctx: HookContext, runs) -> dict[str, Any]:
    ledger = ctx.ledger
    if ledger.paused is not None:
        return decision("deny", f"the ledger is paused by {ledger.paused.by or 'someone'}: "
                                f"{ledger.paused.why or 'no reason given'}; nothing runs until a person unpauses it")
    if ctx.holder is not None:
        return decision("deny", f"another holder drives this ledger: {ctx.holder.detail}; `handoff run` would exit 5. "
                                "Look with `handoff status` and wait for it to hand off")
    from engine.session.single import pick_step

    statuses = evaluate(ledger, journal_readings(ctx.writer.journal))
    for run in runs:
        if run.target is None or run.target not in ledger.targets:
            return decision("deny", f"`handoff run` needs a target of this ledger; {run.target!r} is not one "
                                    f"(`handoff status {ctx.ledger_path}` lists them)")
        try:
            step = pick_step(ledger, run.target, run.step)
        except HandoffError as err:
            return decision("deny", err.message)
        verdict = guard.check(ledger, run.target, step, statuses=statuses, ledger_dir=ctx.writer.ledger_dir)
        if not verdict.allowed and not verdict.needs_approval:
            return decision("deny", f"the guard refuses {step.name} on {run.target}: {verdict.reason}")
    # Allowed, or it will wait for a person's approval (the engine gates it and pages).
    return decision("allow", "the guard allows it now; `handoff run` checks again inside")


def _unknown(ctx: HookContext, tool: str) -> dict[str, Any]:
    policy = ctx.ledger.agent.unknown_commands if ctx.ledger.agent else "allow"
    if policy == "deny":
        return decision("deny", f"this ledger allows the agent only `handoff` commands (agent.unknown_commands: deny); "
                                f"{tool} is not one")
    if policy == "ask":
        return decision("ask", f"{tool} is not a runbook step; this ledger asks a person first (agent.unknown_commands: ask)")
    return decision("none")
