"""Making the ledger and reality agree before a session acts, and `handoff reconcile`.

- `reconcile_in_flight`: a target with `in_flight` was left mid-step by a dead session.
  If the step's process still runs on this host (found by pid, or by the intent token
  in its environment when the pid never reached the ledger), wait for it up to its
  timeout. Then a reversible step is cleared and will run again; an irreversible one
  is NEVER run again: if the journal shows it failed, the target is failed; otherwise
  its `verify` decides: exit 0 with output records completion with that output as the
  checkpoint, anything else blocks the target with the discrepancy and pages.
- `verify_checkpoints`: every target not done whose state has a probe and a recorded
  checkpoint is probed; a mismatch is recorded on the target and in the journal and
  paged, and the session stops (exit 3).
- `reconcile_target`: the operator's way out, journaled with who and why.
"""

from __future__ import annotations

import os
import signal
import time

from engine.audit.redact import redact
from engine.codec.timefmt import now_iso, parse_iso
from engine.errors import NoSuchState, NoSuchTarget, Refused
from engine.host.procs import pid_alive, wait_for_pid
from engine.ledger.model import Ledger
from engine.ledger.render import describe
from engine.ledger.runbook import next_action_text
from engine.ledger.touched import is_touched
from engine.session.context import SessionContext
from engine.session.probes import find_step_processes, run_probe
from engine.session.runner import TERM_GRACE
from engine.store.transact import NoChange, apply

DEFAULT_WAIT = 600.0


def _live_pids(inflight, host: str) -> list[tuple[int, int | None]]:
    """(pid, pgid) of the step's processes still running on this host."""
    if inflight.host and inflight.host != host:
        return []
    token = getattr(inflight, "token", None)
    found: dict[int, int | None] = {}
    if token:
        for pid in find_step_processes(token):
            try:
                found[pid] = os.getpgid(pid)
            except ProcessLookupError:
                continue
    elif inflight.pid and pid_alive(inflight.pid):
        # No token (an older intent): trust the pid only if its group is the recorded one.
        try:
            if inflight.pgid is None or os.getpgid(inflight.pid) == inflight.pgid:
                found[inflight.pid] = inflight.pgid
        except ProcessLookupError:
            pass
    return list(found.items())


def _wait(s: SessionContext, name: str, inflight, timeout: float | None) -> None:
    pids = _live_pids(inflight, s.host)
    if not pids:
        return
    started = parse_iso(inflight.started_at) or time.time()
    budget = max(1.0, (timeout or DEFAULT_WAIT) - (time.time() - started) + TERM_GRACE)
    shown = ", ".join(str(p) for p, _ in pids)
    if s.dry_run:
        s.out.say(f"{name}: dry run: {inflight.step} still runs (pid {shown}); a real session would wait up to {budget:.0f}s", target=name)
        return
    s.out.say(f"{name}: {inflight.step} is still running (pid {shown}); waiting up to {budget:.0f}s for it", target=name, kind="reconcile")
    deadline = time.monotonic() + budget
    for pid, pgid in pids:
        if wait_for_pid(pid, pgid, max(0.0, deadline - time.monotonic())):
            continue
        # Its timeout has passed: do what the runner would have done.
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(pgid or pid, sig)
            except (ProcessLookupError, PermissionError):
                break
            if wait_for_pid(pid, pgid, TERM_GRACE):
                break
        s.out.say(f"{name}: {inflight.step} (pid {pid}) outlived its timeout and was killed", target=name, kind="reconcile")


def reconcile_in_flight(s: SessionContext) -> None:
    """Settle every intent a dead session left behind."""
    ledger = s.store.read()
    for name, target in ledger.targets.items():
        if target.in_flight is not None and target.in_flight.session != s.sid:
            settle_in_flight(s, name, target.in_flight.model_copy())


