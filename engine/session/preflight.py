"""What a session checks before it writes anything: can this ledger be driven as written?

A session that refuses to start changes nothing (no lease, no heartbeat, no lock file,
no rewritten ledger); the caller journals one record of the refusal and exits 2.
Refused:
- a file that lost targets, steps, metrics or its budget, or went back in time, since
  the engine last wrote it (until a human accepts it with `handoff check`);
- everything `handoff check` calls a problem in a ledger with a runbook (engine.checks:
  a broken runbook, a target stuck where no step leaves, a pause threshold with no
  metric, an irreversible step with `until` or retries, ...), including an invariant
  the engine does not understand, unless the session is started with
  --allow-unenforced (then that one is only a warning, journaled).
"Waiting on people, or nothing left" is not a refusal: the session starts and says so.
"""

from __future__ import annotations

from engine.checks.readiness import stuck_reasons

SHOWN = 10  # reasons printed in full; `handoff check` lists the rest


def preflight(handle, path: str, *, allow_unenforced: bool = False) -> list[str]:
    """Why a session cannot start on the ledger behind `handle` ([] when it can)."""
    snap = handle.store.snapshot()
    regressed = list(snap.warnings) if (snap.missing or snap.rollback) else []
    return regressed + stuck_reasons(handle, path, allow_unenforced=allow_unenforced)


def refusal_text(reasons: list[str], path: str) -> str:
    """The one message (and journal record) of a refused session."""
    more = len(reasons) - SHOWN
    lines = reasons[:SHOWN] + ([f"... and {more} more: `handoff check {path}` lists them all"] if more > 0 else [])
    return (f"this ledger can never proceed as written, so no session starts (nothing was changed); "
            f"{len(reasons)} problem{'s' if len(reasons) != 1 else ''}:\n  - " + "\n  - ".join(lines))
