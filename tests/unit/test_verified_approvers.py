"""Verified approvers: an ssh_key approver's approval carries an OpenSSH signature the
engine checks when it is given and again under the fence; an os_user approver's
process must run with that user's kernel uid. Keys are generated here with the real
ssh-keygen; steps are real processes (a marker file proves whether one spawned).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from engine.approvals import sshsig
from engine.approvals.approvers import uid_is
from tests.conftest import cli_env, handoff

MARK = "import sys, pathlib; pathlib.Path(__file__).with_name('spawned-' + sys.argv[1]).write_text('ran')\n"


def _keygen(folder: Path, name: str) -> tuple[Path, str]:
    key = folder / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{name}@laptop", "-f", str(key)], check=True)
    return key, (folder / f"{name}.pub").read_text().strip()


def _ledger(folder: Path, approvers: list) -> Path:
    (folder / "mark.py").write_text(MARK)
    data = {"task": "verified", "owner_shift": "test-oncall", "approvers": approvers,
            "runbook": {"steps": [{"name": "link", "from": "checked", "to": "done",
                                   "run": ["{python}", "{ledger_dir}/mark.py", "{target}"]}]},
            "targets": {"db-18": {"state": "checked", "checkpoint": "0/18"}, "db-19": {"state": "checked", "checkpoint": "0/19"}}}
    path = folder / "ledger.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def _save(path: Path, data: dict) -> None:
    path.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.fixture
def signed(tmp_path: Path):
    """A ledger whose one approver, alice, signs with an ed25519 key; and a stranger's key."""
    alice_key, alice_pub = _keygen(tmp_path, "alice")
    mallory_key, _ = _keygen(tmp_path, "mallory")
    return _ledger(tmp_path, [{"name": "alice", "ssh_key": alice_pub}]), alice_key, mallory_key


def _approve(ledger: Path, target: str, *extra: str, env=None):
    return handoff("approve", ledger, target, "--yes", "--as", "alice", *extra, env=env)


def test_a_valid_signature_approves_and_the_step_runs(signed) -> None:
    """`--key` signs; the approval stores payload and signature (journaled too), the ledger gets an id, the step runs."""
    ledger, key, _ = signed
    result = _approve(ledger, "db-19", "--key", str(key))
    assert result.returncode == 0, result.stderr
    assert "verified: ssh_key" in result.stdout
    data = _load(ledger)
    [approval] = data["targets"]["db-19"]["approvals"]
    assert approval["verified"] == "ssh_key" and "BEGIN SSH SIGNATURE" in approval["sig"]
    fields = json.loads(approval["signed"])
    assert fields["ledger"] == data["id"] and fields["target"] == "db-19" and fields["hash"] == approval["hash"]
    records = [json.loads(line) for line in Path(str(ledger) + ".journal.jsonl").read_text().splitlines()]
    [record] = [r for r in records if r["kind"] == "approval"]
    assert record["sig"] == approval["sig"] and record["signed"] == approval["signed"]
    ran = handoff("run", ledger, "db-19", "link")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert (ledger.parent / "spawned-db-19").exists()


@pytest.mark.parametrize("how", ["no key", "another key"])
def test_an_approval_that_cannot_be_verified_is_refused_and_nothing_changes(signed, how) -> None:
    """No key and no agent, or a stranger's key: exit 1 with what to do; the ledger byte-identical."""
    ledger, _, mallory = signed
    before = ledger.read_bytes()
    extra = ("--key", str(mallory)) if how == "another key" else ()
    result = _approve(ledger, "db-19", *extra, env=cli_env(SSH_AUTH_SOCK=""))
    assert result.returncode == 1, result.stdout + result.stderr
    assert ("signs approvals (ssh_key): run `handoff approve` with --key FILE" if how == "no key"
            else "the signature does not verify against the approver's ssh_key") in result.stderr
    assert ledger.read_bytes() == before


