"""Edits made to a file ledger outside the engine: what changed, who, and what is not trusted.

After every write the engine keeps, beside the ledger, the few fields of each target a
hand edit could use to fake progress or revive an approval (engine.store.kept_fields:
state, checkpoint, the intent in flight, approvals and whether each was used, awaiting,
and the changed-outside flag). When the engine next writes a file that someone else
changed, it diffs the file against that copy field by field, journals an `external_edit`
record with the diff (values redacted) and the file's owner and mtime, and flags each
target whose change no runbook step makes (a state no step moves it to, a new or
revived approval, a removed or changed intent, a removed flag, a target added anywhere but
at the start: `_new_work`) with `changed_outside: {at, fields}`.
A session treats a flagged target like drift until a person runs `handoff reconcile`.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Iterable
from datetime import UTC
from typing import Any

from engine.codec.jsontext import dumps
from engine.codec.timefmt import now_iso
from engine.ledger.model import Ledger, Target
from engine.store import kept_fields

SUFFIX = kept_fields.WHOLE
SAFE_STATES = ("blocked", "failed")  # a person stopping a target by hand is never a lie about progress


def _fields(t: Target) -> dict[str, Any]:
    approvals = t.approvals  # most targets have none: no generator and sort for them (10,000 at a first write)
    return {
        "state": t.state,
        "checkpoint": t.checkpoint,
        "in_flight": None if t.in_flight is None else _intent(t),
        "approvals": sorted(f"{a.step} {a.hash} by {a.by} at {a.at}" + (" used" if a.used_at else "") for a in approvals)
        if approvals else [],
        "awaiting": t.awaiting,
        "changed_outside": bool(getattr(t, "changed_outside", None)),
    }


def _intent(t: Target) -> str | None:
    """The intent in flight as kept: its token and step (`TOKEN STEP`), or its step alone."""
    if t.in_flight is None:
        return None
    return f"{t.in_flight.token} {t.in_flight.step}" if t.in_flight.token else t.in_flight.step


def _same_intent(old: Any, new: Any) -> bool:
    """`old` is `new` as an engine before stop 51 kept it: the token alone."""
    return isinstance(old, str) and isinstance(new, str) and " " not in old and new.startswith(old + " ")


def _entry(name: str, t: Target) -> str:
    """One target's `"name":{fields}`, compact (engine.codec.jsontext: the entries of 10,000
    targets in 11 ms where json's encoder took 24)."""
    return dumps(name) + ":" + dumps(_fields(t))


def save_fields(ledger_path: str, ledger: Ledger, key: str, *, base: str | None = None, names: set[str] | None = None) -> None:
    """Keep what the engine just wrote as content `key` (after every write; under the
    writers' lock). With the hash the change started from (`base`) and the `names` it
    touched, only those targets are encoded (engine.store.kept_fields adds them as one
    line after the fields kept for `base`); without them, every target is."""
    targets = ledger.targets

    def every() -> dict[str, str]:
        return {name: _entry(name, t) for name, t in targets.items()}

    if names is None:  # which targets changed is not known: all of them are written
        kept_fields.save(ledger_path, key, None, {}, every)
        return
    kept_fields.save(ledger_path, key, base, {n: _entry(n, targets[n]) if n in targets else None for n in names}, every)


def last_written(ledger_path: str) -> dict[str, Any] | None:
    """What the engine last wrote of each target's trust fields (name -> fields): the copy kept
    beside the ledger; when that is gone (it is only a cache: `git clean` or a hand removes it),
    the ledger as the journal's history holds it at its last write. None only when neither says."""
    saved = kept_fields.load(ledger_path)
    return saved if saved is not None else _from_history(ledger_path)


def _from_history(ledger_path: str) -> dict[str, Any] | None:
    """Each target's trust fields at the last write the journal's history holds (one read of
    the journal: only when the kept copy is gone); None when it holds none."""
    from engine.store.history import file_journal

    return written_in(file_journal(ledger_path, read_only=True).stream())


