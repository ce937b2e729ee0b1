"""The journal's hash chain as `check` findings and as `handoff journal --verify` prints it.

A broken chain (a record edited, removed, inserted or moved; the journal cut short or
erased) is a problem, never silently ignored: `check` exits 1 on it, naming the
journal's file, line and seq, and what to do.
"""

from __future__ import annotations

import json

from engine.checks.finding import ERROR, Finding

_SHOWN = 10  # breaks listed one by one; the rest are counted


def verdict_of(handle):
    """Verify the handle's journal against the head its ledger's last write names."""
    record = handle.store.last_write() or {}
    return handle.journal.verify(record.get("journal_head"))


def chain_findings(handle) -> list[Finding]:
    """One problem per break (the first few), placed at the journal's line."""
    verdict = verdict_of(handle)
    where = handle.journal.path
    out = [Finding(ERROR, f"journal chain broken at seq {b.seq}: {b.why}", where, b.line, code="chain",
                   suggestion=f"see `handoff journal {handle.display_location} --verify`; restore the journal from a "
                              "copy if you have one, and find out who changed it")
           for b in verdict.breaks[:_SHOWN]]
    if len(verdict.breaks) > _SHOWN:
        out.append(Finding(ERROR, f"and {len(verdict.breaks) - _SHOWN} more journal chain breaks", where, code="chain"))
    return out


def print_verdict(handle, as_json: bool) -> int:
    """`handoff journal --verify`: every break (seq and line), or one ok line; exit 1 on a break."""
    from engine.codec.textsafe import visible

    verdict = verdict_of(handle)
    if as_json:
        print(json.dumps({"ok": verdict.ok, "records": verdict.records, "sealed": verdict.sealed,
                          "unsealed": verdict.unsealed, "damaged_lines": verdict.damaged, "head": verdict.head,
                          "breaks": [{"seq": b.seq, "line": b.line, "why": b.why} for b in verdict.breaks]}))
        return 0 if verdict.ok else 1
    for b in verdict.breaks:
        print(visible(f"{handle.journal.path}: {b.text()}"))
    for line in verdict.damaged:
        print(visible(f"{handle.journal.path}: line {line}: warning: not a record (skipped; the chain links across it)"))
    older = f", {verdict.unsealed} from before the chain" if verdict.unsealed else ""
    state = "ok" if verdict.ok else f"BROKEN ({len(verdict.breaks)} break{'s' if len(verdict.breaks) != 1 else ''})"
    print(visible(f"{handle.journal.path}: chain {state}: {verdict.records} records ({verdict.sealed} sealed{older})"))
    return 0 if verdict.ok else 1
