"""pre-tool-use: the guard on every tool call a Claude Code session makes.

A Bash command line is judged part by part (engine.hooks.judge: every simple command,
also inside `$(...)`, `bash -c`, here-docs fed to a shell, `env`/`sudo`/`timeout`/`xargs`
wrappers), and the answer is the strictest part's: `allow` only when every part is.
- `handoff run L T [S]`: the guard decides now, on the ledger as it is, and a refusal
  is a denial with the guard's reason, so the model learns why; otherwise it is allowed,
  and the engine checks everything again inside `handoff run`.
- A people-only operation (engine.approvals.people: approve, reject, reset, unpause, retry
  --force, check --accept-*, ...), in any spelling, or code that imports the engine:
  denied, saying that a person runs it. The engine refuses them to agents too: the
  hook is the net, not the lock.
- Reading `handoff` commands (status, journal, check, note) and the agent's own note
  through `handoff note L --set -`: allowed, whatever `agent.unknown_commands` says.
- A runbook step's command outside `handoff run`: denied, with the `handoff run` line.
- Any tool writing the ledger or a file beside it (`Edit`, `Write`, `MultiEdit`,
  `NotebookEdit`, or `Bash` editing, copying, moving or linking onto it:
  engine.hooks.writes): denied, naming the engine command that does it.
- The subagent tools (`Agent`, `Task`): denied; their tool calls may skip this hook.
- While the ledger is paused, every `handoff run` is denied with the pause's reason.
- Any other tool given the ledger's path (or a sidecar's, or the settings wiring these hooks),
  an MCP server's `write_file` say, unless its name says it only looks (`read_*`, `get_*`,
  `list_*`, ...): denied as a write.
- A call not judged within two thirds of Claude Code's timeout: denied (engine.hooks.deadline).
- Anything else: the ledger's `agent.unknown_commands` (`allow`: no objection, Claude
  Code's own permissions apply; `ask`: a person is asked; `deny`); reading tools (`Read`,
  `Grep`, `Glob`) are never refused.

Everything but the guard's judgement of a `handoff run` reads the hook's facts
(`ctx.facts`: states, steps, pause, policy); the guard, the invariants and the whole
validated ledger are loaded only for a line that has a `handoff run` of this ledger.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from engine.hooks import commands, judge, writes
from engine.hooks.context import HookContext
from engine.hooks.deadline import deadline

FILE_TOOLS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
# Subagents' tool calls are reported to skip PreToolUse (anthropics/claude-code 40580, 88441):
# while a ledger is wired, no subagents (`handoff claude init` also denies them in permissions).
SUBAGENT_TOOLS = {"Agent", "Task"}
SUBAGENT_REASON = ("subagents are off while this project drives a ledger: their tool calls may skip the hooks that "
                   "guard it. Do the work yourself, one `handoff run` at a time")
READING_TOOLS = {"Read", "Glob", "Grep", "LS", "TodoWrite", "NotebookRead"}
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
    with deadline("pre-tool-use"):
        return _judged(ctx, tool, given, cwd, ledger_real)


def _judged(ctx: HookContext, tool: str, given: dict[str, Any], cwd: str, ledger_real: str) -> dict[str, Any]:
    if tool in FILE_TOOLS:
        path = str(given.get(FILE_TOOLS[tool]) or "")
        if commands.protected(ledger_real, path, cwd):
            real = os.path.realpath(os.path.join(cwd, os.path.expanduser(path)))
            if writes.engine_own(real):
                return decision("deny", f"{path} is one of the engine's own files (its per-user cache or state): "
                                        "only the engine writes them")
            if writes.hook_settings(real):
                return decision("deny", f"{path} wires the hooks that guard the ledger (`handoff claude init` writes it): "
                                        "a person edits it, not the agent")
            return decision("deny", f"{path} is the ledger (or the engine's file beside it): never edit it directly. "
                                    f"Use the engine, which keeps the journal and the guard: {ENGINE_COMMANDS}")
    if tool == "Bash":
        return _bash(ctx, str(given.get("command") or ""), cwd, ledger_real)
    if tool in SUBAGENT_TOOLS:
        return decision("deny", SUBAGENT_REASON)
    if tool in READING_TOOLS:
        return decision("none")  # reading is the agent's job, whatever unknown_commands says
    named = None if _reads(tool) else next((p for p in _paths(given) if commands.protected(ledger_real, p, cwd)), None)
    if named is not None:  # an MCP file server's write_file, move_file, ...
        return decision("deny", f"{tool} is given {named}, the ledger, a file beside it or a file that guards it: "
                                f"never change it directly. Use the engine: {ENGINE_COMMANDS}")
    return _unknown(ctx, tool)


# A tool whose name's last word starts so only looks (`mcp__filesystem__read_text_file`, `get_file_info`).
_LOOKING = ("read", "get", "list", "search", "view", "show", "find", "grep", "glob", "stat", "info", "describe", "head",
            "tail", "cat", "directory_tree", "tree")


def _reads(tool: str) -> bool:
    return tool.rsplit("__", 1)[-1].lower().startswith(_LOOKING)


def _paths(given: Any, depth: int = 0) -> list[str]:
    """Every one-line string of a tool's input that may be a path (`file://` taken off), a few levels deep."""
    if isinstance(given, str):
        text = given.removeprefix("file://")
        return [text] if text and len(text) <= 4096 and "\n" not in text else []
    if depth > 4:
        return []
    values = given.values() if isinstance(given, dict) else given if isinstance(given, list) else ()
    return [p for value in values for p in _paths(value, depth + 1)]


