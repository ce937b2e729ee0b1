"""Opening a ledger to change it: whether this user may, and the pieces a writer needs.

`writable_reason` is asked before anything changes: the ledger file, its folder (a write
replaces the file) and the files beside it that a change writes (WRITTEN_BESIDE) must all
be writable by this user, or the ledger opens read-only with the
reason. `open_writer` is what a session uses (the CLI and TUI go through engine.api):
the store, the journal redacting with the ledger's own patterns, and who is acting.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, NamedTuple

from engine.approvals.identity import os_user
from engine.audit.journal_io import SUFFIX as JOURNAL_SUFFIX
from engine.ledger.workdir import WorkingDir
from engine.store.sidecar import unusable

if TYPE_CHECKING:
    from engine.ledger import ops
    from engine.store.base import Journal, Store

# engine.ledger.ops and engine.store (the model, pydantic) are imported where a writer is opened:
# `writable_reason` is on the Claude Code hook's fast path (engine.hooks.context).

LOCK_SUFFIX = ".lock"  # engine.store.file's lock sidecar
# The files beside a file ledger that a change writes (the lock, the journal and its index, the
# history, the last write's kept names and fields), most of them after the ledger itself: each
# must be usable before anything changes, or a change would be made and then reported as
# refused. Not `.last-write.json`: a change marks it pending before its swap, so a refused one
# refuses the change before anything is made, and a session meeting a damaged one must still
# say "went back in time" when it is (tests/unit/test_witness.py). Spelled here, not imported:
# their modules load the model, and this one is on the hook's fast path
# (tests/unit/test_sidecar_written_after_commit.py ties them to their modules).
WRITTEN_BESIDE = (LOCK_SUFFIX, JOURNAL_SUFFIX, JOURNAL_SUFFIX + ".index", ".history.jsonl", ".last-write.names.json",
                  ".last-write.targets.json", ".last-write.targets.jsonl")


def is_url(location: str) -> bool:
    return location.startswith(("postgresql://", "postgres://"))


def writable_reason(path: str) -> str | None:
    """Why this user cannot change the ledger at `path`, or None if they can."""
    real = os.path.realpath(path)
    folder = os.path.dirname(real) or "."
    user = os_user()
    if not os.access(real, os.W_OK):
        return f"{path} is not writable by {user}"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the folder {folder} is not writable by {user} (writes replace the file)"
    for suffix in WRITTEN_BESIDE:
        reason = unusable(real + suffix)
        if reason:
            return reason
    return None


def ledger_dir(location: str) -> str:
    """Where `{ledger_dir}` points: the ledger's folder (the working folder for a URL)."""
    from engine.ledger import ops

    return WorkingDir(os.getcwd()) if is_url(location) else ops.ledger_dir(location)


class Writer(NamedTuple):
    """What a session needs to drive a ledger (a NamedTuple: this module is on the path of a
    Claude Code hook call that allows a command, which imports no dataclasses; see engine.hooks.facts)."""

    location: str
    store: Store
    journal: Journal
    actor: str
    who: ops.Who
    ledger_dir: str
    read_only_reason: str | None

    @property
    def read_only(self) -> bool:
        return self.read_only_reason is not None

    @property
    def display_location(self) -> str:
        """The location as people may see it (as `handoff status` names it): a password in a URL is masked."""
        from engine.audit.redact import redact

        return redact(self.location)


def open_writer(location: str, *, actor: str | None = None) -> Writer:
    """Open `location` to drive it; the ledger is read once (LedgerInvalid if it is bad),
    and the journal redacts with its `redact:` patterns."""
    from engine.ledger import ops
    from engine.store import open_store

    user = os_user()
    name = actor or user
    reason = None if is_url(location) else writable_reason(location)
    store = open_store(location, read_only=reason is not None)
    store.read_file_alone()  # a driver decides on every target: never on what a cache file says of them
    journal = store.open_journal(read_only=reason is not None)
    journal.set_redact(store.read().redact)
    return Writer(location, store, journal, name, ops.Who(name, user), ledger_dir(location), reason)
