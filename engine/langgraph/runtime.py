"""`handoff resume --runtime langgraph`: this process runs the ledger's graph thread.

The process takes the ledger's lease as `runtime: langgraph`, its id the thread id (one
thread per ledger id), keeps the heartbeat, verifies every checkpoint, then runs the
thread from wherever its last checkpoint left it: from the start, from a node a killed
run never finished, or from a pending interrupt. While the thread waits on interrupts
it watches the ledger; when an interrupt's request no longer matches the ledger (an
approval, a rejection, a changed checkpoint) it resumes the thread with
`Command(resume=...)`: the resume only wakes, the node reads the ledger. A stop request
(`handoff stop`) ends the run with the handoff note. After every completed super-step the
thread's old checkpoints are pruned (engine.langgraph.checkpoints).

The checkpointer's database going away mid-run (engine.langgraph.outage) is ridden out
for HANDOFF_DB_OUTAGE_SECONDS, as a session rides out its ledger database's outage; then
the run ends honestly with exit 6 and a note. The ledger stays consistent either way:
a node records its step in the ledger before LangGraph writes the checkpoint, and a
replayed node decides again from the ledger.
"""

from __future__ import annotations

import signal
import time

from langgraph.types import Command

from engine.errors import HandoffError
from engine.host import console
from engine.langgraph import checkpoints, graph, nodes, outage
from engine.lease import leasing
from engine.lease.rules import HeartbeatThread
from engine.session.reconcile import verify_checkpoints
from engine.session.tending import tend
from engine.session.untrusted import closing_code, stop_for_outside_edits

WATCH_EVERY = 0.2  # seconds between looks at the ledger while the thread waits on approvals


