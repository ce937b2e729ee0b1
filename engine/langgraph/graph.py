"""The graph built from a ledger: a plan node that fans out to one node per target, and
an interrupt on every irreversible edge.

    START -> plan -> [run <a>, run <b>, ...]  (at most the ledger's concurrency, one super-step)
                  -> [approve <x>, ...]      (nothing can step: wait on the approvals asked for)
                  -> END                     (nothing left, only people can move it, or the run ends)
    run <name> -> plan        approve <name> -> interrupt -> plan

`plan` decides: with autopilot (engine.langgraph.nodes.fan_out) the targets that may
take a step now, at most N at once where N is the ledger's tightest "never touch more
than N" (as a session's worker slots): they run in parallel, LangGraph's fan-out, each
`run <name>` one step through the decision core (guard, intent, fenced spawn, record),
inline in its task's thread. With the Claude planner (engine.langgraph.planning) the
plan node is the agent: one turn on a fresh brief, its `run_step` calls through the same
core. `approve <name>` is the irreversible edge: it reads the approval request from the
ledger (no side effect: a resume re-runs everything before the `interrupt()`),
interrupts with it, and whatever the resume value says, goes back to `plan`, which reads
the ledger again. So a resume without a matching approval in the ledger interrupts
again; with one, the target has left `awaiting_approval` and `run <name>` runs the
step, the guard checking the approval's hash.

The graph state holds no decisions: how many node runs (`visits`), which targets' last
attempt changed nothing at which ledger digest (`idle`), the Claude planner's memo
(`planner`), and why the run ended (`ending`). The ledger is the memory.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from engine.host import failpoints
from engine.langgraph import nodes
from engine.ledger.model import Ledger
from engine.ledger.stall import moved_since


def _merge(old: dict | None, new: dict | None) -> dict:
    return {**(old or {}), **(new or {})}


def _last(old: Any, new: Any) -> Any:
    return new  # parallel tasks may both write it in one super-step: the last one stands


class State(TypedDict, total=False):
    visits: Annotated[int, operator.add]  # node runs, for people reading the checkpoints
    idle: Annotated[dict[str, str], _merge]  # target -> the ledger digest at which its last attempt changed nothing
    planner: dict[str, Any]  # the Claude planner's memo (engine.langgraph.planning); only `plan` writes it
    ending: Annotated[dict[str, Any] | None, _last]  # {"why", "code"}: the run ends; None on a new run


def build(job: nodes.Job, names: list[str], beat=None) -> StateGraph:
    """The uncompiled graph for a ledger whose targets are `names` (ledger order)."""
    if not names:
        raise ValueError("a ledger with no targets has no graph")
    g = StateGraph(State)
    steps = [f"run {n}" for n in names]
    waits = [f"approve {n}" for n in names]
    g.add_node("plan", _plan(job, beat), destinations=(*steps, *waits, "plan", END))
    for name in names:
        g.add_node(f"run {name}", _target(job, name, beat), destinations=("plan",))
        g.add_node(f"approve {name}", _approve(job, name), destinations=("plan",))
    g.add_edge(START, "plan")
    return g


def _plan(job: nodes.Job, beat):
    claude = (job.get("planner") or {}).get("name") == "claude"

    def plan(state: State) -> Command:
        if state.get("ending"):
            return Command(goto=END, update={"visits": 1})
        memo: dict[str, Any] | None
        if claude:
            from engine.langgraph import planning

            moved, ending, memo, seen = planning.turn(job, state.get("planner"), beat)
            if ending is not None:
                return Command(goto=END, update={"visits": 1, "planner": memo, "ending": ending.as_state()})
            if moved:
                return Command(goto="plan", update={"visits": 1, "planner": memo})
            failpoints.reached("nothing-moved")  # tests: an approval lands between the turn and the look below
            run: list[str] = []
            wait, ending = _waiting(job, beat, seen)
            if wait is None:  # the ledger moved since the turn's brief: a turn on what it says now
                return Command(goto="plan", update={"visits": 1, "planner": memo})
        else:
            memo = state.get("planner")
            failpoints.reached("langgraph-plan")  # tests: a signal lands between two steps
            run, wait, ending = nodes.fan_out(job, state.get("idle") or {}, beat)
        update = {"visits": 1, **({"planner": memo} if memo is not None else {})}
        if ending is not None:
            return Command(goto=END, update={**update, "ending": ending.as_state()})
        return Command(goto=[f"run {n}" for n in run] + [f"approve {n}" for n in wait], update=update)

    return plan


def _waiting(job: nodes.Job, beat, seen: Ledger) -> tuple[list[str] | None, nodes.Ending | None]:
    """The Claude planner's turn on ledger `seen` moved nothing: wait on the approvals asked
    for, or end; (None, None) when the ledger has moved since `seen` (decide again)."""
    actor = nodes.GraphActor(job, beat)
    ledger = actor.store.read()
    if moved_since(seen, ledger):
        return None, None
    awaiting = [n for n, t in ledger.targets.items() if t.state == "awaiting_approval"]
    if awaiting:
        return awaiting, None
    if all(t.state in ("done", "blocked", "failed") for t in ledger.targets.values()):
        return [], nodes.Ending(nodes.why_done(ledger), 0)
    return [], nodes.Ending("the planner proposes nothing more", 0)


def _target(job: nodes.Job, name: str, beat):
    def run(state: State) -> Command:
        changed, ending, seen = nodes.step(job, name, beat)
        update: dict[str, Any] = {"visits": 1}
        if not changed:
            update["idle"] = {name: seen}
        if ending is not None:
            update["ending"] = ending.as_state()
        return Command(goto="plan", update=update)

    run.__name__ = f"target_{name}"
    return run


def _approve(job: nodes.Job, name: str):
    def wait(state: State) -> Command:
        request = nodes.approval_request(job, name)  # read only: this line re-runs on every resume
        if request is not None:
            interrupt(request)  # the resume value only wakes the node: it is never read
        return Command(goto="plan", update={"visits": 1})

    wait.__name__ = f"approve_{name}"
    return wait


def config(thread: str) -> RunnableConfig:
    """The run config of a ledger's thread. A fleet is many super-steps: no small limit."""
    return RunnableConfig(configurable={"thread_id": thread}, recursion_limit=1_000_000)
