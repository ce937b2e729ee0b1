"""What the Temporal workflow's activities do to the ledger (no temporalio import here).

Each function is one activity's work, done through the decision core every holder
shares (engine.session.actor): the workflow passes names, tokens and small memos, never
the ledger, and gets back decisions. The workflow id is the lease holder's id, so the
fences of engine.session.steps hold in every activity: a step's process is spawned only
under the ledger's lock while the lease is the workflow's, the target's intent token is
the one decided, and the intent's `attempt` is this activity's attempt (a zombie of an
earlier attempt, on a worker taken for dead, can never spawn).

- `take_lease`: the workflow becomes the ledger's holder (exit 5 if a live one has it);
- `keeper_beat`: one beat of the lease keeper (the heartbeat beside the ledger);
- `verify`: every recorded checkpoint probed before anything acts (drift: exit 3);
- `decide`: invariants, the planner's proposals, the guard, gates and write-ahead
  intents; what may start comes back as small payloads, one per step activity;
- `run_step`: one attempt of one intent's step (Temporal retries a reversible one);
- `in_flight`, `settle`: what a dead worker left mid-step, settled by its probe;
- `finish`: the handoff note, and the lease given back.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from typing import Any

from engine.approvals.identity import os_user
from engine.codec.timefmt import now_iso, parse_iso
from engine.errors import HandoffError, LeaseHeld, ServiceUnavailable
from engine.host import failpoints
from engine.lease import leasing
from engine.lease.rules import HeartbeatThread
from engine.ledger.access import open_writer
from engine.ledger.guard import Decision
from engine.ledger.model import Approval, InFlight, Ledger, Step, TemporalRef
from engine.ledger.ops import rendered_command
from engine.ledger.render import approval_hash
from engine.ledger.runbook import touch_limit
from engine.ledger.stall import moved_since, stall_ending
from engine.planners.base import ProposingPlanner
from engine.session.actor import Actor
from engine.session.probes import render_for
from engine.session.reconcile import DEFAULT_WAIT, _wait, settle_in_flight, verify_checkpoints
from engine.session.runner import TERM_GRACE
from engine.session.steps import Intent, fenced_launch, record_outcome, run_attempt
from engine.session.tending import tend
from engine.session.untrusted import OUTSIDE_EDIT_ENDING, closing_code, flagged, stop_for_outside_edits
from engine.store.filelock import LockTimeout
from engine.store.transact import NoChange, apply

Job = dict[str, Any]  # ledger, workflow_id, address, namespace, task_queue, actor, poll, heartbeat_timeout
RIDDEN_OUT = (ServiceUnavailable, LockTimeout)  # what Temporal tries again (an outage, a lock held long); any other error ends the run 2


class WorkflowActor(Actor):
    """The workflow as a holder, for the length of one activity. Steps it decides to
    start are handed back to the workflow (`started`), which runs each as an activity."""

    def __init__(self, job: Job, running: list[str] | tuple[str, ...] = ()) -> None:
        handle = open_writer(job["ledger"], actor=job.get("actor"))
        super().__init__(handle, job["workflow_id"], ledger_arg=job["ledger"])
        self.job = job
        self.started_as = job.get("starter")  # who started the workflow, not the worker's OS user
        self.started: list[Intent] = []
        self.workers = {name: None for name in running}  # what runs now, as attempt() counts it
        self.handoff_at = 0.75  # the Claude planner's hand-off point (engine.temporal.planning)
        self.wake = threading.Event()  # the planner's end_session sets it; the workflow decides what follows

    def budget_text_now(self) -> str:
        """For the Claude planner's brief: the workflow's budget is the model's tokens."""
        return f"a Temporal workflow run; it hands off at {self.handoff_at:.0%} of the token budget"

    def _can_start(self) -> bool:
        return len(self.workers) < self.parallel

    def _start(self, intent: Intent) -> None:
        self.started.append(intent)
        self.workers[intent.target] = None

    def holds(self, ledger: Ledger) -> bool:
        return ledger.session is not None and ledger.session.id == self.sid


