"""Probe before an irreversible run: a step whose effect has already happened is
recorded, not run again.

The witnesses of an approval's use (the ledger, the journal, the high-water marks) can
all be rolled back together: a VM snapshot or a restored backup of the ops folder is a
consistent past in which the approval is unused. The real system is not rolled back
with them. So before an irreversible step S is spawned (its intent already written,
so nothing else acts on the target meanwhile), the engine runs S's own `verify`, the
probe of S's target state (DESIGN "States and steps").

What "proves" means: the probe exits 0 and prints a checkpoint (a non-empty last line
that holds no secret), the same rule reconcile uses for a step left in flight. A probe
that fails, times out or prints nothing proves nothing and the step runs. So a `verify`
must fail while the effect has not happened (the demo's `sim.py lsn` exits 1 on a
database that is not linked); a step without a `verify` relies on the witnesses alone.
"""

from __future__ import annotations

from engine.codec.timefmt import now_iso
from engine.ledger.render import describe
from engine.ledger.runbook import next_action_text
from engine.session.context import SessionContext
from engine.session.probes import run_probe


def already_happened(s: SessionContext, it) -> bool:
    """True when `it`'s irreversible step was found done by its probe and recorded so
    (target at the step's `to` with the checkpoint, intent cleared, journaled); the
    caller then does not spawn it. False: run it as usual."""
    from engine.store.transact import NoChange, apply

    step, name = it.step, it.target
    if step.reversible or not step.verify or s.dry_run:
        return False
    ledger = s.store.read()
    t = ledger.targets.get(name)
    ours = ledger.session is not None and ledger.session.id == s.sid
    if not ours or t is None or t.in_flight is None or t.in_flight.token != it.token:
        return False  # no longer this holder's to decide: the fenced launch refuses it, and says so
    probe = run_probe(ledger, name, step, s.ledger_dir)
    if not probe.ok:
        return False
    now = now_iso()
    shown = s.out.clean(describe(probe.argv))

    def fn(ledger):
        t = ledger.targets.get(name)
        if t is None or t.in_flight is None or t.in_flight.token != it.token:
            raise NoChange("the intent was cleared by someone else; their record stands")
        t.in_flight = None
        t.state, t.reason = step.to, None
        t.checkpoint, t.verified_at = probe.value, now
        t.changed_at = now
        t.last_action = f"{step.name} not run: already happened (probe says {probe.value})"
        if t.state == "done":
            t.touched_at = None
        t.next_action = next_action_text(ledger, name)

    result, rev = apply(s.store, fn, s.txn_lock)
    if rev is None:
        s.out.say(f"{name}: {step.name} was not run (its probe says it already happened), but {result}",
                  target=name, kind="discrepancy")
        return True
    s.out.say(f"{name}: {step.name} already happened: probe says {probe.value}; not run (verify: {shown}). "
              f"ledger updated: {name}.state = {step.to}, checkpoint = {probe.value}", target=name, kind="transition",
              rev=rev, step=step.name, to=step.to, checkpoint=probe.value, token=it.token, already=True)
    return True
