"""A spent approval never authorises again, however the agent dresses it (review helper): a copy
of it put back beside the used one, a withdrawn one put back twice, a target named with a line
separator, its use hidden from the next engineer's session (engine.approvals.spent_marks). The agent is a real forked process with daemon's uid and its own high-water marks;
it writes through the engine's own code and drops lines from the journal's witness index (a
file it can write); the approver's process has nobody's uid; the person runs as root. A step
appends a line to a file per run: the count of lines is the count of spawns.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import cli_env, handoff
from tests.unit.test_verified_approvers import _approve_as_nobody, _as_uid, _load

MARK = "import sys, pathlib; p = pathlib.Path(__file__).with_name('runs-' + sys.argv[1]); p.open('a').write('ran\\n')\n"


@pytest.fixture
def folder():
    where = Path(tempfile.mkdtemp(prefix="spent-copies-"))  # outside pytest's 0700 tree: daemon and nobody reach it
    where.chmod(0o777)
    yield where
    shutil.rmtree(where, ignore_errors=True)


def _ledger(folder: Path, name: str = "db-19") -> Path:
    (folder / "mark.py").write_text(MARK)
    data = {"task": "twice", "owner_shift": "test-oncall", "approvers": [{"name": "nob", "os_user": "nobody"}],
            "runbook": {"steps": [{"name": "link", "from": "checked", "to": "done",
                                   "run": ["{python}", "{ledger_dir}/mark.py", "{target}"]}]},
            "targets": {name: {"state": "checked", "checkpoint": "0/19"}}}
    path = folder / "ledger.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    path.chmod(0o666)
    return path


def _runs(folder: Path, name: str = "db-19") -> int:
    runs = folder / ("runs-" + name)
    return runs.read_text().count("ran") if runs.exists() else 0


def _as_agent(folder: Path, work) -> None:
    """`work()` as uid 1 (daemon) with high-water marks of its own."""
    state = folder / "daemon-state"
    state.mkdir(exist_ok=True)
    os.chown(state, 1, 1)

    def run() -> None:
        os.environ["XDG_STATE_HOME"] = str(state)
        work()
    assert _as_uid(1, run) == 0


def _agent_writes(ledger: Path, change) -> None:
    from engine.api import open_ledger

    open_ledger(str(ledger), actor="agent").store.transact(change)


def _drop_from_index(ledger: Path, kinds: set[str]) -> None:
    """The journal's witness index without the records of `kinds`, still saying it covers the whole journal."""
    index = Path(str(ledger) + ".journal.jsonl.index")
    lines = index.read_text().split("\n")[:-1]
    kept = [line for line in lines if json.loads(line).get("kind") not in kinds]
    last = json.loads(lines[-1])
    if json.loads(kept[-1]) != last:
        kept.append(json.dumps({"end": last["end"], "rev": last["rev"], "v": last["v"]}))
    index.write_text("\n".join(kept) + "\n")


def _copy_beside_the_used_one(name: str):
    def change(ledger) -> None:
        t = ledger.targets[name]
        used = t.approvals[0]
        assert used.used_at
        t.approvals.append(used.model_copy(update={"used_at": None, "used_by": None}))
        t.state, t.evidence, t.touched_at, t.reason, t.last_action, t.next_action = "checked", None, None, None, None, None
    return change


def _lose_spent_marks(ledger: Path) -> None:
    """As a folder restored without its proof folder's spent marks would be (root removes them)."""
    for mark in ledger.parent.glob(ledger.name + ".spent-*"):
        shutil.rmtree(mark)


@pytest.mark.parametrize("person", ["run", "resume", "run with other marks, the spent marks lost"])
def test_a_copy_of_a_used_approval_beside_it_never_runs_the_step_again(folder: Path, person: str) -> None:
    """The step ran on nob's one approval. The agent puts the target back, adds a copy of the used approval (unused)
    beside it, and drops the step's start from the witness index: the person's next run or session refuses it (the
    spent mark of the first run says so), and so does the fence when that mark is gone and the high-water marks
    never saw the first run (another account's): the step ran once."""
    ledger = _ledger(folder)
    assert _approve_as_nobody(ledger, "db-19", "nob") == 0
    first = handoff("run", ledger, "db-19", "link")
    assert first.returncode == 0 and _runs(folder) == 1, first.stdout + first.stderr
    _as_agent(folder, lambda: (_agent_writes(ledger, _copy_beside_the_used_one("db-19")),
                               _drop_from_index(ledger, {"step_start"})))
    assert [a.get("used_at") is None for a in _load(ledger)["targets"]["db-19"]["approvals"]] == [False, True]
    if person == "resume":
        again = handoff("resume", "--ledger", ledger, "--max-minutes", "1")
    elif person == "run":
        again = handoff("run", ledger, "db-19", "link")
    else:
        _lose_spent_marks(ledger)
        again = handoff("run", ledger, "db-19", "link", env=cli_env(XDG_STATE_HOME=str(folder / "other-marks")))
    said = again.stdout + again.stderr
    assert _runs(folder) == 1, said
    if person.startswith("run with"):
        assert "stands twice on db-19, and one was used" in said, said
        assert [bool(a.get("used_at")) for a in _load(ledger)["targets"]["db-19"]["approvals"]] == [True]  # copy off
    else:
        assert "a spent mark of uid 0's" in said and "never run twice" in said, said