def step_digest(step: Step) -> str:
    """What a step activity checks the runbook step still is (it was decided on this)."""
    return hashlib.sha256(json.dumps(step.model_dump(by_alias=True), sort_keys=True).encode()).hexdigest()[:16]


def _planner_name(job: Job) -> str:
    return (job.get("planner") or {}).get("name", "autopilot")


def _ref(job: Job) -> TemporalRef:
    return TemporalRef(address=job["address"], namespace=job["namespace"], task_queue=job["task_queue"],
                       workflow_id=job["workflow_id"])


def take_lease(job: Job) -> dict[str, Any]:
    """Take the ledger's lease for the workflow. {"code": 0, "note", "started_at", "in_flight"}
    or {"code": 5 or 2, "ending": why}."""
    handle = open_writer(job["ledger"], actor=job.get("actor"))
    if handle.read_only:
        return {"code": 2, "ending": f"cannot drive this ledger: {handle.read_only_reason}"}
    lease = leasing.session_lease(job["workflow_id"], user=handle.actor, planner=_planner_name(job), runtime="temporal",
                                  with_pid=False, temporal=_ref(job), allow_unenforced=job.get("allow_unenforced") or None)
    lease.host = None  # the workflow runs wherever its workers are
    try:
        previous, rev = leasing.acquire(handle.store, job["ledger"], lease, phase="temporal workflow starting")
    except LeaseHeld as err:
        handle.journal.append("session_refused", f"temporal workflow {job['workflow_id']} not started: {err.message}",
                              actor=f"agent:{job['workflow_id']}", user=os_user())
        return {"code": 5, "ending": err.message}
    actor = WorkflowActor(job)
    ledger = actor.store.read()
    actor.out.say(f"temporal workflow {actor.sid} holds the ledger (started by {handle.who}; task queue {job['task_queue']} "
                  f"at {job['address']}, namespace {job['namespace']})", kind="session_start", rev=rev, runtime="temporal",
                  by=handle.actor, starter=job.get("starter"))  # the person who started it: never one of a count's approvers
    if previous.status in ("dead", "stale"):
        actor.out.say(f"took over the lease: {previous.detail}", kind="lease_takeover", previous=previous.holder)
        actor.page("lease_takeover", f"temporal workflow {actor.sid} took over from {previous.detail}")
    note = (ledger.handoff_note or "").strip()
    actor.out.say(f'handoff_note: "{note}"' if note else "no handoff_note in the ledger", kind="note_read" if note else "log")
    return {"code": 0, "note": ledger.handoff_note, "started_at": now_iso(),
            "in_flight": [n for n, t in ledger.targets.items() if t.in_flight is not None]}


def beat_every(job: Job) -> float:
    """How often the lease keeper beats (and heartbeats to Temporal): well inside the heartbeat timeout."""
    return max(0.2, min(2.0, float(job.get("heartbeat_timeout", 20.0)) / 4))


class Keeper:
    """The lease keeper's state between beats (one per keeper activity attempt)."""

    def __init__(self, job: Job) -> None:
        self.handle = open_writer(job["ledger"], actor=job.get("actor"))
        self.job = job
        self.workers: int | None = None
        self.beat = HeartbeatThread(self.handle.store.heartbeat(), job["workflow_id"], state_fn=self._state)
        self.checked_at = 0.0
        self.seen: str | None = None  # the ledger as the keeper last read it (a digest)

    def _state(self) -> dict[str, Any]:
        on = f"on {self.workers} worker{'s' if self.workers != 1 else ''}" if self.workers is not None else "running"
        return {"phase": on, "runtime": "temporal", "workers": self.workers, "every": beat_every(self.job)}

    def once(self) -> str | None:
        """Write one heartbeat; why the workflow no longer holds the lease, else None."""
        if time.monotonic() - self.checked_at >= 10.0:  # the lease itself: a cheap read, not every beat
            ledger = self.handle.store.read()
            self.checked_at = time.monotonic()
            if ledger.session is None or ledger.session.id != self.job["workflow_id"]:
                return f"the lease is {ledger.session.id if ledger.session else 'nobody'}'s now"
        self.beat.beat()
        if self.beat.lost:
            return str(self.beat.last_error)
        return None


    def changed(self) -> bool:
        """Whether the ledger differs from the keeper's last read: an edit made outside the
        engine wakes the workflow this way. The first read counts as a change (an edit
        between the workflow's last decision and this keeper's start is not missed); a
        ledger that does not parse is no change (decide would only fail on it)."""
        try:
            ledger = self.handle.store.read()
        except HandoffError:
            return False
        seen = hashlib.sha256(ledger.model_dump_json().encode()).hexdigest()
        changed, self.seen = seen != self.seen, seen
        return changed


