"""The starter rule when the session's own start could not be journaled, on PostgreSQL.

The promise (docs/operating.md, Approvals and identity): "Two people for the worst steps:
`approvals: {count: 2}` on the step (distinct names; never the requester: the session that asked
and whoever started it)"; engine/approvals/policy.py: whoever started the asking session is "never
one of a count's people".

The journal's connection can drop past the session's patience while the ledger's row is reachable
(the docs name that case): the session says `[not in the journal]` for its own `session_start` and
goes on, and may ask for approvals. Who started it is then known from the request itself: the
gate's ledger write records it beside `awaiting_by` (`awaiting_started_by`/`_as`), and the gate's
journal record carries it too. Here alice starts the session, it asks for `cut` (count: 2), and
alice's own approval is refused, with the `session_start` record lost, and with the gate's record
lost as well (then only the ledger says who started the session)."""

from __future__ import annotations

import socket
import sys
import time
import uuid
from pathlib import Path

import psycopg
import pytest
import yaml

from tests.conftest import cli_env
from tests.integration.pg_proxy import CuttingProxy
from tests.integration.test_pg_restore import PG, handoff_pg

START = b'"kind": "session_start"'
GATE = b'"kind": "gate"'


class JournalStartLost(CuttingProxy):
    """Every connection that sends one of `lost` (the session's `session_start` record, and its
    `gate` record when asked) is cut, for `window` seconds after the first one; everything else
    goes through (the ledger's row stays reachable)."""

    window = 6.0

    def __init__(self, lost: tuple[bytes, ...] = (START,)) -> None:
        self.first: float | None = None
        self.lost = lost
        super().__init__()

    def _client_to_server(self, client: socket.socket, upstream: socket.socket) -> None:
        try:
            while data := client.recv(65536):
                if any(pattern in data for pattern in self.lost):
                    self.first = self.first or time.monotonic()
                    if time.monotonic() - self.first < self.window:
                        self.fired.set()
                        return
                upstream.sendall(data)
        except OSError:
            pass
        finally:
            self._close(client, upstream)


@pytest.fixture(params=[(START,), (START, GATE)], ids=["start lost", "start and gate lost"])
def proxy(request):
    p = JournalStartLost(request.param)
    yield p
    p.down()


def test_the_starter_of_the_asking_session_is_never_one_of_two_when_its_start_was_not_journaled(
        tmp_path: Path, proxy) -> None:
    from engine.store.postgres import PostgresStore

    runs = tmp_path / "runs.txt"
    name = f"t-{uuid.uuid4().hex[:10]}"
    data = {"task": "starter", "owner_shift": "test-oncall",
            "runbook": {"steps": [{"name": "cut", "from": "queued", "to": "done", "approvals": {"count": 2},
                                   "run": [sys.executable, "-c", "import sys; open(sys.argv[1], 'a').write('x')",
                                           str(runs)]}]},
            "targets": {"t1": {"state": "queued"}}}
    direct = f"{PG}#{name}"
    PostgresStore(direct).import_text(yaml.safe_dump(data, sort_keys=False))
    via_proxy = f"postgresql://127.0.0.1:{proxy.port}/test#{name}"
    env = cli_env(XDG_STATE_HOME=str(tmp_path / "state"), HANDOFF_DB_OUTAGE_SECONDS="1")

    asked = handoff_pg(env, "resume", "--ledger", via_proxy, "--as", "alice")
    assert proxy.fired.is_set(), asked.stdout + asked.stderr
    with psycopg.connect(PG) as conn:
        body = conn.execute("SELECT body FROM handoff_ledger WHERE name = %s", (name,)).fetchone()[0]
    assert yaml.safe_load(body)["targets"]["t1"]["state"] == "awaiting_approval", asked.stdout + asked.stderr

    with psycopg.connect(PG) as conn:
        kinds = [k for (k,) in conn.execute("SELECT record->>'kind' FROM handoff_journal WHERE ledger = %s",
                                                (name,)).fetchall()]
    assert "session_start" not in kinds, kinds
    assert (GATE not in proxy.lost) == ("gate" in kinds), kinds

    by_alice = handoff_pg(env, "approve", direct, "t1", "--yes", "--as", "alice")
    by_bob = handoff_pg(env, "approve", direct, "t1", "--yes", "--as", "bob")
    ran = handoff_pg(env, "resume", "--ledger", direct, "--as", "carol")
    said = "\n".join(f"{p.args[3:6]} exit {p.returncode}: {p.stdout}{p.stderr}" for p in (asked, by_alice, by_bob, ran))
    assert by_alice.returncode == 1 and "other than the requester" in by_alice.stdout + by_alice.stderr, said
    assert not runs.exists(), ("alice started the session that asked for cut (count: 2), approved it herself with "
                               "bob, and cut ran:\n" + said)
