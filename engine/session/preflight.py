"""What a session checks before it writes anything: can this ledger be driven as written?

A session that refuses to start changes nothing (no lease, no heartbeat, no lock file,
no rewritten ledger); the caller journals one record of the refusal. Refused:
- a file that lost targets, steps, metrics or its budget, or went back in time, since
  the engine last wrote it (until a human accepts it with `handoff check`);
- an invariant the engine does not understand (it would not be enforced), unless the
  session is started with --allow-unenforced; each is listed with the closest sentence
  the engine understands;
- a pause threshold whose metric has no `metrics` entry (it could never be checked);
- an irreversible step with `until` or retries (an approval must run it exactly once).
"""

from __future__ import annotations

from engine.invariants import closest_form, parse_all
from engine.store.base import Snapshot


def preflight(snap: Snapshot, *, allow_unenforced: bool = False) -> str | None:
    """Why a session cannot start on the ledger read as `snap` (one reason a line), or None."""
    ledger = snap.ledger
    problems: list[str] = [w for w in snap.warnings if snap.missing or snap.rollback]
    for inv in parse_all(ledger):
        if inv.kind == "unenforced" and not allow_unenforced:
            problems.append(f"invariant {inv.text!r} is not understood, so nothing would enforce it; "
                            f"the closest form the engine understands: {closest_form(inv.text)!r} "
                            "(fix the sentence, or start with --allow-unenforced)")
        elif inv.kind == "metric" and inv.metric not in ledger.metrics:
            problems.append(f"the pause threshold {inv.text!r} reads {inv.metric}, which has no source: "
                            f"add metrics.{inv.metric}.run to the ledger")
    for step in ledger.steps():
        if not step.reversible and (step.until or step.retries > 0):
            what = "`until`" if step.until else f"retries: {step.retries}"
            problems.append(f"runbook step {step.name} is irreversible but has {what}; an approval runs it exactly "
                            "once: put the waiting or retrying in a following reversible step")
    if not problems:
        return None
    return "\n  - " + "\n  - ".join(problems)