def _sign_other(ledger: Path, key: Path, change: dict) -> tuple[str, str]:
    """alice's real signature over db-19's payload with one field changed (what she signed elsewhere)."""
    [approval] = _load(ledger)["targets"]["db-19"]["approvals"]
    fields = {**json.loads(approval["signed"]), **change}
    text = sshsig.payload(**fields)
    return text, sshsig.sign(text, str(key))


@pytest.mark.parametrize("change", [{"hash": "0" * 64}, {"target": "db-18"}, {"ledger": "6f1c2a34-0000-4000-8000-000000000000"}],
                         ids=["another hash", "another target", "another ledger id"])
def test_a_signature_over_something_else_never_spawns(signed, change) -> None:
    """A witnessed approval whose signature is replaced by alice's real signature over another hash/target/ledger: refused under the fence."""
    ledger, key, _ = signed
    assert _approve(ledger, "db-19", "--key", str(key)).returncode == 0
    text, sig = _sign_other(ledger, key, change)
    data = _load(ledger)
    data["targets"]["db-19"]["approvals"][0].update(signed=text, sig=sig)
    _save(ledger, data)
    result = handoff("run", ledger, "db-19", "link")
    assert result.returncode == 1, result.stdout + result.stderr
    field = next(iter(change))
    assert f"approval not verified: approver alice: the signature is over {field}" in result.stdout + result.stderr
    assert not (ledger.parent / "spawned-db-19").exists()
    target = _load(ledger)["targets"]["db-19"]
    assert target["state"] == "awaiting_approval" and target["reason"].startswith("approval not verified")


def test_a_forged_signature_or_none_never_spawns(signed) -> None:
    """Mallory's signature in alice's approval, and an approval given before alice had to sign: both refused at the fence."""
    ledger, key, mallory = signed
    assert _approve(ledger, "db-19", "--key", str(key)).returncode == 0
    data = _load(ledger)
    approval = data["targets"]["db-19"]["approvals"][0]
    approval["sig"] = sshsig.sign(approval["signed"], str(mallory))
    _save(ledger, data)
    result = handoff("run", ledger, "db-19", "link")
    assert result.returncode == 1 and "the signature does not verify" in result.stdout + result.stderr
    # db-18 approved as alice while the ledger named no approvers; then it makes her sign: the old approval is unsigned.
    data = _load(ledger)
    keys = data.pop("approvers")
    _save(ledger, data)
    assert _approve(ledger, "db-18").returncode == 0
    data = _load(ledger)
    data["approvers"] = keys
    _save(ledger, data)
    result = handoff("run", ledger, "db-18", "link")
    assert result.returncode == 1 and "the approval carries no signature" in result.stdout + result.stderr
    assert not list(ledger.parent.glob("spawned-*"))


def test_a_signature_replayed_after_the_command_changed_never_spawns(signed) -> None:
    """The command changes after alice signed; rewriting the approval's hash to the new command's does not help."""
    ledger, key, _ = signed
    assert _approve(ledger, "db-19", "--key", str(key)).returncode == 0
    data = _load(ledger)
    data["runbook"]["steps"][0]["run"] = ["{python}", "{ledger_dir}/mark.py", "{target}", "--evil"]
    _save(ledger, data)
    first = handoff("run", ledger, "db-19", "link")
    assert first.returncode == 1 and "requires approval" in first.stdout, first.stdout + first.stderr
    assert _load(ledger)["targets"]["db-19"]["state"] == "awaiting_approval"
    from engine.ledger.model import Ledger
    from engine.ledger.render import approval_hash

    from engine.api import open_ledger

    model = Ledger.model_validate(_load(ledger))
    rehashed = approval_hash("db-19", model.targets["db-19"], model.step("link"), ledger_dir=str(Path(ledger).resolve().parent))

    def rewrite(led) -> None:  # through the engine's own code, as an agent running it would (no outside edit)
        led.targets["db-19"].approvals[0].hash = rehashed
    open_ledger(str(ledger), actor="agent").store.transact(rewrite)
    second = handoff("run", ledger, "db-19", "link")
    assert second.returncode == 1 and "approval not recorded by the engine" in second.stdout + second.stderr
    assert not (ledger.parent / "spawned-db-19").exists()