def settle_in_flight(s: SessionContext, name: str, inflight) -> None:
    """Settle the intent a holder that is gone left on `name` (the module's first point)."""
    ledger = s.store.read()
    step = ledger.step(inflight.step)
    token = getattr(inflight, "token", None)
    who = f"session {inflight.session or '?'}"
    s.out.say(f"{name}: {inflight.step} was in flight ({who}, started {inflight.started_at or '?'}) and never recorded",
              target=name, kind="reconcile", step=inflight.step)
    if step is None:
        _block(s, name, inflight, f"{inflight.step} was in flight but the runbook has no such step; check the real system, then `handoff reconcile`")
        return
    started = s.handle.journal.last_of("step_start", token=token) if token else None
    if started is not None and started.get("step") != inflight.step:
        # The file names another step than the one the journal says this intent started (a hand
        # edit that made an irreversible intent a reversible one would have it run again).
        _block(s, name, inflight, f"the ledger says {inflight.step} was in flight, but the journal says this intent "
                                  f"({token}) started {started.get('step')}; check the real system, then `handoff reconcile`")
        return
    if inflight.host and inflight.host != s.host:
        s.out.say(f"{name}: it ran on {inflight.host}, not here; its process cannot be seen from {s.host}", target=name)
    _wait(s, name, inflight, step.timeout)
    if step.reversible:
        def clear(ledger: Ledger):
            t = ledger.targets.get(name)
            if t is None or t.in_flight is None or getattr(t.in_flight, "token", None) != token:
                raise NoChange()
            t.in_flight = None
            t.last_action = f"{step.name} interrupted ({who} ended); reversible, so it runs again"
            t.changed_at = now_iso()

        _, rev = apply(s.store, clear, s.txn_lock)
        if rev is not None:
            s.out.say(f"{name}: {step.name} is reversible: intent cleared, it will run again", target=name, kind="reconcile", rev=rev)
        return
    end = s.handle.journal.last_of("step_end", token=token) if token else None
    if end is not None and end.get("exit_code") != 0:
        why = f"exit {end.get('exit_code')}" if end.get("exit_code") is not None else "timed out"
        _fail(s, name, inflight, step, f"{step.name} failed ({why}) before {who} could record it; irreversible: "
                                        "check the real system, then `handoff reconcile`", end)
        return
    if not step.verify:
        _block(s, name, inflight, f"ledger says irreversible {step.name} was in flight ({who}, started {inflight.started_at}); "
                                  "the step has no verify probe to prove what happened. Check the real system, then `handoff reconcile`")
        return
    probe = run_probe(ledger, name, step, s.ledger_dir)
    if probe.ok:
        now = now_iso()

        def done(ledger: Ledger):
            t = ledger.targets.get(name)
            if t is None or t.in_flight is None or getattr(t.in_flight, "token", None) != token:
                raise NoChange()
            t.in_flight = None
            t.state, t.reason, t.checkpoint, t.verified_at = step.to, None, probe.value, now
            t.last_action = f"{step.name} completed (proved by its verify after {who} ended): {probe.value}"
            t.next_action = next_action_text(ledger, name)
            t.changed_at = now
            if t.state == "done":
                t.touched_at = None

        _, rev = apply(s.store, done, s.txn_lock)
        if rev is not None:
            s.out.say(f"{name}: {step.name} is irreversible, so it is not run again; its verify proves it happened "
                      f"({probe.value}). ledger updated: {name}.state = {step.to}", target=name, kind="transition", rev=rev,
                      step=step.name, to=step.to, checkpoint=probe.value)
        return
    _block(s, name, inflight, f"ledger says irreversible {step.name} was in flight ({who}, started {inflight.started_at}) "
                              f"and never recorded; its verify {describe(probe.argv)} said {probe.said()}. It may have "
                              "half-happened: check the real system, then `handoff reconcile`")


