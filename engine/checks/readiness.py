"""Before a session takes the lease: can this ledger move at all as it is written?

`handoff resume` on a ledger that can never proceed (a broken runbook, no runbook, a
target stalled where no step leaves) used to exit 0 after doing nothing, which cron
reports as green. Now it refuses (engine.session.preflight), exit 2, with the reasons.
"Waiting on people, or nothing left" stays exit 0.
"""

from __future__ import annotations

from engine.checks.analyse import NO_RUNBOOK, analyse, source_text
from engine.checks.finding import ERROR


def stuck_reasons(handle, path: str, *, allow_unenforced: bool = False) -> list[str]:
    """Why the ledger behind `handle` can never proceed as written ([] if it can, or if
    there is nothing left to do). `path` is what the findings are placed in.
    `allow_unenforced`: an invariant the engine does not understand is not a reason."""
    ledger = handle.store.read()
    if all(t.state == "done" for t in ledger.targets.values()):
        return []  # nothing left: the session says so and hands off
    if not ledger.steps():
        return [f"{path}: {NO_RUNBOOK}; add runbook.steps (see docs/ledger.md, or start from `handoff init`)"]
    text = source_text(handle.store) if path == handle.location else _file_text(path)
    skip = {"invariant-unenforced"} if allow_unenforced else set()
    return [f.text() for f in analyse(ledger, text, path) if f.severity == ERROR and f.code not in skip]


def _file_text(path: str) -> str | None:
    """The text of the ledger the user named (a dry run works on a copy of it)."""
    from engine.store.file import FileStore

    return source_text(FileStore(path, read_only=True))
