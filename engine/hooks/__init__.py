"""Claude Code's hooks, answered by the engine: `handoff hook EVENT --ledger LEDGER`.

The article's first stack: "a pre-tool hook that reads the ledger and blocks any action
against a target whose state does not permit it ... a stop hook forces the handoff note
to be written." Each hook reads Claude Code's JSON on stdin and answers on stdout as its
hooks documentation specifies (exit 0, a JSON decision); an internal error is answered
by refusing, with the reason (fail closed), and journaled, never with a traceback.

- session-start: the ledger brief (the same the Claude planner starts from) and how to
  act; after a compaction the agent is re-grounded in the ledger, not in a summary.
- pre-tool-use: `handoff run` is checked by the guard now; a runbook command run raw,
  or a write to the ledger or its sidecars, is denied; anything else follows the
  ledger's `agent.unknown_commands`.
- post-tool-use: one redacted journal line per tool call (the TUI's log shows it).
- pre-compact: journaled; it never blocks.
- stop: blocks once while the handoff note is missing, older than the session's
  changes, or fails the review; then writes the engine's note itself.
- stop-failure: a turn that ended on an API error (Claude Code's StopFailure, whose answer
  it ignores): the engine's note when the session's is not current, and the lease back.
- session-end: gives the lease back.
Every hook call also refreshes the Claude Code session's lease (engine.hooks.context).
"""

EVENTS = ("session-start", "pre-tool-use", "post-tool-use", "pre-compact", "stop", "stop-failure", "session-end")
# Claude Code's names for them (settings.json keys and hook_event_name).
CLAUDE_NAMES = {"session-start": "SessionStart", "pre-tool-use": "PreToolUse", "post-tool-use": "PostToolUse",
                "pre-compact": "PreCompact", "stop": "Stop", "stop-failure": "StopFailure",
                "session-end": "SessionEnd"}
# Seconds Claude Code waits for each (`handoff claude init` writes them). At its timeout a hook
# is killed and the tool call runs as if it had no objection, so the hook answers by itself,
# failing closed, well before then (engine.hooks.protocol).
TIMEOUTS = {"pre-tool-use": 30, "post-tool-use": 30, "session-start": 60, "stop": 60, "stop-failure": 60,
            "pre-compact": 30, "session-end": 30}
