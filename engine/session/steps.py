"""One step on one target, the write-ahead way: intent, run, record.

1. `write_intent` (session thread): inside one store transaction, re-check the guard
   on the freshest ledger, then set `in_flight` (with a token also put in the step's
   environment), `touched_at` for an irreversible step, and mark the approval used.
   The journal is the second witness: an approval whose use it already records never
   authorises another run, whatever the ledger says (an old copy of the file).
   The transaction is fsynced before anything runs.
2. `run_intent` (a worker thread): every spawn (each attempt, each poll) is fenced:
   under the ledger's lock the session re-reads the ledger and confirms it still holds
   the lease and the target's intent token and attempt are this one (a runtime that
   retries on another worker, Temporal, bumps the attempt), and spawns before letting
   go. Otherwise nothing starts and the session ends as for a stop request. A process
   still running half a second later gets its pid noted in the intent (`PidNote`); a
   quick one ends first and costs no write of its own. Nothing depends on the pid being
   there: a later session finds a step's processes by the token in their environment.
   Reversible steps retry; `until` steps poll. The output tail goes to the journal.
3. Record, in one transaction: evidence, new state, the checkpoint from the step's
   `verify`, last/next action, changed_at, and `in_flight` cleared, but only if the
   intent is still ours (a human's `handoff reconcile` in between wins).
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass

from engine.approvals import authority
from engine.approvals.spent_marks import WITHDRAWN, already
from engine.audit.redact import redact
from engine.codec.timefmt import now_iso
from engine.errors import HandoffError, ServiceUnavailable
from engine.ledger import guard
from engine.ledger.guard import Decision
from engine.ledger.model import Approval, Evidence, InFlight, Ledger, Step
from engine.ledger.ops import rendered_command
from engine.ledger.render import approval_digest, describe
from engine.ledger.runbook import next_action_text
from engine.planners.autopilot import Action
from engine.session.already import already_happened
from engine.session.context import SessionContext
from engine.session.probes import render_for, run_probe, step_env
from engine.session.runner import StepResult, parse_reading, run_step, run_until
from engine.session.until_progress import Progress
from engine.store.transact import NoChange, apply


class NotStarted(ServiceUnavailable):
    """The ledger's database stayed away while the fence asked it, before anything was spawned."""


class Fenced(Exception):
    """A step's process was not started: this session may no longer act on that target."""


@dataclass
class Intent:
    """A step the ledger now says is running on a target."""

    target: str
    step: Step
    argv: list[str]
    check_argv: list[str] | None
    token: str
    decision: Decision
    rev: int
    attempt: int = 1  # a runtime that retries on another worker (Temporal) fences on the attempt too
    co_approvals: tuple[Approval, ...] = ()  # under a `count` policy: spent (marked) with `decision.approval`