class Run:
    """One run of a ledger's thread by this process, holding the lease."""

    def __init__(self, job: nodes.Job, url: str, keep: int) -> None:
        self.job, self.url, self.keep = job, url, keep
        self.thread = job["thread_id"]
        self.holder = job.get("holder") or self.thread  # this run's id as the lease holder (engine.langgraph.holder_id)
        self.phase = "starting"
        self.pruned = 0
        self.memo: dict | None = None  # the Claude planner's memo as the last checkpoint read holds it
        self.actor: nodes.GraphActor | None = None
        self.beat: HeartbeatThread | None = None

    @property
    def live(self) -> tuple[nodes.GraphActor, HeartbeatThread]:
        """The running thread's actor and heartbeat (`go` sets both before anything else runs)."""
        if self.actor is None or self.beat is None:
            raise RuntimeError("the LangGraph thread is not running")
        return self.actor, self.beat

    def _state(self) -> dict:
        return {"phase": self.phase, "runtime": "langgraph", "thread": self.thread,
                "planner": (self.job.get("planner") or {}).get("name", "autopilot")}

    def go(self, previous) -> int:
        """Run the thread to its end (or a stop, pause, lost lease, outage); the exit code."""
        store = nodes.GraphActor(self.job).store
        self.beat = HeartbeatThread(store.heartbeat(), self.holder, state_fn=self._state)
        self.beat.start()
        self.actor = actor = nodes.GraphActor(self.job, self.beat)
        restore = self._on_signals()
        try:
            actor.out.say(f"langgraph thread {self.thread} holds the ledger (checkpointer {_shown(self.url)}, "
                          f"keeping {self.keep} checkpoints; planner {self._state()['planner']})", kind="session_start",
                          runtime="langgraph", by=self.job.get("actor"))  # who started it: never one of a count's approvers
            if previous.status in ("dead", "stale"):
                actor.out.say(f"took over the lease: {previous.detail}", kind="lease_takeover", previous=previous.holder)
            actor.note_at_start, actor.started_iso = actor.store.read().handoff_note, _now()
            if verify_checkpoints(actor):
                return self.finish(3, "the ledger and reality disagree (drift recorded)")
            if stop_for_outside_edits(actor):  # as a session: a target changed outside the engine is trusted by nothing
                return self.finish(3, "targets were changed outside the engine in ways no runbook step makes; "
                                      "stopping before any action")
            code, ending = outage.ride(self, self._run_on)
            return self.finish(code, ending)
        except HandoffError as err:  # as a session's run (a shrunken ledger refuses every write): said, not released
            actor.out.say(f"session error: {err}", kind="error")
            actor.out.say(f"langgraph thread {self.thread} ended (exit {err.run_code}); the lease is left to go stale: "
                          "the next holder takes it over then", kind="session_end", exit_code=err.run_code)
            return err.run_code
        finally:
            restore()
            self.beat.stop()

    def _on_signals(self):
        """SIGTERM, Ctrl-C and a hang-up (unless ignored: nohup) end the run on purpose, as they
        end a built-in session: the running steps finish and are recorded, nothing new starts,
        the note is written and the lease given back. Returns what puts the old handlers back."""
        beat = self.live[1]

        def asked(sig: signal.Signals) -> None:
            beat.asked_to_end = beat.asked_to_end or f"{sig.name} received"

        return console.catch_stop_signals(asked)

    def _run_on(self, saver) -> tuple[int, str]:
        """The thread run on one checkpointer connection; its figures said at the end."""
        code, ending = self._run(saver)
        figures = checkpoints.figures(saver, self.thread)
        self.live[0].out.say(f"checkpointer: {figures['checkpoints']} checkpoint(s) kept for thread {self.thread} "
                           f"({self.pruned} pruned this run); the checkpoint tables hold {figures['bytes']} bytes",
                           kind="log", checkpoints=figures["checkpoints"], table_bytes=figures["bytes"], pruned=self.pruned)
        return code, ending

    def _run(self, saver) -> tuple[int, str]:
        names = list(self.live[0].store.read().targets)
        if not names:
            return 0, "nothing left to do: the ledger has no targets"
        app = graph.build(self.job, names, self.live[1]).compile(checkpointer=saver)
        cfg = graph.config(self.thread)
        started = False
        while True:
            snap = app.get_state(cfg)
            self.memo = snap.values.get("planner") if snap.values else None
            pending = list(snap.interrupts)
            if pending:
                ends = self._wait(pending)
                if ends is not None:
                    return ends.code, ends.why
                value = {"woken_at": _now(), "note": "the ledger decides; this value is never read"}
                self._stream(app, Command(resume={i.id: value for i in pending}), cfg, saver)
            elif snap.next:
                self.live[0].out.say(f"langgraph thread {self.thread} resumes at {', '.join(snap.next)} "
                                   "(its last checkpoint); the ledger decides what runs", kind="log")
                self._stream(app, None, cfg, saver)
            elif not started:
                self._stream(app, {"visits": 0, "ending": None}, cfg, saver)
            else:
                ending = (snap.values or {}).get("ending") or {}
                return int(ending.get("code", 0)), ending.get("why") or nodes.why_done(self.live[0].store.read())
            started = True

    def _stream(self, app, given, cfg, saver) -> None:
        self.phase = "running"
        for _update in app.stream(given, cfg, stream_mode="updates"):
            self.pruned += checkpoints.prune(saver, self.thread, self.keep)  # after each completed super-step

    def _wait(self, pending) -> nodes.Ending | None:
        """Watch the ledger until an interrupt's request no longer matches it (None: resume
        now), or why the run ends instead (a signal, a stop request, the lease lost)."""
        targets = [i.value["target"] for i in pending]
        self.phase = f"waiting for approvals: {', '.join(targets)}"
        self.live[0].out.say(f"langgraph thread {self.thread} interrupted on the irreversible edge of "
                           f"{', '.join(targets)}: waiting for `handoff approve`", kind="waiting", targets=targets)
        while True:
            ledger = self.live[0].store.read()
            if not self.live[0].holds(ledger):
                return nodes.Ending(f"the lease is {ledger.session.id if ledger.session else 'nobody'}'s now", 5)
            if self.live[1].asked_to_end:
                return nodes.Ending(self.live[1].asked_to_end, 0)
            if ledger.session.stop_requested:
                return nodes.Ending(f"stop requested by {ledger.session.stop_requested_by or 'someone'}", 0)
            lost = self.live[1].can_act()
            if lost:
                return nodes.Ending(f"stopped acting: {lost}", 5)
            tend(self.live[0], ledger)  # as a waiting session: reminders, escalation, and a request's expiry (blocked)
            if any(nodes.approval_request(self.job, i.value["target"]) != i.value for i in pending):
                return None
            time.sleep(WATCH_EVERY)

    def finish(self, code: int, ending: str) -> int:
        """The handoff note (the Claude planner's, reviewed, or the engine's), then the lease
        given back (never someone else's)."""
        actor = self.live[0]
        if not actor.holds(actor.store.read()):
            actor.out.say(f"langgraph thread {self.thread} no longer holds the lease: {ending}", kind="lease_lost")
            return code
        actor.out.say(f"{ending}. Writing handoff_note and handing off.", kind="handoff_start")
        note = None
        if (self.job.get("planner") or {}).get("name") == "claude" and code != 6:
            from engine.langgraph import planning

            note = planning.final_note(self.job, self.memo, actor, ending)
        text, _problems, rev = actor.store_note(note, ending=ending)
        actor.out.say(f'handoff_note: "{text.strip()}"', kind="handoff", rev=rev)
        code = closing_code(actor, code)  # a hand edit only the note's own write met: as in a session
        released = leasing.release(actor.store, self.holder)
        actor.out.say(f"langgraph thread {self.thread} ended (exit {code})", kind="session_end", rev=released, exit_code=code)
        return code


def _shown(url: str) -> str:
    """The checkpointer's location without a password."""
    from engine.store.pg_conn import shown

    return shown(url)


def _now() -> str:
    from engine.codec.timefmt import now_iso

    return now_iso()