def test_the_ssh_agent_signs_when_no_key_file_is_given(signed) -> None:
    """With SSH_AUTH_SOCK (a real ssh-agent holding alice's key) `handoff approve` signs through the agent."""
    ledger, key, _ = signed
    folder = tempfile.mkdtemp(prefix="agent-")
    sock = os.path.join(folder, "sock")
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", sock], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if os.path.exists(sock):
                break
            agent.wait(timeout=0.02) if agent.poll() is not None else None
            subprocess.run(["sleep", "0.02"])
        subprocess.run(["ssh-add", str(key)], env={**os.environ, "SSH_AUTH_SOCK": sock}, check=True, capture_output=True)
        result = _approve(ledger, "db-19", env=cli_env(SSH_AUTH_SOCK=sock))
        assert result.returncode == 0, result.stderr
        assert _load(ledger)["targets"]["db-19"]["approvals"][0]["verified"] == "ssh_key"
    finally:
        agent.terminate()
        agent.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)


def test_uid_check_compares_the_kernel_uid() -> None:
    """Root is root; root is not nobody; nobody's uid is nobody; an unknown user is said so."""
    assert uid_is("root") is None
    assert "not nobody's uid 65534" in uid_is("nobody")
    assert uid_is("nobody", uid=65534) is None
    assert "no user on this host" in uid_is("no-such-user-here")


def _import_while_root() -> None:
    """Every module an approval may import, imported before a forked child drops root: a clone under a 0700
    folder (CI's) cannot be read by another uid, and approve imports much of the engine lazily."""
    import importlib
    import pkgutil

    for sub in ("approvals", "audit", "codec", "host", "ledger", "lease", "store"):
        package = importlib.import_module(f"engine.{sub}")
        for found in pkgutil.iter_modules(package.__path__, f"engine.{sub}."):
            importlib.import_module(found.name)
    importlib.import_module("engine.api")


def _approve_as_nobody(ledger: Path, target: str, name: str) -> int:
    """Approve in a forked child whose kernel uid and gid are nobody's (a real process;
    the interpreter lives under root's 0700 home, so `runuser` cannot start one: the
    modules it needs are imported before the child drops root)."""
    from engine.api import open_ledger

    return _as_uid(65534, lambda: open_ledger(str(ledger), actor=name).approve(target))


