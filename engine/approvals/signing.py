"""Signing an approval before it is recorded (`handoff approve --key FILE`, or the
ssh-agent at `SSH_AUTH_SOCK`), for approvers with an `ssh_key`.

The signature is made outside the ledger's transaction: with `ssh-add -c` or a FIDO2
key a person confirms or touches it, and the ledger's lock is never held meanwhile.
What is signed names the ledger's `id` (a UUID; a ledger without one gets it with its
first signed approval, in the same write, the field the Temporal runtime also writes),
so a signature for one ledger never approves another.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid

from engine.approvals import sshsig
from engine.approvals.approvers import Signed, verified_entry
from engine.codec.timefmt import now_iso
from engine.errors import Refused


def sign_approval(handle, target: str, step: str | None, key: str | None, env=None) -> Signed | None:
    """The signed payload for `handle.actor` approving `target` now, or None when the
    approver signs nothing (no `ssh_key`) or has nothing to sign with (then the
    approval is refused with what to do)."""
    env = os.environ if env is None else env
    entry = verified_entry(handle.load(), handle.actor)
    if entry is None or not entry.ssh_key:
        if key:
            raise Refused(f"--key: {handle.actor!r} is not an approver with an ssh_key in this ledger; nothing was approved",
                          title="Nothing to sign")
        return None
    if not key and not env.get("SSH_AUTH_SOCK"):
        return None
    ledger = handle.load()
    ledger_id = ledger.id or str(uuid.uuid4())  # recorded with the approval (engine.ledger.ops), never before
    pending = handle.pending_command(ledger, target, step)
    text = sshsig.payload(ledger=ledger_id, target=target, step=pending.step.name, hash=pending.hash,
                          checkpoint=pending.checkpoint, revision=ledger.revision, at=now_iso(), approver=entry.name)
    if key:
        return Signed(text, sshsig.sign(text, key))
    folder = tempfile.mkdtemp(prefix="handoff-pub-")  # the agent signs with the key whose public half this is
    try:
        pub = os.path.join(folder, "approver.pub")
        with open(pub, "w", encoding="ascii", errors="replace") as fh:
            fh.write(entry.ssh_key.strip() + "\n")
        return Signed(text, sshsig.sign(text, pub))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
