"""The checkpointer's database going away mid-run: ridden out, then an honest exit 6.

A run holds one connection to the checkpointer (LangGraph's PostgresSaver). When it
breaks (the server restarts, the network drops, a proxy dies), LangGraph raises from the
checkpoint write after the super-step whose nodes already ran and recorded their steps
in the ledger: the ledger is never behind the graph. The run then waits for the
database as long as a session waits out its ledger database's outage
(HANDOFF_DB_OUTAGE_SECONDS, engine.store.pg_conn.outage_limit), reconnects and resumes
the thread from its last saved checkpoint (a replayed node decides again from the
ledger, and the journal and fence refuse a second start). A database still away after
that ends the run with exit 6: "a service the session needs stayed unavailable".
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg

from engine.errors import LedgerInvalid, ServiceUnavailable
from engine.langgraph import checkpoints
from engine.store.pg_conn import Db, _first_line, outage_limit

LOST = (psycopg.OperationalError, psycopg.InterfaceError)  # the connection broke, or it is closed


def ride(run, body: Callable) -> tuple[int, str]:
    """`body(saver)` on a fresh checkpointer connection, again after each outage that
    ends within the limit; (exit code, why) of the run."""
    while True:
        try:
            with checkpoints.saver(run.url) as saver:
                return body(saver)
        except LOST as err:
            lost = _first_line(err)
        limit = outage_limit()
        run.phase = "waiting for the checkpointer database"
        run.actor.out.say(f"the checkpointer database became unreachable mid-run ({lost}); waiting up to {limit:g} s "
                          "for it (HANDOFF_DB_OUTAGE_SECONDS). The ledger already holds every step that ran.",
                          kind="warning", service="checkpointer")
        db = Db(run.url)
        db.patience = limit  # the store's own way of riding out an outage, with its backoff
        try:
            db.run(lambda conn: conn.execute("SELECT 1"))
        except (ServiceUnavailable, LedgerInvalid) as err:  # LedgerInvalid: a limit of 0, no waiting
            return 6, (f"the checkpointer database stayed unreachable: {err.message}; nothing new starts. The thread "
                       "resumes from its last saved checkpoint when `handoff resume --runtime langgraph` runs again")
        run.actor.out.say("the checkpointer database answers again; the thread resumes from its last saved checkpoint "
                          "and the ledger decides what runs", kind="log", service="checkpointer")
