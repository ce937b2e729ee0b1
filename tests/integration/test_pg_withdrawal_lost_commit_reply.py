"""A withdrawal whose COMMIT reply is lost, on PostgreSQL.

The promise (docs/operating.md, Approvals and identity): "A withdrawal (`handoff unapprove` ...)
leaves the same kind of mark, saying it was withdrawn: written back into the ledger, the approval
authorises nothing for anyone", and "On PostgreSQL, a write or a journal record whose COMMIT the
server applied but whose reply was lost is found done when the session tries again: it is neither
applied twice nor taken for someone else's".

`handoff unapprove` journals `unapproval_intent` first, then writes the row. When the server
applies the row's COMMIT but the reply is lost (one connection reset; the server stays up),
the command fails with "cannot reach PostgreSQL" and, taking the write for undone, journals
`intent_cancelled` for the withdrawal ("not done after all") although the row no longer holds
the approval. No `unapproval` record, no withdrawn mark in handoff_attest, no withdraw-until
mark is ever made. The approval written back into the row (whoever may UPDATE it: the case
test_pg_withdrawn covers for a withdrawal that went through) then runs the irreversible step."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import psycopg
import pytest
import yaml

from tests.conftest import cli_env
from tests.integration.pg_proxy import ReplyLosingProxy
from tests.integration.test_pg_restore import PG, approved_link, handoff_pg


class OneReplyLost(ReplyLosingProxy):
    """The rule's last message reaches the server, its answer never comes back, and only that
    connection is reset: new connections go through at once (a lost packet, not a crashed server)."""

    def _fire(self, client: socket.socket, upstream: socket.socket, data: bytes) -> None:
        self.fired.set()
        self.muted.add(upstream)
        upstream.sendall(data)
        time.sleep(0.5)  # the server applies the COMMIT meanwhile
        self._close(client, upstream)
        client.close()
        upstream.close()
        self.restored.set()


@pytest.fixture
def proxy():
    p = OneReplyLost()
    yield p
    p.down()


def _records(name: str, kind: str) -> list[dict]:
    with psycopg.connect(PG) as conn:
        rows = conn.execute("SELECT record FROM handoff_journal WHERE ledger = %s AND record->>'kind' = %s ORDER BY seq",
                            (name, kind)).fetchall()
    return [dict(r[0]) for r in rows]


def test_a_withdrawal_whose_commit_reply_is_lost_still_refuses_the_approval_written_back(tmp_path: Path, proxy) -> None:
    """unapprove through a connection that loses the COMMIT's reply: the row loses the approval, the
    journal says the withdrawal was cancelled; written back, the approval runs the step."""
    name, location, runs, env = approved_link(tmp_path, "pg-unapprove-lost-reply")
    with psycopg.connect(PG, autocommit=True) as conn:
        held = yaml.safe_load(conn.execute("SELECT body FROM handoff_ledger WHERE name = %s", (name,)).fetchone()[0])
    held = held["targets"]["a"]["approvals"]
    via_proxy = f"postgresql://127.0.0.1:{proxy.port}/test#{name}"
    proxy.arm(b"UPDATE handoff_ledger", b"COMMIT")
    withdrew = handoff_pg(env, "unapprove", via_proxy, "a", "--as", "human-1")
    assert proxy.fired.is_set(), "the rule never matched: " + withdrew.stdout + withdrew.stderr
    with psycopg.connect(PG, autocommit=True) as conn:
        body = conn.execute("SELECT body FROM handoff_ledger WHERE name = %s", (name,)).fetchone()[0]
    doc = yaml.safe_load(body)
    assert not doc["targets"]["a"].get("approvals"), "the row kept the approval: the COMMIT was not applied"

    with psycopg.connect(PG, autocommit=True) as conn:  # written back as it was, by whoever can write the row
        doc["targets"]["a"]["approvals"] = held
        conn.execute("UPDATE handoff_ledger SET body = %s WHERE name = %s", (yaml.safe_dump(doc, sort_keys=False), name))
    fresh = cli_env(XDG_STATE_HOME=str(tmp_path / "fresh"))  # only the journal and the database's marks can refuse
    ran = handoff_pg(fresh, "run", location, "a", "link", "--as", "bob")
    said = (f"unapprove exit {withdrew.returncode}: {withdrew.stdout}{withdrew.stderr}\n"
            f"journal: unapproval={_records(name, 'unapproval')} intent_cancelled={_records(name, 'intent_cancelled')}\n"
            f"run exit {ran.returncode}: {ran.stdout}{ran.stderr}")
    assert not runs.exists(), "the withdrawn approval, written back, ran link:\n" + said
    # Found done (engine.store.postgres `_settle`): the withdrawal is finished, its record and marks made.
    assert withdrew.returncode == 0, said
    assert len(_records(name, "unapproval")) == 1 and not _records(name, "intent_cancelled"), said


class CommitHeld(ReplyLosingProxy):
    """The rule's last message is held back and its client's connection reset, while the server's
    side stays open until `release` is set: the transaction stays in progress (a half-open
    connection the server has not noticed), so whether it commits cannot be told meanwhile."""

    def __init__(self) -> None:
        self.release = threading.Event()
        super().__init__()

    def _fire(self, client: socket.socket, upstream: socket.socket, data: bytes) -> None:
        self.fired.set()
        self.muted.add(upstream)
        self._close(client)
        client.close()
        self.release.wait(60)  # then the server's side closes too: the transaction is rolled back


def test_a_withdrawal_whose_commit_cannot_be_told_leaves_its_intent_standing(tmp_path: Path) -> None:
    """unapprove whose COMMIT's fate cannot be learned (the transaction still open past the lock
    wait): it says so, the intent is not cancelled, and the approval, still in the row, runs nothing."""
    name, location, runs, env = approved_link(tmp_path, "pg-unapprove-unsettled")
    held = CommitHeld()
    try:
        held.arm(b"UPDATE handoff_ledger", b"COMMIT")
        withdrew = handoff_pg({**env, "HANDOFF_LOCK_TIMEOUT": "1"}, "unapprove", f"postgresql://127.0.0.1:{held.port}/test#{name}",
                              "a", "--as", "human-1")
        assert held.fired.is_set(), "the rule never matched: " + withdrew.stdout + withdrew.stderr
    finally:
        held.release.set()
        held.down()
    said = f"unapprove exit {withdrew.returncode}: {withdrew.stdout}{withdrew.stderr}"
    assert withdrew.returncode == 2 and "cannot be told" in said and "intent stays in the journal" in said, said
    assert not _records(name, "intent_cancelled"), said
    ran = handoff_pg(cli_env(XDG_STATE_HOME=str(tmp_path / "fresh")), "run", location, "a", "link", "--as", "bob")
    assert not runs.exists(), f"{said}\nrun exit {ran.returncode}: {ran.stdout}{ran.stderr}"


def test_an_approval_whose_commit_reply_is_lost_is_found_given(tmp_path: Path, proxy) -> None:
    """approve through a connection that loses the COMMIT's reply: the approval is in the row, so it
    is journaled and authorises the run, as if the reply had come (not "approval not recorded")."""
    name, location, runs, env = approved_link(tmp_path, "pg-approve-lost-reply")
    assert handoff_pg(env, "unapprove", location, "a", "--as", "human-1").returncode == 0
    proxy.arm(b"UPDATE handoff_ledger", b"COMMIT")
    given = handoff_pg(env, "approve", f"postgresql://127.0.0.1:{proxy.port}/test#{name}", "a", "--as", "human-2")
    assert proxy.fired.is_set(), "the rule never matched: " + given.stdout + given.stderr
    said = f"approve exit {given.returncode}: {given.stdout}{given.stderr}"
    assert given.returncode == 0 and len(_records(name, "approval")) == 2, said
    ran = handoff_pg(env, "run", location, "a", "link", "--as", "bob")
    assert runs.exists(), f"{said}\nrun exit {ran.returncode}: {ran.stdout}{ran.stderr}"
