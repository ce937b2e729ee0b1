"""Checkpoint retention on the real PostgresSaver: `engine.langgraph.checkpoints.prune` keeps
the newest N checkpoints of a thread (and only the writes and blobs they need: the thread
still resumes from its latest one), other threads untouched; and a second runtime on a
ledger whose thread is live is refused (exit 5), never a second run of the same thread."""

from __future__ import annotations

import operator
import sys
from pathlib import Path
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from langgraph_kit import checkpointer, rows, small_fleet  # noqa: E402,F401
from session_kit import handoff, load, wait_for  # noqa: E402

from engine.langgraph.checkpoints import figures, prune, saver  # noqa: E402


class S(TypedDict, total=False):
    items: Annotated[list[str], operator.add]


def _app(s):
    def add(state: S) -> dict:
        return {"items": ["x" * 200]}

    def ask(state: S) -> Command:
        answer = interrupt("more?")
        return Command(goto="add" if answer == "more" else END)

    g = StateGraph(S)
    g.add_node("add", add)
    g.add_node("ask", ask, destinations=("add", END))
    g.add_edge(START, "add")
    g.add_edge("add", "ask")
    return g.compile(checkpointer=s)


def test_prune_keeps_n_and_the_thread_still_resumes(checkpointer) -> None:
    url, schema = checkpointer
    with saver(url) as s:
        app = _app(s)
        cfg, other = {"configurable": {"thread_id": "long"}}, {"configurable": {"thread_id": "other"}}
        app.invoke({"items": []}, cfg)
        app.invoke({"items": []}, other)
        for _ in range(30):
            app.invoke(Command(resume="more"), cfg)
        grown = rows(schema, "checkpoints", "long")
        assert grown > 60, grown  # LangGraph alone never prunes (issue 8531)
        deleted = prune(s, "long", 4)
        assert deleted == grown - 4 and rows(schema, "checkpoints", "long") == 4
        assert rows(schema, "checkpoints", "other") == 3, "another thread was touched"
        blobs = rows(schema, "checkpoint_blobs", "long")
        assert len(app.get_state(cfg).values["items"]) == 31  # the latest checkpoint is whole
        app.invoke(Command(resume="more"), cfg)  # and the thread resumes from it
        assert len(app.get_state(cfg).values["items"]) == 32 and app.get_state(cfg).interrupts
        assert blobs <= 8, blobs  # the old blobs went with their checkpoints
        assert figures(s, "long")["checkpoints"] == rows(schema, "checkpoints", "long")
        assert figures(s, "long")["bytes"] > 0


def test_a_second_runtime_on_a_live_thread_is_refused(tmp_path: Path, checkpointer) -> None:
    from test_langgraph_fleet import _runtime

    url, _schema = checkpointer
    ledger = small_fleet(tmp_path, "db-18")
    world = ledger.parent.parent / "world"
    first = _runtime(ledger, url, world)
    try:
        wait_for(lambda: load(ledger)["targets"]["db-18"].get("state") == "awaiting_approval", 30, "the first to wait")
        holder = load(ledger)["session"]
        second = handoff("resume", "--ledger", str(ledger), "--runtime", "langgraph", "--checkpointer", url, world=world)
        assert second.returncode == 5, second.stdout + second.stderr
        assert "another process drives this ledger: langgraph thread" in second.stderr
        assert load(ledger)["session"] == holder
        assert handoff("stop", str(ledger), world=world).returncode == 0
        out, err = first.communicate(timeout=60)
        assert first.returncode == 0, out + err
    finally:
        if first.poll() is None:
            first.kill()
