"""`approvals: {count: 2}` promises two people (docs/operating.md, Approvals and identity: "Two
people for the worst steps ... distinct names; never the requester", "one login never counts as
two of a count's people"). People are told apart by what proves them, not by name
(engine.approvals.persons): two entries of the approvers table on one `os_user` (a copy-pasted
entry, a shared service login), or a plain login that is also an entry's `os_user`, are one person.
A process of that uid approving under the second name is refused ("already approved by that
person"), a second such approval written by hand is never counted, and `handoff check` warns about
the table."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from tests.conftest import cli_env, handoff
from tests.unit.test_verified_approvers import _as_uid

MARK = "import sys, pathlib; pathlib.Path(sys.argv[1]).write_text('ran')\n"


TWO_ENTRIES = [{"name": "alice", "os_user": "nobody"}, {"name": "bob", "os_user": "nobody"}]
LOGIN_AND_ENTRY = ["nobody", {"name": "alice", "os_user": "nobody"}]  # "a plain name is that login and nothing else"


def _ledger(folder: Path, approvers: list = TWO_ENTRIES) -> Path:
    (folder / "mark.py").write_text(MARK)
    data = {"task": "two-people", "owner_shift": "test-oncall",
            "notify": [{"run": ["true"]}],
            "approvers": approvers,
            "runbook": {"steps": [{"name": "cut", "from": "queued", "to": "done", "approvals": {"count": 2},
                                   "run": [sys.executable, "{ledger_dir}/mark.py", "{ledger_dir}/spawned"]}]},
            "targets": {"t1": {"state": "queued"}}}
    path = folder / "ledger.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    path.chmod(0o666)
    return path


def _approve_saying(ledger: Path, name: str, said: Path) -> None:
    """Approve t1 as `name`; what a refusal says is written to `said` (the child's stderr is not the test's)."""
    from engine.api import open_ledger
    from engine.errors import HandoffError

    try:
        open_ledger(str(ledger), actor=name).approve("t1")
    except HandoffError as err:
        said.write_text(str(err))
        raise


@pytest.mark.parametrize("approvers", [
    [{"name": "alice", "slack": "T0123/U0ALICE"}, {"name": "Alice", "slack": "T0123/U0OTHER"}],
    [{"name": "alice", "os_user": "nobody"}, {"name": "alice", "slack": "T0123/U0OTHER"}],
    ["alice", {"name": "alice", "slack": "T0123/U0OTHER"}]], ids=["two slack ids", "os_user and slack id", "plain and slack"])
def test_check_strict_says_one_approver_name_listed_twice(tmp_path: Path, approvers: list) -> None:
    """One name on two entries (two Slack accounts of one person, a copy-pasted entry): an approval
    is admitted by the entry whose id proves it, but found again by name (the first entry only).
    `check --strict` fails and says which name, with both entries' ids and what to do."""
    from tests.slack.kit import ledger as slack_ledger

    path = slack_ledger(tmp_path, approvers=approvers)
    strict = handoff("check", str(path), "--strict")
    assert strict.returncode == 1, strict.stdout + strict.stderr
    said = [x for x in (strict.stdout + strict.stderr).splitlines() if "listed 2 times" in x]
    assert len(said) == 1 and "approver alice is listed 2 times (" in said[0], strict.stdout + strict.stderr
    assert "T0123/U0OTHER" in said[0] and "give each entry its own name" in said[0], said


@pytest.mark.parametrize("approvers,names", [(TWO_ENTRIES, ("alice", "bob")), (LOGIN_AND_ENTRY, ("nobody", "alice"))],
                         ids=["two verified names", "a plain login and a verified name"])
def test_one_os_user_under_two_names_is_not_two_people(approvers, names) -> None:
    """One process with nobody's uid approves under each of two names the table maps to nobody: the
    second is refused, and `cut` (count: 2) does not run. (The second table is the docs' own case: "A
    plain name is that login and nothing else ... so one login never counts as two of a count's people".)"""
    from engine.api import open_ledger

    folder = Path(tempfile.mkdtemp(prefix="one-uid-"))  # outside pytest's 0700 tree, so nobody can reach it
    try:
        folder.chmod(0o777)
        ledger = _ledger(folder, approvers)
        env = cli_env(XDG_STATE_HOME=str(folder / "state"))
        asked = handoff("resume", "--ledger", ledger, "--as", "robot", env=env)
        assert asked.returncode == 0, asked.stdout + asked.stderr
        assert yaml.safe_load(ledger.read_text())["targets"]["t1"]["state"] == "awaiting_approval"
        first = _as_uid(65534, lambda: open_ledger(str(ledger), actor=names[0]).approve("t1"))
        second = _as_uid(65534, lambda: _approve_saying(ledger, names[1], folder / "said.txt"))
        said = (folder / "said.txt").read_text() if (folder / "said.txt").exists() else ""
        assert first == 0 and second != 0 and "already approved by that person" in said, (first, second, said)
        assert "someone else approves it" in said, said  # says what to do
        ran = handoff("resume", "--ledger", ledger, "--as", "robot", env=env)
        approvals = yaml.safe_load(ledger.read_text())["targets"]["t1"].get("approvals")
        assert not (folder / "spawned").exists(), (
            f"one uid (nobody) approved as {names[0]} ({first}) and as {names[1]} ({second}); cut (count: 2) ran on it:\n"
            f"{approvals}\n{ran.stdout}{ran.stderr}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_check_strict_says_two_approvers_share_one_os_user(tmp_path: Path) -> None:
    """Two verified names on one OS user are one person under `count`: `check` warns, naming both."""
    ledger = _ledger(tmp_path)
    strict = handoff("check", ledger, "--strict")
    said = strict.stdout + strict.stderr
    assert "alice" in said and "bob" in said, (
        f"check --strict says nothing about alice and bob both being OS user nobody:\n{said}")


@pytest.mark.parametrize("approvers,names", [(TWO_ENTRIES, ("alice", "bob")), (LOGIN_AND_ENTRY, ("nobody", "alice"))],
                         ids=["two verified names", "a plain login and a verified name"])
def test_a_second_approval_by_the_same_os_user_written_by_hand_never_counts(approvers, names) -> None:
    """Written into the ledger without `handoff approve` (which refuses it), the second approval of
    one OS user under another name is not a second person: `standing` keeps the first only."""
    from engine.approvals.policy import standing
    from engine.ledger.model import Ledger

    data = yaml.safe_load(_ledger(Path(tempfile.mkdtemp(prefix="one-uid-")), approvers).read_text())
    verified = {n: "none" if isinstance(a, str) else "os_user" for a in approvers for n in [a if isinstance(a, str) else a["name"]]}
    data["targets"]["t1"] = {"state": "awaiting_approval", "awaiting": "cut", "approvals": [
        {"by": n, "user": "nobody", "at": f"2026-01-01T00:00:0{i}Z", "step": "cut", "hash": "h", "verified": verified[n]}
        for i, n in enumerate(names)]}
    ledger = Ledger.model_validate(data)
    step = ledger.step("cut")
    assert [a.by for a in standing(ledger, "t1", step, "h")] == [names[0]]
    if names == ("alice", "bob"):  # two OS users: two people
        data["approvers"] = [{"name": "alice", "os_user": "nobody"}, {"name": "bob", "os_user": "root"}]
        data["targets"]["t1"]["approvals"][1]["user"] = "root"
        assert [a.by for a in standing(Ledger.model_validate(data), "t1", step, "h")] == ["alice", "bob"]