def test_a_step_run_by_one_person_is_not_run_again_by_the_next(folder: Path) -> None:
    """The rotation: root's session ran the step on nob's approval. The agent (daemon) clears the approval's
    `used_at` in place and drops the step's start from the witness index; it cannot remove root's spent mark
    (the kernel refuses). The next engineer's run, with their own high-water marks (which never saw the first run),
    is refused by that mark, and the step ran once."""
    ledger = _ledger(folder)
    assert _approve_as_nobody(ledger, "db-19", "nob") == 0
    assert handoff("run", ledger, "db-19", "link").returncode == 0 and _runs(folder) == 1
    [mark] = list(ledger.parent.glob(ledger.name + ".spent-0/*"))

    def clear(led) -> None:
        t = led.targets["db-19"]
        t.approvals[0].used_at = t.approvals[0].used_by = None
        t.state, t.evidence, t.touched_at, t.reason, t.last_action = "checked", None, None, None, None

    def agent() -> None:
        _agent_writes(ledger, clear)
        _drop_from_index(ledger, {"step_start"})
        away = Path(tempfile.mkdtemp(prefix="daemons-"))  # a folder of daemon's own, outside the ledger's
        for take_away in (lambda: mark.unlink(), lambda: mark.parent.rename(away / "gone"),
                          lambda: shutil.rmtree(mark.parent), lambda: mark.rename(mark.parent / "x")):
            try:
                take_away()
            except OSError:
                continue
            raise AssertionError("daemon took root's spent mark away")
        mark.parent.rename(ledger.parent / "just-a-folder")  # allowed in the ledger's folder (0777): the mark stays in it
    _as_agent(folder, agent)
    assert (folder / "just-a-folder" / mark.name).exists()
    again = handoff("run", ledger, "db-19", "link", env=cli_env(XDG_STATE_HOME=str(folder / "next-engineer")))
    said = again.stdout + again.stderr
    assert _runs(folder) == 1, said
    assert "a spent mark of uid 0's" in said and "never run twice" in said, said
    assert _load(ledger)["targets"]["db-19"]["state"] == "blocked"  # no verify to prove it ran: a person looks


def test_a_change_that_uses_a_copy_of_a_used_approval_spends_it() -> None:
    """The high-water mark's own count: before, one used approval and a copy of it unused; after, both used: the
    copy's use is a use (a set of keys took it for the one already used, and the mark never said no)."""
    from engine.ledger.model import Approval, InFlight, Ledger
    from engine.store import highwater

    used = Approval(by="nob", user="nobody", at="2026-12-07T01:00:00Z", step="link", hash="h", used_at="2026-12-07T01:01:00Z")
    copy = used.model_copy(update={"used_at": None})
    target = {"state": "checked", "approvals": [used.model_dump(exclude_none=True), copy.model_dump(exclude_none=True)]}
    before = Ledger.model_validate({"task": "t", "targets": {"a": target}})
    after = before.model_copy(deep=True)
    after.targets["a"].approvals[1].used_at = "2026-12-07T02:00:00Z"
    after.targets["a"].in_flight = InFlight(step="link", token="t1")
    [(name, approval, starting)] = highwater.newly_spent(before, after, ["a"])
    assert (name, approval.used_at, starting) == ("a", "2026-12-07T02:00:00Z", True)
    assert highwater.newly_spent(before, before, ["a"]) == []  # nothing new used: nothing spent again