def _as_uid(uid: int, work) -> int:
    """`work()` in a forked child whose kernel uid and gid are `uid`; the child's exit status (0: it returned)."""
    _import_while_root()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgid(uid)
            os.setuid(uid)
            work()
            code = 0
        except BaseException as err:  # the parent sees the exit status; say why on stderr
            print(f"child: {err!r}", file=sys.stderr)
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_an_os_user_approver_must_run_as_that_user() -> None:
    """{name: nob, os_user: nobody}: a process with nobody's uid approves and the step runs; root approving as nob is refused (ledger byte-identical), and an approval that says it ran as root is refused under the fence."""
    folder = Path(tempfile.mkdtemp(prefix="osuser-"))  # outside pytest's 0700 tree, so nobody can reach it
    try:
        folder.chmod(0o777)
        ledger = _ledger(folder, [{"name": "nob", "os_user": "nobody"}])
        ledger.chmod(0o666)
        assert _approve_as_nobody(ledger, "db-19", "nob") == 0
        approval = _load(ledger)["targets"]["db-19"]["approvals"][0]
        assert (approval["by"], approval["user"], approval["verified"]) == ("nob", "nobody", "os_user")
        before = ledger.read_bytes()
        refused = handoff("approve", ledger, "db-18", "--yes", "--as", "nob")
        assert refused.returncode == 1 and "runs as uid 0 (root), not nobody's uid 65534" in refused.stderr
        assert ledger.read_bytes() == before
        ran = handoff("run", ledger, "db-19", "link")
        assert ran.returncode == 0, ran.stdout + ran.stderr
        # db-18 approved by root as nob while the ledger named no approvers; then nob must be nobody: refused at the fence.
        # (Under a plain `root` entry root approves as root only: test_plain_login_approves_as_itself.)
        data = _load(ledger)
        entries = data.pop("approvers")
        _save(ledger, data)
        assert handoff("approve", ledger, "db-18", "--yes", "--as", "nob").returncode == 0
        data = _load(ledger)
        data["approvers"] = entries
        _save(ledger, data)
        forged = handoff("run", ledger, "db-18", "link")
        assert forged.returncode == 1, forged.stdout + forged.stderr
        assert "approver nob approves as OS user nobody, but this approval ran as root" in forged.stdout
        assert not (folder / "spawned-db-18").exists()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_plain_login_approves_as_itself(tmp_path: Path) -> None:
    """A plain name in `approvers:` is an OS login: the login is the person. `--as` another name is refused (one
    login under two names would count as two people under `count`), the ledger unchanged; without `--as` the
    approval is the login's; and an approval recorded under another name for that login is refused at the fence."""
    ledger = _ledger(tmp_path, ["root"])
    before = ledger.read_bytes()
    refused = handoff("approve", ledger, "db-18", "--yes", "--as", "mallory1")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert ("OS user 'root' approves as root (a plain OS login in this ledger's approvers), not as 'mallory1': run it "
            "without --as") in refused.stderr
    assert ledger.read_bytes() == before
    assert handoff("approve", ledger, "db-19", "--yes").returncode == 0
    assert _load(ledger)["targets"]["db-19"]["approvals"][0]["by"] == "root"
    # Given as mallory1 while the ledger named no approvers, then held against the plain `root` entry: refused.
    data = _load(ledger)
    entries = data.pop("approvers")
    _save(ledger, data)
    assert handoff("approve", ledger, "db-18", "--yes", "--as", "mallory1").returncode == 0
    data = _load(ledger)
    data["approvers"] = entries
    _save(ledger, data)
    ran = handoff("run", ledger, "db-18", "link")
    assert ran.returncode == 1 and "mallory1 (OS user root) is not in this ledger's approvers" in ran.stdout, ran.stdout
    assert not (tmp_path / "spawned-db-18").exists()
    assert handoff("run", ledger, "db-19", "link").returncode == 0 and (tmp_path / "spawned-db-19").exists()


@pytest.mark.parametrize("approvers,said", [(None, "no approvers: anyone but the asker may approve"),
                                            (["alice", {"name": "bob", "os_user": "bob"}], "approvers alice are plain names: they prove nothing")])
def test_check_strict_says_plain_or_missing_approvers_prove_nothing(tmp_path: Path, approvers, said) -> None:
    """`check --strict` notes it (at the approvers line), without failing a team that accepts it; plain `check` is silent; verified entries only: no note."""
    ledger = _ledger(tmp_path, approvers or [])
    if approvers is None:
        data = _load(ledger)
        del data["approvers"]
        _save(ledger, data)
    strict = handoff("check", ledger, "--strict")
    assert said in strict.stdout and "note: " in strict.stdout and "os_user" in strict.stdout, strict.stdout
    assert handoff("check", ledger).stdout.count("prove") == 0
    data = _load(ledger)
    data["approvers"] = [{"name": "bob", "os_user": "bob"}]
    _save(ledger, data)
    assert "note: " not in handoff("check", ledger, "--strict").stdout


