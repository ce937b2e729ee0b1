"""The database's word that a role recorded an approval: `handoff_attest`, the PostgreSQL
counterpart of the proof files beside a file ledger (engine.approvals.attest).

An `os_user` approval (and one from Slack, where the Slack process's OS user is named) of a
PostgreSQL ledger leaves a row naming the approval, and the database fills in who wrote it:
a trigger sets `recorded_by` to `session_user`, the role the connection logged in as, so a
process cannot say it is someone else. Before the step starts the row must be there,
recorded by the approver's OS user's role (the same name, as peer authentication maps
them), saying exactly that approval.

It is the database's word only as far as its roles are kept apart: an agent that logs in
with its own role, which owns no handoff table and is no superuser (an owner could turn the
trigger off), cannot make a row recorded by alice. The trigger's presence and body are
checked with each proof.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.store.pg_conn import SCHEMA, SET_BY

if TYPE_CHECKING:
    from engine.ledger.model import Approval


class PgProofs:
    """Proofs of a PostgreSQL ledger's approvals: rows of `handoff_attest`."""

    def __init__(self, db: Any, ledger: str) -> None:
        self.db, self.ledger = db, ledger

    def where(self, user: str) -> str:
        """What `user` needs for a proof to be made (said when it cannot)."""
        return f"grant the database role {user} INSERT and SELECT on handoff_attest"

    def record(self, target: str, approval: Approval) -> None:
        """In the approving process, just after its approval is written (HandoffError when it cannot be)."""
        from engine.approvals.attest import proof_of

        name, body = proof_of(target, approval)

        def put(conn) -> None:
            if conn.execute("SELECT to_regclass('handoff_attest')").fetchone()[0] is None:  # a database from before it
                conn.execute(SCHEMA)
            conn.execute("INSERT INTO handoff_attest (ledger, proof, body) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                         (self.ledger, name, body.decode("utf-8")))
        self.db.run(put)

    def problem(self, target: str, approval: Approval) -> str | None:
        """Why the database does not vouch for `approval` by role `approval.user` (None: it does)."""
        from engine.approvals.attest import proof_of

        name, body = proof_of(target, approval)

        def look(conn) -> tuple[list, list] | None:
            if conn.execute("SELECT to_regclass('handoff_attest')").fetchone()[0] is None:
                return None
            triggers = conn.execute(
                "SELECT t.tgname, t.tgenabled, p.prosrc FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid "
                "WHERE t.tgrelid = 'handoff_attest'::regclass AND NOT t.tgisinternal").fetchall()
            rows = conn.execute("SELECT recorded_by, body FROM handoff_attest WHERE ledger = %s AND proof = %s",
                                (self.ledger, name)).fetchall()
            return triggers, rows

        found = self.db.run(look)
        if found is None:
            return (f"this database has no table of proofs (handoff_attest), so nothing proves {approval.user} recorded "
                    f"this approval: {approval.by} approves again (the approving command makes the table)")
        triggers, rows = found
        if [(t[0], t[1]) for t in triggers] != [("handoff_attest_by", "O")] or SET_BY not in triggers[0][2]:
            return ("the table that proves approvals (handoff_attest) no longer has only its own trigger setting who "
                    "recorded each row, so no row of it can be trusted: recreate the trigger (run `handoff import` of "
                    "any ledger as the tables' owner), then approve again")
        mine = [row for row in rows if row[0] == approval.user]
        if not mine:
            others = sorted({row[0] for row in rows})
            return (f"no row of handoff_attest recorded by the database role {approval.user} proves this approval"
                    + (f" (only by {', '.join(others)})" if others else "") + f": {approval.by} approves again, "
                    f"connected as the database role {approval.user}")
        if mine[0][1] != body.decode("utf-8"):
            return f"the row of {approval.user}'s at that place proves another approval: {approval.by} approves again"
        return None

    def spent(self, target: str, approval: Approval, token: str | None = None) -> dict | None:
        """The row that refuses `approval` for the intent `token` (None: for any intent): a
        withdrawal's first, then any other but the intent's own (its token, recorded by this
        connection's role); None when none does. Any role's row refuses: an agent's only blocks."""
        import json

        from engine.approvals.spent_marks import mark_name, refusing, witness

        name = mark_name(target, approval)

        def look(conn) -> tuple[list, str]:
            me = conn.execute("SELECT session_user").fetchone()[0]
            if conn.execute("SELECT to_regclass('handoff_attest')").fetchone()[0] is None:
                return [], me
            return conn.execute("SELECT recorded_by, body, recorded_at::text FROM handoff_attest WHERE ledger = %s "
                                "AND proof = %s ORDER BY recorded_at, recorded_by", (self.ledger, name)).fetchall(), me

        rows, me = self.db.run(look)
        found = []
        for recorded_by, body, recorded_at in rows:
            try:
                said = json.loads(body)
            except ValueError:
                said = {}
            said = said if isinstance(said, dict) else {}
            found.append({"ts": said.get("at", recorded_at), "actor": said.get("user", "?"), "token": said.get("token"),
                          "witness": witness(said.get("token"), f"the database role {recorded_by}"),
                          "own": recorded_by == me})
        return refusing(found, token)

    def spend(self, target: str, approval: Approval, token: str, user: str) -> str | None:
        """Right before the spawn of the intent `token`: a row saying `approval` is spent, as this
        connection's role (which no agent's role may delete: grant it no DELETE on handoff_attest)."""
        import json

        from engine.approvals.spent_marks import already, mark_name
        from engine.codec.timefmt import now_iso

        found = self.spent(target, approval, token)
        if found is not None:
            return already(approval, found)
        name = mark_name(target, approval)
        body = json.dumps({"token": token, "user": user, "at": now_iso(), "target": target, "step": approval.step,
                           "approval_at": approval.at, "by": approval.by}, sort_keys=True)

        def put(conn) -> None:
            if conn.execute("SELECT to_regclass('handoff_attest')").fetchone()[0] is None:
                conn.execute(SCHEMA)
            conn.execute("INSERT INTO handoff_attest (ledger, proof, body) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                         (self.ledger, name, body))
        self.db.run(put)
        again = self.spent(target, approval, token)  # one made meanwhile by another intent refuses this one
        return already(approval, again) if again is not None else None

    def withdraw_until(self, target: str, step: str, until: str) -> None:
        """`handoff unapprove`: every approval of `step` (`*`: any) on `target` given until `until` is withdrawn."""
        import json

        from engine.approvals.spent_marks import until_name

        name = until_name(target, step)

        def put(conn) -> None:
            if conn.execute("SELECT to_regclass('handoff_attest')").fetchone()[0] is None:
                conn.execute(SCHEMA)
            conn.execute("INSERT INTO handoff_attest (ledger, proof, body) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                         (self.ledger, f"{name}:{until}", json.dumps({"until": until, "target": target, "step": step})))
        self.db.run(put)

    def withdrawn_until(self, target: str, step: str) -> tuple[str, str] | None:
        """(the latest time until which approvals of `step` on `target` were withdrawn, whose row says so), or None."""
        import json

        from engine.approvals.spent_marks import ALWAYS, until_name

        names = [until_name(target, s) for s in (step, "*")]

        def look(conn) -> list:
            if conn.execute("SELECT to_regclass('handoff_attest')").fetchone()[0] is None:
                return []
            return conn.execute("SELECT recorded_by, body FROM handoff_attest WHERE ledger = %s AND (starts_with(proof, %s) "
                                "OR starts_with(proof, %s))", (self.ledger, names[0] + ":", names[1] + ":")).fetchall()

        best: tuple[str, str] | None = None
        for recorded_by, body in self.db.run(look):
            try:
                until = str(json.loads(body).get("until") or ALWAYS)
            except (ValueError, AttributeError):
                until = ALWAYS
            if best is None or until > best[0]:
                best = (until, f"a row of the database role {recorded_by}'s that approvals given until then were withdrawn")
        return best