def workflow_gone(job: Job, text: str) -> None:
    """A worker saw the ledger's workflow end without handing off: journal it and page (the
    lease stays as it was: `handoff status` says the workflow ended, and a new start by the
    same id renews it)."""
    actor = WorkflowActor(job)
    actor.out.say(f"{text}; nothing drives this ledger until someone runs `handoff resume --ledger {job['ledger']} "
                  f"--runtime temporal --temporal {job['address']} --task-queue {job['task_queue']}`", kind="workflow_ended")
    actor.page("workflow_ended", text)


def verify(job: Job) -> dict[str, Any]:
    """Probe every recorded checkpoint; {"drift": [names]} (each recorded and paged), and
    "outside": the targets changed outside the engine (each said), which stop the run as
    they stop a session (engine.session.untrusted)."""
    actor = WorkflowActor(job)
    drift = verify_checkpoints(actor)
    if drift:
        return {"drift": drift}
    return {"drift": [], "outside": stop_for_outside_edits(actor)}


def decide(job: Job, running: list[str], memo: dict[str, str]) -> dict[str, Any]:
    """One turn of the decision core. Returns {"started": [payload], "memo": memo} and one of
    "lost" (the lease is not the workflow's: hand off without acting), "ending" + "code",
    "again" (a gate changed the ledger: decide again at once), or nothing (wait); and
    "orphans": the workflow's own intents no activity runs, to be settled. An error (a ledger
    a hand deletion shrank refuses every write) ends it as it ends a session's run: said, exit 2;
    an outage or a lock held long (`RIDDEN_OUT`) is ridden out: Temporal decides again."""
    actor = WorkflowActor(job, running)
    try:
        return _decide(actor, job, running, memo)
    except HandoffError as err:
        if isinstance(err, RIDDEN_OUT):
            raise
        actor.out.say(f"session error: {err}", kind="error")
        return {"ending": "the ledger cannot be driven as it is", "code": err.run_code, "started": [], "memo": memo}