def test_bad_approver_input_is_refused_with_what_to_do_and_changes_nothing(tmp_path: Path) -> None:
    """A key file that does not exist, an ssh_key that is no key line, an entry without a name: clear errors, ledger byte-identical."""
    ledger = _ledger(tmp_path, [{"name": "alice", "ssh_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGarbage alice@laptop"}])
    before = ledger.read_bytes()
    missing = _approve(ledger, "db-19", "--key", str(tmp_path / "no-such-key"))
    assert missing.returncode == 1 and "ssh-keygen could not sign with" in missing.stderr and "nothing was approved" in missing.stderr
    key, _ = _keygen(tmp_path, "alice2")
    garbage = _approve(ledger, "db-19", "--key", str(key))
    assert garbage.returncode == 1 and "approver alice:" in garbage.stderr
    assert ledger.read_bytes() == before
    nameless = _ledger(tmp_path / "x" if (tmp_path / "x").mkdir() is None else tmp_path, [{"os_user": "alice"}])
    before = nameless.read_bytes()
    bad = handoff("check", nameless)
    assert bad.returncode == 2 and f"{nameless}:" in bad.stderr and "approvers" in bad.stderr and "name" in bad.stderr, bad.stderr
    assert _approve(nameless, "db-19").returncode == 2
    assert nameless.read_bytes() == before


def test_an_old_or_reused_signature_is_refused_when_given(signed) -> None:
    """alice's real signature made 20 minutes ago, or one already on an approval: refused (a replay from the journal never approves)."""
    from engine.approvals.approvers import Signed, admit_signed
    from engine.codec.timefmt import now_iso
    from engine.errors import Refused
    from engine.ledger.model import Ledger
    from engine.ledger.render import approval_hash

    ledger_path, key, _ = signed
    assert _approve(ledger_path, "db-19", "--key", str(key)).returncode == 0
    ledger = Ledger.model_validate(_load(ledger_path))
    step, target = ledger.step("link"), ledger.targets["db-18"]
    digest = approval_hash("db-18", target, step, ledger_dir=str(Path(ledger_path).resolve().parent))

    def signed_at(at: str) -> Signed:
        text = sshsig.payload(ledger=ledger.id, target="db-18", step="link", hash=digest, checkpoint=target.checkpoint,
                              revision=ledger.revision, at=at, approver="alice")
        return Signed(text, sshsig.sign(text, str(key)))

    def attempt(sig: Signed):
        return admit_signed(ledger, "db-18", "alice", "root", "link", digest, target.checkpoint, sig)

    with pytest.raises(Refused, match="good for 600s"):
        attempt(signed_at(now_iso(time.time() - 1200)))
    fresh = signed_at(now_iso())
    assert attempt(fresh)[1] == "ssh_key"  # fresh: admitted
    target.approvals.append(ledger.targets["db-19"].approvals[0].model_copy(update={"sig": fresh.sig}))
    with pytest.raises(Refused, match="already given"):
        attempt(fresh)


def test_approvers_mixing_a_verified_entry_and_a_plain_name_approve(tmp_path: Path) -> None:
    """`approvers: [{name: alice, ssh_key: ...}, root]`: a plain name after a verified
    entry is a valid list; root (a plain name) approves and the file keeps both forms."""
    _, alice_pub = _keygen(tmp_path, "alice")
    ledger = _ledger(tmp_path, [{"name": "alice", "ssh_key": alice_pub}, "root"])
    result = handoff("approve", ledger, "db-19", "--yes")
    assert result.returncode == 0, result.stderr
    after = _load(ledger)
    assert after["approvers"] == [{"name": "alice", "ssh_key": alice_pub}, "root"]
    assert after["targets"]["db-19"]["approvals"][0]["by"] == "root"


def _forge_as_daemon(ledger: Path, target: str) -> int:
    """An agent with its own OS user (daemon) and write access to the ledger's folder runs the engine's own code
    with the uid check patched out, claiming to be nob (OS user nobody): a real forked process with daemon's uid."""
    from engine.api import open_ledger
    from engine.approvals import approvers

    def forge() -> None:
        approvers.uid_is = lambda user, uid=None: None  # type: ignore[assignment]
        handle = open_ledger(str(ledger), actor="nob")
        handle.os_user, handle.who = "nobody", type(handle.who)("nob", "nobody")
        handle.approve(target)
    return _as_uid(1, forge)


