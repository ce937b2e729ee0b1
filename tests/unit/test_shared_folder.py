"""A shared ops folder works, with two real OS users this test creates (it needs root, as
CI and `tests/run.sh` in a container have; as another user it fails saying so): a group-owned folder (mode 2775), Alice's session or command creates the
lock and the journal, and Bob, in the same group, can then change the ledger with his
record in the journal. A sidecar Bob cannot write is a one-line error before anything
changes, and so is a dry run in a folder he cannot write."""

from __future__ import annotations

import grp
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from engine.audit.journal import Journal
from tests.conftest import ROOT, RUNBOOK_LEDGER


@pytest.fixture(autouse=True)
def _root() -> None:
    """Creating OS users needs root: without it these checks fail, they never pass by skipping."""
    if os.geteuid() != 0:
        pytest.fail("the shared-folder tests create two OS users and need root: run them as root "
                    "(CI does), e.g. `sudo ./tests/run.sh tests/unit/test_shared_folder.py`")


def _reachable(path: str) -> bool:
    """Can any user execute `path` (every folder on its way searchable by others)?"""
    real = os.path.realpath(path)
    folder = os.path.dirname(real)
    while True:
        if not os.stat(folder).st_mode & stat.S_IXOTH:
            return False
        if folder == "/":
            return bool(os.stat(real).st_mode & stat.S_IXOTH)
        folder = os.path.dirname(folder)


def _python_for_others() -> str:
    """This interpreter's real file if other users can run it, else the system's of the same
    version (a pyenv build under /root is not reachable by Alice and Bob); the packages come
    from the payload on PYTHONPATH. The real file, not the venv's link to it: the link lies in
    the clone, which may sit in a folder only root can enter."""
    minor = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (sys.executable, f"/usr/bin/{minor}", f"/usr/local/bin/{minor}"):
        if os.path.exists(candidate) and _reachable(candidate):
            return os.path.realpath(candidate)
    pytest.fail(f"no {minor} that other users can run (this one is {sys.executable})")


def _readable_copy(source: Path, dest: Path) -> None:
    """`source` copied to `dest` so any user can read it: folders 0755, files readable by others
    (the originals are never changed)."""
    for folder, dirs, files in os.walk(source):
        rel = Path(folder).relative_to(source)
        dirs[:] = [d for d in dirs if d not in ("__pycache__", ".git")]
        (dest / rel).mkdir(parents=True, exist_ok=True)
        (dest / rel).chmod(0o755)
        for name in files:
            src, dst = Path(folder) / name, dest / rel / name
            shutil.copy2(src, dst)
            dst.chmod(0o755 if os.access(src, os.X_OK) else 0o644)


# What the commands these tests run import from site-packages (a file ledger's CLI), with
# their requirements: only these are linked for Alice and Bob, not the whole environment's
# 18,000 files (linking and unlinking those took 8 s and 30 s of a worker under the suite's
# load). Should the engine come to import another package here, their command fails saying
# which module is missing.
ENGINE_NEEDS = ("pydantic", "PyYAML", "orjson")


def _distributions(names) -> list:
    """The installed distributions `names` need, theirs included (extras left out)."""
    from importlib.metadata import PackageNotFoundError, distribution

    seen: dict[str, object] = {}
    todo = list(names)
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue  # a requirement for another platform or Python
        seen[name] = dist
        for req in dist.requires or []:
            if "extra ==" not in req:
                todo.append(re.match(r"[A-Za-z0-9._-]+", req).group(0))
    return list(seen.values())


def _link_distributions(dists, dest: Path) -> None:
    """Each distribution's files hard-linked (copied across file systems) under `dest`, as
    they lie in their site-packages, folders 0755 and files readable by others."""
    for dist in dists:
        for entry in dist.files or []:
            src = Path(dist.locate_file(entry))
            if "__pycache__" in entry.parts or entry.parts[0] == ".." or not src.is_file():
                continue
            dst = dest / entry
            for folder in reversed([dst.parent, *dst.parent.parents]):
                if folder == dest or dest in folder.parents:
                    folder.mkdir(exist_ok=True)
                    folder.chmod(0o755)
            if os.stat(src).st_mode & stat.S_IROTH:
                try:
                    os.link(src, dst)
                    continue
                except OSError:
                    pass  # another file system: copy it
            shutil.copy2(src, dst)  # or a private file: a copy opened up, the original untouched
            dst.chmod(0o755 if os.access(src, os.X_OK) else 0o644)


@pytest.fixture(scope="module")
def payload():
    """What Alice and Bob run, in a folder they can read wherever this clone lives (a clone
    under a 0700 folder, as `mktemp -d` makes it, is out of their reach): the engine and its
    bundled ledgers copied, the packages it needs linked. Returns the PYTHONPATH."""
    base = Path(tempfile.mkdtemp(prefix="handoff-payload-", dir="/tmp"))
    base.chmod(0o755)
    try:
        for part in ("engine", "ledgers"):
            _readable_copy(ROOT / part, base / "code" / part)
        (base / "site").mkdir(mode=0o755)
        _link_distributions(_distributions(ENGINE_NEEDS), base / "site")
        yield os.pathsep.join([str(base / "code"), str(base / "site")])
    finally:
        shutil.rmtree(base, ignore_errors=True)