def write_intent(s: SessionContext, action: Action, statuses) -> Intent | Decision:
    """Record the intent durably, or return the guard's refusal (nothing written)."""
    name, step = action.target, action.step
    token = f"{s.sid}/{secrets.token_hex(4)}"
    stop: list[str] = []  # the stop this write met, if one had landed since the session last looked
    co: list[Approval] = []  # the co-approvals this intent spends with its approval

    def fn(ledger: Ledger):
        if ledger.session is None or ledger.session.id != s.sid:
            raise NoChange(Decision(False, "this session no longer holds the lease"))
        if ledger.session.stop_requested:  # asked to stop after this holder last looked: nothing new starts
            stop[:] = [f"stop requested by {ledger.session.stop_requested_by or 'someone'}"]
            raise NoChange(Decision(False, stop[0]))
        if name not in ledger.targets:
            raise NoChange(Decision(False, f"{name} is no longer in the ledger"))
        # Decide on the runbook as it is now: the proposal came from an earlier read, and
        # someone may have changed the step since (made it irreversible, changed `run`).
        fresh = ledger.step(step.name)
        if fresh is None or fresh.model_dump() != step.model_dump():
            raise NoChange(Decision(False, f"runbook step {step.name} changed since it was proposed; deciding again"))
        argv = rendered_command(ledger, name, fresh, s.ledger_dir)
        decision = guard.check(ledger, name, fresh, statuses=statuses, ledger_dir=s.ledger_dir,
                                   where=s.handle.display_location)
        if not decision.allowed and ledger.targets[name].changed_outside:
            return decision  # written: a hand edit this write just flagged stays flagged (and journaled)
        if not decision.allowed:
            raise NoChange(decision)
        if not fresh.reversible:
            assert decision.approval is not None  # the guard allows an irreversible step only with its approval
            proofs = s.handle.journal.proofs() if not s.dry_run else None
            spends = authority.spent_together(ledger, name, fresh, decision.approval)
            for one in spends:  # under a `count` policy each co-approval too: their order in the file proves nothing
                spent = _already_used(s, name, step, one, proofs)
                if spent is not None:
                    raise NoChange(spent)
            co[:] = [one.model_copy() for one in spends[:-1]]
            refused = authority.check_in_fence(s.handle.journal, ledger, name, fresh, decision.approval, s.ledger_arg,
                                               used_by=s.identity, digest=approval_digest(name, ledger.targets[name], fresh,
                                                                                          ledger_dir=s.ledger_dir))
            if refused is not None:  # no witness, or an identity that does not verify: never spawns
                if refused.record is None:
                    raise NoChange(Decision(False, refused.why, settling=True))
                return refused
        target, now = ledger.targets[name], now_iso()
        target.in_flight = InFlight(step=step.name, session=s.sid, host=s.host, started_at=now, attempt=1, token=token)
        if not step.reversible and decision.approval is not None:  # checked in the fence just above
            target.touched_at = target.touched_at or now
            decision.approval.used_at = now  # the approval object of this fresh ledger
            decision.approval.used_by = s.identity
        target.last_action = f"{step.name} started by session {s.sid}"
        target.changed_at = now
        check = render_for(ledger, name, step.check, s.ledger_dir, f"check of step {step.name}") if step.check else None
        return argv, check, decision

    result, rev = apply(s.store, fn, s.txn_lock)
    if stop:
        s.ending = s.ending or stop[0]  # the session ends on the stop, not "for want of work"
    if rev is None:
        return result
    if isinstance(result, authority.Refusal):
        s.out.say(f"{name}: {step.name} NOT started: {result.why}", rev=rev, **(result.record or {}))
        return Decision(False, result.why)
    if isinstance(result, Decision):
        return result
    argv, check, decision = result
    return Intent(name, step, argv, check, token, decision, rev, co_approvals=tuple(co))


def _already_used(s: SessionContext, name: str, step: Step, approval, proofs) -> Decision | None:
    """The refusal of an approval the journal or a spent mark says a run already used, or None."""
    used = used_before(s.handle.journal, name, approval)
    if used is not None:
        return Decision(False, f"the approval by {approval.by} at {approval.at} was already used (journal: {step.name} "
                               f"started at {used.get('ts')})", approval=approval, used=used)
    mark = proofs.spent(name, approval) if proofs is not None else None
    if mark is not None and not str(mark.get("token")).startswith(WITHDRAWN):  # another user's session used it
        return Decision(False, f"the approval by {approval.by} at {approval.at} was already used ({mark['witness']}: "
                               f"{mark['actor']} at {mark['ts']})", approval=approval, used=mark)
    return None


def used_before(journal, name: str, approval) -> dict | None:
    """The journal's record of a step started under `approval`, if there is one."""
    return journal.last_of("step_start", target=name, approval_hash=approval.hash, approval_by=approval.by,
                           approval_at=approval.at)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


@dataclass
class Outcome:
    result: StepResult | None
    ok: bool
    stopped: bool = False
    value: float | None = None
    why: str = ""


def _run_once(s: SessionContext, it: Intent, argv: list[str], launch) -> Outcome:
    note = PidNote(s, it)

    def launch_noted(start):
        proc = launch(start)
        note.latest = proc.pid  # every spawn (a quick `until` probe too): an earlier one's late note is dropped
        return proc

    try:
        return _run_noted(s, it, argv, launch_noted, note)
    finally:
        note.join()  # before anything records the step: its intent is not changed under the record


