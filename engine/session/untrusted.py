"""Targets changed outside the engine (engine.store.outside): a session never trusts them.

A target flagged `changed_outside` (a state no runbook step makes, a new or revived
approval, a removed intent, written by hand or by a script) is treated like drift: the
session says what changed, runs the target's probe where its state has one (as evidence
for the person, never as the judge: a hand edit can fake the checkpoint too), and stops
before any action, exit 3, until a person accepts or undoes it with `handoff reconcile`.
A hand edit made while a session runs is flagged by the next write (its own or another
process's): the guard refuses every step on a flagged target, and the session stops on
it at its next look (engine.session.loop), finishing only the steps already running; an
edit met only by the write of its closing note is said after the note, exit 3 all the same
(`closing_code`). The same holds in every runtime (the session loop, the LangGraph runtime,
the Temporal workflow), and a hand edit outranks a pause: exit 3, not 4.
"""

from __future__ import annotations

from engine.ledger.guard import flagged, untrusted_text
from engine.ledger.render import describe
from engine.session.context import SessionContext
from engine.session.probes import run_probe

OUTSIDE_EDIT_ENDING = "targets were changed outside the engine in ways no runbook step makes; starting nothing more"


def stop_for_outside_edits(s: SessionContext) -> bool:
    """Say each flagged target (with its probe's reading, if it has a probe); True if the
    session must stop."""
    ledger = s.store.read()
    names = flagged(ledger)
    for name in names:
        t = ledger.targets[name]
        seen = ""
        step = ledger.probe_step(ledger.position(name)) if t.state != "done" and t.in_flight is None else None
        if step is not None:
            probe = run_probe(ledger, name, step, s.ledger_dir)
            seen = f"; {describe(probe.argv)} says {probe.said()} (the ledger says {t.checkpoint or '-'})"
        s.out.say(untrusted_text(name, t, s.handle.display_location, seen=seen), target=name, kind="drift",
                  changed_outside=t.changed_outside or {})
    return bool(names)


def closing_code(s: SessionContext, code: int) -> int:
    """The exit code once the closing note is written, in every runtime: a hand edit that only
    the note's own write met (an intent removed by hand, whose step's end then wrote nothing) is
    said as at any look, and a run that would end 0, or 4 on a pause, ends 3."""
    if code in (0, 4) and stop_for_outside_edits(s):
        return 3
    return code
