"""The graph built from a ledger's runbook: one node per target that runs its steps, and
an interrupt on every irreversible edge.

    START -> run <first> -> ... -> run <last> -> sweep -> END (or back to run <first>)
    run <name> -> approve <name> (an approval was asked for) -> interrupt -> approve <name> ... -> run <name>

`run <name>` calls engine.langgraph.nodes.drive (the decision core, inline). `approve <name>` is
the irreversible edge: it reads the approval request from the ledger (no side effect: a
resume re-runs everything before the `interrupt()`), interrupts with it, and whatever the
resume value says, goes back to itself to read the ledger again. So a resume without a
matching approval in the ledger interrupts again; with one, the target's state has left
`awaiting_approval` and `run <name>` runs the step, the guard checking the approval's hash.

The graph state holds no decisions: only how far the sweep got (`seen`, a digest of the
targets) and why a run ended. The ledger is the memory.
"""

from __future__ import annotations

import hashlib
import json
import operator
from typing import Annotated, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from engine.langgraph import nodes
from engine.ledger.access import open_writer
from engine.planners.autopilot import Autopilot


class State(TypedDict, total=False):
    visits: Annotated[int, operator.add]  # node runs, for people reading the checkpoints
    seen: str  # the targets' digest at the last sweep: a pass that changed nothing ends the run
    ended: str  # why the run ended (a stop, a pause, the lease lost), else absent


def _digest(ledger) -> str:
    view = {n: [t.state, t.checkpoint, t.in_flight is not None, len(t.approvals)] for n, t in ledger.targets.items()}
    return hashlib.sha256(json.dumps(view, sort_keys=True, default=str).encode()).hexdigest()[:16]


def build(job: nodes.Job, names: list[str], beat=None) -> StateGraph:
    """The uncompiled graph for a ledger whose targets are `names` (ledger order)."""
    if not names:
        raise ValueError("a ledger with no targets has no graph")
    g = StateGraph(State)
    following = {n: f"run {names[i + 1]}" if i + 1 < len(names) else "sweep" for i, n in enumerate(names)}
    for name in names:
        g.add_node(f"run {name}", _target(job, name, following[name], beat), destinations=(f"approve {name}", following[name], END))
        g.add_node(f"approve {name}", _approve(job, name), destinations=(f"approve {name}", f"run {name}"))
    g.add_node("sweep", _sweep(job, names[0]), destinations=(f"run {names[0]}", END))
    g.add_edge(START, f"run {names[0]}")
    return g


def _target(job: nodes.Job, name: str, following: str, beat):
    def run(state: State) -> Command:
        where, why = nodes.drive(job, name, beat)
        if where == "approve":
            return Command(goto=f"approve {name}", update={"visits": 1})
        if where == "end":
            return Command(goto=END, update={"visits": 1, "ended": why})
        return Command(goto=following, update={"visits": 1})

    run.__name__ = f"target_{name}"
    return run


def _approve(job: nodes.Job, name: str):
    def wait(state: State) -> Command:
        request = nodes.approval_request(job, name)  # read only: this line re-runs on every resume
        if request is None:
            return Command(goto=f"run {name}", update={"visits": 1})
        interrupt(request)  # the resume value only wakes the node: it is never read
        return Command(goto=f"approve {name}", update={"visits": 1})

    wait.__name__ = f"approve_{name}"
    return wait


def _sweep(job: nodes.Job, first: str):
    def sweep(state: State) -> Command:
        ledger = open_writer(job["ledger"], actor=job.get("actor")).store.read()
        seen = _digest(ledger)
        if Autopilot().propose(ledger) and seen != state.get("seen"):
            return Command(goto=f"run {first}", update={"visits": 1, "seen": seen})
        return Command(goto=END, update={"visits": 1, "seen": seen})

    return sweep


def config(thread: str) -> RunnableConfig:
    """The run config of a ledger's thread. A fleet is many super-steps: no small limit."""
    return {"configurable": {"thread_id": thread}, "recursion_limit": 1_000_000}
