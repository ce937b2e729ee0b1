"""The agent session: `handoff resume --ledger LEDGER` (DESIGN.md, "The session loop").

Take the lease; print the summary and the handoff note; settle what a dead session
left in flight; verify every checkpoint; then, until the budget or the work runs out:
honour pause and stop requests, evaluate invariants (metrics are read here), let the
planner propose, let the guard decide, gate irreversible steps behind approvals, and
run steps write-ahead (engine.session.steps). End on purpose: finish what runs, write
a handoff note generated from the ledger, give the lease back.

Every proposal, autopilot's or the Claude planner's, becomes work (or a refusal)
through `Session.attempt` (engine.session.attempt): one guard, one step runner. Every
handoff note the session writes passes the deterministic review (engine.audit.review).

Exit codes: 0 handed off (or nothing left, or only humans can move it); 2 usage or
invalid ledger; 3 ledger and reality disagree; 4 paused; 5 another session holds it;
6 a service the session needs stayed unavailable (the planner's API).
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import threading
import time
from dataclasses import dataclass
from typing import TextIO

from engine.approvals.identity import os_user
from engine.audit.note_rules import rules_in
from engine.codec.timefmt import now_iso
from engine.errors import HandoffError, Refused, ServiceUnavailable, UsageError
from engine.host import console, failpoints
from engine.lease import leasing
from engine.lease.rules import HeartbeatThread, new_session_id
from engine.ledger.access import is_url, open_writer
from engine.ledger.invariants import parse_all
from engine.ledger.model import Ledger
from engine.ledger.runbook import touch_limit
from engine.ledger.stall import moved_since, stall_ending
from engine.planners.base import ProposingPlanner, TurnPlanner
from engine.planners.brief import movable
from engine.planners.choose import get_planner
from engine.session.actor import Actor
from engine.session.dryrun import make_shadow
from engine.session.preflight import preflight, refusal_text
from engine.session.reconcile import reconcile_in_flight, verify_checkpoints
from engine.session.steps import Intent, NotStarted, run_intent
from engine.session.until_progress import span
from engine.session.untrusted import OUTSIDE_EDIT_ENDING, closing_code, flagged, stop_for_outside_edits
from engine.store.filelock import lock_timeout

IDLE_METRICS_EVERY = 5.0  # while steps run, re-read metrics this often
ACT_METRICS_EVERY = 1.0  # before starting a step, a reading at most this old
SETTLE_WAIT = 0.2  # an approval met before its journal record: the first pause before deciding again (doubling)


_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?(\.\d+)?Z?")  # an ISO time inside a page's words


@dataclass
class Options:
    """`handoff resume` flags."""

    ledger: str
    dry_run: bool = False
    planner: str = "autopilot"
    model: str | None = None
    max_tokens: int | None = None
    max_steps: int | None = None
    max_minutes: float | None = None
    handoff_at: float | None = None
    wait: bool = False
    actor: str | None = None
    json: bool = False
    allow_unenforced: bool = False
    poll: float = 0.5
    stream: TextIO | None = None


class Session(Actor):
    """One run of the loop; `run()` returns the exit code."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.sid = new_session_id()
        self.dry_run = opts.dry_run
        self.steps_used = 0
        self.wake = threading.Event()
        self.settle_rounds = 0  # looks in a row that met an approval still being recorded (the pause doubles)
        self.lock_wait: tuple[str, float] | None = None  # (holder, when) while waiting on the ledger's lock
        self.store_unavailable = False  # the ledger's database stayed away: nothing more can be written
        self.t0 = time.monotonic()
        self.started_iso = now_iso()
        self.note_at_start: str | None = None
        self._pages: dict[tuple[str, str], str] = {}  # (event, target) -> the words last paged
        self.stop_asks = 0  # stop signals received (a second Ctrl-C is answered, see _join_workers)
        self.started_at: dict[str, tuple[str, float]] = {}  # running target -> (its step, when it started)

    def page(self, event: str, message: str) -> bool | None:
        """One page per target and reason until it changes: a pager that rings on every turn
        for the same failure is soon ignored. A repeat is journaled (`page_repeat`), not sent;
        a timestamp in the words is no new reason."""
        key = (event, message.split(":", 1)[0])
        words = _STAMP.sub("", message)
        if self._pages.get(key) == words:
            self.out.record("page_repeat", f"not paged again ({event}): {message}", event=event)
            return False
        self._pages[key] = words
        return super().page(event, message)

    # -- set-up and tear-down --------------------------------------------------------

    def run(self) -> int:
        self._check_flags()
        planner = get_planner(self.opts.planner, model=self.opts.model, max_tokens=self.opts.max_tokens)
        real = open_writer(self.opts.ledger, actor=self.opts.actor)
        if real.read_only and not self.dry_run:  # a dry run writes only its copy (make_shadow says if it cannot)
            raise UsageError(f"cannot drive this ledger: {real.read_only_reason}")
        reasons = preflight(real, self.opts.ledger, allow_unenforced=self.opts.allow_unenforced)
        if reasons:
            # A refused session changes nothing: one journal record, and the reasons.
            text = refusal_text(reasons, self.opts.ledger)
            real.journal.append("session_refused", text, actor=f"agent:{self.sid}", user=os_user(), problems=len(reasons))
            raise UsageError(text, title="Cannot proceed")
        planner.setup(self, real.store.read())
        location = make_shadow(self.opts.ledger) if self.dry_run else self.opts.ledger
        handle = open_writer(location, actor=self.opts.actor) if self.dry_run else real
        if is_url(handle.store.location):  # a database (a file store has no service to wait out)
            from engine.store.postgres import outage_limit

            handle.store.patience = outage_limit()  # from now on a brief database outage is ridden out
        Actor.__init__(self, handle, self.sid, ledger_arg=self.opts.ledger, dry_run=self.dry_run, json=self.opts.json,
                       stream=self.opts.stream)
        self.location = location
        lease = leasing.session_lease(self.sid, user=self.handle.actor, planner=planner.name,
                                      allow_unenforced=True if self.opts.allow_unenforced else None)
        try:
            previous, rev = leasing.acquire(self.store, location, lease)
        except Refused as err:  # the file changed between the checks above and now: it cannot be driven as it is
            raise UsageError(f"{self.opts.ledger}: the session cannot start: {err.message}", title=err.title) from None
        self.planner = planner
        self.beat = beat = HeartbeatThread(self.store.heartbeat(), self.sid, state_fn=self._beat)
        beat.start()
        self.store.on_lock_wait = self._lock_wait
        restore = self._signals()
        try:
            self._limits(self.store.read())
            model = getattr(planner, "model", None)
            self.out.say(f"session {self.sid} started by {self.handle.who} on {self.host} (planner {planner.name}"
                         f"{' with ' + model if model else ''}"
                         f"{', DRY RUN on ' + os.path.basename(location) if self.dry_run else ''}; budget {self._budget_text()})",
                         kind="session_start", rev=rev, planner=planner.name, model=model, dry_run=self.dry_run or None,
                         by=self.handle.actor,  # who started it: never an approver of its asks under a count policy
                         tokens_budget=planner.figures().get("tokens_budget"))
            if self.opts.allow_unenforced:
                self.out.say("started with --allow-unenforced: invariants the engine does not understand are NOT enforced",
                             kind="warning", allow_unenforced=True)
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
            self.code = err.run_code
        finally:
            restore()
            self._join_workers()
            beat.stop()
            released, why = self._release()
            self.out.say(f"session {self.sid} ended (exit {self.code})" + why, kind="session_end", rev=released, exit_code=self.code)
        return self.code

    def _unavailable(self, err: ServiceUnavailable) -> None:
        """A service stayed away: start nothing new, let running steps finish, exit 6."""
        if self.code == 6:
            return  # already said (the main loop and a step's worker both meet it)
        self.ending = self.ending or f"a service the session needs stayed unavailable: {err}"
        self.code = 6
        self.store_unavailable = True
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
        if o.max_tokens is not None and o.max_tokens < 1:
            raise UsageError("--max-tokens must be at least 1")

    def _limits(self, ledger: Ledger) -> None:
        budget = ledger.budget
        self.max_steps = self.opts.max_steps or (budget.steps if budget and budget.steps else None)
        self.max_minutes = self.opts.max_minutes or (budget.minutes if budget and budget.minutes else 60.0)
        self.handoff_at = self.opts.handoff_at or (budget.handoff_at if budget and budget.handoff_at else 0.75)
        self.parallel = 1 if self.dry_run else (touch_limit(ledger) or 1)

    def _budget_text(self) -> str:
        steps = f"{self.max_steps} steps, " if self.max_steps else ""
        tokens = self.planner.figures().get("tokens_budget")
        tokens = f"{tokens:,} tokens, " if tokens else ""
        return f"{steps}{tokens}{self.max_minutes:g} min, hand off at {self.handoff_at:.0%}"

    def budget_text_now(self) -> str:
        """Where the session is in its budget, for the planner's brief."""
        steps = f"steps {self.steps_used} of {self.max_steps}, " if self.max_steps else ""
        minutes = (time.monotonic() - self.t0) / 60.0
        return (f"{steps}{minutes:.1f} of {self.max_minutes:g} min; {self.budget_used():.0%} used, "
                f"the session hands off at {self.handoff_at:.0%}")

    def budget_used(self) -> float:
        used = (time.monotonic() - self.t0) / (self.max_minutes * 60.0)
        if self.max_steps:
            used = max(used, self.steps_used / self.max_steps)
        return max(used, self.planner.tokens_used_fraction())

    def _beat(self) -> dict:
        phase = "ending" if self.ending else "running"
        if self.lock_wait is not None and time.monotonic() - self.lock_wait[1] < 2 * lock_timeout():
            phase = f"waiting for lock held by {self.lock_wait[0]}"
        if isinstance(self.planner, TurnPlanner):
            phase += f" ({self.planner.name}: {self.planner.spend_text()})"  # the TUI header shows the phase
        return {"budget_used": round(self.budget_used(), 3), "phase": phase,
                "detail": f"{len(self.workers)} running, {self.steps_used} steps",
                "planner": self.planner.name, **self.planner.figures()}

    def _lock_wait(self, holder: str) -> bool:
        """The ledger's lock is held too long by someone else: keep waiting, and say so."""
        self.lock_wait = (holder, time.monotonic())
        return True

    def _signals(self):
        # SIGTERM, Ctrl-C and a hang-up (an SSH connection dropped) end the session on purpose,
        # not mid-step; under nohup a hang-up stays ignored (engine.host.console).
        def asked(sig: signal.Signals) -> None:
            self.ending = self.ending or f"{sig.name} received"
            self.stop_asks += 1
            self.wake.set()

        return console.catch_stop_signals(asked)

    # -- the loop ----------------------------------------------------------------------

    def _body(self) -> int:
        ledger = self.store.read()
        self.out.say("loaded ledger: " + (", ".join(f"{n} {s}" for s, n in ledger.counts().items()) or "no targets"))
        self._read_note(ledger)
        for inv in parse_all(ledger):
            if inv.kind == "unenforced":
                self.out.say(f"invariant NOT enforced (--allow-unenforced): {inv.text} ({inv.problem})", kind="warning")
        # Drift and a hand edit wait on a person's `handoff reconcile`: they outrank a pause (exit 3, not
        # 4), as in every runtime; the probes only read, and a step a dead holder left is settled first.
        reconcile_in_flight(self)
        if verify_checkpoints(self):
            self._finish("the ledger and reality disagree (checkpoint drift); stopping before any action")
            return 3
        if stop_for_outside_edits(self):
            self._finish("targets were changed outside the engine in ways no runbook step makes; stopping before any action")
            return 3
        ledger = self.store.read()
        if ledger.paused is not None:
            self.out.say(f"ledger is paused by {ledger.paused.by or 'someone'}: {ledger.paused.why or 'no reason given'}; "
                         "nothing will run until `handoff unpause`", kind="paused")
            return 4
        return self._loop()

    def _read_note(self, ledger: Ledger) -> None:
        note = (ledger.handoff_note or "").strip()
        self.note_at_start = ledger.handoff_note
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
            if self.settling:  # an approval's journal record is on its way: look again in a moment, then later
                self.settling = False
                self.settle_rounds += 1
                self.wake.wait(SETTLE_WAIT * 2 ** min(self.settle_rounds - 1, 5))
                continue
            self.settle_rounds = 0
            if gated:
                continue  # a gate changed the ledger: look again at once
            if not self.workers and not started:
                failpoints.reached("nothing-moved")  # tests: an approval lands between the decision and the look below
                now = self.store.read()
                if moved_since(ledger, now):
                    continue  # an approval given, a step's end recorded while deciding: decide again on what it says now
                if self._idle(now):
                    continue
            self.wake.wait(self.opts.poll)
            self.wake.clear()
        if self.store_unavailable:  # the ledger's database is away: no note can be written, let running steps end
            self._join_workers()
            return 6
        self._finish(self.ending)
        self.code = closing_code(self, self.code)  # a hand edit only the note's own write met (no step's did)
        return self.code

    def _notice(self, ledger: Ledger) -> None:
        """Operator control and the budget, checked every iteration."""
        if self.ending:
            return
        silent = self.beat.can_act() if self.beat is not None else None
        if silent:
            self.ending = f"this session {silent}; it starts nothing new"
        elif ledger.session is not None and ledger.session.stop_requested:
            self.ending = f"stop requested by {ledger.session.stop_requested_by or 'someone'}"
        elif ledger.paused is not None:
            self.ending = f"ledger paused by {ledger.paused.by or 'someone'}: {ledger.paused.why or 'no reason given'}"
            self.code = 4
        elif flagged(ledger) and stop_for_outside_edits(self):  # a hand edit made while it runs: as at its start
            self.ending, self.code = OUTSIDE_EDIT_ENDING, 3
        elif self.budget_used() >= self.handoff_at:
            self.ending = f"session budget {self.budget_used():.0%} used"

    def _act(self, ledger: Ledger) -> tuple[int, int]:
        """Let the planner propose; each proposal goes through `attempt`. Returns (started, gated)."""
        if isinstance(self.planner, TurnPlanner):
            return self._turn(self.planner, ledger)
        if not isinstance(self.planner, ProposingPlanner):
            raise TypeError(f"planner {self.planner.name} neither proposes nor takes turns")
        actions = self.planner.proposals(ledger, busy=set(self.workers))
        first = next(actions, None)
        if first is None:
            return 0, 0
        fresh = self._fresh(ledger)
        if fresh is None:
            return 0, 0
        # With every step of the runbook the proposals come from reversible, once no slot is
        # free each proposal left would hear "busy": attempt_all stops there.
        return self.attempt_all(itertools.chain([first], actions), fresh,
                                all_reversible=all(step.reversible for step in ledger.steps()))

    def _turn(self, planner: TurnPlanner, ledger: Ledger) -> tuple[int, int]:
        """One turn of a planner that proposes through tool calls, when the ledger changed."""
        if not planner.wants_turn(self, ledger):
            return 0, 0
        fresh = self._fresh(ledger)
        if fresh is None:
            return 0, 0
        from engine.planners.client import PlannerRefused, PlannerUnavailable

        try:
            return planner.turn(self, fresh)
        except (PlannerUnavailable, PlannerRefused) as err:
            planner.unavailable = True
            self.out.say(f"the planner cannot go on: {err}. Proposing nothing more; running steps finish.", kind="planner_unavailable")
            self.ending, self.code = f"the planner's API {'stayed unavailable' if err.exit_code == 6 else 'refused the session'}", err.exit_code
            return 0, 0

    def _fresh(self, ledger: Ledger) -> Ledger | None:
        """The ledger with invariants read at most ACT_METRICS_EVERY ago; None if one now fails."""
        if time.monotonic() - self.metrics_at < ACT_METRICS_EVERY:
            return ledger
        if not self._invariants(ledger, acting=True):
            return None
        return self.store.read()

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
        if any(t.state == "awaiting_approval" for t in ledger.targets.values()):
            from engine.session.tending import tend

            tend(self, ledger)  # reminders, escalation, expiry of approval requests (engine.approvals.policy)
            ledger = self.store.read()
        awaiting = [n for n, t in ledger.targets.items() if t.state == "awaiting_approval"]
        if self.opts.wait and awaiting:
            if getattr(self, "_waiting_said", None) != awaiting:
                self.out.say(f"waiting for approvals: {', '.join(awaiting)} (--wait)", kind="waiting")
                self._waiting_said = awaiting
            return False
        people = sum(1 for t in ledger.targets.values() if t.state in ("awaiting_approval", "blocked", "failed"))
        ready = movable(ledger, limit=0)[2] if self.planner.name != "autopilot" else 0
        if ready:
            self.ending = f"the planner proposes nothing more ({ready} step(s) could start or be asked for now; {people} target(s) wait on people)"
        else:
            self.ending = stall_ending(ledger, people, rehearsal=self.dry_run)
        return False

    # -- invariants, gates, steps -------------------------------------------------------

    def _start(self, intent: Intent) -> None:
        """Run the intent's step in a worker thread (it announces itself under the fence)."""
        self.steps_used += 1
        thread = threading.Thread(target=self._worker, args=(intent,), name=f"step-{intent.target}", daemon=True)
        self.started_at[intent.target] = (intent.step.name, time.monotonic())
        self.workers[intent.target] = thread
        thread.start()

    def _worker(self, intent: Intent) -> None:
        try:
            run_intent(self, intent)
        except NotStarted as err:  # the fence could not ask the database: nothing was spawned
            self._unavailable(err)
            self.out.say(f"{intent.target}: {intent.step.name} NOT started (the ledger's database is unreachable); "
                         "its intent stays in the ledger for the next session to settle", target=intent.target, kind="error")
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
            self.started_at.pop(intent.target, None)
            self.wake.set()

    # -- ending ------------------------------------------------------------------------

    def _join_workers(self) -> None:
        answered = min(self.stop_asks, 1)  # the first stop signal is answered by the ending's own line
        while self.workers:
            if self.stop_asks > answered:  # Ctrl-C again while a step runs on: say what it waits for
                answered = self.stop_asks
                self.out.say(self._still_running(), kind="still_running")
            for thread in list(self.workers.values()):
                if thread is not None:  # a session's workers are its own threads
                    thread.join(0.2)

    def _still_running(self) -> str:
        """`still finishing db-02 slow (running 25s), ...`: what a repeated stop signal waits for."""
        now = time.monotonic()
        # One look each: a worker that ends meanwhile takes its entry away (another thread).
        running = [(target, entry) for target in list(self.workers) if (entry := self.started_at.get(target))]
        steps = ", ".join(f"{target} {step} (running {span(now - since)})" for target, (step, since) in running)
        return f"still finishing {steps or 'its running steps'}: a session never stops a step halfway"

    def _finish(self, why: str) -> None:
        running = len(self.workers)
        wait = f"Finishing {running} running step(s), then writing" if running else "Writing"
        self.out.say(f"{why}. {wait} handoff_note and exiting cleanly.", kind="handoff_start", budget_used=round(self.budget_used(), 3))
        self._join_workers()
        note = self.planner.final_note(self, why)
        model_problems = self.planner.review_note(self, note, self.note_at_start) if note else None
        text, _problems, rev = self.store_note(note, ending=why, model_problems=model_problems)
        self.out.say(f'handoff_note: "{text.strip()}"', kind="handoff", rev=rev)


def resume(opts: Options) -> int:
    """Run one session; the exit code of `handoff resume`."""
    return Session(opts).run()
