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
"""

from __future__ import annotations

import time

from langgraph.types import Command

from engine.langgraph import checkpoints, graph, nodes
from engine.lease import leasing
from engine.lease.rules import HeartbeatThread
from engine.session.reconcile import verify_checkpoints

WATCH_EVERY = 0.2  # seconds between looks at the ledger while the thread waits on approvals


class Run:
    """One run of a ledger's thread by this process, holding the lease."""

    def __init__(self, job: nodes.Job, url: str, keep: int) -> None:
        self.job, self.url, self.keep = job, url, keep
        self.thread = job["thread_id"]
        self.phase = "starting"
        self.pruned = 0
        self._actor: nodes.GraphActor | None = None
        self.beat: HeartbeatThread | None = None

    @property
    def actor(self) -> nodes.GraphActor:
        """The holder `go` made for this run."""
        if self._actor is None:
            raise RuntimeError("the run has no holder before go() starts it")
        return self._actor

    @actor.setter
    def actor(self, actor: nodes.GraphActor) -> None:
        self._actor = actor

    def _state(self) -> dict:
        return {"phase": self.phase, "runtime": "langgraph", "thread": self.thread}

    def go(self, previous) -> int:
        """Run the thread to its end (or a stop, pause or lost lease); the exit code."""
        store = nodes.GraphActor(self.job).store
        self.beat = HeartbeatThread(store.heartbeat(), self.thread, state_fn=self._state)
        self.beat.start()
        self.actor = actor = nodes.GraphActor(self.job, self.beat)
        try:
            actor.out.say(f"langgraph thread {self.thread} holds the ledger (checkpointer {_shown(self.url)}, "
                          f"keeping {self.keep} checkpoints)", kind="session_start", runtime="langgraph")
            if previous.status in ("dead", "stale"):
                actor.out.say(f"took over the lease: {previous.detail}", kind="lease_takeover", previous=previous.holder)
            actor.note_at_start, actor.started_iso = actor.store.read().handoff_note, _now()
            if verify_checkpoints(actor):
                return self.finish(3, "the ledger and reality disagree (drift recorded)")
            with checkpoints.saver(self.url) as saver:
                code, ending = self._run(saver)
                figures = checkpoints.figures(saver, self.thread)
            actor.out.say(f"checkpointer: {figures['checkpoints']} checkpoint(s) kept for thread {self.thread} "
                          f"({self.pruned} pruned this run); the checkpoint tables hold {figures['bytes']} bytes",
                          kind="log", checkpoints=figures["checkpoints"], table_bytes=figures["bytes"], pruned=self.pruned)
            return self.finish(code, ending)
        finally:
            self.beat.stop()

    def _run(self, saver) -> tuple[int, str]:
        names = list(self.actor.store.read().targets)
        if not names:
            return 0, "nothing left to do: the ledger has no targets"
        app = graph.build(self.job, names, self.beat).compile(checkpointer=saver)
        cfg = graph.config(self.thread)
        started = False
        while True:
            snap = app.get_state(cfg)
            pending = list(snap.interrupts)
            if pending:
                why = self._wait(pending)
                if why is not None:
                    return (0 if why.startswith("stop") else 5), why
                value = {"woken_at": _now(), "note": "the ledger decides; this value is never read"}
                self._stream(app, Command(resume={i.id: value for i in pending}), cfg, saver)
            elif snap.next:
                self.actor.out.say(f"langgraph thread {self.thread} resumes at {', '.join(snap.next)} "
                                   "(its last checkpoint); the ledger decides what runs", kind="log")
                self._stream(app, None, cfg, saver)
            elif not started:
                self._stream(app, {"visits": 0, "ended": ""}, cfg, saver)
            else:
                ended = app.get_state(cfg).values.get("ended") or ""
                return _code(ended), ended or _why_done(self.actor.store.read())
            started = True

    def _stream(self, app, given, cfg, saver) -> None:
        self.phase = "running"
        for _update in app.stream(given, cfg, stream_mode="updates"):
            self.pruned += checkpoints.prune(saver, self.thread, self.keep)  # after each completed super-step

    def _wait(self, pending) -> str | None:
        """Watch the ledger until an interrupt's request no longer matches it (None: resume
        now), or why the run ends instead (a stop request, the lease lost)."""
        targets = [i.value["target"] for i in pending]
        self.phase = f"waiting for approvals: {', '.join(targets)}"
        self.actor.out.say(f"langgraph thread {self.thread} interrupted on the irreversible edge of "
                           f"{', '.join(targets)}: waiting for `handoff approve`", kind="waiting", targets=targets)
        while True:
            ledger = self.actor.store.read()
            if not self.actor.holds(ledger):
                return f"the lease is {ledger.session.id if ledger.session else 'nobody'}'s now"
            if ledger.session.stop_requested:
                return f"stop requested by {ledger.session.stop_requested_by or 'someone'}"
            lost = self.beat.can_act() if self.beat is not None else None
            if lost:
                return f"stopped acting: {lost}"
            if any(nodes.approval_request(self.job, i.value["target"]) != i.value for i in pending):
                return None
            time.sleep(WATCH_EVERY)

    def finish(self, code: int, ending: str) -> int:
        """The handoff note, then the lease given back (never someone else's)."""
        actor = self.actor
        if not actor.holds(actor.store.read()):
            actor.out.say(f"langgraph thread {self.thread} no longer holds the lease: {ending}", kind="lease_lost")
            return code
        actor.out.say(f"{ending}. Writing handoff_note and handing off.", kind="handoff_start")
        text, _problems, rev = actor.store_note(None, ending=ending)
        actor.out.say(f'handoff_note: "{text.strip()}"', kind="handoff", rev=rev)
        released = leasing.release(actor.store, self.thread)
        actor.out.say(f"langgraph thread {self.thread} ended (exit {code})", kind="session_end", rev=released, exit_code=code)
        return code


def _code(ended: str) -> int:
    if ended.startswith("stop") or not ended:
        return 0
    if "paused" in ended:
        return 4
    return 5 if "lease" in ended or "taken over" in ended else 0


def _why_done(ledger) -> str:
    if all(t.state == "done" for t in ledger.targets.values()):
        return "nothing left to do: every target is done"
    people = sum(1 for t in ledger.targets.values() if t.state in ("blocked", "failed"))
    return f"nothing can proceed without a human ({people} target(s) wait on people)"


def _shown(url: str) -> str:
    """The checkpointer's location without a password."""
    from engine.store.pg_conn import shown

    return shown(url)


def _now() -> str:
    from engine.codec.timefmt import now_iso

    return now_iso()