@pytest.mark.parametrize("how", ["twice, the marks lost", "once, the next engineer"])
def test_a_withdrawn_approval_put_back_never_runs(folder: Path, how: str) -> None:
    """nob approves, the person withdraws it. The agent puts it back (twice: one copy saying it was used; or once)
    and drops the withdrawal from the witness index. With the withdrawal's mark lost (a restored proof folder), the
    copy beside a "used" one is refused; and the next engineer, whose high-water marks never saw the withdrawal, is
    refused by the mark the withdrawal left, which the agent cannot remove. Nothing ran."""
    from engine.ledger.model import Approval

    ledger = _ledger(folder)
    assert _approve_as_nobody(ledger, "db-19", "nob") == 0
    approval = _load(ledger)["targets"]["db-19"]["approvals"][0]
    assert handoff("unapprove", ledger, "db-19", "--as", "ops").returncode == 0
    [mark] = list(ledger.parent.glob(ledger.name + ".spent-0/spent-*"))
    assert json.loads(mark.read_text())["token"].startswith("withdrawn")

    def change(led) -> None:
        t = led.targets["db-19"]
        a = Approval.model_validate(approval)
        t.approvals = [a.model_copy(update={"used_at": a.at, "used_by": "x"}), a] if how.startswith("twice") else [a]
        t.state, t.awaiting, t.reason, t.next_action = "checked", None, None, None
    _as_agent(folder, lambda: (_agent_writes(ledger, change), _drop_from_index(ledger, {"unapproval", "unapproval_intent"})))
    if how.startswith("twice"):
        _lose_spent_marks(ledger)
        ran = handoff("run", ledger, "db-19", "link")
        assert "already used" in ran.stdout, ran.stdout
    else:
        ran = handoff("run", ledger, "db-19", "link", env=cli_env(XDG_STATE_HOME=str(folder / "next-engineer")))
        assert "approval withdrawn" in ran.stdout and "a mark of uid 0's that it was withdrawn" in ran.stdout, ran.stdout
    assert ran.returncode == 1 and _runs(folder) == 0, ran.stdout + ran.stderr


@pytest.mark.parametrize("sep", ["\u2028", "\x85", "\x1e", "\r"], ids=["U+2028", "NEL", "RS", "CR"])
def test_a_target_named_with_a_line_separator_is_found_spent(folder: Path, sep: str) -> None:
    """The agent names a target with a character that splits lines for str.splitlines. The step ran on nob's one
    approval; the agent clears its `used_at` in place and drops the start from the witness index: the person's
    high-water marks still name that approval whole, and the run is refused."""
    name = "db-19" + sep
    ledger = _ledger(folder, name)
    assert _approve_as_nobody(ledger, name, "nob") == 0
    assert handoff("run", ledger, name, "link").returncode == 0 and _runs(folder, name) == 1

    def change(led) -> None:
        t = led.targets[name]
        t.approvals[0].used_at = t.approvals[0].used_by = None
        t.state, t.evidence, t.touched_at, t.reason = "checked", None, None, None
    _as_agent(folder, lambda: (_agent_writes(ledger, change), _drop_from_index(ledger, {"step_start"})))
    _lose_spent_marks(ledger)  # the high-water marks alone
    again = handoff("run", ledger, name, "link")
    assert _runs(folder, name) == 1, again.stdout + again.stderr
    assert "was already used or withdrawn (this user's high-water marks" in again.stdout, again.stdout


def test_a_spent_list_written_before_reads_as_it_did(tmp_path: Path, monkeypatch) -> None:
    """A line of the list as an earlier engine wrote it (the key itself) still names its approval; a key written now
    is one JSON line, any character in it."""
    from engine.store import highwater

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    highwater.mark_dir().mkdir(parents=True)
    old = "db-1\u2028\x1flink\x1fh\x1fnob\x1f2026-12-01T00:00:00Z"  # a separator in it: never split there
    (highwater.mark_dir() / "spent-anywhere").write_text(old + "\n", encoding="utf-8")
    assert old in highwater._spent("at:x")
    from engine.ledger.model import Approval

    odd = Approval(by="nob", user="nobody", at="2026-12-07T01:00:00Z", step="link", hash="h")
    highwater.raise_mark("at:x", 1, [("a\u2028b\nc\x85", odd, True)])
    assert highwater.spent_key("a\u2028b\nc\x85", odd) in highwater._spent("at:x")