def written_in(history: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """Each target's trust fields at the last write a history journal's records hold (name ->
    fields); None when they hold none."""
    from engine.store.history import ledger_at

    records = list(history)
    then = ledger_at(records, max((r["rev"] for r in records if isinstance(r.get("rev"), int)), default=0))
    targets = (then.data or {}).get("targets") if then.data is not None else None
    if not isinstance(targets, dict):
        return None
    out: dict[str, Any] = {}
    for name, value in targets.items():
        try:
            out[str(name)] = _fields(Target.model_validate(value or {}))
        except ValueError:
            continue  # not a target the model takes: it counts as new (untrusted)
    return out


def _untrusted(ledger: Ledger, field: str, old: Any, new: Any) -> bool:
    """Is this change one no runbook step makes?"""
    if field == "state":
        steps = {(s.from_, s.to) for s in ledger.steps()}
        return new not in SAFE_STATES and (old, new) not in steps
    if field == "approvals":
        return bool(set(new or []) - set(old or []))  # a new approval, or a used one made unused
    if field == "in_flight":  # an intent removed, or made another one (a step renamed to a reversible one)
        return bool(old) and new != old and not _same_intent(old, new)
    if field == "changed_outside":
        return bool(old) and not new  # a flag removed
    return False


def _new_work(fields: dict[str, Any] | None) -> bool:
    """A target added by hand as new work: queued (where every new target starts) or stopped by
    a person, with no approval, intent or request: it claims no progress, so it is journaled,
    not flagged (adding targets to a running job is how a job grows)."""
    return (fields is not None and (fields["state"] == "queued" or fields["state"] in SAFE_STATES)
            and not fields["approvals"] and not fields["in_flight"] and not fields["awaiting"])


def changes(ledger_path: str, ledger: Ledger) -> list[dict[str, Any]] | None:
    """The field diff of `ledger` (as read from the edited file) against the engine's last
    write: [{target, field, old, new, untrusted}], or None when neither the kept copy nor the
    journal's history holds that write."""
    saved = last_written(ledger_path)
    return None if saved is None else diff(saved, ledger)


def diff(saved: dict[str, Any], ledger: Ledger) -> list[dict[str, Any]]:
    """The field diff of `ledger` against `saved`, what the engine last wrote of each target's
    trust fields: [{target, field, old, new, untrusted}]."""
    out = []
    for name in sorted(set(saved) | set(ledger.targets)):
        before = saved.get(name)
        after = _fields(ledger.targets[name]) if name in ledger.targets else None
        if before is None or after is None:
            out.append({"target": name, "field": "target", "old": "present" if before else None,
                        "new": "present" if after else None, "untrusted": before is None and not _new_work(after)})
            continue
        for field, new in after.items():
            old = before.get(field)
            if old != new:
                out.append({"target": name, "field": field, "old": old, "new": new,
                            "untrusted": _untrusted(ledger, field, old, new)})
    return out


def flag(ledger: Ledger, found: list[dict[str, Any]]) -> list[str]:
    """Mark each target with an untrusted change (in the transaction's ledger); their names."""
    names: dict[str, list[str]] = {}
    for change in found:
        if change["untrusted"] and change["target"] in ledger.targets:
            names.setdefault(change["target"], []).append(change["field"])
    at = now_iso()
    for name, fields in names.items():
        ledger.targets[name].changed_outside = {"at": at, "fields": sorted(set(fields))}
    return list(names)


def who_edited(ledger_path: str) -> dict[str, Any]:
    """The file's owner and mtime: as near to "who" as a file can tell."""
    try:
        st = os.stat(ledger_path)
    except OSError:
        return {}
    try:
        owner = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        owner = str(st.st_uid)
    from datetime import datetime

    return {"owner": owner, "mtime": datetime.fromtimestamp(st.st_mtime, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}


def journal_edit(ledger_path: str, ledger: Ledger, found: list[dict[str, Any]], flagged: list[str], revision: int,
                 who: dict[str, Any]) -> None:
    """The `external_edit` record, written after the ledger (values redacted)."""
    from engine.audit.journal import Journal, journal_path

    targets = sorted({c["target"] for c in found})
    shown = ", ".join(targets[:10]) + (" ..." if len(targets) > 10 else "")
    msg = (f"the ledger was edited outside the engine before revision {revision} (file owner {who.get('owner', '?')}, "
           f"modified {who.get('mtime', '?')}): {len(found)} field change(s) on {shown or 'no target'}")
    if flagged:
        msg += f"; not trusted until `handoff reconcile`: {', '.join(flagged[:10])}"
    Journal(journal_path(ledger_path), redact=ledger.redact).append(
        "external_edit", msg, actor="outside the engine", rev=revision, changes=found[:1000], flagged=flagged, **who)