def settle_used_approval(s: SessionContext, name: str, step, approval, used: dict) -> None:
    """The ledger offers an approval the journal says was already used: the file went
    back in time (a restored copy) and the step may well have run. Never run it again:
    mark the approval used, then let the step's verify prove the outcome, or block."""
    shows = used.get("witness") or "the journal"
    s.out.say(f"{name}: {shows} shows {step.name} already started under the approval by {approval.by} "
              f"(at {used.get('ts')}); it is never run twice: checking what happened", target=name, kind="reconcile",
              step=step.name)
    ledger = s.store.read()
    probe = run_probe(ledger, name, step, s.ledger_dir) if step.verify else None
    now = now_iso()

    def fn(ledger: Ledger):
        t = ledger.targets.get(name)
        if t is None or t.in_flight is not None:
            raise NoChange()
        for a in t.approvals:
            if a.hash == approval.hash and a.at == approval.at and a.by == approval.by:
                a.used_at, a.used_by = a.used_at or used.get("ts"), a.used_by or used.get("actor")
        t.touched_at = t.touched_at or now
        t.changed_at = now
        if probe is not None and probe.ok:
            t.state, t.reason, t.checkpoint, t.verified_at = step.to, None, probe.value, now
            t.last_action = f"{step.name} proved by its verify (it had already run under this approval): {probe.value}"
            t.next_action = next_action_text(ledger, name)
            if t.state == "done":
                t.touched_at = None
            return None
        said = f"its verify {describe(probe.argv)} said {probe.said()}" if probe is not None else "it has no verify probe"
        t.state = "blocked"
        t.reason = (f"{shows} shows irreversible {step.name} already started under the approval by {approval.by} "
                    f"(at {used.get('ts')}), but the ledger said it had not ({said}); the file may be an old copy. "
                    "Check the real system, then `handoff reconcile`")
        t.next_action = "check the real system, then `handoff reconcile`"
        return t.reason

    problem, rev = apply(s.store, fn, s.txn_lock)
    if rev is None:
        return
    if problem is None:
        assert probe is not None  # fn returns None only when the probe proved it
        s.out.say(f"{name}: {step.name} had run; its verify proves it ({probe.value}). ledger updated: {name}.state = {step.to}",
                  target=name, kind="transition", rev=rev, step=step.name, to=step.to, checkpoint=probe.value)
        return
    s.out.say(f"{name}: DISCREPANCY: {problem}. ledger updated: {name}.state = blocked", target=name, kind="discrepancy", rev=rev)
    s.page("blocked", f"{name}: blocked: {problem}")


def _block(s: SessionContext, name: str, inflight, reason: str) -> None:
    _settle_as(s, name, inflight, "blocked", reason, None)


def _fail(s: SessionContext, name, inflight, step, reason, end) -> None:
    _settle_as(s, name, inflight, "failed", reason, end)


def _settle_as(s: SessionContext, name: str, inflight, state: str, reason: str, end) -> None:
    token = getattr(inflight, "token", None)

    def fn(ledger: Ledger):
        t = ledger.targets.get(name)
        if t is None or t.in_flight is None or getattr(t.in_flight, "token", None) != token:
            raise NoChange()
        t.touched_at = t.touched_at or now_iso()  # mid-change in the real world: stays touched
        t.in_flight = None
        t.state, t.reason = state, s.out.clean(reason)
        t.next_action = "check the real system, then `handoff reconcile`"
        t.changed_at = now_iso()
        if end is not None:
            from engine.ledger.model import Evidence

            t.evidence = Evidence(step=inflight.step, exit_code=end.get("exit_code"), duration=end.get("duration"),
                                  at=end.get("ts"), timed_out=end.get("timed_out"), journal=end.get("seq"))

    _, rev = apply(s.store, fn, s.txn_lock)
    if rev is None:
        return
    s.out.say(f"{name}: DISCREPANCY: {reason}. ledger updated: {name}.state = {state}", target=name, kind="discrepancy", rev=rev, state=state)
    s.page("blocked" if state == "blocked" else "failed", f"{name}: {state}: {reason}")


def verify_checkpoints(s: SessionContext) -> list[str]:
    """Probe every recorded checkpoint; returns the names that drifted (already recorded)."""
    ledger = s.store.read()
    return [name for name in ledger.targets if verify_target(s, name, ledger)]