def _run_noted(s: SessionContext, it: Intent, argv: list[str], launch, note: PidNote) -> Outcome:
    step = it.step
    env = step_env(it.token)
    if step.until and not s.dry_run:
        result, reached, value = run_until(
            argv, step.until, interval=step.interval or 1.0, timeout=step.timeout or 600.0,
            cwd=s.ledger_dir, env=env, launch=launch, should_stop=lambda: s.ending is not None,
            on_reading=Progress(s.out, it.target, step, step.timeout or 600.0), running=note,
        )
        if reached:
            return Outcome(result, True, value=value)
        if result.timed_out:
            shown = f"last reading {value:g}" if value is not None else "no reading"
            return Outcome(result, False, value=value, why=f"{step.until} did not hold within {step.timeout or 600:g}s ({shown})")
        if result.ok:
            try:
                parse_reading(result.stdout)
            except ValueError as err:
                return Outcome(result, False, why=str(err))
            return Outcome(result, False, stopped=True, value=value)
        return Outcome(result, False, value=value, why=_why(result))
    result = run_step(argv, timeout=step.timeout, cwd=s.ledger_dir, env=env, launch=launch, running=note)
    return Outcome(result, result.ok, why="" if result.ok else _why(result))


def _why(result: StepResult) -> str:
    if result.timed_out:
        return f"timed out after {result.duration:.0f}s (process group killed)"
    return f"exit {result.exit_code}: {_last_line(redact(result.output_tail))}"  # masked whole, then cut


def announce(s: SessionContext, it: Intent) -> dict:
    """Say (and journal, fsynced) that the step starts: under the fence, just before the
    spawn, so a `step_start` means this holder had the lease and the intent when it
    started the process. It names the approval it uses: the second witness of its use.
    Returns the record (with `journal_error` when the journal could not take it)."""
    step = it.step
    if step.reversible:
        kind = f"{step.description}; reversible" if step.description else "reversible"
    else:
        approval = it.decision.approval
        kind = f"irreversible, approved by {approval.by} at {approval.at}" if approval else "irreversible"
    argv = it.check_argv if s.dry_run else it.argv
    shown = describe(argv) if argv else "(no check form)"
    used = it.decision.approval if not step.reversible else None
    return s.out.say(f"{it.target}: starting {step.name} ({kind})" + (f" [dry run: {shown}]" if s.dry_run else ""),
                     target=it.target, kind="step_start", rev=it.rev, step=step.name, argv=argv, token=it.token,
                     approval_hash=used.hash if used else None, approval_by=used.by if used else None,
                     approval_at=used.at if used else None)


def spend(s: SessionContext, it: Intent) -> None:
    """Right before the first spawn of an irreversible step: the mark, owned by this process's
    user, that its approval is spent (engine.approvals.spent_marks); Fenced when it may not be
    spent or the mark cannot be made: such a step never runs without it."""
    proofs = s.handle.journal.proofs()
    approval = it.decision.approval
    if proofs is None or approval is None:
        return
    try:
        why = _spend_all(proofs, it, approval, s.identity or "?")
    except (OSError, HandoffError) as err:
        why = (f"the mark that its approval is spent could not be made ({getattr(err, 'strerror', None) or err}), and "
               "an irreversible step never runs without it")
    if why:
        raise Fenced(why)


def _spend_all(proofs, it: Intent, approval: Approval, user: str) -> str | None:
    """Mark the approval and, under a `count` policy, each co-approval spent; why one may not be,
    or None. The co-approvals are looked at first and the approval is marked first (its own
    `spend` looks at it): a refused spawn marks none of them."""
    for one in it.co_approvals:
        mark = proofs.spent(it.target, one, it.token)
        if mark is not None:
            return already(one, mark)
    for one in (approval, *it.co_approvals):
        why = proofs.spend(it.target, one, it.token, user)
        if why:
            return why
    return None


