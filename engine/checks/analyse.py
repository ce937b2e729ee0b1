"""Running every check on one ledger, in the order a reader would fix them."""

from __future__ import annotations

from engine.checks.context import Context
from engine.checks.finding import ERROR, WARNING, Finding
from engine.checks.flow import check_flow
from engine.checks.locate import Locator
from engine.checks.settings import check_budget, check_invariants, check_metrics, check_notify
from engine.checks.steps import check_steps
from engine.errors import HandoffError
from engine.ledger.model import Ledger
from engine.store.base import Store

NO_RUNBOOK = "no runbook: viewable, sessions cannot act"


def analyse(ledger: Ledger, text: str | None, path: str) -> list[Finding]:
    """Every finding for `ledger`; `text` (its YAML, if known) gives them lines and columns.

    In a ledger without a runbook nothing can stall (no session acts on it), so what
    would be an error is a warning there, beside "no runbook"."""
    ctx = Context(ledger, Locator(text, path), path)
    acting = bool(ledger.steps())
    if acting:
        check_steps(ctx)
        check_flow(ctx)
    else:
        where = ("runbook",) if ledger.runbook is not None else ()
        ctx.add(WARNING, NO_RUNBOOK, *where, code="no-runbook",
                suggestion="add runbook.steps to let `handoff resume` act (see docs/ledger.md, or `handoff init`)")
    check_invariants(ctx, acting)
    check_metrics(ctx)
    check_budget(ctx)
    check_notify(ctx)
    if not acting:
        for finding in ctx.findings:
            finding.severity = WARNING
    order = {ERROR: 0, WARNING: 1}
    return sorted(ctx.findings, key=lambda f: (order[f.severity], f.line or 0, f.column or 0))


def source_text(store: Store) -> str | None:
    """The ledger's text as its store holds it (for places), or None if it cannot be had."""
    try:
        text = store.export_text()
        if text is not None:
            return text
        from engine.store.file import decode

        with open(store.path, "rb") as fh:
            return decode(fh.read(), store.path)
    except (OSError, HandoffError):
        return None  # findings are still right, only without their lines
