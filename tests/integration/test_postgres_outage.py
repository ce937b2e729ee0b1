"""PostgreSQL errors, for real: a role without privileges, the server going away in the
middle of a step (a TCP proxy this test cuts: the shared server itself keeps running),
the TUI's "start a session" on a database ledger, and journal writers racing."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import uuid

import psycopg
import pytest
import yaml

from engine.api import open_ledger
from tests.conftest import ARTICLE, ROOT, cli_env

PG = os.environ.get("HANDOFF_TEST_PG", "postgresql://127.0.0.1/test")
PG_HOST, PG_PORT = "127.0.0.1", 5432


class Proxy:
    """127.0.0.1:PORT -> the real server. `down()` refuses new connections and cuts the
    open ones, as a crashed or restarting server does; `up()` listens again."""

    def __init__(self) -> None:
        self.port = 0
        self.conns: list[socket.socket] = []
        self.lock = threading.Lock()
        self.listener: socket.socket | None = None
        self.up()

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        self.listener.close()
        with self.lock:
            for conn in self.conns:
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # already closed by its other end
                conn.close()
            self.conns.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed by down()
            upstream = socket.create_connection((PG_HOST, PG_PORT))
            with self.lock:
                self.conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass  # cut by down(): the other side sees the connection drop
        finally:
            for sock in (src, dst):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # already shut


@pytest.fixture
def proxy():
    made = Proxy()
    yield made
    made.down()


def _import(text: str, location: str) -> None:
    from engine.store.postgres import PostgresStore

    PostgresStore(location).import_text(text)


def _ledger(port: int, steps: list[dict], tmp_path) -> tuple[str, str]:
    """A one-target ledger with `steps` in PostgreSQL: (location through the proxy, direct location)."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    data = {"task": "outage", "runbook": {"steps": steps}, "targets": {"a": {}}}
    _import(yaml.safe_dump(data, sort_keys=False), f"{PG}#{name}")
    return f"postgresql://127.0.0.1:{port}/test#{name}", f"{PG}#{name}"