def verify_target(s: SessionContext, name: str, ledger: Ledger | None = None) -> bool:
    """Probe `name`'s recorded checkpoint, if its state has a probe; True when reality
    disagrees (recorded on the target, journaled and paged)."""
    ledger = ledger or s.store.read()
    target = ledger.targets[name]
    if target.state == "done" or not target.checkpoint or target.in_flight is not None:
        return False
    step = ledger.probe_step(ledger.position(name))
    if step is None:
        return False
    probe = run_probe(ledger, name, step, s.ledger_dir)
    if probe.ok and probe.value == target.checkpoint:
        s.out.say(f"{name}: verifying checkpoint {target.checkpoint} ... match", target=name, kind="verify", checkpoint=target.checkpoint)
        return False
    reason = (f"checkpoint drift: the ledger says {target.checkpoint}, {describe(probe.argv)} says {probe.said()} "
              f"(at {now_iso()}). Resolve with `handoff reconcile LEDGER {name} --accept-checkpoint --reason WHY` "
              "or `--to STATE --reason WHY`")

    def mark(ledger: Ledger):
        t = ledger.targets.get(name)
        if t is None:
            raise NoChange()
        t.reason, t.changed_at = s.out.clean(reason), now_iso()

    _, rev = apply(s.store, mark, s.txn_lock)
    s.out.say(f"{name}: verifying checkpoint {target.checkpoint} ... MISMATCH: reality says {probe.said()}",
              target=name, kind="drift", rev=rev, checkpoint=target.checkpoint, observed=probe.value, probe=probe.argv)
    s.page("drift", f"{name}: ledger and reality disagree: {reason}")
    return True


# -- `handoff reconcile` ---------------------------------------------------------------


def reconcile_target(handle, name: str, *, accept_checkpoint: bool, to: str | None, reason: str) -> str:
    """Resolve a drift or a block as the operator says; returns what was recorded."""
    handle.refuse_agent("reconcile", name)  # people only (engine.approvals.people): never from an agent's process
    ledger = handle.load()
    reason = redact(reason, ledger.redact)  # it is stored and printed
    target = ledger.targets.get(name)
    if target is None:
        raise NoSuchTarget(name, ledger.targets, ledger=handle.display_location)
    if target.in_flight is not None:
        state = handle.session_state(ledger)
        if state.status == "live":
            raise Refused(f"{name} has {target.in_flight.step} running under {state.detail}; wait for it to finish", title="Step running")
    choices = sorted(s for s in ledger.states() if s != "awaiting_approval")
    if to is not None and to not in ledger.states():  # not a state at all: usage, said as a missing target is
        raise NoSuchState(to, choices, ledger=handle.display_location)
    if to is not None and to not in choices:
        raise Refused(f"cannot reconcile {name} to {to!r}; choose one of: {', '.join(choices)}", title="Bad state")
    position = to or ledger.position(name)
    probe_step = ledger.probe_step(position) if position not in ("blocked", "failed", "done") or to == "done" else None
    if accept_checkpoint and probe_step is None:
        raise Refused(f"{name} is {position}, which has no probe; say where it really is with --to STATE", title="No probe")
    probe = run_probe(ledger, name, probe_step, handle.ledger_dir) if probe_step is not None else None
    if accept_checkpoint and probe is not None and not probe.ok:  # no probe was refused above
        raise Refused(f"the probe {describe(probe.argv)} said {probe.said()}; nothing recorded. "
                      "Say where the target really is with --to STATE", title="Probe failed")
    who = handle.who
    now = now_iso()

    def fn(ledger: Ledger):
        t = ledger.targets.get(name)
        if t is None:  # taken out of the file while its probe ran
            raise NoSuchTarget(name, ledger.targets)
        before = (t.state, t.checkpoint)
        if to is not None:
            if is_touched(ledger, name) and to in ("blocked", "failed"):
                t.touched_at = t.touched_at or now
            t.state = to
            t.in_flight = None
            t.clear_request()
            if to == "done":
                t.touched_at = None
        t.checkpoint = probe.value if probe is not None and probe.ok else (None if to is not None and probe is not None else t.checkpoint)
        if probe is not None and probe.ok:
            t.verified_at = now
        t.reason = None
        t.changed_outside = None  # a person has looked: a change made outside the engine is accepted
        t.last_action = f"reconciled by {who.name}: {reason}"
        t.next_action = next_action_text(ledger, name)
        t.changed_at = now
        msg = (f"{name}: reconciled by {who}: {before[0]} -> {t.state}, checkpoint {before[1] or '-'} -> {t.checkpoint or '-'} "
               f"({reason})")
        return msg, [{"kind": "reconcile", "msg": msg, "target": name, "from": before[0], "to": t.state,
                      "checkpoint": t.checkpoint, "reason": reason, "probe": probe.argv if probe else None}]

    msg = handle._change(fn)
    if probe is not None and not probe.ok:
        msg += f"; note: the probe of {position} said {probe.said()}, so no checkpoint is recorded"
    return msg
