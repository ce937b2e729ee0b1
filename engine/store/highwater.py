"""High-water marks kept outside the ledger's folder, so a whole-folder restore is seen.

Every other witness (the ledger, `.last-write.json`, the journal) lives beside the
ledger, so a VM snapshot, an rsync or a tar restore of the folder brings back a
consistent past in which an approval is still unused. This per-user file, under
`$XDG_STATE_HOME/handoff/highwater/` (default `~/.local/state`), is not restored with
it. It holds, per ledger identity (the ledger's `id` when it has one, else its real
path or location):

- `revision`: the highest revision this user's engine wrote. A ledger read with a lower
  one went back in time: refused like any rollback, until `handoff check
  --accept-rollback` (whose write then climbs above the mark);
- the spent approvals (a `.spent` file beside it, appended): the approvals this user's
  engine marked used, or took off a target unused (withdrawn, replaced as stale) (target,
  step, hash, who, when).
  Such an approval never authorises another run, whatever the ledger says, even after
  `--accept-rollback`: a person approves again.

Each spent approval also goes into one list for every ledger (`spent-anywhere`): a folder
restored somewhere else (another path) or given an `id:` by hand is another identity, with
no mark of its own, but the approvals its copy holds are the same approvals, and they were
used. (A dry run's shadow, engine.session.dryrun, never spends one: a rehearsal never starts
an irreversible step (engine.session.attempt), and its journal starts empty, so the approvals
it copied have no record there and could never authorise one.)

It is written under the ledger's writers' lock, after the ledger itself. It is per user:
on a shared ledger each user's mark covers what that user's engine wrote.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from engine.host.folders import state_dir
from engine.store.atomic import atomic_write

if TYPE_CHECKING:  # annotations only: the store loads the model where it needs it
    from engine.ledger.model import Approval, Ledger


def mark_dir() -> Path:
    """The folder of the marks (private to this user)."""
    return Path(state_dir()) / "highwater"


def identity(ledger, where: str) -> str:
    """The key of a ledger's mark: its `id` when present, else `where` (real path or location)."""
    return f"id:{ledger.id}" if getattr(ledger, "id", None) else f"at:{where}"


def mark_path(key: str) -> Path:
    """The revision mark of `key` (small: read on every snapshot); the spent approvals
    are in the same name with `.spent`, one per line, appended (read only when an intent
    would spend one)."""
    return mark_dir() / (hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32] + ".json")


def _spent_path(key: str) -> Path:
    return mark_path(key).with_suffix(".spent")


def _anywhere() -> Path:
    return mark_dir() / "spent-anywhere"


def read_mark(key: str) -> dict:
    """The mark for `key`: {"revision": int}; 0 if none was written."""
    try:
        data = json.loads(mark_path(key).read_bytes())
    except (OSError, ValueError):
        return {"revision": 0}
    revision = data.get("revision") if isinstance(data, dict) else None
    return {"revision": revision if isinstance(revision, int) and not isinstance(revision, bool) else 0}


def _spent(key: str) -> set[str]:
    """The spent keys of `key`'s list and of the list for every ledger. A line is one JSON
    string (a name may hold any character, line separators too); a line written before that
    is the key itself: each line counts both ways, so no key is ever lost to the reading."""
    found: set[str] = set()
    for path in (_spent_path(key), _anywhere()):
        try:
            lines = path.read_bytes().decode("utf-8", "surrogateescape").split("\n")
        except OSError:
            continue  # nothing spent there yet
        for line in lines:
            found.add(line)
            if line.startswith('"'):
                try:
                    found.add(json.loads(line))
                except ValueError:
                    pass
    return found


def spent_key(target: str, approval) -> str:
    """What names one approval of one step on one target."""
    return "\x1f".join((target, approval.step, str(approval.hash), approval.by, approval.at))


def newly_spent(before: Ledger, after: Ledger, names: Iterable[str]) -> list[tuple[str, Approval, bool]]:
    """(target, approval, starting) for each approval this change spends, among targets
    `names`: its `used_at` set, or taken off the target unused (withdrawn, replaced as
    stale: a copy of the file from before must not bring it back);
    `starting` when the same change writes a new intent on the target (the approval is
    spent on a run, not only noted as used by reconcile)."""
    found = []
    for name in names or ():
        new = after.targets.get(name)
        if new is None:
            continue
        old = before.targets.get(name)
        # Counted, not a set: a copy of a used approval put beside it (as it was, but unused) is
        # a second approval with the same key, and its use here is a use like any other.
        was = Counter(spent_key(name, a) for a in (old.approvals if old else []) if a.used_at)
        token = new.in_flight.token if new.in_flight else None
        starting = token is not None and not (old and old.in_flight and old.in_flight.token == token)
        for a in new.approvals:
            if not a.used_at:
                continue
            key = spent_key(name, a)
            if was[key] > 0:
                was[key] -= 1
            else:
                found.append((name, a, starting))
        if old is not None and old.approvals and not _refused_at_fence(old, new):
            kept = {spent_key(name, a) for a in new.approvals}
            found += [(name, a, False) for a in old.approvals if not a.used_at and spent_key(name, a) not in kept]
    return found


def _refused_at_fence(old, new) -> bool:
    """Did this change take an approval off because the fence refused it (engine.approvals.
    authority.refuse: the target awaits a person again, the refusal its reason)? That one is
    refused by the same rule again, and a dry run's shadow, whose empty journal refuses every
    approval it copied, must spend nothing anywhere."""
    return new.state == "awaiting_approval" and bool(new.reason) and (new.state, new.reason) != (old.state, old.reason)


def already_spent(key: str, spent: list[tuple[str, Approval, bool]]) -> str | None:
    """A sentence naming the first approval in `spent` that a new intent would spend
    although this user's mark says it was used before, or None."""
    if not any(starting for _, _, starting in spent):
        return None
    known = _spent(key)
    for name, approval, starting in spent:
        if starting and spent_key(name, approval) in known:
            return (f"the approval of {approval.step} on {name} by {approval.by} at {approval.at} was already used "
                    f"or withdrawn (this user's high-water marks in {mark_dir()} say so, outside the ledger's folder: the folder "
                    "may have been restored from a backup, here or elsewhere); nothing was started. Check the real "
                    "system, then approve again")
    return None


def raise_mark(key: str, revision: int, spent: list[tuple[str, Approval, bool]]) -> None:
    """Record a write: the revision (never lowered) and the approvals it spent."""
    folder = mark_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    if spent:
        lines = "".join(json.dumps(spent_key(n, a)) + "\n" for n, a, _ in spent)  # ASCII: one line each, whatever the name
        for path in (_spent_path(key), _anywhere()):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, lines.encode("ascii"))
            finally:
                os.close(fd)
    if revision > read_mark(key)["revision"]:
        body = {"key": key, "revision": revision}
        atomic_write(str(mark_path(key)), json.dumps(body, ensure_ascii=False).encode("utf-8"), durable=False)


def forget(key: str) -> None:
    """Drop `key`'s mark and spent approvals (a dry run's shadow, made afresh each time)."""
    for path in (mark_path(key), _spent_path(key)):
        try:
            path.unlink()
        except FileNotFoundError:
            pass  # nothing was marked yet


def behind(key: str, revision: int) -> str | None:
    """A rollback sentence when `revision` is below this user's mark, else None."""
    mark = read_mark(key)["revision"]
    if revision < mark:
        return (f"its revision is {revision}, lower than the highest this user's engine wrote (revision {mark}, "
                f"recorded outside the ledger's folder in {mark_path(key)}): the whole folder may have been restored "
                "from a backup")
    return None