def _decide(actor: WorkflowActor, job: Job, running: list[str], memo: dict[str, str]) -> dict[str, Any]:
    _recall(actor, memo)
    memo = dict(memo)
    ledger = actor.store.read()
    if not actor.holds(ledger):
        holder = ledger.session.id if ledger.session else "nobody"
        actor.out.say(f"temporal workflow {actor.sid} no longer holds the lease (now {holder}); it acts no more",
                      kind="lease_lost")
        return {"lost": True, "code": 5, "ending": f"the lease is {holder}'s now", "started": [], "memo": memo}

    def waiting(text: str) -> dict[str, Any]:
        if memo.get("wait") != text:
            actor.out.say(text, kind="waiting")
            memo["wait"] = text
        return {"started": [], "memo": memo, "details": text}

    if ledger.session.stop_requested:
        return {"ending": f"stop requested by {ledger.session.stop_requested_by or 'someone'}", "code": 0,
                "started": [], "memo": memo}
    if flagged(ledger) and stop_for_outside_edits(actor):  # a hand edit made while it runs: as at its start
        return {"ending": OUTSIDE_EDIT_ENDING, "code": 3, "started": [], "memo": memo}
    if ledger.paused is not None:
        return waiting(f"ledger paused by {ledger.paused.by or 'someone'}: {ledger.paused.why or 'no reason given'}; "
                       "the workflow starts nothing until `handoff unpause`")
    if all(t.state == "done" for t in ledger.targets.values()) and not running:
        return {"ending": "nothing left to do: every target is done", "code": 0, "started": [], "memo": memo}
    actor.parallel = touch_limit(ledger) or 1
    started = gated = 0
    if _planner_name(job) == "claude":
        from engine.temporal import planning

        try:
            planning.attach(actor, job, memo, ledger)
        except HandoffError as err:  # no credential on this worker: say so and end, never guess
            return {"ending": f"the claude planner cannot run on this worker: {err.message}", "code": 2,
                    "started": [], "memo": memo}
        if not actor._invariants(ledger, acting=True):
            _remember(actor, memo)
            return waiting("an invariant paused the ledger; the workflow starts nothing until `handoff unpause`")
        _remember(actor, memo)
        planned = planning.turn(actor, job, memo, ledger, running)
        if isinstance(planned, dict):
            return {**planned, "started": _payloads(actor), "memo": memo}
        started, gated = planned
        if actor.ending:  # the planner ended the session (end_session)
            return {"ending": actor.ending, "code": 0, "started": _payloads(actor), "memo": memo}
    planner = actor.planner  # the claude planner took its turn above; autopilot proposes
    actions = planner.propose(ledger, busy=set(running)) if _planner_name(job) != "claude" and isinstance(planner, ProposingPlanner) else []
    if actions:
        ok = actor._invariants(ledger, acting=True)
        _remember(actor, memo)
        if not ok:
            return waiting("an invariant paused the ledger; the workflow starts nothing until `handoff unpause`")
        started, gated = actor.attempt_all(actions, actor.store.read())
    mine = {i.target for i in actor.started}
    if not (started or gated or running):
        failpoints.reached("nothing-moved")  # tests: an approval lands between the decision and the look below
    fresh = actor.store.read()
    # An intent of the workflow's no activity is running (a decision whose worker died after
    # writing it): the workflow settles it like one whose step's worker died.
    orphans = [n for n, t in fresh.targets.items()
               if t.in_flight is not None and t.in_flight.session == actor.sid and n not in running and n not in mine]
    payloads = _payloads(actor)
    if payloads:
        failpoints.reached("decided")  # tests: the worker dies holding a decision whose intents are written
    if gated:
        return {"started": payloads, "orphans": orphans, "again": True, "memo": memo}
    if started or running or orphans:
        memo.pop("wait", None)
        return {"started": payloads, "orphans": orphans, "memo": memo}
    if moved_since(ledger, fresh):  # an approval given, a step's end recorded while deciding: decide again
        return {"started": [], "again": True, "memo": memo}
    awaiting = [n for n, t in fresh.targets.items() if t.state == "awaiting_approval"]
    if awaiting:  # as a waiting session: reminders, escalation, and a request's expiry (blocked: no late approval runs it)
        tend(actor, fresh)
        fresh = actor.store.read()
        awaiting = [n for n, t in fresh.targets.items() if t.state == "awaiting_approval"]
    if awaiting:
        said = waiting(f"waiting for approvals: {', '.join(awaiting)}")
        said["details"] = "; ".join(awaiting_details(n, fresh.targets[n]) for n in awaiting[:20])
        return said
    people = sum(1 for t in fresh.targets.values() if t.state in ("blocked", "failed"))
    return {"ending": stall_ending(fresh, people), "code": 0,
            "started": [], "memo": memo}


def _payloads(actor: WorkflowActor) -> list[dict[str, Any]]:
    """One step activity's input per intent this decision wrote."""
    return [{"target": i.target, "step": i.step.name, "token": i.token, "digest": step_digest(i.step),
             "attempts": 1 + (max(0, i.step.retries) if i.step.reversible else 0),
             "timeout": i.step.timeout or DEFAULT_WAIT,
             "approval": _approval_ref(i.decision.approval) if not i.step.reversible else None,
             "co": [_approval_ref(a) for a in i.co_approvals]} for i in actor.started]


def _approval_ref(approval: Approval | None) -> list[str | None]:
    """(hash, by, at) of the approval an irreversible step's intent was decided under."""
    if approval is None:
        raise ValueError("an irreversible step's intent carries the approval it was decided under")
    return [approval.hash, approval.by, approval.at]