def _bash(ctx: HookContext, line: str, cwd: str, ledger_real: str) -> dict[str, Any]:
    facts = judge.Facts(ctx.ledger_path, ledger_real, cwd, _policy(ctx))

    def runs(parsed: list[commands.Command]) -> judge.Verdict | None:
        found = [r for c in parsed for r in commands.handoff_runs([c]) if judge.names_ledger(r.ledger, c, facts)]
        return _handoff_run(ctx, found) if found else None

    def raw(command: commands.Command) -> str | None:
        try:
            hit = commands.raw_step([command], ctx.facts, ctx.ledger_dir, sys.executable)
        except ValueError:  # stored target states that do not decode: the ledger itself, which stores them again
            ctx.drop_facts()
            hit = commands.raw_step([command], ctx.facts, ctx.ledger_dir, sys.executable)
        if hit is None:
            return None
        step, target, how = hit
        if not target:  # a step's script given words only the shell knows: any of its steps, any target
            return (f"{how}: it may be any of them for any target, run outside the engine. Run each step as "
                    f"`handoff run {ctx.ledger_path} TARGET STEP`, with the step and the target spelled out, so the "
                    "ledger records it and the guard checks it")
        how = f" ({how})" if how else ""
        if target not in ctx.facts.targets:  # a word only the shell knows (`$t`): any target
            return (f"that is runbook step {step}'s command for a target only the shell knows ({target}){how}, run "
                    f"outside the engine: run it as `handoff run {ctx.ledger_path} TARGET {step}`, one target a call, "
                    "with the target spelled out, so the ledger records it and the guard checks it")
        return (f"that is runbook step {step}'s command for {target}{how}, run outside the engine: run it as "
                f"`handoff run {ctx.ledger_path} {target} {step}` so the ledger records it and the guard checks it")

    verdict = judge.judge_line(line, facts, runs=runs, raw_step=raw)
    reason = verdict.reason
    if verdict.kind == "deny" and "written only by the engine" in reason:
        reason += f". Use {ENGINE_COMMANDS}"
    return decision(verdict.kind, reason)


def _policy(ctx: HookContext) -> str:
    return ctx.facts.unknown_commands


def _handoff_run(ctx: HookContext, runs) -> judge.Verdict:
    paused = ctx.facts.paused
    if paused is not None:
        return judge.Verdict("deny", f"the ledger is paused by {paused.get('by') or 'someone'}: "
                                f"{paused.get('why') or 'no reason given'}; nothing runs until a person unpauses it")
    if ctx.holder is not None:
        return judge.Verdict("deny", f"another holder drives this ledger: {ctx.holder.detail}; `handoff run` would exit 5. "
                                "Look with `handoff status` and wait for it to hand off")
    from engine.errors import HandoffError, NoSuchTarget
    from engine.ledger import guard
    from engine.ledger.invariants import evaluate, journal_readings
    from engine.session.single import pick_step

    ledger = ctx.ledger  # the guard needs the whole validated ledger
    statuses = evaluate(ledger, journal_readings(ctx.writer.journal))
    for run in runs:
        if run.target is None:
            return judge.Verdict("deny", f"`handoff run` needs a target of this ledger (`handoff status {ctx.ledger_path}` "
                                    "lists them)")
        if run.target not in ledger.targets:  # what `handoff run` itself would say
            return judge.Verdict("deny", f"`handoff run` would exit 2: "
                                    f"{NoSuchTarget(run.target, ledger.targets, ledger=ctx.ledger_path).message}")
        try:
            step = pick_step(ledger, run.target, run.step, where=ctx.ledger_path)
        except HandoffError as err:
            return judge.Verdict("deny", err.message)
        verdict = guard.check(ledger, run.target, step, statuses=statuses, ledger_dir=ctx.ledger_dir, where=ctx.ledger_path)
        if not verdict.allowed and not verdict.needs_approval:
            return judge.Verdict("deny", f"the guard refuses {step.name} on {run.target}: {verdict.reason}")
    # Allowed, or it will wait for a person's approval (the engine gates it and pages).
    return judge.Verdict("allow", "the guard allows it now; `handoff run` checks again inside")


def _unknown(ctx: HookContext, tool: str) -> dict[str, Any]:
    policy = _policy(ctx)
    if policy == "deny":
        return decision("deny", f"this ledger allows the agent only `handoff` commands (agent.unknown_commands: deny); "
                                f"{tool} is not one")
    if policy == "ask":
        return decision("ask", f"{tool} is not a runbook step; this ledger asks a person first (agent.unknown_commands: ask)")
    return decision("none")
