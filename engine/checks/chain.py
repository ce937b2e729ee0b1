"""The journal's hash chain as `check` findings and as `handoff journal --verify` prints it.

A broken chain (a record edited, removed, inserted or moved; the journal cut short or
erased) is a problem, never silently ignored: `check` exits 1 on it, naming the
journal's file, line and seq, and what to do.
"""

from __future__ import annotations

import json
from typing import Any

from engine.checks.finding import ERROR, Finding

_SHOWN = 10  # breaks listed one by one; the rest are counted


def verdict_of(handle):
    """Verify the handle's journal against the head its ledger's last write names."""
    record = handle.store.last_write() or {}
    return handle.journal.verify(record.get("journal_head"))


def _journals(handle) -> list[tuple[str, Any, Any]]:
    """(what, verdict) for the journal and the history journal (engine.store.history) beside it."""
    out = [("journal", handle.journal, verdict_of(handle))]
    opened = getattr(handle.store, "open_history", None)
    if opened is not None:
        history = opened()
        out.append(("history journal", history, history.verify()))
        journal, kept = out[0][2], out[1][2]
        if not journal.records and kept.records:
            # Erased with its index and the last-write record, the journal names no lost head; its twin still counts
            # the engine's writes it recorded.
            from engine.audit.verify import Break

            journal.breaks.append(Break(0, None, f"the journal holds no records, but the history journal beside it holds "
                                                 f"{kept.records} of the engine's writes: the journal was erased"))
    return out


def chain_findings(handle) -> list[Finding]:
    """One problem per break (the first few) of either journal, placed at its line."""
    out = []
    for what, journal, verdict in _journals(handle):
        where = journal.path
        out += [Finding(ERROR, f"{what} chain broken at seq {b.seq}: {b.why}", where, b.line, code="chain",
                        suggestion=f"see `handoff journal {handle.display_location} --verify`; restore the {what} from a "
                                   "copy if you have one, and find out who changed it")
                for b in verdict.breaks[:_SHOWN]]
        if len(verdict.breaks) > _SHOWN:
            out.append(Finding(ERROR, f"and {len(verdict.breaks) - _SHOWN} more {what} chain breaks", where, code="chain"))
    return out


def print_verdict(handle, as_json: bool) -> int:
    """`handoff journal --verify`: every break (seq and line) of the journal and of the
    history journal beside it, or one ok line each; exit 1 on a break in either."""
    from engine.codec.textsafe import visible

    checked = _journals(handle)
    if as_json:
        verdict = checked[0][2]
        body = {"ok": all(v.ok for _, _, v in checked), "records": verdict.records, "sealed": verdict.sealed,
                "unsealed": verdict.unsealed, "damaged_lines": verdict.damaged, "head": verdict.head,
                "breaks": [{"seq": b.seq, "line": b.line, "why": b.why} for b in verdict.breaks]}
        if len(checked) > 1:
            history = checked[1][2]
            body["history"] = {"ok": history.ok, "records": history.records,
                               "breaks": [{"seq": b.seq, "line": b.line, "why": b.why} for b in history.breaks]}
        print(json.dumps(body))
        return 0 if body["ok"] else 1
    for what, journal, verdict in checked:
        if what != "journal" and not verdict.records and verdict.ok:
            continue  # no engine write since the history journal began: nothing to say
        for b in verdict.breaks:
            print(visible(f"{journal.path}: {b.text()}"))
        for line in verdict.damaged:
            print(visible(f"{journal.path}: line {line}: warning: not a record (skipped; the chain links across it)"))
        older = f", {verdict.unsealed} from before the chain" if verdict.unsealed else ""
        state = "ok" if verdict.ok else f"BROKEN ({len(verdict.breaks)} break{'s' if len(verdict.breaks) != 1 else ''})"
        print(visible(f"{journal.path}: chain {state}: {verdict.records} records ({verdict.sealed} sealed{older})"))
    return 0 if all(v.ok for _, _, v in checked) else 1
