"""Signing an approval before it is recorded (`handoff approve --key FILE`, or the
ssh-agent at `SSH_AUTH_SOCK`), for approvers with an `ssh_key`.

The signature is made outside the ledger's transaction: with `ssh-add -c` or a FIDO2
key a person confirms or touches it, and the ledger's lock is never held meanwhile.
What is signed names the ledger's `id` (a UUID, the field the Temporal and LangGraph
runtimes also write), so a signature for one ledger never approves another. A ledger
without one gets the id its first signature was made over, once that signature
verifies, in a write of its own before the approval: an id is never taken from a
signature presented (engine.approvals.approvers.admit_signed refuses a signed approval
on a ledger with none).
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
from engine.ledger.model import Approver


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
    ledger_id = ledger.id or str(uuid.uuid4())  # written in a write of its own once the signature verifies (_give_id)
    pending = handle.pending_command(ledger, target, step)
    text = sshsig.payload(ledger=ledger_id, target=target, step=pending.step.name, hash=pending.hash,
                          checkpoint=pending.checkpoint, revision=ledger.revision, at=now_iso(), approver=entry.name)
    signed = Signed(text, _sign(text, key, entry.ssh_key))
    if ledger.id is None:
        _give_id(handle, entry, signed, ledger_id)
    return signed


def _sign(text: str, key: str | None, ssh_key: str) -> str:
    """The signature of `text` by the key file `key`, else by the ssh-agent's key whose public half is `ssh_key`."""
    if key:
        return sshsig.sign(text, key)
    folder = tempfile.mkdtemp(prefix="handoff-pub-")  # the agent signs with the key whose public half this is
    try:
        pub = os.path.join(folder, "approver.pub")
        with open(pub, "w", encoding="ascii", errors="replace") as fh:
            fh.write(ssh_key.strip() + "\n")
        return sshsig.sign(text, pub)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _give_id(handle, entry: Approver, signed: Signed, ledger_id: str) -> None:
    """A ledger with no id yet gets `ledger_id`, the one just signed over, in a write of its own
    before the approval is given: the approval's transaction never takes an id from the signature
    it is shown (admit_signed refuses a signed approval on a ledger with none). A signature that
    does not verify is refused first, as it would be there, and the ledger is left as it was."""
    why = sshsig.verify(signed.payload, signed.sig, entry.ssh_key or "")
    if why:
        raise Refused(f"approver {entry.name}: {why}; nothing was approved", title="Bad signature")
    written = handle.give_id("signed approvals name it", ledger_id)
    if written != ledger_id:
        raise Refused(f"the ledger was given the id {written} while you signed; nothing was approved: approve again",
                      title="Ledger id changed")