def _resume(location: str, tmp_path, outage: str) -> subprocess.Popen:
    env = cli_env(HANDOFF_DB_OUTAGE_SECONDS=outage, PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", location, "--max-minutes", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(tmp_path))


def _wait_for_start(direct: str, proc: subprocess.Popen) -> None:
    journal = open_ledger(direct, read_only=True).journal
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if journal.last_of("step_start") is not None:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    raise AssertionError("the step never started")


SLEEP = ["{python}", "-c", "import time; time.sleep({secs})"]


def _step(secs: float) -> list[dict]:
    argv = [a.replace("{secs}", str(secs)) for a in SLEEP]
    return [{"name": "check", "from": "queued", "to": "checked", "reversible": True, "run": argv}]


def test_an_outage_that_lasts_ends_the_session_with_exit_6(proxy, tmp_path):
    """The database goes away mid-step and stays away: the step finishes, nothing new starts, exit 6, no traceback;
    the intent stays in the ledger and the next session settles it."""
    via_proxy, direct = _ledger(proxy.port, _step(2), tmp_path)
    proc = _resume(via_proxy, tmp_path, outage="2")
    _wait_for_start(direct, proc)
    proxy.down()
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 6, out + err
    assert "Traceback" not in out + err and "Exception in thread" not in err
    assert "stayed unreachable" in out
    target = open_ledger(direct, read_only=True).load().targets["a"]
    assert target.in_flight is not None and target.state == "queued"
    again = subprocess.run([sys.executable, "-m", "engine.cli.main", "resume", "--ledger", direct], capture_output=True,
                           text=True, env=cli_env(), cwd=str(tmp_path), timeout=90)
    assert again.returncode == 0, again.stdout + again.stderr
    target = open_ledger(direct, read_only=True).load().targets["a"]
    assert target.state == "checked" and target.in_flight is None


def test_a_brief_outage_is_ridden_out(proxy, tmp_path):
    """Down for about a second while the step runs: retried with backoff, the session finishes normally."""
    via_proxy, direct = _ledger(proxy.port, _step(1.5), tmp_path)
    proc = _resume(via_proxy, tmp_path, outage="30")
    _wait_for_start(direct, proc)
    proxy.down()
    time.sleep(1.0)
    proxy.up()
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 0, out + err
    assert "Traceback" not in err
    assert open_ledger(direct, read_only=True).load().targets["a"].state == "checked"


def test_a_role_without_privileges_is_one_line(tmp_path):
    """InsufficientPrivilege (not a refused connection): one line with what to grant, exit 2."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    _import(ARTICLE, f"{PG}#{name}")
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'handoff_nopriv') "
                     "THEN CREATE ROLE handoff_nopriv LOGIN; END IF; END $$")
    location = f"postgresql://handoff_nopriv:NoPrivPw@127.0.0.1/test#{name}"
    for args in (("status", location), ("pause", location, "--reason", "x")):
        result = subprocess.run([sys.executable, "-m", "engine.cli.main", *args], capture_output=True, text=True,
                                env=cli_env(), cwd=str(ROOT), timeout=60)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1
        assert "permission denied for table handoff_ledger" in result.stderr and "grant" in result.stderr
        assert "NoPrivPw" not in result.stderr


def test_starting_a_session_on_a_database_ledger_logs_to_the_state_folder(tmp_path, monkeypatch):
    """The TUI's `s` on a PostgreSQL ledger starts `handoff resume`; its log is a real file, not `postgresql:/...`."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    _import("task: tui-start\ntargets:\n  a: {state: done}\n", f"{PG}#{name}")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    handle = open_ledger(f"{PG}#{name}", actor="alice")
    pid = handle.start_session(["--max-minutes", "1"])
    _, status = os.waitpid(pid, 0)
    log = tmp_path / "state" / "handoff" / f"postgres-{name}.session.log"
    text = log.read_text()
    assert os.waitstatus_to_exitcode(status) == 0, text
    assert "nothing left to do" in text and "ended (exit 0)" in text


def test_the_header_shows_a_database_url_without_its_password(tmp_path):
    """The TUI header, `check`, `status` and `journal` show the location with its password masked."""
    from tui.controller import Controller

    name = f"t-{uuid.uuid4().hex[:10]}"
    _import(ARTICLE, f"{PG}#{name}")
    location = f"postgresql://postgres:HeaderPw6@127.0.0.1/test#{name}"
    controller = Controller(open_ledger(location, read_only=True))
    assert "HeaderPw6" not in controller.location and "postgres:[REDACTED]@127.0.0.1" in controller.location
    for args in (("check", location), ("status", location), ("journal", location)):
        result = subprocess.run([sys.executable, "-m", "engine.cli.main", *args], capture_output=True, text=True,
                                env=cli_env(), cwd=str(ROOT), timeout=60)
        assert result.returncode in (0, 1), result.stderr
        assert "HeaderPw6" not in result.stdout + result.stderr


WRITER = """
import sys
from engine.store.postgres import Db, PgJournal
journal = PgJournal(Db(sys.argv[1]), sys.argv[2])
for i in range(int(sys.argv[3])):
    journal.append("log", f"{sys.argv[4]} {i}", actor=sys.argv[4])
"""


def test_concurrent_journal_writers_never_hide_a_record_from_a_follower():
    """Four processes append while a follower reads `seq > offset`: it sees every record, in seq order."""
    from engine.store.postgres import Db, PgJournal

    name = f"t-{uuid.uuid4().hex[:10]}"
    follower = PgJournal(Db(PG), name)
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, PG, name, "60", f"w{k}"], env=cli_env()) for k in range(4)]
    seen: list[dict] = []
    offset = 0
    while any(p.poll() is None for p in procs):
        records, offset = follower.read(offset)
        seen += records
    assert all(p.returncode == 0 for p in procs)
    records, offset = follower.read(offset)
    seen += records
    seqs = [r["seq"] for r in seen]
    assert len(seen) == 240 and seqs == sorted(set(seqs))
