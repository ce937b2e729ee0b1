"""An approval from Slack is recorded only by the Slack process's OS user, and for a file
ledger a file of that user's proves it (engine.approvals.approvers.slack_recorder,
engine.approvals.attest): an agent with its own OS user and write access to the ledger's
folder, running the engine's own code with its checks patched out, can write "Slack says
alice approved" but cannot make that file, so the step never starts. Real forked
processes with other uids; steps are real processes (a marker file says whether one ran).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
import yaml

from engine.approvals.approvers import SlackId
from engine.errors import Refused
from tests.conftest import handoff
from tests.unit.test_verified_approvers import _as_uid, _host_table, _ledger, _load, _save

ALICE = SlackId(team="T0123", user="U0ALICE", channel="C0OPS", ts="1700000000.000100")


def _slack_ledger(folder: Path, recorder: str | None) -> Path:
    """alice approves from Slack only; requests go to C0OPS; `recorder`: the Slack process's OS user."""
    ledger = _ledger(folder, [{"name": "alice", "slack": "T0123/U0ALICE"}])
    data = _load(ledger)
    data["notify"] = [{"slack": {"channel": "C0OPS", **({"os_user": recorder} if recorder else {})}}]
    _save(ledger, data)
    return ledger


def _slack_approve(ledger: Path, target: str) -> None:
    from engine.api import open_ledger

    open_ledger(str(ledger), actor="alice").approve(target, slack=ALICE)


def _refused_to_daemon(ledger: Path, *said: str) -> None:
    """daemon's own process (its checks in place) approving db-19 from Slack is refused, saying `said`."""
    def honest() -> None:
        try:
            _slack_approve(ledger, "db-19")
        except Refused as err:
            assert all(part in err.message for part in (*said, "nothing was approved")), err.message
            return
        raise AssertionError("daemon's process recorded an approval from Slack")
    assert _as_uid(1, honest) == 0


def _forge_from_slack(ledger: Path, target: str) -> int:
    """An agent with daemon's uid runs the engine's code with the uid check patched out and says it is
    the Slack process (OS user nobody) recording alice's approval from Slack."""
    from engine.api import open_ledger
    from engine.approvals import approvers

    def forge() -> None:
        approvers.uid_is = lambda user, uid=None: None  # type: ignore[assignment]
        handle = open_ledger(str(ledger), actor="alice")
        handle.os_user, handle.who = "nobody", type(handle.who)("alice", "nobody")
        handle.approve(target, slack=ALICE)
    return _as_uid(1, forge)


def test_a_slack_approval_forged_by_another_uid_never_authorises() -> None:
    """The Slack process runs as nobody. daemon, approving honestly, is refused before anything is written; with
    the check patched out its approval says `via: slack, user: nobody` and has its journal record and a proof file,
    but that file is daemon's, so the fence refuses it and the step never runs. nobody's own approval runs."""
    folder = Path(tempfile.mkdtemp(prefix="slack-forged-"))  # outside pytest's 0700 tree, so daemon can reach it
    try:
        folder.chmod(0o777)
        ledger = _slack_ledger(folder, "nobody")
        ledger.chmod(0o666)
        before = ledger.read_bytes()

        _refused_to_daemon(ledger, "approvals from Slack are recorded by OS user nobody only", "not nobody's uid 65534")
        assert ledger.read_bytes() == before

        assert _forge_from_slack(ledger, "db-19") == 0
        [approval] = _load(ledger)["targets"]["db-19"]["approvals"]
        assert (approval["by"], approval["user"], approval["via"], approval["verified"]) == ("alice", "nobody", "slack", "slack")
        [proof] = list(Path(str(ledger) + ".attest").iterdir())
        assert proof.stat().st_uid == 1
        forged = handoff("run", ledger, "db-19", "link")
        assert forged.returncode == 1, forged.stdout + forged.stderr
        assert "owned by uid 1, not a file of nobody's (uid 65534)" in forged.stdout, forged.stdout
        assert not (folder / "spawned-db-19").exists()

        proof.unlink()  # a proof is named by its approval, to the second: the forger's could take the next one's name
        assert _as_uid(65534, lambda: _slack_approve(ledger, "db-19")) == 0  # the Slack process itself
        ran = handoff("run", ledger, "db-19", "link")
        assert ran.returncode == 0 and (folder / "spawned-db-19").exists(), ran.stdout + ran.stderr
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_slack_approval_recorded_as_another_user_than_the_slack_process_never_authorises(tmp_path: Path) -> None:
    """Recorded while no recorder was named (so as root, with no proof file); once the ledger names nobody as the
    Slack process's user, the fence refuses it: it was not nobody's process that recorded it."""
    ledger = _slack_ledger(tmp_path, None)
    _slack_approve(ledger, "db-19")
    assert not Path(str(ledger) + ".attest").exists()  # no recorder named: nothing the kernel vouches for
    data = _load(ledger)
    data["notify"][0]["slack"]["os_user"] = "nobody"
    _save(ledger, data)
    ran = handoff("run", ledger, "db-19", "link")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert ("approvals from Slack are recorded by OS user nobody (the user `handoff slack` runs as), but this one was "
            "recorded as root") in ran.stdout, ran.stdout
    assert not (tmp_path / "spawned-db-19").exists()