def fenced_launch(s: SessionContext, it: Intent):
    """The `launch` of every spawn of this intent's step (see the module's point 2)."""
    name = it.target

    def check(ledger: Ledger) -> None:
        if ledger.session is None or ledger.session.id != s.sid:
            holder = ledger.session.id if ledger.session else "nobody"
            raise Fenced(f"this session no longer holds the lease (it is {holder}'s now)")
        t = ledger.targets.get(name)
        if t is None or t.in_flight is None or t.in_flight.token != it.token:
            now = "gone" if t is None else f"{t.state}, " + (f"{t.in_flight.step} in flight for another" if t.in_flight else "nothing in flight")
            raise Fenced(f"the ledger no longer holds this session's intent on {name} ({now})")
        if (t.in_flight.attempt or 1) != it.attempt:
            raise Fenced(f"attempt {t.in_flight.attempt} of {it.step.name} on {name} has taken over from this one (attempt {it.attempt})")
        why = s.beat.can_act() if s.beat is not None else None
        if why:
            raise Fenced(f"this session {why}")
        if not it.step.reversible:  # the approval's witness and identity, again, at the spawn itself
            why = authority.launch_refusal(s.handle.journal, ledger, name, it.decision.approval,
                                           digest=approval_digest(name, t, it.step, ledger_dir=s.ledger_dir))
            if why:
                raise Fenced(why)

    announced: list[bool] = []

    def launch(start):
        def first():
            if not announced:  # the first spawn of this intent: journal it (fsynced) right before it happens
                record = announce(s, it)
                announced.append(True)
                if "journal_error" in record and not it.step.reversible and not s.dry_run:
                    # The journal's step_start is the witness that this approval was used: an
                    # irreversible step never runs without it (a copy of the ledger from before,
                    # imported again, would find its approval unused and run the step twice).
                    raise Fenced(f"its start could not be journaled ({record['journal_error']}), and an irreversible "
                                 "step never runs without that record")
                if not it.step.reversible and not s.dry_run:
                    spend(s, it)  # after the journal's witness: a start refused before it burns no approval

        with s.txn_lock:
            try:
                return s.store.fence(check, start, first=first)
            except ServiceUnavailable as err:  # the fence gave up before the spawn: nothing was started
                raise NotStarted(str(err)) from None

    return launch


class PidNote:
    """`running` for the runner: notes the pid of a step process that is still running
    (engine.session.runner.RUNNING_AFTER after its spawn) in the target's intent, where
    an operator and the handoff note look for it. It is the pid of the newest of the
    intent's processes that ran that long (an `until` step's probe, a retry): it may
    have ended since, and a quicker spawn after it does not replace it. The write
    happens on a thread of its own, so a wait for the ledger's lock never holds up the
    step's output or timeout; `join` (after the process is done, before the step is
    recorded) waits for it. A write that fails is said, never fatal: the intent's token
    is how the process is found again."""

    def __init__(self, s: SessionContext, it: Intent) -> None:
        self.s, self.it = s, it
        self.threads: list[threading.Thread] = []
        self.latest = 0  # the pid of this intent's newest spawn here (an `until` step spawns many)

    def __call__(self, proc) -> None:
        thread = threading.Thread(target=self._note, args=(proc.pid,), name="handoff-pid-note", daemon=True)
        try:
            thread.start()
        except RuntimeError:  # no thread to be had (a container's process limit): the token will do
            return
        self.threads.append(thread)

    def _note(self, pid: int) -> None:
        s, it = self.s, self.it

        def fn(ledger: Ledger) -> None:
            t = ledger.targets.get(it.target)
            f = t.in_flight if t is not None else None
            if (f is None or f.token != it.token or (f.attempt or 1) != it.attempt or f.host != s.host
                    or pid != self.latest or f.pid == pid):
                # No longer this intent, its attempt, or this host's (a runtime that retried it
                # elsewhere); a newer spawn's pid; or noted already: nothing to note.
                raise NoChange()
            f.pid = f.pgid = pid  # start_new_session: the step leads its own group

        try:
            apply(s.store, fn, s.txn_lock, patient=False)  # best effort: never spends a database outage's allowance
        except Exception as err:  # noqa: BLE001 - the process runs; a pid not noted is said, never fatal to it
            s.out.say(f"{it.target}: could not note the pid of {it.step.name} ({err}); the step goes on",
                      target=it.target, kind="warning")

    def join(self) -> None:
        for thread in self.threads:
            thread.join()


def run_intent(s: SessionContext, it: Intent) -> None:
    """Run the step (retrying a reversible one), then record what happened."""
    name, step = it.target, it.step
    argv = it.check_argv if s.dry_run else it.argv

    launch = fenced_launch(s, it)
    if argv is None:  # dry run of a step with no check form: say so, change nothing real
        announce(s, it)
        s.out.say(f"{name}: dry run: {step.name} has no check form; would run {describe(it.argv)}", target=name)
        record_outcome(s, it, Outcome(None, True), None)
        return
    if already_happened(s, it):  # an irreversible step's own probe proves it done: record it, never run it
        return
    attempts = 1 + (max(0, step.retries) if step.reversible else 0)  # an irreversible step runs once
    outcome, end = Outcome(None, False), None
    for attempt in range(1, attempts + 1):
        ran = run_attempt(s, it, launch, attempt, attempts)
        if ran is None:
            return
        outcome, end = ran
        if outcome.ok or outcome.stopped or s.ending is not None or attempt == attempts:
            break
        time.sleep(min(2.0, 0.25 * attempt))
    record_outcome(s, it, outcome, end)


