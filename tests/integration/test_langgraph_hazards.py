"""LangGraph's hazards for irreversible work, each shown on a naive graph and refused here.

Every test runs a naive graph first (its irreversible node does its work after an
`interrupt()`, as LangGraph's own examples do) and shows the hazard happen in the demo
world: the simulator counts each cutover before it acts. Then the same move on the
runtime's graph (engine.langgraph.graph, the real PostgresSaver on the real PostgreSQL,
approvals through a real `handoff approve`) starts the cutover at most once:

- a replay from the checkpoint taken at the approval, after the approved step ran;
- an `update_state` fork of that checkpoint, then resumed;
- a resume value that claims an approval the ledger does not hold: it interrupts again;
- code before `interrupt()` re-runs on every resume: here it has no side effect (the
  ledger and journal do not change however often the node is resumed);
- a crash after an irreversible step started: the journal and fence refuse a second
  start ("already started (journal seq N)") and its probe proves it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from langgraph_kit import Thread, checkpointer, small_fleet  # noqa: E402,F401
from session_kit import counts, handoff, journal, load, sim  # noqa: E402

from engine.langgraph.checkpoints import saver  # noqa: E402


class Naive(TypedDict, total=False):
    n: int


def naive_app(s, world: Path, before: list[str]):
    """The naive graph: ask, then cut db-18 over in the world (a real process)."""

    def cutover(state: Naive) -> dict:
        before.append("ran")  # code before interrupt(): LangGraph re-runs it on every resume
        interrupt({"target": "db-18", "step": "cutover"})
        sim(world, "cutover", "db-18")
        return {"n": 1}

    g = StateGraph(Naive)
    g.add_node("cutover", cutover)
    g.add_edge(START, "cutover")
    g.add_edge("cutover", END)
    return g.compile(checkpointer=s)


def _cutovers(world: Path) -> int:
    return counts(world)["db-18"]["cutover_runs"]


def _approve(ledger: Path) -> None:
    result = handoff("approve", str(ledger), "db-18", "--yes", "--as", "human-oncall", world=ledger.parent.parent / "world")
    assert result.returncode == 0, result.stdout + result.stderr


def _interrupted_at(app, cfg) -> tuple:
    snap = app.get_state(cfg)
    return snap.next, [i.value["target"] for i in snap.interrupts]


def _naive_checkpoint(app, cfg):
    return next(h for h in app.get_state_history(cfg) if h.next == ("cutover",) and h.interrupts)


def _ours_checkpoint(app, cfg):
    return next(h for h in app.get_state_history(cfg) if h.next == ("approve db-18",) and h.interrupts)


def _to_approval(tmp_path: Path, url: str, monkeypatch):
    """Our thread on db-18, run up to the interrupt on its cutover edge."""
    ledger = small_fleet(tmp_path, "db-18")
    t = Thread(ledger, url, monkeypatch)
    return ledger, t


def test_replay_and_fork_after_an_approval_never_run_the_step_again(tmp_path: Path, checkpointer, monkeypatch) -> None:
    url, _schema = checkpointer
    ledger, t = _to_approval(tmp_path, url, monkeypatch)
    world = ledger.parent.parent / "world"
    with saver(url) as s:
        # The naive graph: one approval, then a replay of the approval's checkpoint resumed
        # again, and an update_state fork of it resumed: the cutover runs three times.
        naive, cfg = naive_app(s, world, []), {"configurable": {"thread_id": "naive-" + t.thread}}
        naive.invoke({"n": 0}, cfg)
        naive.invoke(Command(resume="approved"), cfg)
        at = _naive_checkpoint(naive, cfg)
        naive.invoke(None, at.config)
        naive.invoke(Command(resume="approved"), cfg)
        fork = naive.update_state(at.config, {"n": 5})
        naive.invoke(None, fork)
        naive.invoke(Command(resume="approved"), cfg)
        assert _cutovers(world) == 3, "the naive graph ran its irreversible node once per replay"
        sim(world, "reset")

        app, cfg = t.app(s), t.config()
        app.invoke({"visits": 0}, cfg)
        assert _interrupted_at(app, cfg) == (("approve db-18",), ["db-18"])
        request = app.get_state(cfg).interrupts[0].value
        assert set(request) >= {"target", "step", "argv", "hash"} and request["step"] == "cutover"
        assert request["argv"][-2:] == ["cutover", "db-18"]
        _approve(ledger)
        app.invoke(Command(resume="approved"), cfg)
        assert _cutovers(world) == 1 and load(ledger)["targets"]["db-18"]["state"] == "done"
        at = _ours_checkpoint(app, cfg)
        app.invoke(None, at.config)  # the replay: the node reads the ledger, where db-18 is done
        app.invoke(Command(resume="approved"), cfg)
        fork = app.update_state(at.config, {"visits": 0})
        app.invoke(None, fork)
        app.invoke(Command(resume="approved"), cfg)
        assert _cutovers(world) == 1, "a replay or a fork started the cutover again"
        assert app.get_state(cfg).next == ()
    starts = [r for r in journal(ledger) if r.get("kind") == "step_start" and r.get("step") == "cutover"]
    assert len(starts) == 1


def test_a_resume_claiming_approval_without_one_interrupts_again(tmp_path: Path, checkpointer, monkeypatch) -> None:
    url, _schema = checkpointer
    ledger, t = _to_approval(tmp_path, url, monkeypatch)
    world = ledger.parent.parent / "world"
    with saver(url) as s:
        naive, ncfg = naive_app(s, world, []), {"configurable": {"thread_id": "naive-" + t.thread}}
        naive.invoke({"n": 0}, ncfg)
        naive.invoke(Command(resume={"approved": True}), ncfg)
        assert _cutovers(world) == 1, "the naive graph took the resume value for an approval"
        sim(world, "reset")

        app, cfg = t.app(s), t.config()
        app.invoke({"visits": 0}, cfg)
        request = app.get_state(cfg).interrupts[0].value
        for _ in range(3):  # a forged resume, even one naming the right hash
            app.invoke(Command(resume={"approved": True, "by": "mallory", "hash": request["hash"]}), cfg)
            assert _interrupted_at(app, cfg) == (("approve db-18",), ["db-18"])
        assert _cutovers(world) == 0
        data = load(ledger)["targets"]["db-18"]
        assert data["state"] == "awaiting_approval" and not data.get("approvals")
        _approve(ledger)  # the real one, in the ledger: the next resume runs it
        app.invoke(Command(resume="anything"), cfg)
        assert _cutovers(world) == 1 and load(ledger)["targets"]["db-18"]["state"] == "done"


def test_code_before_the_interrupt_has_no_side_effect(tmp_path: Path, checkpointer, monkeypatch) -> None:
    url, _schema = checkpointer
    ledger, t = _to_approval(tmp_path, url, monkeypatch)
    world = ledger.parent.parent / "world"
    with saver(url) as s:
        before: list[str] = []
        naive, ncfg = naive_app(s, world, before), {"configurable": {"thread_id": "naive-" + t.thread}}
        naive.invoke({"n": 0}, ncfg)
        naive.invoke(Command(resume="ok"), ncfg)
        assert before == ["ran", "ran"], "LangGraph re-runs a node's code before interrupt() on resume"
        sim(world, "reset")

        app, cfg = t.app(s), t.config()
        app.invoke({"visits": 0}, cfg)
        assert _interrupted_at(app, cfg) == (("approve db-18",), ["db-18"])
        text, records = ledger.read_bytes(), len(journal(ledger))
        pages = [r for r in journal(ledger) if r.get("target") == "db-18" and "requires approval" in r.get("msg", "")]
        for _ in range(4):
            app.invoke(Command(resume="wake"), cfg)
        assert ledger.read_bytes() == text and len(journal(ledger)) == records, "a resume changed the ledger or journal"
        assert len(pages) == 1
        assert _interrupted_at(app, cfg) == (("approve db-18",), ["db-18"]), "it still waits, on the ledger's word"


def test_a_crash_after_an_irreversible_start_is_fenced_and_proved(tmp_path: Path, checkpointer, monkeypatch) -> None:
    """The thread dies (SIGKILL of a real runtime) after db-19's link started; the next run
    resumes at the node it left, the fence refuses a second start, the probe proves it."""
    url, _schema = checkpointer
    ledger = small_fleet(tmp_path, "db-19")
    world = ledger.parent.parent / "world"
    env_slow = {"HANDOFF_SIM_SPEED": "2"}
    proc = _runtime(ledger, url, world, env_slow)
    try:
        from session_kit import wait_for

        wait_for(lambda: load(ledger)["targets"]["db-19"]["state"] == "awaiting_approval", 30, "the link to wait")
        handoff("approve", str(ledger), "db-19", "--yes", "--as", "human-oncall", world=world)
        wait_for(lambda: any(r.get("kind") == "step_start" and r.get("step") == "link" for r in journal(ledger)),
                 30, "the link to start")
        # Killed once the link's own process runs (the simulator counts a run before it acts): a kill
        # between the journal's step_start and the spawn is another story (nothing ran; the target blocks).
        wait_for(lambda: counts(world).get("db-19", {}).get("link_runs") == 1, 30, "the link's process to start")
        proc.kill()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    # The step runs in its own session, so it outlives the runtime; the next run's probe finds what it did
    # once it is done (a run that starts while it still works and has no pid to wait on blocks the target).
    wait_for(lambda: json.loads((world / "db-19.json").read_text()).get("linked"), 60, "the orphaned link to finish")
    seq = _offset_of(ledger, "step_start", "link")
    assert load(ledger)["targets"]["db-19"].get("in_flight"), "killed before the link was recorded"
    again = _runtime(ledger, url, world, {})
    from session_kit import wait_for

    try:  # it goes on to ask for the cutover; a stop then ends the run with its note
        wait_for(lambda: load(ledger)["targets"]["db-19"].get("awaiting") == "cutover", 60, "the cutover to be asked for")
        assert handoff("stop", str(ledger), world=world).returncode == 0
        out, err = again.communicate(timeout=60)
    finally:
        if again.poll() is None:
            again.kill()
    assert again.returncode == 0, out + err
    assert f"db-19: link already started (journal seq {seq}); it is never started again" in out, out + err
    assert "is irreversible, so it is not run again; its verify proves it happened" in out
    assert counts(world)["db-19"]["link_runs"] == 1
    starts = [r for r in journal(ledger) if r.get("kind") == "step_start" and r.get("step") == "link"]
    assert len(starts) == 1


def _offset_of(ledger: Path, kind: str, step: str) -> int:
    """A record's `seq`: its byte offset in the journal file (engine.audit.journal)."""
    import json

    offset = 0
    for line in Path(str(ledger) + ".journal.jsonl").read_bytes().splitlines(keepends=True):
        record = json.loads(line) if line.strip() else {}
        if record.get("kind") == kind and record.get("step") == step:
            return offset
        offset += len(line)
    raise AssertionError(f"no {kind} of {step} in the journal")


def _runtime(ledger: Path, url: str, world: Path, extra: dict) -> subprocess.Popen:
    from session_kit import ROOT, env

    return subprocess.Popen([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", str(ledger), "--runtime",
                             "langgraph", "--checkpointer", url], env={**env(world), **extra}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