def test_a_spent_mark_stands_for_its_own_intent_only(tmp_path: Path) -> None:
    """The mark of intent A: A's next spawn (an `until` step, a retry here) may go on; intent B may not spend the
    same approval; a uid's folder of marks that others may write is refused (its marks could be taken away)."""
    from engine.approvals import spent_marks
    from engine.ledger.model import Approval

    ledger = tmp_path / "ledger.yaml"
    ledger.write_text("task: t\n")
    approval = Approval(by="nob", user="nobody", at="2026-12-07T01:00:00Z", step="link", hash="h")
    assert spent_marks.spent(str(ledger), "db-1", approval) is None
    assert spent_marks.spend(str(ledger), "db-1", approval, "sid/a", "root") is None
    assert spent_marks.spend(str(ledger), "db-1", approval, "sid/a", "root") is None
    mark = spent_marks.spent(str(ledger), "db-1", approval)
    assert mark is not None and mark["token"] == "sid/a" and mark["witness"].startswith("a spent mark of uid 0's")
    why = spent_marks.spend(str(ledger), "db-1", approval, "sid/b", "root")
    assert why is not None and "was already used or withdrawn (a spent mark of uid 0's" in why
    # A mark elsewhere in the ledger's folder (another's folder) saying it is intent A's is not A's own: it refuses.
    elsewhere = tmp_path / "another"
    elsewhere.mkdir()
    (elsewhere / spent_marks.mark_name("db-1", approval)).write_text(json.dumps({"token": "sid/a"}))
    assert spent_marks.spent(str(ledger), "db-1", approval, "sid/a") is not None
    other = approval.model_copy(update={"at": "2026-12-07T02:00:00Z"})
    Path(str(ledger) + ".spent-0").chmod(0o777)
    with pytest.raises(PermissionError, match="that only it may write, so this process's marks could be taken away"):
        spent_marks.spend(str(ledger), "db-1", other, "sid/c", "root")


def test_a_withdrawal_of_a_changed_copy_still_withdraws_the_real_one(folder: Path) -> None:
    """(review helper) The agent changes the approval's hash in the ledger just before the person's `handoff
    unapprove`, which takes back that changed copy; then it writes the real one back. The withdrawal covered every
    approval of the target given before it: the next engineer's run refuses the real one, and nothing ran."""
    from engine.ledger.model import Approval

    ledger = _ledger(folder)
    assert _approve_as_nobody(ledger, "db-19", "nob") == 0
    real = _load(ledger)["targets"]["db-19"]["approvals"][0]

    def tamper(led) -> None:
        led.targets["db-19"].approvals[0].hash += "0"
    _as_agent(folder, lambda: _agent_writes(ledger, tamper))
    time.sleep(1.1)  # the withdrawal is after the approval, to the second
    out = handoff("unapprove", ledger, "db-19", "--as", "ops", env=cli_env(XDG_STATE_HOME=str(folder / "first")))
    assert out.returncode == 0 and not _load(ledger)["targets"]["db-19"].get("approvals"), out.stdout + out.stderr

    def put_back(led) -> None:
        t = led.targets["db-19"]
        t.approvals = [Approval.model_validate(real)]
        t.state, t.awaiting, t.reason, t.next_action = "checked", None, None, None
    _as_agent(folder, lambda: _agent_writes(ledger, put_back))
    ran = handoff("run", ledger, "db-19", "link", env=cli_env(XDG_STATE_HOME=str(folder / "next-engineer")))
    assert _runs(folder) == 0, ran.stdout + ran.stderr
    assert "approval withdrawn: approvals of link on db-19 given before" in ran.stdout, ran.stdout
    assert "a mark of uid 0's that approvals given until then were withdrawn" in ran.stdout, ran.stdout


def test_something_else_where_a_mark_would_be_refuses_never_passes(folder: Path) -> None:
    """(review helper) The agent adds a folder of its own in the ledger's folder holding a FIFO (or a link) named as
    the mark, read by the fence as whatever it is fed. Every folder's mark counts, and what is no regular file there
    is one that cannot be ruled out: the next engineer's run refuses; the step ran once."""
    from engine.approvals import spent_marks
    from engine.ledger.model import Approval

    ledger = _ledger(folder)
    assert _approve_as_nobody(ledger, "db-19", "nob") == 0
    assert handoff("run", ledger, "db-19", "link").returncode == 0 and _runs(folder) == 1
    approval = Approval.model_validate(_load(ledger)["targets"]["db-19"]["approvals"][0])
    name = spent_marks.mark_name("db-19", approval)

    def agent() -> None:
        def clear(led) -> None:
            t = led.targets["db-19"]
            t.approvals[0].used_at = t.approvals[0].used_by = None
            t.state, t.evidence, t.touched_at, t.reason, t.last_action = "checked", None, None, None, None
        _agent_writes(ledger, clear)
        _drop_from_index(ledger, {"step_start"})
        mine = folder / "aaa"
        mine.mkdir()
        os.mkfifo(mine / name, 0o644)
        (folder / "bbb").mkdir()
        (folder / "bbb" / name).symlink_to("/dev/null")
    _as_agent(folder, agent)
    for mark in spent_marks.marks(str(ledger), "db-19", approval):
        assert not mark.get("own") or "uid 0" in mark["witness"]
    again = handoff("run", ledger, "db-19", "link", env=cli_env(XDG_STATE_HOME=str(folder / "next-engineer")))
    assert _runs(folder) == 1, again.stdout + again.stderr
    assert "never run twice" in again.stdout, again.stdout