def run_attempt(s: SessionContext, it: Intent, launch, attempt: int, attempts: int) -> tuple[Outcome, dict] | None:
    """One attempt of the intent's step, its `step_end` journaled; None if it was fenced
    (not started: said and journaled, and the holder stops acting)."""
    name, step = it.target, it.step
    argv = it.check_argv if s.dry_run else it.argv
    assert argv is not None  # run_intent settles a dry run with no check form before any attempt
    if attempt > 1:
        s.out.say(f"{name}: retrying {step.name} (attempt {attempt}/{attempts}, reversible)", target=name, kind="retry", step=step.name)
    try:
        outcome = _run_once(s, it, argv, launch)
    except Fenced as why:
        # Not started: someone else decides about this target now. Record nothing.
        s.out.say(f"{name}: {step.name} NOT started: {why}; this session stops acting", target=name, kind="fenced",
                  step=step.name, token=it.token)
        s.ending = s.ending or f"stopped acting: {why}"
        return None
    res = outcome.result
    assert res is not None  # a step that ran has its result
    end = s.out.record(
        "step_end", f"{name}: {step.name} " + ("ok" if outcome.ok else "stopped" if outcome.stopped else f"failed ({outcome.why})"),
        target=name, step=step.name, argv=res.argv, exit_code=res.exit_code, duration=round(res.duration, 2),
        timed_out=res.timed_out or None, output_tail=res.output_tail, attempt=attempt, token=it.token,
        value=outcome.value, dry_run=s.dry_run or None,
    )
    return outcome, end


def record_outcome(s: SessionContext, it: Intent, outcome: Outcome, end: dict | None) -> None:
    """Record what the step did, only if the intent is still this holder's (module point 3)."""
    name, step = it.target, it.step
    checkpoint = None
    probe_problem = None
    if outcome.ok and step.verify and not s.dry_run:
        probe = run_probe(s.store.read(), name, step, s.ledger_dir)
        if probe.ok:
            checkpoint = probe.value
        else:
            probe_problem = s.out.clean(f"{step.name} exited 0 but its verify {describe(probe.argv)} said {probe.said()}")
    res = outcome.result
    now = now_iso()

    def fn(ledger: Ledger):
        t = ledger.targets.get(name)
        if t is None or t.in_flight is None or getattr(t.in_flight, "token", None) != it.token:
            raise NoChange("the intent was cleared by someone else; their record stands")
        t.in_flight = None
        if res is not None:
            t.evidence = Evidence(step=step.name, exit_code=res.exit_code, duration=round(res.duration, 1), at=now,
                                  timed_out=res.timed_out or None, journal=(end or {}).get("seq"))
        t.changed_at = now
        before = t.state
        if probe_problem:
            t.state, t.reason = "blocked", probe_problem
            t.next_action = "check the real system, then `handoff reconcile`"
        elif outcome.ok:
            t.state, t.reason = step.to, None
            if checkpoint is not None:
                t.checkpoint, t.verified_at = checkpoint, now
            t.last_action = f"{step.name} ok" + (" (dry run: check only)" if s.dry_run else "")
            if t.state == "done":
                t.touched_at = None
            t.next_action = next_action_text(ledger, name)
        elif outcome.stopped:
            shown = f"; last reading {outcome.value:g}" if outcome.value is not None else ""
            t.last_action = f"{step.name} stopped when the session ended{shown}"
        else:
            t.state, t.reason = "failed", s.out.clean(f"{step.name} failed: {outcome.why}")  # output can hold a password
            t.last_action = f"{step.name} failed"
            t.next_action = (f"read the output (`handoff journal`), then `handoff retry` {name}" if step.reversible else
                             f"{step.name} is irreversible and may have half-happened: check the real system, then `handoff reconcile`")
        return before, t.state

    result, rev = apply(s.store, fn, s.txn_lock)
    if rev is None:
        s.out.say(f"{name}: {step.name} finished, but {result}", target=name, kind="discrepancy")
        return
    before, after = result
    s.after_step(it, outcome, after, rev, checkpoint, probe_problem)
