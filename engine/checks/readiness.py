"""Before a session takes the lease: can this ledger move at all as it is written?

`handoff resume` on a ledger that can never proceed (a broken runbook, no runbook, a
target stalled where no step leaves) used to exit 0 after doing nothing, which cron
reports as green. Now it refuses, exit 2, with the reasons; it changes nothing but the
one journal record that says so. "Waiting on people, or nothing left" stays exit 0.
"""

from __future__ import annotations

from engine.checks.analyse import NO_RUNBOOK, analyse, source_text
from engine.checks.finding import ERROR

SHOWN = 10  # findings printed in full; `handoff check` lists the rest


def stuck_reasons(handle, path: str) -> list[str]:
    """Why the ledger behind `handle` can never proceed as written ([] if it can, or if
    there is nothing left to do). `path` is what the findings are placed in."""
    ledger = handle.load()
    if all(t.state == "done" for t in ledger.targets.values()):
        return []  # nothing left: the session says so and hands off
    if not ledger.steps():
        return [f"{path}: {NO_RUNBOOK}; add runbook.steps (see docs/ledger.md, or start from `handoff init`)"]
    text = source_text(handle.store) if path == handle.location else _file_text(path)
    return [f.text() for f in analyse(ledger, text, path) if f.severity == ERROR]


def refuse_to_start(handle, out, path: str) -> int | None:
    """Exit code 2 (after saying why, in one journal record) if the session must not
    start; None to go on."""
    reasons = stuck_reasons(handle, path)
    if not reasons:
        return None
    more = len(reasons) - SHOWN
    lines = reasons[:SHOWN] + ([f"... and {more} more: `handoff check {path}` lists them all"] if more > 0 else [])
    out.say(f"this ledger can never proceed as written, so no session starts (nothing was changed); "
            f"{len(reasons)} problem{'s' if len(reasons) != 1 else ''}:\n" + "\n".join(lines),
            kind="session_refused", problems=len(reasons))
    return 2


def _file_text(path: str) -> str | None:
    """The text of the ledger the user named (a dry run works on a copy of it)."""
    from engine.store.file import FileStore

    return source_text(FileStore(path, read_only=True))