class Team:
    """Two users in one `ops` group, and a group-owned folder for their ledger."""

    def __init__(self, pythonpath: str) -> None:
        self.pythonpath = pythonpath
        tag = uuid.uuid4().hex[:6]
        self.group, self.alice, self.bob = f"ho{tag}ops", f"ho{tag}al", f"ho{tag}bo"
        subprocess.run(["groupadd", self.group], check=True)
        for user in (self.alice, self.bob):
            subprocess.run(["useradd", "-M", "-N", "-g", "users", "-G", self.group, "-s", "/usr/sbin/nologin", user], check=True)
        self.gid = grp.getgrnam(self.group).gr_gid
        self.base = Path(tempfile.mkdtemp(prefix="handoff-team-", dir="/tmp"))
        self.base.chmod(0o755)
        self.ops = self.base / "ops"
        self.ops.mkdir()
        os.chown(self.ops, 0, self.gid)
        self.ops.chmod(0o2775)

    def run(self, user: str, *args: str) -> subprocess.CompletedProcess:
        """`handoff ARGS` as `user`, with a login's usual umask (022)."""
        entry = pwd.getpwnam(user)
        home = self.base / f"home-{user}"
        home.mkdir(exist_ok=True)
        os.chown(home, entry.pw_uid, entry.pw_gid)
        env = self.env(home)
        return subprocess.run([_python_for_others(), "-m", "engine.cli.main", *args], capture_output=True, text=True, env=env,
                              cwd=str(self.base), user=entry.pw_uid, group=entry.pw_gid, extra_groups=[self.gid],
                              umask=0o022, timeout=60)

    def env(self, home: Path) -> dict[str, str]:
        """The environment their commands run in."""
        return {"PATH": "/usr/bin:/bin", "PYTHONPATH": self.pythonpath, "HOME": str(home),
                "XDG_CACHE_HOME": str(home / "cache"), "XDG_STATE_HOME": str(home / "state"), "LANG": "C.UTF-8"}

    def close(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)
        for user in (self.alice, self.bob):
            subprocess.run(["userdel", user], check=False)
        subprocess.run(["groupdel", self.group], check=False)


@pytest.fixture
def team(payload):
    made = Team(payload)
    try:
        yield made
    finally:
        made.close()


def _ledger(team: Team) -> Path:
    path = team.ops / "fleet.yaml"
    path.write_text(RUNBOOK_LEDGER)
    os.chown(path, pwd.getpwnam(team.alice).pw_uid, team.gid)
    path.chmod(0o664)
    return path


def _mode(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return stat.S_IMODE(st.st_mode), st.st_gid


def test_bob_changes_a_ledger_whose_sidecars_alice_created(team):
    """Alice's command creates the lock and the journal group-writable; Bob's approval lands in both ledger and journal."""
    ledger = _ledger(team)
    result = team.run(team.alice, "note", str(ledger), "--set", "alice: db-1 waits on you")
    assert result.returncode == 0, result.stderr
    for suffix in (".lock", ".journal.jsonl"):
        assert _mode(str(ledger) + suffix) == (0o664, team.gid), suffix
    result = team.run(team.bob, "approve", str(ledger), "db-1", "--comment", "lag 1.4s, go")
    assert result.returncode == 0, result.stderr
    result = team.run(team.alice, "pause", str(ledger), "--reason", "lunch")
    assert result.returncode == 0, result.stderr
    records, _ = Journal(str(ledger) + ".journal.jsonl").read(0)
    assert [(r["kind"], r["user"]) for r in records] == [("note", team.alice), ("approval", team.bob), ("pause", team.alice)]


@pytest.mark.parametrize("suffix", [".journal.jsonl", ".lock"])
def test_a_sidecar_bob_cannot_write_is_one_line_before_anything_changes(team, suffix):
    """A sidecar made 0644 by an older engine: Bob's change is refused in one line; ledger and journal unchanged."""
    ledger = _ledger(team)
    assert team.run(team.alice, "note", str(ledger), "--set", "alice").returncode == 0
    os.chmod(str(ledger) + suffix, 0o644)
    before = ledger.read_bytes(), Path(str(ledger) + ".journal.jsonl").read_bytes()
    result = team.run(team.bob, "approve", str(ledger), "db-1")
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert f"{ledger}{suffix} is not writable by {team.bob}" in result.stderr and "nothing was changed" in result.stderr
    assert (ledger.read_bytes(), Path(str(ledger) + ".journal.jsonl").read_bytes()) == before


def test_a_dry_run_in_a_folder_bob_cannot_write_is_one_line(team):
    """`resume --dry-run` writes a shadow copy beside the ledger: in Alice's private folder Bob gets one line, exit 2."""
    private = team.base / "alice-only"
    private.mkdir()
    os.chown(private, pwd.getpwnam(team.alice).pw_uid, team.gid)
    private.chmod(0o755)
    ledger = private / "fleet.yaml"
    ledger.write_text(RUNBOOK_LEDGER)
    ledger.chmod(0o644)
    result = team.run(team.bob, "resume", "--ledger", str(ledger), "--dry-run")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "--dry-run" in result.stderr and "Permission denied" in result.stderr
    assert sorted(p.name for p in private.iterdir()) == ["fleet.yaml"]


def test_what_the_users_run_does_not_depend_on_where_the_clone_lives(team):
    """Nothing on their PYTHONPATH is under this clone or its environment, and every folder of it is reachable by others."""
    clone = os.path.realpath(ROOT)
    for entry in team.env(team.base)["PYTHONPATH"].split(os.pathsep):
        real = os.path.realpath(entry)
        assert real != clone and not real.startswith(clone + os.sep), entry
        assert _reachable(os.path.join(entry, ".")), entry
    result = team.run(team.alice, "--version")
    assert result.returncode == 0 and result.stdout.startswith("handoff "), result.stderr
