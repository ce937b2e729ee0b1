"""Everything `handoff check` reports, as findings: what the store noticed, states that
contradict each other, invariants violated now, and the analysis (engine.checks)."""

from __future__ import annotations

from engine.checks.analyse import analyse, source_text
from engine.checks.approvals import shared_approvers, stale_approvals, unverified_approvers
from engine.checks.chain import chain_findings
from engine.checks.finding import ERROR, NOTICE, WARNING, Finding
from engine.checks.locate import Locator
from engine.checks.witness import witness_patterns
from engine.ledger.invariants import parse


def check_findings(handle, snap, statuses, contradictions: list[str], path: str, *,
                   unread: list[str] | None = None) -> list[Finding]:
    """Problems first (the store's warnings, `contradictions`, violated invariants), then
    the analysis; each placed in `path` where it can be. `unread`: metrics `--live` could
    not read (warnings)."""
    text = source_text(handle.store)
    found = analyse(snap.ledger, text, path)
    locator = Locator(text, path)
    index = {parse(item).text: i for i, item in enumerate(snap.ledger.invariants)}  # the text a status carries
    out = [Finding(ERROR, line, path, code="store") for line in [*snap.warnings, *contradictions]]
    explained = [f.message for f in found if f.code == "precondition-from"]
    for status in statuses:
        if status.status != "violated":
            continue
        at = index.get(status.text)
        line, column = locator.value("invariants", at) if at is not None else (None, None)
        if status.kind == "precondition" and any(f'"{status.text}"' in message for message in explained):
            continue  # the analysis already said why the runbook and the invariant disagree, with the fix
        out.append(Finding(ERROR, f"invariant violated: {status.text} ({status.value})", path, line, column,
                           code="violated"))
    stale = [Finding(WARNING, line, path, code="stale-approval") for line in stale_approvals(snap.ledger, handle.ledger_dir)]
    # How old a reading is never reaches `check` (engine.checks.live reads none, or reads
    # afresh); a metric `--live` could not read is a warning, never ok.
    failed = [Finding(WARNING, line, path, code="metric-unread") for line in unread or []]
    line, column = locator.key("approvers") if snap.ledger.approvers is not None else (None, None)
    who = [Finding(NOTICE, message, path, line, column, suggestion=fix, code="unverified-approvers")
           for message, fix in unverified_approvers(snap.ledger, on_database=handle.is_url)]
    shared = [Finding(WARNING, message, path, line, column, code="shared-approver-identity",
                      suggestion="give each person their own os_user or ssh_key, or keep one entry per person "
                                 "(docs/operating.md, Approvals and identity)")
              for message in shared_approvers(snap.ledger)]
    return out + chain_findings(handle) + witness_patterns(snap.ledger, text, path) + found + stale + failed + shared + who

