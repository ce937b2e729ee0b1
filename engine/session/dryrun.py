"""`--dry-run`: a full cycle on a shadow copy of the ledger, never the real one.

The ledger is copied to `<name>.dryrun.yaml` beside it (so `{ledger_dir}` still means
the same folder; never through a symlink planted there, and with the ledger's group and
mode bits, so a second user of a group folder can dry-run too) and the session works on that copy through its own store, journal
and lease. Steps run only their `check` argv; verify probes and metrics, which only
read, run as usual; nobody is paged.
"""

from __future__ import annotations

import os
import re

from engine.errors import LedgerInvalid, UsageError, os_error_text
from engine.store import highwater
from engine.store.atomic import atomic_write
from engine.store.file import FileStore


def shadow_path(path: str) -> str:
    root, ext = os.path.splitext(os.path.realpath(path))
    return f"{root}.dryrun{ext or '.yaml'}"


_ID_LINE = re.compile(rb"^id:[^\n]*\n", re.MULTILINE)


def make_shadow(path: str) -> str:
    """Copy the ledger to its shadow (fresh each time) and return the shadow's path."""
    if path.startswith(("postgresql://", "postgres://")):
        raise LedgerInvalid("--dry-run works on a file ledger; export it to YAML first", path=path)
    real = os.path.realpath(path)
    try:
        with open(real, "rb") as fh:
            raw = fh.read()
    except OSError as err:
        raise LedgerInvalid(f"cannot be read: {err.strerror}", path=path) from None
    shadow = shadow_path(path)
    if os.path.islink(shadow):  # planted: writing through it would overwrite whatever it names
        raise UsageError(f"{shadow} is a symlink; --dry-run never writes through one (it would overwrite what it "
                         "points at): remove it, then dry-run again (nothing was changed)")
    # The shadow is a new ledger, never the real one under another name: without the real
    # one's `id` its high-water mark (engine.store.highwater) is its own, keyed by its path.
    raw = _ID_LINE.sub(b"", raw)
    try:
        # What the engine remembers of the last shadow (its write record, its journal and the
        # journal's index, its per-user high-water mark): a fresh copy is a new start.
        for old in (shadow + ".last-write.json", shadow + ".last-write.names.json", shadow + ".last-write.targets.json",
                    shadow + ".last-write.targets.jsonl", shadow + ".journal.jsonl", shadow + ".journal.jsonl.index", shadow + ".history.jsonl",
                    shadow + ".history.jsonl.index"):
            try:
                os.unlink(old)
            except FileNotFoundError:
                pass  # first dry run: nothing to forget
        highwater.forget(highwater.identity(None, os.path.realpath(shadow)))
        try:  # a fresh copy takes the ledger's group and mode bits, like every sidecar
            os.unlink(shadow)
        except FileNotFoundError:
            pass  # first dry run
        atomic_write(shadow, raw, sidecar_of=real)  # never through a symlink, even one planted just now
    except OSError as err:  # a folder this user cannot write, a read-only mount, a full disk
        raise UsageError(f"--dry-run works on a copy beside the ledger ({shadow}) and cannot write it: "
                         f"{os_error_text(err)}; copy the ledger to a folder you can write and dry-run that copy "
                         "(nothing was changed)") from None
    store = FileStore(shadow)

    def forget_lease(ledger):
        ledger.session = None  # the real session's lease is not the shadow's

    store.transact(forget_lease)
    return shadow