def planner_note(job: Job, memo: dict[str, Any], why: str, note_at_start: str | None, started_at: str) -> str:
    """The Claude planner's reviewed note at its budget's hand-off point (engine.temporal.planning)."""
    from engine.temporal import planning

    actor = WorkflowActor(job)
    actor.note_at_start, actor.started_iso = note_at_start, started_at
    return planning.write_note(actor, job, memo, why)


def awaiting_details(name: str, t) -> str:
    """`db-18 link awaiting approval since ..., asked by ...` (the workflow's current details)."""
    return (f"{name} {t.awaiting or 'its next step'} awaiting approval since {t.awaiting_since or '?'}"
            + (f", asked by {t.awaiting_by}" if t.awaiting_by else ""))


def _recall(actor: WorkflowActor, memo: dict[str, Any]) -> None:
    """What earlier decisions already said (the invariant line, each metric reading), so
    the journal gets a line when something changes, not one per decision."""
    actor.last_invariants, actor.invariants_said_at = memo.get("invariants", ""), time.monotonic()
    lag = time.monotonic() - time.time()
    actor.metric_said = {name: ((value, percent), at + lag) for name, (value, percent, at) in memo.get("metrics", {}).items()}


def _remember(actor: WorkflowActor, memo: dict[str, Any]) -> None:
    lag = time.time() - time.monotonic()
    memo["invariants"] = actor.last_invariants
    memo["metrics"] = {name: [value, percent, at + lag] for name, ((value, percent), at) in actor.metric_said.items()}


def run_step(job: Job, it: dict[str, Any], attempt: int) -> dict[str, Any]:
    """One attempt of a decided step. {"recorded": ok}, {"retry": why} (a reversible
    step failed with attempts left: Temporal retries it) or {"fenced": why} (not started)."""
    actor = WorkflowActor(job, [it["target"]])
    name, token = it["target"], it["token"]
    before: dict[str, Any] = {}
    co: list[Approval] = []  # the co-approvals the decision spent with its approval (a `count` policy)

    def claim(ledger: Ledger):
        if not actor.holds(ledger):
            raise NoChange(f"the lease is {ledger.session.id if ledger.session else 'nobody'}'s now")
        t = ledger.targets.get(name)
        if t is None or t.in_flight is None or t.in_flight.token != token:
            raise NoChange(f"the ledger no longer holds this intent on {name}")
        if (t.in_flight.attempt or 1) > attempt:
            raise NoChange(f"attempt {t.in_flight.attempt} has taken over from attempt {attempt}")
        step = ledger.step(it["step"])
        if step is None or step_digest(step) != it["digest"]:
            raise NoChange(f"runbook step {it['step']} changed since it was decided")
        approval = None
        if not step.reversible:
            if actor.handle.journal.last_of("step_start", target=name, token=token) is not None:
                raise NoChange(f"irreversible {step.name} was already started under this intent; it never runs again")
            approval = next((a for a in t.approvals if [a.hash, a.by, a.at] == it["approval"]), None)
            if approval is None or approval_hash(name, t, step, ledger_dir=actor.ledger_dir) != approval.hash:
                raise NoChange(f"the approval of {step.name} no longer matches the command and checkpoint")
            co[:] = [a.model_copy() for a in t.approvals if [a.hash, a.by, a.at] in it.get("co", [])]
        before.update(host=t.in_flight.host, inflight=t.in_flight.model_copy())
        t.in_flight.attempt, t.in_flight.host = attempt, actor.host
        t.in_flight.pid = t.in_flight.pgid = None  # the earlier attempt's process, maybe on another host: noted anew
        # The step's time runs from now: an activity that starts long after the decision (a slow workflow task, busy
        # workers) must not be judged by a settle to have outlived its timeout, and killed half-way.
        t.in_flight.started_at = now_iso()
        argv = rendered_command(ledger, name, step, actor.ledger_dir)
        check = render_for(ledger, name, step.check, actor.ledger_dir, f"check of step {step.name}") if step.check else None
        return step, argv, check, approval

    claimed, rev = apply(actor.store, claim, actor.txn_lock)
    if rev is None:
        actor.out.say(f"{name}: {it['step']} NOT started: {claimed}", target=name, kind="fenced", step=it["step"], token=token)
        return {"fenced": claimed}
    step, argv, check, approval = claimed
    if attempt > 1 and before.get("host") == actor.host:
        _wait(actor, name, before["inflight"], step.timeout)  # the earlier attempt's process, if it outlived its worker
    reason = "reversible" if step.reversible else f"approved by {approval.by}"
    intent = Intent(name, step, argv, check, token, Decision(True, reason, approval=approval), rev, attempt=attempt,
                    co_approvals=tuple(co))
    ran = run_attempt(actor, intent, fenced_launch(actor, intent), attempt, it["attempts"])
    if ran is None:
        return {"fenced": actor.ending}
    outcome, end = ran
    if not outcome.ok and not outcome.stopped and attempt < it["attempts"]:
        return {"retry": outcome.why}
    record_outcome(actor, intent, outcome, end)
    return {"recorded": outcome.ok}