def test_an_os_user_approval_forged_by_another_uid_never_authorises() -> None:
    """The forged approval says `user: nobody, verified: os_user` and has its journal record, and the forger wrote
    the proof file too: but that file is daemon's, not nobody's, so the fence refuses it (the kernel says who made
    it) and the step never runs. Without the file the approval is refused the same way; nobody's own approval runs."""
    folder = Path(tempfile.mkdtemp(prefix="osuser-forged-"))  # outside pytest's 0700 tree, so daemon can reach it
    try:
        folder.chmod(0o777)
        ledger = _ledger(folder, [{"name": "nob", "os_user": "nobody"}])
        ledger.chmod(0o666)
        assert _forge_as_daemon(ledger, "db-19") == 0
        approval = _load(ledger)["targets"]["db-19"]["approvals"][0]
        assert (approval["by"], approval["user"], approval["verified"]) == ("nob", "nobody", "os_user")
        proofs = list(Path(str(ledger) + ".attest").iterdir())
        assert len(proofs) == 1 and proofs[0].stat().st_uid == 1
        forged = handoff("run", ledger, "db-19", "link")
        assert forged.returncode == 1, forged.stdout + forged.stderr
        assert "owned by uid 1, not a file of nobody's (uid 65534)" in forged.stdout, forged.stdout
        assert not (folder / "spawned-db-19").exists()
        # Forged again, its proof file removed: refused for want of one.
        assert _forge_as_daemon(ledger, "db-19") == 0
        for proof in Path(str(ledger) + ".attest").iterdir():
            proof.unlink()
        missing = handoff("run", ledger, "db-19", "link")
        assert missing.returncode == 1 and "no file of nobody's proves this approval" in missing.stdout, missing.stdout
        assert not (folder / "spawned-db-19").exists()
        # nobody's own approval leaves nobody's file, and runs.
        assert _approve_as_nobody(ledger, "db-19", "nob") == 0
        ran = handoff("run", ledger, "db-19", "link")
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert (folder / "spawned-db-19").exists()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _host_table(folder: Path, approvers: list, monkeypatch) -> Path:
    """The host's approvers table (engine.approvals.host_table), root's, at HANDOFF_APPROVERS_FILE,
    in `folder`/etc: `folder` and every folder above it must be root's alone (or sticky, as /tmp)."""
    table = folder / "etc" / "approvers.yaml"
    table.parent.mkdir(mode=0o755)
    table.write_text(yaml.safe_dump({"approvers": approvers}, sort_keys=False))
    table.chmod(0o644)
    monkeypatch.setenv("HANDOFF_APPROVERS_FILE", str(table))
    return table


def test_with_the_hosts_table_an_agent_rewriting_the_ledgers_table_approves_nothing(monkeypatch) -> None:
    """An agent with its own OS user (daemon) and write access to the ledger's folder maps nob to its own login in
    the ledger's `approvers:` and approves as nob, its process even escaping the host table: the host's table (root's)
    still says nob is nobody, so the person's run refuses the approval, and the step never starts."""
    from engine.api import open_ledger
    from engine.approvals.host_table import ENV

    folder = Path(tempfile.mkdtemp(prefix="osuser-host-"))  # outside pytest's 0700 tree, so daemon can reach it
    host = Path(tempfile.mkdtemp(prefix="host-table-"))  # root's: no one else can rename in it
    try:
        folder.chmod(0o777)
        host.chmod(0o755)
        ledger = _ledger(folder, [{"name": "nob", "os_user": "nobody"}])
        ledger.chmod(0o666)
        _host_table(host, [{"name": "nob", "os_user": "nobody"}], monkeypatch)
        asked = handoff("run", ledger, "db-19", "link", "--as", "ops")  # a person's request
        assert asked.returncode == 1 and "requires approval" in asked.stdout, asked.stdout + asked.stderr
        data = _load(ledger)
        data["approvers"] = [{"name": "nob", "os_user": "daemon"}]  # the agent's edit
        _save(ledger, data)
        assert _as_uid(1, lambda: open_ledger(str(ledger), actor="nob").approve("db-19")) == 1  # the host says nob is nobody

        def escaped() -> None:
            os.environ.pop(ENV)  # its own process: the ledger's table only
            open_ledger(str(ledger), actor="nob").approve("db-19")
        assert _as_uid(1, escaped) == 0
        assert [(a["by"], a["user"]) for a in _load(ledger)["targets"]["db-19"]["approvals"]] == [("nob", "daemon")]
        ran = handoff("run", ledger, "db-19", "link")
        assert ran.returncode == 1 and "approves as OS user nobody, but this approval ran as daemon" in ran.stdout, \
            ran.stdout + ran.stderr
        assert not (folder / "spawned-db-19").exists()
        # nobody's own approval runs.
        assert _approve_as_nobody(ledger, "db-19", "nob") == 0
        ran = handoff("run", ledger, "db-19", "link")
        assert ran.returncode == 0 and (folder / "spawned-db-19").exists(), ran.stdout + ran.stderr
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(host, ignore_errors=True)


