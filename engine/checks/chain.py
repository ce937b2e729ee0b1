"""The journal's hash chain as `check` findings and as `handoff journal --verify` prints it.

A broken chain (a record edited, removed, inserted or moved; the journal cut short or
erased) is a problem, never silently ignored: `check` exits 1 on it, naming the
journal's file, line and seq, and what to do.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from engine.checks.finding import ERROR, Finding

_SHOWN = 10  # breaks listed one by one; the rest are counted
UNJOURNALED_GRACE = 5.0  # seconds a live writer has to journal the write it just made


def verdict_of(handle):
    """Verify the handle's journal against the head its ledger's last write names, and against
    the revision that write made: every engine write journals a record of its revision, so a
    journal whose newest is older lost its last records (the head the write names is the one
    before them, so they can be cut off without touching it)."""
    record = handle.store.last_write() or {}
    verdict = handle.journal.verify(record.get("journal_head"))
    missing = None if verdict.breaks else _unjournaled(handle, record)  # one trace of a loss: the head gone says it
    if missing:
        from engine.audit.verify import Break

        verdict.breaks.append(Break(None, None, missing))  # at its end: what followed the last record is gone
    return verdict


def _unjournaled(handle, record: dict[str, Any]) -> str | None:
    """Why the journal lacks the records of the ledger's last engine write (its last-write record, or a
    PostgreSQL ledger row's revision), or None.
    A writer journals them right after its write: it is given a moment before that counts (`_grace`)."""
    highest = getattr(handle.journal, "highest_revision", None)
    revision = record.get("revision")
    if highest is None or not isinstance(revision, int):
        return None
    deadline = time.monotonic() + _grace(handle)
    while (newest := highest()) < revision and time.monotonic() < deadline:
        time.sleep(0.1)
        revision = (handle.store.last_write() or {}).get("revision", revision)
    if newest >= revision:
        return None
    if newest == 0:
        return (f"the ledger's last write by the engine made revision {revision}, but the journal holds no record of "
                "any write: it was erased or emptied")
    return (f"the ledger's last write by the engine made revision {revision}, but the journal's newest record of a write "
            f"is of revision {newest}: the records of the last write(s) were cut off the journal's end (or their writer "
            "was killed between writing the ledger and journaling them)")


def _grace(handle) -> float:
    """How long the ledger's last writer may still be journaling its write: UNJOURNALED_GRACE, or no
    time at all when the last process to take the writers' lock (its lock file names it) ran on this
    host and has exited: the records of its write are not on their way. A writer journals after it lets
    the lock go (engine.api), so the lock itself being free proves nothing; its process being gone does."""
    from engine.approvals.identity import hostname

    lock = getattr(handle.store, "filelock", None)
    holder = (lock.holder() if lock is not None else None) or {}
    pid = holder.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or pid == os.getpid() or holder.get("host") != hostname():
        return UNJOURNALED_GRACE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return 0.0  # gone: whatever it had not journaled never will be
    except OSError:
        pass  # alive, another user's
    return UNJOURNALED_GRACE


def journals(handle) -> list[tuple[str, Any, Any]]:
    """(what, journal, verdict) for the journal and the history journal (engine.store.history)
    beside it: the one check behind `handoff journal --verify`, `check` and `report`."""
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
        elif kept.records and not journal.breaks:
            # Cut short with them, it names no lost head either; the twin still knows the newest write.
            from engine.audit.verify import Break

            behind = _behind_history(handle, history)
            if behind:
                journal.breaks.append(Break(None, None, behind))
    return out


def _behind_history(handle, history) -> str | None:
    """Why the journal lacks the records of a write the history journal recorded, or None. The
    history's record is written with the ledger, the journal's just after: a moment is given."""
    highest, recorded = getattr(handle.journal, "highest_revision", None), getattr(history, "highest_revision", None)
    if highest is None or recorded is None:
        return None
    wanted, deadline = recorded(), time.monotonic() + _grace(handle)
    while (newest := highest()) < wanted and time.monotonic() < deadline:
        time.sleep(0.1)
    if newest >= wanted:
        return None
    return (f"the history journal beside it records the engine's write of revision {wanted}, but the journal's newest "
            f"record of a write is of revision {newest}: the records of the last write(s) were cut off the journal's end")


def one_verdict(handle):
    """`journals` as one verdict: the journal's, with each break of the history journal
    beside it, named so (`handoff report`'s proof, `show` and `diff`)."""
    from engine.audit.verify import Break

    checked = journals(handle)
    verdict = checked[0][2]
    for what, journal, kept in checked[1:]:
        verdict.breaks += [Break(b.seq, b.line, f"{what} {journal.path}: {b.why}") for b in kept.breaks]
    return verdict


def chain_findings(handle) -> list[Finding]:
    """One problem per break (the first few) of either journal, placed at its line."""
    out = []
    for what, journal, verdict in journals(handle):
        where = journal.path
        out += [Finding(ERROR, f"{what} chain broken at {b.at()}: {b.why}", where, b.line, code="chain",
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

    checked = journals(handle)
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
