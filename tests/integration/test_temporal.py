"""The Temporal runtime against a real Temporal dev server, with workers as separate processes.

- the demo fleet (40 targets, the simulator) driven to the end by two workers while a
  human approves through `handoff approve`: every irreversible step started exactly once
  (the simulator counts runs before it acts), the ledger and the journal complete;
- kill -9 of the worker running a step, at least ten times over a run, a new worker
  started after each: reversible steps run again, irreversible ones are proved by their
  probe and never re-run, and the run finishes;
- an approval given while a decision looks at what waits: decided again, never left behind;
- a second `handoff resume --runtime temporal` attaches, never a second workflow; a
  built-in `handoff resume` on a ledger the workflow holds exits 5.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from session_kit import DEMO, counts, demo_copy, journal, load, sim  # noqa: E402
from temporal_kit import Server, Workers, handoff_proc, handoff_run, queue, step_processes  # noqa: E402

from engine.temporal.client import in_loop, wake  # noqa: E402

IRREVERSIBLE = ("link", "cutover")
PG = os.environ.get("HANDOFF_TEST_PG", "postgresql://127.0.0.1/test")
TO_DO = [f"db-{i:02d}" for i in list(range(18, 20)) + list(range(21, 27)) + list(range(28, 41))]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("temporal"))
    yield s
    s.stop()


def approve_waiting(ledger: Path, world: Path) -> list[str]:
    """The on-call humans: approve every target that waits, as the TUI's approval dialog does
    (engine.api: the pending command and its hash as shown, then `approve` with that hash),
    several at once. What waking the workflow said, per approval recorded.

    Through the API in this process rather than a `handoff approve` process each: a process
    cost 1.5-3 s on this loaded machine, on the fleet's critical path twice per database (a
    median of 6 s from the gate to the approval); the writers still race on the ledger's lock.
    The command itself is driven in test_temporal_days.py and test_temporal_faults.py."""
    from engine.api import open_ledger
    from engine.errors import HandoffError

    def approve(name: str) -> str | None:
        handle = open_ledger(str(ledger), actor="human-oncall")
        try:
            pending = handle.pending_command(handle.load(), name)
            handle.approve(name, expect_hash=pending.hash)
        except HandoffError as err:
            assert err.exit_code == 1, err.message  # it changed under us (another approver, the workflow): next turn
            return None
        return handle.woke

    waiting = [name for name, t in load(ledger)["targets"].items() if t.get("state") == "awaiting_approval"]
    with ThreadPoolExecutor(4) as pool:  # several people approving at once, as at a shift change
        return [w for w in pool.map(approve, waiting) if w is not None]


def reconcile_from_world(ledger: Path, world: Path) -> None:
    """What a dead worker's decision left blocked, put where the world says it is (as in
    tests/chaos/test_kill9.py: the human looks at the world, never at the engine)."""
    for name, t in load(ledger)["targets"].items():
        if t.get("state") in ("blocked", "failed") and name not in ("db-20", "db-27"):
            db = json.loads(sim(world, "show", name).stdout)
            where = "done" if db["cut_over"] else "replicating" if db["linked"] else "checked"
            result = handoff_run("reconcile", str(ledger), name, "--to", where, "--reason", "looked at the world",
                                 "--as", "human-oncall", world=world)
            assert result.returncode == 0, result.stdout + result.stderr


def irreversible_starts(ledger: Path) -> Counter:
    return Counter((r["target"], r["step"], r.get("approval_hash"), r.get("approval_at"))
                   for r in journal(ledger) if r.get("kind") == "step_start" and r.get("step") in IRREVERSIBLE)


def workflow_identities(address: str, workflow_id: str) -> set[str]:
    """Which workers ran the workflow's activities, from Temporal's own history."""
    from temporalio.client import Client

    async def read() -> set[str]:
        client = await Client.connect(address)
        history = await client.get_workflow_handle(workflow_id).fetch_history()
        del client
        return {e.activity_task_started_event_attributes.identity for e in history.events
                if e.HasField("activity_task_started_event_attributes")}

    return in_loop(read())


def assert_finished(ledger: Path, world: Path, to_do: list[str] = TO_DO) -> dict:
    data = load(ledger)
    unfinished = {n: t["state"] for n, t in data["targets"].items() if t["state"] != "done"}
    assert unfinished == {"db-20": "blocked", "db-27": "failed"}, {n: data["targets"][n] for n in unfinished}
    final = counts(world)
    assert all(final[n]["cutover_runs"] == 1 for n in to_do), {n: final[n] for n in to_do}
    assert all(final[n]["link_runs"] == (0 if n == "db-18" else 1) for n in to_do), {n: final[n] for n in to_do}
    assert data.get("session") is None, "the workflow gave the lease back"
    assert all(n == 1 for n in irreversible_starts(ledger).values()), irreversible_starts(ledger)
    assert not [n for n, t in data["targets"].items() if t.get("in_flight")]
    return data


def test_demo_fleet_two_workers_with_approvals_mid_run(tmp_path: Path, server: Server) -> None:
    ledger = demo_copy(tmp_path)
    world = tmp_path / "world"
    q = queue()
    workers = Workers(server, q, world, tmp_path)
    workers.start()
    workers.start()
    try:
        follow = handoff_proc("resume", "--ledger", str(ledger), "--runtime", "temporal", "--temporal", server.address,
                              "--task-queue", q, "--follow", world=world)
        t0, woke = time.monotonic(), []
        while follow.poll() is None:
            assert time.monotonic() - t0 < 240, "the fleet did not finish in time"
            woke += approve_waiting(ledger, world)
            time.sleep(0.3)
        out, err = follow.communicate()
        assert follow.returncode == 0, out + err
    finally:
        workers.stop()
    data = assert_finished(ledger, world)
    wid = f"handoff-{data['id']}"
    # Approvals woke the workflow: each approval signalled it.
    # Under heavy load a signal can outlast its 5 s wait, or the lease keeper's beat run late: the
    # approval then says so (and the workflow's keeper re-reads the ledger); most still wake it.
    signalled = [w for w in woke if f"signalled temporal workflow {wid}: it looks again" in w]
    assert len(woke) >= 2 * len(TO_DO) - 1 and all(f"temporal workflow {wid}" in w for w in woke), woke
    assert len(signalled) >= len(TO_DO), [w for w in woke if w not in signalled]
    # Progress printed like a session's, from the journal; the note and the end are there.
    assert f"temporal workflow {wid} holds the ledger" in out
    assert "db-40: cutover passed" in out and "handoff_note:" in out and f"temporal workflow {wid} ended (exit 0)" in out
    assert data["handoff_note_by"] == f"agent:{wid}" and "db-20" in data["handoff_note"]
    records = journal(ledger)
    for name in TO_DO:  # the journal has every cutover, its approval and its outcome
        kinds = {(r.get("kind"), r.get("step")) for r in records if r.get("target") == name}
        assert {("approval", "cutover"), ("step_start", "cutover"), ("step_end", "cutover")} <= kinds, (name, kinds)
        assert data["targets"][name]["evidence"]["step"] == "cutover"
    # Both workers ran activities of the one workflow.
    identities = workflow_identities(server.address, wid)
    assert len({i.split("/")[0] for i in identities}) == 2, identities
    assert handoff_run("check", str(ledger), world=world).returncode == 0


def test_kill9_workers_mid_step(tmp_path: Path, server: Server) -> None:
    """At least ten kill -9s of the worker whose step process runs; a new worker after each.
    The demo fleet up to db-27 (eight databases to upgrade), its steps slowed to be killable.
    The kill points are chosen: a thread watching /proc kills the moment a step of the kind
    whose turn it is runs, instead of waiting for the approving loop to come round. Half a second
    between kills, two at most waiting for the kind whose turn it is: with a second and four, a run
    on a quicker engine ended after eight kills."""
    demo = load(DEMO / "ledger.yaml")
    ledger = demo_copy(tmp_path, targets={n: t for n, t in demo["targets"].items() if n <= "db-27"})
    world = tmp_path / "world"
    q = queue()
    workers = Workers(server, q, world, tmp_path)
    killed: list[str] = []
    slow = {"HANDOFF_SIM_SPEED": "3"}  # steps last long enough to be killed in the middle
    done = threading.Event()

    def killer() -> None:
        want, last_kill = IRREVERSIBLE, 0.0  # alternate: kill under an irreversible step, then under a reversible one
        while not done.is_set() and len(killed) < 10:
            if time.monotonic() - last_kill > 0.5:
                pids = {p.pid for p in workers.alive()}
                # Each kill in a new place (a step of a target not killed before), so kills never hold the run back.
                steps = [(ppid, argv) for _pid, ppid, argv in step_processes(pids)
                         if argv[0] in (*IRREVERSIBLE, "check", "lag") and " ".join(argv) not in killed]
                victims = sorted(steps, key=lambda v: v[1][0] not in want)  # the kind whose turn it is, else any step
                if victims and (victims[0][1][0] in want or time.monotonic() - last_kill > 2.0):
                    ppid, argv = victims[0]
                    os.kill(ppid, signal.SIGKILL)
                    killed.append(" ".join(argv))
                    last_kill = time.monotonic()
                    if argv[0] in want:  # its turn is over once a step of its kind was killed
                        want = ("check", "lag") if want is IRREVERSIBLE else IRREVERSIBLE
                    workers.start(**slow)
            time.sleep(0.05)

    watcher = threading.Thread(target=killer, name="killer", daemon=True)
    try:
        workers.start(**slow)
        workers.start(**slow)
        started = handoff_run("resume", "--ledger", str(ledger), "--runtime", "temporal", "--temporal", server.address,
                              "--task-queue", q, world=world)
        assert started.returncode == 0, started.stdout + started.stderr
        watcher.start()
        t0 = time.monotonic()
        while True:
            data = load(ledger)
            if data.get("session") is None and data.get("handoff_note_by", "").startswith("agent:handoff-"):
                break
            assert time.monotonic() - t0 < 420, f"the run did not finish; killed {killed}"
            approve_waiting(ledger, world)
            reconcile_from_world(ledger, world)
            time.sleep(0.1)
    finally:
        done.set()
        if watcher.is_alive():
            watcher.join(10)
        workers.stop()
    assert len(killed) >= 10, killed
    assert_finished(ledger, world, [n for n in TO_DO if n <= "db-27"])
    records = journal(ledger)
    kinds = Counter(r.get("kind") for r in records)
    # Irreversible steps whose worker died were proved by their probe, never run again.
    proved = [r for r in records if "is irreversible, so it is not run again; its verify proves it happened" in r.get("msg", "")]
    assert proved, [r["msg"] for r in records if r.get("kind") == "reconcile"]
    # Reversible ones ran again: a retry by Temporal, or an intent cleared to run again.
    again = kinds["retry"] + sum(1 for r in records if "it will run again" in r.get("msg", ""))
    assert again >= 1, (kinds, killed)
    print(f"temporal kill -9: {len(killed)} workers killed mid-step ({killed}); {kinds['reconcile']} reconcile records")


def test_an_approval_given_while_the_workflow_decides_is_not_left_behind(tmp_path: Path, server: Server) -> None:
    """A decision found nothing to start (db-19 awaited its link's approval); the approval
    lands before the decision looks at what waits (the deciding thread paused at failpoint
    `nothing-moved`; only that thread, since the worker's keeper may hold the journal's lock
    at any instant, and a whole-process stop kept it: the approval waited for ever). The
    workflow decides again on what the ledger says now instead of ending with "nothing can
    proceed without a human" and db-19 left behind. The heartbeat timeout is long here so
    that the paused decision is not retried, which would hide it."""
    from tests.conftest import wait_paused

    ledger = demo_copy(tmp_path, targets={"db-19": {"state": "queued"}})
    world = tmp_path / "world"
    q = queue()
    slow = {"HANDOFF_TEMPORAL_HEARTBEAT_TIMEOUT": "60"}
    paused = tmp_path / "paused-at-nothing-moved"
    workers = Workers(server, q, world, tmp_path)
    workers.start(HANDOFF_FAILPOINTS="nothing-moved", HANDOFF_FAILPOINT_PAUSE=str(paused), **slow)
    try:
        follow = handoff_proc("resume", "--ledger", str(ledger), "--runtime", "temporal", "--temporal", server.address,
                              "--task-queue", q, "--follow", world=world, **slow)
        wait_paused(paused, 120)  # a check step, then the gate: slow on a loaded machine
        assert load(ledger)["targets"]["db-19"]["state"] == "awaiting_approval"
        assert approve_waiting(ledger, world)
        paused.unlink()
        t0 = time.monotonic()
        while follow.poll() is None:
            assert time.monotonic() - t0 < 120, "db-19 did not finish in time"
            approve_waiting(ledger, world)
            time.sleep(0.3)
        out, err = follow.communicate()
        assert follow.returncode == 0, out + err
    finally:
        paused.unlink(missing_ok=True)
        workers.stop()
    assert load(ledger)["targets"]["db-19"]["state"] == "done", out
    assert "nothing can proceed without a human" not in out, out
    assert counts(world)["db-19"]["link_runs"] == 1 and counts(world)["db-19"]["cutover_runs"] == 1


def test_second_start_attaches_and_a_session_is_refused(tmp_path: Path, server: Server) -> None:
    ledger = demo_copy(tmp_path)
    world = tmp_path / "world"
    q = queue()
    workers = Workers(server, q, world, tmp_path)
    workers.start()
    try:
        # A poll of 5 minutes: only the signal `handoff stop` sends can end it within the test's time.
        first = handoff_run("resume", "--ledger", str(ledger), "--runtime", "temporal", "--temporal", server.address,
                            "--task-queue", q, world=world, HANDOFF_TEMPORAL_POLL="300")
        assert first.returncode == 0, first.stdout + first.stderr
        wid = f"handoff-{load(ledger)['id']}"
        assert f"started temporal workflow {wid}" in first.stdout
        second = handoff_run("resume", "--ledger", str(ledger), "--runtime", "temporal", "--temporal", server.address,
                             "--task-queue", q, world=world)
        assert second.returncode == 0, second.stdout + second.stderr
        assert f"attached to temporal workflow {wid}" in second.stdout
        deadline = time.monotonic() + 60
        while (load(ledger).get("session") or {}).get("id") != wid:
            assert time.monotonic() < deadline, "the workflow never took the lease"
            time.sleep(0.2)
        session = load(ledger)["session"]
        assert session["runtime"] == "temporal" and session["temporal"] == {
            "address": server.address, "namespace": "default", "task_queue": q, "workflow_id": wid}
        before = ledger.read_bytes()
        builtin = handoff_run("resume", "--ledger", str(ledger), world=world)
        assert builtin.returncode == 5, builtin.stdout + builtin.stderr
        assert f"temporal workflow {wid}" in builtin.stdout + builtin.stderr
        status = handoff_run("status", str(ledger), world=world)
        assert f"temporal workflow {wid}" in status.stdout and "on 1 worker" in status.stdout, status.stdout
        # One workflow ran: Temporal lists exactly one execution with this id.
        listed = _executions(server.address, wid)
        assert listed == 1, listed
        stop = handoff_run("stop", str(ledger), world=world)
        # Told by the signal, or (a decision already reading the ledger saw the request) handed off before it arrived.
        told = f"signalled temporal workflow {wid}" in stop.stderr
        assert stop.returncode == 0 and (told or "the workflow had already handed off" in stop.stdout), \
            stop.stdout + stop.stderr
        deadline = time.monotonic() + 30
        while load(ledger).get("session") is not None:
            assert time.monotonic() < deadline, "the workflow did not hand off after `handoff stop`"
            time.sleep(0.2)
        assert "stop requested by" in load(ledger)["handoff_note"]
        assert before != ledger.read_bytes()
        # A writer that read the lease before the hand-off wakes a workflow that has completed: it is told so.
        deadline = time.monotonic() + 30
        while _status(server.address, wid) != "COMPLETED":  # it gave the lease back; it closes a moment later
            assert time.monotonic() < deadline, "the workflow never closed after handing off"
            time.sleep(0.2)
        ref = SimpleNamespace(workflow_id=wid, address=server.address, namespace="default", task_queue=q)
        said = wake(ref, wait=20.0)
        assert said.startswith(f"temporal workflow {wid} completed before the signal reached it"), said
    finally:
        workers.stop()


def _status(address: str, wid: str) -> str:
    from temporalio.client import Client

    async def ask() -> str:
        client = await Client.connect(address)
        info = await client.get_workflow_handle(wid).describe()
        del client
        return info.status.name if info.status is not None else "?"

    return in_loop(ask())


def _executions(address: str, wid: str) -> int:
    from temporalio.client import Client

    async def count() -> int:
        client = await Client.connect(address)
        found = len([w async for w in client.list_workflows(f"WorkflowId = '{wid}'")])
        del client
        return found

    return in_loop(count())


@pytest.mark.xdist_group("postgres")  # the PostgreSQL server is shared (tests/conftest.py)
def test_a_postgres_ledger_driven_by_workers(tmp_path: Path, server: Server) -> None:
    """Workers on several hosts need a ledger every host reaches: the PostgreSQL store. Its
    lease, heartbeat and journal live in the database; the fleet's commands run in the
    workers' folder."""
    import uuid

    demo = load(DEMO / "ledger.yaml")
    source = demo_copy(tmp_path, targets={n: t for n, t in demo["targets"].items() if n <= "db-21"})
    world = tmp_path / "world"
    location = f"{PG}#t-{uuid.uuid4().hex[:10]}"
    imported = handoff_run("import", str(source), location, world=world)
    assert imported.returncode == 0, imported.stderr
    q = queue()
    workers = Workers(server, q, world, tmp_path, cwd=source.parent)
    workers.start()
    workers.start()
    try:
        follow = handoff_proc("resume", "--ledger", location, "--runtime", "temporal", "--temporal", server.address,
                              "--task-queue", q, "--follow", world=world)
        t0 = time.monotonic()
        while follow.poll() is None:
            assert time.monotonic() - t0 < 120, "the fleet did not finish in time"
            exported = handoff_run("export", location, world=world)
            for name, t in yaml.safe_load(exported.stdout)["targets"].items():
                if t.get("state") == "awaiting_approval":
                    # From the workers' folder: a database ledger's `{ledger_dir}` is the folder a command runs in,
                    # and an approval binds the command as its approver saw it rendered.
                    approved = handoff_run("approve", location, name, "--yes", "--as", "human-oncall", world=world,
                                           cwd=source.parent)
                    assert approved.returncode in (0, 1), approved.stderr
            time.sleep(0.3)
        out, err = follow.communicate()
        assert follow.returncode == 0, out + err
    finally:
        workers.stop()
    data = yaml.safe_load(handoff_run("export", location, world=world).stdout)
    assert {n: t["state"] for n, t in data["targets"].items() if t["state"] != "done"} == {"db-20": "blocked"}
    final = counts(world)
    assert all(final[n]["cutover_runs"] == 1 for n in ("db-18", "db-19", "db-21")), final
    assert data.get("session") is None and data["id"]
    starts = Counter((r["target"], r["step"]) for r in json.loads(
        "[" + ",".join(handoff_run("journal", location, "--json", world=world).stdout.splitlines()) + "]")
        if r.get("kind") == "step_start" and r.get("step") in IRREVERSIBLE)
    assert starts and all(n == 1 for n in starts.values()), starts