def in_flight(job: Job, name: str) -> dict[str, Any] | None:
    """The intent on `name`, with where it ran and when its step's time is up; None if none."""
    ledger = open_writer(job["ledger"], actor=job.get("actor")).store.read()
    t = ledger.targets.get(name)
    if t is None or t.in_flight is None:
        return None
    step = ledger.step(t.in_flight.step)
    started = parse_iso(t.in_flight.started_at) or time.time()
    timeout = step.timeout if step is not None and step.timeout else DEFAULT_WAIT
    return {"target": name, "token": t.in_flight.token, "host": t.in_flight.host,
            "deadline": started + timeout + TERM_GRACE}


def settle(job: Job, name: str, token: str | None) -> str:
    """Settle the intent a dead worker left on `name` (engine.session.reconcile's rules:
    an irreversible step is proved by its probe, never re-run)."""
    actor = WorkflowActor(job)
    ledger = actor.store.read()
    if not actor.holds(ledger):
        return "not settled: the workflow no longer holds the lease"
    t = ledger.targets.get(name)
    if t is None or t.in_flight is None or t.in_flight.token != token:
        return "already settled"
    settle_in_flight(actor, name, InFlight.model_validate(t.in_flight.model_dump()))
    return "settled"


def finish(job: Job, ending: str, code: int, note_at_start: str | None, started_at: str,
           memo: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Write the handoff note (the Claude planner's, asked for, when it plans) and give the
    lease back; {"rev": the revision, "code": the exit code once the note is written
    (engine.session.untrusted.closing_code)}, or None if not ours."""
    actor = WorkflowActor(job)
    actor.note_at_start, actor.started_iso = note_at_start, started_at
    ledger = actor.store.read()
    if not actor.holds(ledger):
        return None
    actor.out.say(f"{ending}. Writing handoff_note and handing off.", kind="handoff_start")
    note = None
    if _planner_name(job) == "claude" and memo is not None:
        from engine.temporal import planning

        try:
            planning.attach(actor, job, memo, ledger)
            note = actor.planner.final_note(actor, ending)
        except HandoffError as err:
            actor.out.say(f"the planner could not write the handoff note ({err.message}); the engine writes its own", kind="warning")
    try:
        text, _problems, rev = actor.store_note(note, ending=ending)
    except HandoffError as err:  # as a session's run (a shrunken ledger refuses every write): said, not released
        if isinstance(err, RIDDEN_OUT):
            raise
        actor.out.say(f"session error: {err}", kind="error")
        actor.out.say(f"temporal workflow {actor.sid} ended (exit {err.run_code}); the lease is left to go stale: the next "
                      "holder takes it over then", kind="session_end", exit_code=err.run_code)
        return {"rev": None, "code": err.run_code}
    actor.out.say(f'handoff_note: "{text.strip()}"', kind="handoff", rev=rev)
    code = closing_code(actor, code)  # a hand edit only the note's own write met: as in a session
    released = leasing.release(actor.store, actor.sid)
    actor.out.say(f"temporal workflow {actor.sid} ended (exit {code})", kind="session_end", rev=released, exit_code=code)
    return {"rev": released, "code": code}