def test_with_the_hosts_table_a_slack_approval_needs_the_slack_process_named_there(tmp_path: Path, monkeypatch) -> None:
    """The host's table (root's) says who approves; until it names the Slack process's OS user, no approval from
    Slack is recorded (the ledger untouched) nor stands under the fence. The ledger's own `os_user` is not asked:
    an agent can write it. Named (root here), root's process records one with root's proof file, and it runs."""
    ledger = _slack_ledger(tmp_path, "root")
    _slack_approve(ledger, "db-18")  # before the host table: the ledger's own recorder, root, with root's proof
    host = tmp_path / "host"
    host.mkdir(mode=0o755)
    table = _host_table(host, [{"name": "alice", "slack": "T0123/U0ALICE"}], monkeypatch)
    before = ledger.read_bytes()
    try:
        _slack_approve(ledger, "db-19")
        raise AssertionError("an approval from Slack was recorded with no Slack process named by the host")
    except Refused as err:
        assert f"the host's approvers table ({table}) names no OS user for `handoff slack`" in err.message, err.message
        assert "add `slack: {os_user: NAME}` to it" in err.message and "nothing was approved" in err.message
    assert ledger.read_bytes() == before
    refused = handoff("run", ledger, "db-18", "link")
    assert refused.returncode == 1 and "names no OS user for `handoff slack`" in refused.stdout, refused.stdout
    assert not (tmp_path / "spawned-db-18").exists()

    table.write_text(yaml.safe_dump({"approvers": [{"name": "alice", "slack": "T0123/U0ALICE"}],
                                     "slack": {"os_user": "root"}}))
    _slack_approve(ledger, "db-19")
    ran = handoff("run", ledger, "db-19", "link")
    assert ran.returncode == 0 and (tmp_path / "spawned-db-19").exists(), ran.stdout + ran.stderr
    [proof] = [p for p in Path(str(ledger) + ".attest").iterdir() if p.is_file() and "db-19" in p.read_text()]
    assert proof.stat().st_uid == 0


def test_a_host_table_with_a_slack_entry_that_is_not_an_os_user_approves_nothing(tmp_path: Path, monkeypatch) -> None:
    ledger = _slack_ledger(tmp_path, None)
    host = tmp_path / "host"
    host.mkdir(mode=0o755)
    table = _host_table(host, ["root"], monkeypatch)
    before = ledger.read_bytes()
    for slack in ("handoff-slack", {"os_user": ""}, {"os_user": "root", "extra": 1}):
        table.write_text(yaml.safe_dump({"approvers": ["root"], "slack": slack}))
        refused = handoff("approve", ledger, "db-19", "--step", "link", "--yes")
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert f"{table}: the host's approvers table does not read as `approvers: [...]` with an optional " \
               "`slack: {os_user: NAME}`" in refused.stderr and "not `slack: {os_user: NAME}`" in refused.stderr, refused.stderr
        assert ledger.read_bytes() == before


def test_check_says_when_nothing_tells_the_slack_process_from_an_agent(tmp_path: Path) -> None:
    """`handoff check --strict`: Slack approvers with no OS user named for `handoff slack` is a note saying what to
    write; named, the note is gone."""
    ledger = _slack_ledger(tmp_path, None)
    said = handoff("check", ledger, "--strict")
    assert "approvers alice approve from Slack, and no OS user is named for `handoff slack`" in said.stdout, said.stdout
    assert "os_user: handoff-slack" in said.stdout
    named = _slack_ledger(tmp_path, "nobody")
    assert "approve from Slack" not in handoff("check", named, "--strict").stdout


@pytest.mark.parametrize("notify, said", [
    ([{"slack": {"channel": "C0OPS"}}, {"slack": {"channel": "C0ESC", "os_user": "nobody"}}],
     "approvals from Slack are recorded by OS user nobody only"),
    ([{"slack": {"channel": "C0OPS", "os-user": "nobody"}}],
     "the ledger's Slack channel C0OPS has the unknown key 'os-user', so whether it names the OS user of `handoff "
     "slack` cannot be told: write `os_user: NAME`"),
    ([{"slack": {"channel": "C0OPS", "os_user": "nobody"}}, {"slack": {"channel": "C0ESC", "os_user": "daemon"}}],
     "the ledger's Slack channels name daemon and nobody as the OS user of `handoff slack`: name one"),
], ids=["on-a-second-channel", "a-typo", "two-users"])
def test_a_slack_process_named_anywhere_in_notify_or_misspelled_is_never_taken_for_none(notify, said) -> None:
    """(review helper) The Slack process's user named on a second channel, or under a misspelled key, or two users
    named: daemon's own unpatched process records nothing (the ledger byte-identical), and `check` says what to mend."""
    folder = Path(tempfile.mkdtemp(prefix="slack-named-"))  # outside pytest's 0700 tree, so daemon can reach it
    try:
        folder.chmod(0o777)
        ledger = _slack_ledger(folder, None)
        data = _load(ledger)
        data["notify"] = notify
        _save(ledger, data)
        ledger.chmod(0o666)
        before = ledger.read_bytes()

        _refused_to_daemon(ledger, said)
        assert ledger.read_bytes() == before
        checked = handoff("check", ledger)
        if "os-user" in str(notify):
            assert checked.returncode == 1 and f"{ledger}:" in checked.stdout + checked.stderr
            assert 'notify entry 1: unknown key "os-user" in slack (it has channel and os_user)' in checked.stdout, \
                checked.stdout
            assert 'did you mean "os_user"?' in checked.stdout
        elif "daemon" in str(notify):
            assert checked.returncode == 1 and "name daemon and nobody as the OS user of `handoff slack`" in checked.stdout
        assert ledger.read_bytes() == before
    finally:
        shutil.rmtree(folder, ignore_errors=True)
