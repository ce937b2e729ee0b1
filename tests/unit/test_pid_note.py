"""A step's pid goes into its intent only once the step has run long enough to be looked
for (engine.session.runner.RUNNING_AFTER): a quick step costs the ledger two writes (its
intent, its result), a long one a third, with the pid of the step's own process."""

from __future__ import annotations

import json
from pathlib import Path

from session_kit import journal, load, resume, start, tool_ledger, wait_for


def _history(ledger: Path) -> dict[int, dict]:
    """The history journal's `ledger_write` records, by revision."""
    path = Path(str(ledger) + ".history.jsonl")
    return {r["rev"]: r for r in map(json.loads, path.read_text().splitlines()) if r.get("kind") == "ledger_write"}


def _revisions(ledger: Path, kind: str) -> dict[str, int]:
    return {r["step"]: r["rev"] for r in journal(ledger) if r["kind"] == kind}


def test_a_quick_step_writes_its_intent_and_its_result_and_nothing_between(tmp_path: Path) -> None:
    steps = [{"name": "check", "from": "queued", "to": "checked", "reversible": True, "run": ["true", "{target}"]},
             {"name": "sync", "from": "checked", "to": "done", "reversible": True, "run": ["true", "{target}"]}]
    ledger = tool_ledger(tmp_path, steps, {"a": {}})
    result = resume(ledger, world=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    starts, results = _revisions(ledger, "step_start"), _revisions(ledger, "transition")
    assert set(starts) == set(results) == {"check", "sync"}
    for step in starts:
        assert results[step] == starts[step] + 1, (step, starts, results)
    history = _history(ledger)
    assert not any("pid" in (r.get("targets") or {}).get("a", {}).get("in_flight", {}) for r in history.values())


def test_a_long_step_has_its_own_pid_noted_while_it_runs(tmp_path: Path) -> None:
    """The pid appears in the intent while the step runs, is that step's process (its
    command, and the intent's token in its environment), and is a write of its own
    between the intent and the result. The step runs until the test lets it end."""
    gate = tmp_path / "gate"
    gate.write_text("")
    code = "import os, sys, time\nwhile os.path.exists(sys.argv[1]): time.sleep(0.05)"
    steps = [{"name": "slow", "from": "queued", "to": "done", "reversible": True,
              "run": ["{python}", "-c", code, str(gate), "{target}"]}]
    ledger = tool_ledger(tmp_path, steps, {"a": {}})
    session = start("resume", "--ledger", str(ledger), world=tmp_path)
    try:
        flight = wait_for(lambda: (load(ledger)["targets"]["a"].get("in_flight") or {}).get("pid") and
                          load(ledger)["targets"]["a"]["in_flight"], timeout=30, what="the step's pid in its intent")
        pid = flight["pid"]
        assert flight["pgid"] == pid
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert cmdline[1:5] == [b"-c", code.encode(), str(gate).encode(), b"a"], cmdline
        assert flight["token"].encode() in Path(f"/proc/{pid}/environ").read_bytes()
        gate.unlink()
        out, err = session.communicate(timeout=60)
    finally:
        if session.poll() is None:
            session.kill()
            session.communicate()
    assert session.returncode == 0, out + err
    start_rev, result_rev = _revisions(ledger, "step_start")["slow"], _revisions(ledger, "transition")["slow"]
    assert result_rev == start_rev + 2
    noted = _history(ledger)[start_rev + 1]["targets"]["a"]["in_flight"]
    assert noted["pid"] == noted["pgid"] == pid and noted["token"] == flight["token"]
    assert load(ledger)["targets"]["a"]["state"] == "done" and "in_flight" not in load(ledger)["targets"]["a"]


def test_the_detail_view_names_the_pid_only_once_it_is_noted() -> None:
    """A step in flight whose pid is not noted yet shows no `pid None` in the TUI's detail."""
    from engine.ledger.model import InFlight, Target
    from tui.screens.detail import describe_target

    early = Target(state="queued", in_flight=InFlight(step="check", session="s-1", host="h", started_at="2026-12-06T09:00:00Z"))
    shown = describe_target("db-1", early).plain
    assert "check (session s-1, since" in shown and "pid" not in shown
    early.in_flight.pid = early.in_flight.pgid = 4242
    assert "check (session s-1, pid 4242, since" in describe_target("db-1", early).plain


def _noting(tmp_path: Path, *, host: str = "h", attempt: int = 1):
    """A PidNote over a real file ledger whose target `a` has an intent (token t-1, attempt 1, host h)."""
    import threading
    from types import SimpleNamespace

    from engine.ledger.guard import Decision
    from engine.session.steps import Intent, PidNote
    from engine.store.file import FileStore

    path = tmp_path / "l.yaml"
    path.write_text("task: t\nrunbook: {steps: [{name: check, from: queued, to: done, reversible: true, run: [x]}]}\n"
                    "targets:\n  a: {state: queued, in_flight: {step: check, session: s-1, host: h, attempt: 1, token: t-1}}\n")
    store = FileStore(str(path))
    said: list[str] = []
    s = SimpleNamespace(store=store, txn_lock=threading.Lock(), host=host, out=SimpleNamespace(say=lambda msg, **kw: said.append(msg)))
    ledger = store.read()
    it = Intent("a", ledger.step("check"), ["x"], None, "t-1", Decision(True, "reversible"), ledger.revision, attempt=attempt)
    return PidNote(s, it), store, said


def test_a_note_names_only_the_newest_spawn_of_this_attempt_on_this_host(tmp_path: Path) -> None:
    """A note that comes late (for an earlier spawn of the intent, another attempt, another
    host's worker) leaves the intent as it is: it never puts back a pid a newer spawn replaced."""
    note, store, said = _noting(tmp_path)
    note.latest = 222  # a newer probe was spawned before the note for 111 got the lock
    note._note(111)
    assert store.read().targets["a"].in_flight.pid is None
    note._note(222)
    assert store.read().targets["a"].in_flight.pid == store.read().targets["a"].in_flight.pgid == 222
    for kw in ({"attempt": 2}, {"host": "elsewhere"}):  # the intent is attempt 1's, on host h
        folder = tmp_path / next(iter(kw))
        folder.mkdir()
        other, store, _ = _noting(folder, **kw)
        other.latest = 333
        other._note(333)
        assert store.read().targets["a"].in_flight.pid is None, kw
    assert said == []
