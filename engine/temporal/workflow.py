"""The ledger's workflow: a thin deterministic shell over the activities (engine.temporal.core).

It never holds the ledger, only target names, intent tokens and what each activity
decided. Its life:

1. take the lease (a live holder: end with 5); keep it from a long-lived keeper activity;
2. settle what was left in flight, then verify every checkpoint (drift: hand off, 3);
3. until it ends: `decide`, start a step activity (`TARGET:STEP`) for every intent it
   wrote, then wait for a step to finish, a `poke` signal (someone approved, paused or
   asked it to stop) or the poll timer, and decide again;
4. a step activity that fails (its worker died, or it was fenced) leaves its intent in
   the ledger: the workflow settles it on the queue of the host it ran on while a worker
   there is alive (its process may still run there), else once the step's start plus
   its timeout has passed, on any worker;
5. hand off: let running steps end, write the note, give the lease back.

Reversible steps are retried by Temporal (the step's `retries`); an irreversible step's
activity has exactly one attempt.

Bounded history: waiting costs no history of its own. The wait is woken by a `poke` (the
commands send one after every write, the lease keeper one when its re-read finds the
ledger changed some other way) or a long idle timer, not a short poll. When Temporal
suggests it or the history reaches the job's `history_max`, the run starts no more steps,
lets the running ones end and continues as new, carrying only the note and start time of
the first run and the decisions' memo: the ledger is the state, and a fresh run's first
`decide` finds any intent of the workflow's nobody runs (`orphans`) and settles it.
Workflows started before this (no `bounded-history` marker) keep their old loop
(`workflow.patched`), so a worker of this version replays them deterministically.
"""

from __future__ import annotations

import asyncio
import builtins
from datetime import timedelta
from typing import Any, TypedDict

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, TimeoutError, TimeoutType
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from engine.temporal.names import WORKFLOW, host_queue

BOUNDED = "bounded-history"  # the patch id of the continue-as-new loop (never rename: running workflows carry it)
LOCAL_DECIDE = "local-decide"  # the patch id of `decide` as a local activity (never rename, as above)
HISTORY_MAX = 4000  # a job from before `history_max` was passed
FOUND_WORKER = timedelta(seconds=10)  # a worker on the step's host picks a settle up within this, or none is there
QUICK = timedelta(minutes=30)


class _SettleOptions(TypedDict):
    """What every `settle` activity of one intent is started with."""

    start_to_close_timeout: timedelta
    heartbeat_timeout: timedelta
    summary: str