@pytest.mark.parametrize("how", ["group-writable", "not root's", "not a table", "in a folder others can write",
                                 "a link to someone else's file"])
def test_a_host_table_that_cannot_be_trusted_approves_nothing(tmp_path: Path, monkeypatch, how: str) -> None:
    ledger = _ledger(tmp_path, [{"name": "nob", "os_user": "nobody"}])
    table = _host_table(tmp_path, ["root"], monkeypatch)
    if how == "group-writable":
        table.chmod(0o664)
    elif how == "not root's":
        os.chown(table, 65534, 65534)
    elif how == "not a table":
        table.write_text("approvers: {root: yes}\n")
    elif how == "in a folder others can write":  # it could be renamed away and replaced
        table.parent.chmod(0o777)
    else:  # the link's target is what is checked and read
        theirs = tmp_path / "theirs.yaml"
        theirs.write_text("approvers: [root]\n")
        os.chown(theirs, 65534, 65534)
        link = tmp_path / "link.yaml"
        link.symlink_to(theirs)
        monkeypatch.setenv("HANDOFF_APPROVERS_FILE", str(link))
    before = ledger.read_bytes()
    refused = handoff("approve", ledger, "db-19", "--step", "link", "--yes", "--as", "root")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    said = {"group-writable": "must be owned by root and writable by root only (it is uid 0, mode 664)",
            "not root's": "must be owned by root and writable by root only (it is uid 65534",
            "not a table": "does not read as `approvers: [...]`",
            "in a folder others can write": f"folder {table.parent} must be owned by root and writable by root only",
            "a link to someone else's file": f"file {tmp_path / 'theirs.yaml'} must be owned by root"}[how]
    assert said in refused.stderr and "nothing was approved" in refused.stderr, refused.stderr
    assert ledger.read_bytes() == before


def test_a_host_table_the_process_cannot_look_at_is_refused_not_taken_for_none(monkeypatch) -> None:
    """The default path behind a folder made 0700 (review helper): another user's process cannot
    look at it, and must not fall back to the ledger's own table (which its user may write)."""
    from engine.approvals import host_table

    base = Path(tempfile.mkdtemp(prefix="host-hidden-"))
    try:
        base.chmod(0o755)
        etc = base / "etc"
        etc.mkdir(mode=0o700)
        (etc / "approvers.yaml").write_text("approvers: [{name: nob, os_user: nobody}]\n")
        monkeypatch.setattr(host_table, "PATH", str(etc / "approvers.yaml"))
        monkeypatch.delenv(host_table.ENV, raising=False)

        def look() -> None:
            try:
                found = host_table.table()
            except host_table.HostTableRefused as err:
                assert "cannot be read (Permission denied at " in err.message and "nothing was approved" in err.message \
                    and "sudo chmod a+rX" in err.message, err.message
                return
            raise AssertionError(f"the host table is there but this process got {found!r}: the ledger's table is used")
        assert _as_uid(65534, look) == 0
    finally:
        shutil.rmtree(base, ignore_errors=True)
