"""The agent session: `handoff resume --ledger LEDGER` (DESIGN.md, "The session loop").

Take the lease; print the summary and the handoff note; settle what a dead session
left in flight; verify every checkpoint; then, until the budget or the work runs out:
honour pause and stop requests, evaluate invariants (metrics are read here), let the
planner propose, let the guard decide, gate irreversible steps behind approvals, and
run steps write-ahead (engine.session.steps). End on purpose: finish what runs, write
a handoff note generated from the ledger, give the lease back.

Exit codes: 0 handed off (or nothing left, or only humans can move it); 2 usage or
invalid ledger; 3 ledger and reality disagree; 4 paused; 5 another session holds it.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass
from typing import TextIO

from engine import guard, ops
from engine.access import open_writer
from engine.errors import HandoffError, Refused, ServiceUnavailable, UsageError
from engine.identity import hostname, os_user
from engine.invariants import parse_all
from engine.model import Ledger
from engine.render import describe
from engine.session import gates, leasing
from engine.session.dryrun import make_shadow
from engine.session.handoff_note import generate, rules_in
from engine.session.lease import HeartbeatThread, new_session_id
from engine.session.out import Out
from engine.session.planner import get_planner, touch_limit
from engine.session.reconcile import reconcile_in_flight, verify_checkpoints

from engine.session.gates import without_reversible_runs
from engine.session.steps import Intent, apply, run_intent, write_intent

IDLE_METRICS_EVERY = 5.0  # while steps run, re-read metrics this often
ACT_METRICS_EVERY = 1.0  # before starting a step, a reading at most this old


@dataclass
class Options:
    """`handoff resume` flags."""

    ledger: str
    dry_run: bool = False
    planner: str = "autopilot"
    max_steps: int | None = None
    max_minutes: float | None = None
    handoff_at: float | None = None
    wait: bool = False
    actor: str | None = None
    json: bool = False
    poll: float = 0.5
    stream: TextIO | None = None


class Session:
    """One run of the loop; `run()` returns the exit code."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.host = hostname()
        self.sid = new_session_id()
        self.identity = f"agent:{self.sid}"  # never a person's name: approving it is never self-approval
        self.dry_run = opts.dry_run
        self.ending: str | None = None
        self.code = 0
        self.steps_used = 0
        self.workers: dict[str, threading.Thread] = {}
        self.wake = threading.Event()
        self.txn_lock = threading.Lock()
        self.statuses = []
        self.metrics_at = 0.0
        self.last_invariants = ""
        self.invariants_said_at = 0.0
        self.metric_said: dict[str, tuple[tuple[float, bool], float]] = {}
        self.said: set[tuple[str, str, str]] = set()
        self.t0 = time.monotonic()

    # -- set-up and tear-down --------------------------------------------------------

    def run(self) -> int:
        planner = get_planner(self.opts.planner)
        self._check_flags()
        location = make_shadow(self.opts.ledger) if self.dry_run else self.opts.ledger
        self.handle = open_writer(location, actor=self.opts.actor)
        if self.handle.read_only:
            raise UsageError(f"cannot drive this ledger: {self.handle.read_only_reason}")
        if hasattr(self.handle.store, "patience"):
            from engine.store.postgres import outage_limit

            self.handle.store.patience = outage_limit()  # from now on a brief database outage is ridden out
        self.store, self.ledger_dir, self.location = self.handle.store, self.handle.ledger_dir, location
        self.out = Out(self.handle.journal, self.identity, json_mode=self.opts.json, stream=self.opts.stream,
                       session=self.sid, user=os_user())
        previous, rev = leasing.acquire(self.store, location, session_id=self.sid, user=self.handle.actor,
                                        planner=planner.name, now=time.time())
        self.planner = planner
        beat = HeartbeatThread(leasing.heartbeat_of(self.store), self.sid, state_fn=self._beat)
        beat.start()
        restore = self._signals()
        try:
            self._limits(self.store.read())
            self.out.say(f"session {self.sid} started by {self.handle.who} on {self.host} (planner {planner.name}"
                         f"{', DRY RUN on ' + os.path.basename(location) if self.dry_run else ''}; budget {self._budget_text()})",
                         kind="session_start", rev=rev, planner=planner.name, dry_run=self.dry_run or None)
            if previous.status in ("dead", "stale"):
                self.out.say(f"took over the lease: {previous.detail}", kind="lease_takeover", previous=previous.holder)
                self.page("lease_takeover", f"session {self.sid} took over from {previous.detail}")
            self.code = self._body()
        except ServiceUnavailable as err:
            self._unavailable(err)
        except HandoffError as err:
            self.out.say(f"session error: {err}", kind="error")
            # A refusal here (a template the runbook cannot fill, a shrunken or busy
            # ledger) means the ledger cannot be driven as it is: exit 2, as DESIGN says.
            self.code = err.exit_code if err.exit_code in (2, 3, 4, 5) else 2
        finally:
            restore()
            self._join_workers()
            beat.stop()
            released, why = self._release()
            beat.heartbeat.remove() if released is not None else None
            self.out.say(f"session {self.sid} ended (exit {self.code})" + why, kind="session_end", rev=released, exit_code=self.code)
        return self.code

    def _unavailable(self, err: ServiceUnavailable) -> None:
        """A service stayed away: start nothing new, let running steps finish, exit 6."""
        if self.code == 6:
            return  # already said (the main loop and a step's worker both meet it)
        self.ending = self.ending or f"a service the session needs stayed unavailable: {err}"
        self.code = 6
        if self.workers:
            self.out.say(f"{err}; starting nothing new, waiting for {len(self.workers)} running step(s)", kind="error")
        else:
            self.out.say(f"{err}; ending the session", kind="error")

    def _release(self) -> tuple[int | None, str]:
        """Give the lease back; (revision, '') or (None, why not)."""
        try:
            released = leasing.release(self.store, self.sid)
        except ServiceUnavailable:  # the database is still away: the lease goes stale and is taken over
            return None, "; the lease could not be released (the database is unreachable): the next session takes it over once it is stale"
        except HandoffError as err:
            return None, f"; the lease could not be released ({err}): the next session takes it over once it is stale"
        return released, "" if released is not None else "; the lease was no longer ours"

    def _check_flags(self) -> None:
        o = self.opts
        if o.max_steps is not None and o.max_steps < 1:
            raise UsageError("--max-steps must be at least 1")
        if o.max_minutes is not None and not o.max_minutes > 0:
            raise UsageError("--max-minutes must be more than 0")
        if o.handoff_at is not None and not 0 < o.handoff_at <= 1:
            raise UsageError("--handoff-at is a fraction of the budget, more than 0 and at most 1 (default 0.75)")

    def _limits(self, ledger: Ledger) -> None:
        budget = ledger.budget
        self.max_steps = self.opts.max_steps or (budget.steps if budget and budget.steps else None)
        self.max_minutes = self.opts.max_minutes or (budget.minutes if budget and budget.minutes else 60.0)
        self.handoff_at = self.opts.handoff_at or (budget.handoff_at if budget and budget.handoff_at else 0.75)
        self.parallel = 1 if self.dry_run else (touch_limit(ledger) or 1)

    def _budget_text(self) -> str:
        steps = f"{self.max_steps} steps, " if self.max_steps else ""
        return f"{steps}{self.max_minutes:g} min, hand off at {self.handoff_at:.0%}"

    def budget_used(self) -> float:
        used = (time.monotonic() - self.t0) / (self.max_minutes * 60.0)
        if self.max_steps:
            used = max(used, self.steps_used / self.max_steps)
        return used

    def _beat(self) -> dict:
        return {"budget_used": round(self.budget_used(), 3), "phase": "ending" if self.ending else "running",
                "detail": f"{len(self.workers)} running, {self.steps_used} steps"}

    def _signals(self):
        if threading.current_thread() is not threading.main_thread():
            return lambda: None

        def handler(signum, _frame):
            self.ending = self.ending or f"{signal.Signals(signum).name} received"
            self.wake.set()

        old = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
        return lambda: [signal.signal(sig, h) for sig, h in old.items()]

    # -- the loop ----------------------------------------------------------------------

    def _body(self) -> int:
        ledger = self.store.read()
        self.out.say("loaded ledger: " + (", ".join(f"{n} {s}" for s, n in ledger.counts().items()) or "no targets"))
        self._read_note(ledger)
        for inv in parse_all(ledger):
            if inv.kind == "unenforced":
                self.out.say(f"invariant NOT enforced: {inv.text} ({inv.problem})", kind="warning")
            elif inv.kind == "metric" and inv.metric not in ledger.metrics:
                raise UsageError(f"the pause threshold {inv.text!r} reads {inv.metric}, which has no source: "
                                 f"add metrics.{inv.metric}.run to the ledger")
        if ledger.paused is not None:
            self.out.say(f"ledger is paused by {ledger.paused.by or 'someone'}: {ledger.paused.why or 'no reason given'}; "
                         "nothing will run until `handoff unpause`", kind="paused")
            return 4
        reconcile_in_flight(self)
        if verify_checkpoints(self):
            self._finish("the ledger and reality disagree (checkpoint drift); stopping before any action")
            return 3
        return self._loop()

    def _read_note(self, ledger: Ledger) -> None:
        note = (ledger.handoff_note or "").strip()
        if not note:
            self.out.say("no handoff_note in the ledger")
            return
        by = f" (by {ledger.handoff_note_by} at {ledger.handoff_note_at})" if ledger.handoff_note_by else ""
        self.out.say(f'handoff_note{by}: "{note}"', kind="note_read")
        for rule in rules_in(note):
            self.out.say(f"handoff_note read. Rule: {rule}", kind="note_rule")

    def _loop(self) -> int:
        while True:
            ledger = self.store.read()
            if ledger.session is None or ledger.session.id != self.sid:
                holder = ledger.session.id if ledger.session else "nobody"
                self.out.say(f"this session no longer holds the lease (now {holder}); stopping at once", kind="lease_lost")
                self._join_workers()
                return 5
            self._notice(ledger)
            if self.ending:
                break
            if time.monotonic() - self.metrics_at >= IDLE_METRICS_EVERY and not self._invariants(ledger, acting=False):
                continue
            started, gated = self._act(ledger)
            if self.ending:
                continue
            if gated:
                continue  # a gate changed the ledger: look again at once
            if not self.workers and not started:
                if self._idle(self.store.read()):
                    continue
            self.wake.wait(self.opts.poll)
            self.wake.clear()
        if self.code == 6:  # the ledger's database is away: no note can be written, let running steps end
            self._join_workers()
            return 6
        self._finish(self.ending)
        return self.code

    def _notice(self, ledger: Ledger) -> None:
        """Operator control and the budget, checked every iteration."""
        if self.ending:
            return
        if ledger.session.stop_requested:
            self.ending = f"stop requested by {ledger.session.stop_requested_by or 'someone'}"
        elif ledger.paused is not None:
            self.ending = f"ledger paused by {ledger.paused.by or 'someone'}: {ledger.paused.why or 'no reason given'}"
            self.code = 4
        elif self.budget_used() >= self.handoff_at:
            self.ending = f"session budget {self.budget_used():.0%} used"

    def _act(self, ledger: Ledger) -> tuple[int, int]:
        """Propose, decide, gate or start. Gates need no worker slot; starts do."""
        started = gated = 0
        actions = self.planner.propose(ledger, busy=set(self.workers))
        if not actions:
            return 0, 0
        if time.monotonic() - self.metrics_at >= ACT_METRICS_EVERY:
            if not self._invariants(ledger, acting=True):
                return 0, 0
            ledger = self.store.read()
        hold = False  # an earlier target waits only for running reversible steps: let them drain
        view = None
        for action in actions:
            if self.ending:
                break
            name, step = action.target, action.step
            if step.reversible and not self.dry_run and not self._can_start():
                continue  # no slot or budget, and a reversible step never needs a gate: skip the rendering
            try:
                argv = ops.rendered_command(ledger, name, step, self.ledger_dir)
            except Refused as err:
                self.out.say(f"{name}: cannot render {step.name}: {err}", target=name, kind="warning")
                continue
            decision = guard.check(ledger, name, step, statuses=self.statuses)
            if not decision.allowed and not decision.needs_approval and self.workers:
                # Refused now; would it pass once the running reversible steps end?
                view = view or without_reversible_runs(ledger)
                later = guard.check(view, name, step, statuses=self.statuses)
                if later.allowed:
                    hold = True
                    continue
                if later.needs_approval:
                    decision = later
            if self.dry_run and (name, step.name, decision.reason) not in self.said:
                self.said.add((name, step.name, decision.reason))  # each decision once, not every poll
                self.out.say(f"{name}: dry run: {step.name} would run {describe(argv)} -> guard: "
                             f"{'allowed' if decision.allowed else 'refused'} ({decision.reason})", target=name, kind="decision")
            if decision.allowed:
                if hold or not self._can_start():
                    continue
                intent = write_intent(self, action, self.statuses)
                if isinstance(intent, Intent):
                    self._start(intent)
                    started += 1
                    ledger, view = self.store.read(), None
            elif decision.needs_approval:
                view = view or without_reversible_runs(ledger)
                if self.planner.should_ask(view, action) and self._gate(action, argv, decision):
                    gated += 1
                    ledger, view = self.store.read(), None
        return started, gated

    def _can_start(self) -> bool:
        """A free worker slot and step budget left (below the hand-off fraction)."""
        if len(self.workers) >= self.parallel:
            return False
        return not (self.max_steps and self.steps_used / self.max_steps >= self.handoff_at)

    def _idle(self, ledger: Ledger) -> bool:
        """Nothing runs and nothing can start. True to keep waiting (--wait)."""
        if all(t.state == "done" for t in ledger.targets.values()):
            self.ending = "nothing left to do: every target is done"
            return False
        awaiting = [n for n, t in ledger.targets.items() if t.state == "awaiting_approval"]
        if self.opts.wait and awaiting:
            if getattr(self, "_waiting_said", None) != awaiting:
                self.out.say(f"waiting for approvals: {', '.join(awaiting)} (--wait)", kind="waiting")
                self._waiting_said = awaiting
            return False
        people = sum(1 for t in ledger.targets.values() if t.state in ("awaiting_approval", "blocked", "failed"))
        self.ending = f"nothing can proceed without a human ({people} target(s) wait on people)"
        return False

    # -- invariants, gates, steps -------------------------------------------------------

    def _invariants(self, ledger: Ledger, *, acting: bool) -> bool:
        return gates.check_invariants(self, ledger, acting=acting)

    def _gate(self, action, argv: list[str], decision) -> bool:
        return gates.gate(self, action, argv, decision)

    def page(self, event: str, message: str) -> bool | None:
        return gates.page(self, event, message)

    def _start(self, intent: Intent) -> None:
        step = intent.step
        if step.reversible:
            kind = f"{step.description}; reversible" if step.description else "reversible"
        else:
            kind = f"irreversible, approved by {intent.decision.approval.by} at {intent.decision.approval.at}"
        argv = intent.check_argv if self.dry_run else intent.argv
        shown = describe(argv) if argv else "(no check form)"
        self.out.say(f"{intent.target}: starting {step.name} ({kind})" + (f" [dry run: {shown}]" if self.dry_run else ""),
                     target=intent.target, kind="step_start", rev=intent.rev, step=step.name, argv=argv, token=intent.token)
        self.steps_used += 1
        thread = threading.Thread(target=self._worker, args=(intent,), name=f"step-{intent.target}", daemon=True)
        self.workers[intent.target] = thread
        thread.start()

    def _worker(self, intent: Intent) -> None:
        try:
            run_intent(self, intent)
        except ServiceUnavailable as err:  # the step ran, its result could not be written: the next session settles it
            self._unavailable(err)
            self.out.say(f"{intent.target}: {intent.step.name} finished but could not be recorded (the ledger's database "
                         "is unreachable); its intent stays in the ledger for the next session to settle",
                         target=intent.target, kind="error")
        except Exception as err:  # noqa: BLE001 - journaled and recorded; the session goes on
            self.out.say(f"{intent.target}: session error while running {intent.step.name}: {type(err).__name__}: {err}",
                         target=intent.target, kind="error")
        finally:
            self.workers.pop(intent.target, None)
            self.wake.set()

    def after_step(self, it: Intent, outcome, state: str, rev: int, checkpoint, problem) -> None:
        """Say what a finished step did (called from its worker thread)."""
        name, step = it.target, it.step
        if problem:
            self.out.say(f"{name}: DISCREPANCY: {problem}. ledger updated: {name}.state = blocked", target=name, kind="discrepancy", rev=rev)
            self.page("blocked", f"{name}: blocked: {problem}")
        elif outcome.ok:
            what = (f"{step.name} reading {outcome.value:g} ({step.until} holds)" if outcome.value is not None
                    else f"{step.name} passed")
            cp = f", checkpoint = {checkpoint}" if checkpoint else ""
            self.out.say(f"{name}: {what}. ledger updated: {name}.state = {state}{cp}", target=name, kind="transition",
                         rev=rev, step=step.name, to=state, checkpoint=checkpoint)
        elif outcome.stopped:
            self.out.say(f"{name}: {step.name} stopped as the session ends; {name} stays {state}", target=name, kind="transition", rev=rev)
        else:
            self.out.say(f"{name}: {step.name} failed: {outcome.why}. ledger updated: {name}.state = failed", target=name,
                         kind="transition", rev=rev, step=step.name, to="failed")
            self.page("failed", f"{name}: {step.name} failed: {outcome.why}")

    # -- ending ------------------------------------------------------------------------

    def _join_workers(self) -> None:
        while self.workers:
            for thread in list(self.workers.values()):
                thread.join(0.2)

    def _finish(self, why: str) -> None:
        running = len(self.workers)
        wait = f"Finishing {running} running step(s), then writing" if running else "Writing"
        self.out.say(f"{why}. {wait} handoff_note and exiting cleanly.", kind="handoff_start", budget_used=round(self.budget_used(), 3))
        self._join_workers()

        def fn(ledger: Ledger):
            text = generate(ledger, ledger_path=self.opts.ledger, ending=why, session=self.sid)
            return text, ops.set_note(ledger, ops.Who(self.identity, os_user()), text, base=None)

        (text, records), rev = apply(self.store, fn, self.txn_lock)
        for r in records:
            self.out.record(r["kind"], r["msg"], rev=rev, text=r.get("text"))
        self.out.say(f'handoff_note: "{text.strip()}"', kind="handoff", rev=rev)

def resume(opts: Options) -> int:
    """Run one session; the exit code of `handoff resume`."""
    return Session(opts).run()