@workflow.defn(name=WORKFLOW)
class LedgerWorkflow:
    def __init__(self) -> None:
        self.poked = False
        self.running: dict[str, asyncio.Task] = {}
        self.phase = "starting"

    @workflow.signal
    def poke(self) -> None:
        """The ledger changed (an approval, a pause, a stop request): look again now."""
        self.poked = True

    @workflow.query
    def status(self) -> dict[str, Any]:
        return {"phase": self.phase, "running": sorted(self.running)}

    def _opts(self, job: dict) -> dict[str, Any]:
        return {"start_to_close_timeout": QUICK, "heartbeat_timeout": timedelta(seconds=job["heartbeat_timeout"]),
                "retry_policy": RetryPolicy(maximum_interval=timedelta(seconds=10))}

    @workflow.run
    async def run(self, job: dict, carry: dict | None = None) -> dict[str, Any]:
        bounded = workflow.patched(BOUNDED)  # False only when replaying a run started before it
        if carry is None:
            start = await workflow.execute_activity("take_lease", job, **self._opts(job))
            if start["code"]:
                return {"code": start["code"], "ending": start["ending"]}
            carry = {"note": start["note"], "started_at": start["started_at"], "memo": {}, "runs": 1}
        else:
            start = {"in_flight": []}  # the lease is the workflow's already: the same id holds it
        keeper = self._keeper(job)
        self.phase = "settling"
        for name in start["in_flight"]:
            self.running[name] = asyncio.create_task(self._settle(job, name))
        await self._drain()
        ending, code = None, 0
        if carry["runs"] == 1:
            verified = await workflow.execute_activity("verify", job, **self._opts(job))
            drift = verified["drift"]
            if drift:
                ending, code = f"the ledger and reality disagree on {', '.join(drift)} (checkpoint drift); stopping before any action", 3
            elif verified.get("outside"):  # as a session (engine.session.untrusted); a verify from before it never says so
                ending, code = "targets were changed outside the engine in ways no runbook step makes; stopping before any action", 3
        memo: dict[str, Any] = carry["memo"]
        wait = timedelta(seconds=job.get("idle", job["poll"]) if bounded else job["poll"])
        while ending is None:
            if keeper.done():
                return {"code": 5, "ending": "the workflow lost the ledger's lease"}
            if bounded and self._history_full(job):
                return await self._continue(job, keeper, {**carry, "memo": memo, "runs": carry["runs"] + 1})
            self.phase, self.poked = "deciding", False
            d = await self._decide(job, memo)
            memo = d["memo"]
            for it in d["started"]:
                self.running[it["target"]] = asyncio.create_task(self._step(job, it))
            for name in d.get("orphans", ()):
                self.running[name] = asyncio.create_task(self._settle(job, name))
            if d.get("lost"):
                return {"code": d["code"], "ending": d["ending"]}  # never act, never write: it is someone else's now
            if d.get("ending"):
                ending, code = d["ending"], d["code"]
                break
            if d.get("again"):
                continue
            if d.get("handoff"):  # the Claude planner's budget: its note, then a fresh run and budget
                await self._drain()
                note = await workflow.execute_activity(
                    "planner_note", args=[job, memo, d["handoff"], carry["note"], carry["started_at"]], **self._opts(job))
                fresh = {**memo, "claude": {}}
                return await self._continue(job, keeper, {**carry, "note": note, "memo": fresh, "runs": carry["runs"] + 1,
                                                          "started_at": workflow.now().strftime("%Y-%m-%dT%H:%M:%SZ")})
            if d.get("unavailable"):  # a model outage: steps run on, the workflow asks again later
                workflow.set_current_details(f"the planner is unavailable ({d['unavailable']}); asking again in {d['retry_in']:g} s")
                try:
                    await workflow.wait_condition(keeper.done, timeout=timedelta(seconds=d["retry_in"]))
                except builtins.TimeoutError:
                    pass
                self._reap()
                continue
            self.phase = f"{len(self.running)} running" if self.running else "waiting"
            workflow.set_current_details(d.get("details") or self.phase)  # no command: `temporal workflow describe` shows it
            try:
                await workflow.wait_condition(lambda: self.poked or keeper.done() or self._any_done(), timeout=wait)
            except builtins.TimeoutError:
                pass  # the idle timer: decide again (time-based rules: reminders, expiry)
            self._reap()
        self.phase = "handing off"
        workflow.set_current_details(f"handing off: {ending}")
        await self._drain()
        finish = [job, ending, code, carry["note"], carry["started_at"]] + ([memo] if job.get("planner") else [])
        finished = await workflow.execute_activity("finish", args=finish, **self._opts(job))
        if isinstance(finished, dict):  # the code once the note is written (an old history's finish returned its revision)
            code = finished["code"]
        await self._stop_keeper(keeper)
        return {"code": code, "ending": ending}

    async def _decide(self, job: dict, memo: dict[str, Any]) -> dict[str, Any]:
        """One decision (engine.temporal.core.decide). A local activity: it runs inside the
        worker's workflow task, so a step's turn costs one trip through the server's queues
        (its `run_step`), not two, and the history one marker, not three events. A decision
        whose workflow task is lost (its worker killed) is made again; an intent the lost one
        wrote is then no activity's, and the new decision hands it back as an orphan to settle,
        as it does for a `decide` activity whose worker died."""
        args, opts = [job, sorted(self.running), memo], self._opts(job)
        if workflow.patched(LOCAL_DECIDE):
            return await workflow.execute_local_activity("decide", args=args, start_to_close_timeout=opts["start_to_close_timeout"],
                                                         retry_policy=opts["retry_policy"])  # no heartbeat: see _in_thread
        return await workflow.execute_activity("decide", args=args, **opts)  # a run started before the patch

    def _keeper(self, job: dict) -> asyncio.Task:
        return workflow.start_activity(
            "keep_lease", job, start_to_close_timeout=timedelta(days=3650),
            heartbeat_timeout=timedelta(seconds=job["heartbeat_timeout"]),
            retry_policy=RetryPolicy(maximum_interval=timedelta(seconds=5)),
            cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED, summary="lease keeper")

    async def _stop_keeper(self, keeper: asyncio.Task) -> None:
        keeper.cancel()
        try:
            await keeper  # its last beat is written before the run ends
        except (ActivityError, asyncio.CancelledError):
            pass

    def _history_full(self, job: dict) -> bool:
        info = workflow.info()
        return info.is_continue_as_new_suggested() or info.get_current_history_length() >= job.get("history_max", HISTORY_MAX)

    async def _continue(self, job: dict, keeper: asyncio.Task, carry: dict) -> dict[str, Any]:
        """Let the running steps end (starting none), then continue as new with `carry`."""
        self.phase = "continuing as new"
        workflow.set_current_details(f"continuing as new (run {carry['runs']}) once {len(self.running)} running step(s) end")
        await self._drain()
        await workflow.wait_condition(workflow.all_handlers_finished)
        await self._stop_keeper(keeper)
        workflow.continue_as_new(args=[job, carry])

    def _any_done(self) -> bool:
        return any(task.done() for task in self.running.values())

    def _reap(self) -> None:
        for name in [n for n, task in self.running.items() if task.done()]:
            del self.running[name]

    async def _drain(self) -> None:
        while self.running:
            await workflow.wait_condition(self._any_done)
            self._reap()

    async def _step(self, job: dict, it: dict) -> None:
        """Run one step activity; whatever stops it short leaves its intent to be settled."""
        timeout = float(it["timeout"])
        try:
            result = await workflow.execute_activity(
                "run_step", args=[job, it], activity_id=f"{it['target']}:{it['step']}", summary=f"{it['target']}:{it['step']}",
                start_to_close_timeout=timedelta(seconds=2 * timeout + 120),
                heartbeat_timeout=timedelta(seconds=job["heartbeat_timeout"]),
                retry_policy=RetryPolicy(maximum_attempts=it["attempts"], initial_interval=timedelta(seconds=0.5),
                                         maximum_interval=timedelta(seconds=2), non_retryable_error_types=[]))
            if "recorded" in result:
                return
        except ActivityError:
            pass  # its worker died, or every attempt failed before recording: the intent says what is left
        await self._settle(job, it["target"])

    async def _settle(self, job: dict, name: str) -> None:
        info = await workflow.execute_activity("in_flight", args=[job, name], **self._opts(job))
        if info is None:
            return
        args = [job, name, info["token"]]
        settle: _SettleOptions = {"start_to_close_timeout": timedelta(seconds=max(60.0, info["deadline"] - workflow.now().timestamp()) + 120),
                  "heartbeat_timeout": timedelta(seconds=job["heartbeat_timeout"]),
                  "summary": f"{name}: settle"}
        for _ in range(5 if info["host"] else 0):  # a worker on that host sees the step's process (and waits for it)
            try:
                await workflow.execute_activity("settle", args=args, task_queue=host_queue(job["task_queue"], info["host"]),
                                                schedule_to_start_timeout=FOUND_WORKER,
                                                retry_policy=RetryPolicy(maximum_attempts=1), **settle)
                return
            except ActivityError as err:
                if isinstance(err.cause, TimeoutError) and err.cause.type == TimeoutType.SCHEDULE_TO_START:
                    break  # no worker there now: nobody can see the process, so wait out its time
                # the worker there died while settling (or the settle failed): ask that host again
        wait = info["deadline"] - workflow.now().timestamp()
        if wait > 0:
            await workflow.sleep(wait)
        await workflow.execute_activity("settle", args=args, retry_policy=RetryPolicy(maximum_interval=timedelta(seconds=10)),
                                        **settle)
