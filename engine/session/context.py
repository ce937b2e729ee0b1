"""The session context: what steps, gates, tending and reconciling need of their holder.

Every holder (a session, `handoff run`, a Temporal activity, a LangGraph node) is an
`engine.session.actor.Actor`; the functions in `steps`, `gates`, `tending`, `reconcile`,
`attempt`, `already` and `untrusted` take it as `s: SessionContext`, so what they may
reach is declared here and mypy checks both sides. It imports none of those modules
(annotations only), so no import loop runs through it."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from engine.lease.rules import HeartbeatThread
    from engine.ledger.access import Writer
    from engine.ledger.guard import Decision
    from engine.ledger.invariants import InvariantStatus
    from engine.ledger.model import Ledger
    from engine.planners.autopilot import Action
    from engine.planners.base import Planner
    from engine.session.out import Out
    from engine.store.base import Store


class LedgerViews(Protocol):
    """engine.session.attempt._Views: a ledger without its reversible runs, once per read."""

    def of(self, ledger: Ledger) -> Ledger: ...


class SessionContext(Protocol):
    """The holder a decision runs for (engine.session.actor.Actor and its subclasses)."""

    handle: Writer
    store: Store
    out: Out
    ledger_dir: str
    ledger_arg: str  # as the user named it: shown in hints
    sid: str
    identity: str
    started_as: str | None  # the OS user who started this holder
    host: str
    dry_run: bool
    ending: str | None
    code: int
    txn_lock: threading.Lock
    beat: HeartbeatThread | None
    planner: Planner
    workers: dict[str, threading.Thread | None]
    parallel: int
    statuses: list[InvariantStatus]

    @property
    def views(self) -> LedgerViews: ...

    metrics_at: float
    last_invariants: str
    invariants_said_at: float
    metric_said: dict[str, tuple[tuple[float, bool], float]]
    said: set[tuple[str, str, str]]
    settling: bool  # set by an attempt that met an approval still being recorded

    def page(self, event: str, message: str) -> bool | None: ...

    # `Any` where the type lives in engine.session.steps (an Intent, an Outcome): steps takes
    # this context, so importing it here, even for annotations, would be an import loop.
    def after_step(self, it: Any, outcome: Any, state: str, rev: int, checkpoint: str | None,
                   problem: str | None) -> None: ...

    def _can_start(self) -> bool: ...

    def _start(self, intent: Any) -> None: ...  # an engine.session.steps.Intent

    def _gate(self, action: Action, argv: list[str], decision: Decision) -> bool: ...
