"""Who may approve, and how the engine knows it was them (`approvers:` in the ledger).

- absent: anyone but the one who asked (the approval proves only the OS user it ran as);
- a plain name (`alice`): the OS login of the approving process must be one of them.
  It proves nothing when an agent runs as that same OS user: `check --strict` says so;
- `{name: alice, os_user: alice}`: the approval is by `alice`, and the kernel uid of the
  approving process must be alice's (the hard guarantee when agents have their own user);
- `{name: alice, ssh_key: "ssh-ed25519 AAAA..."}`: the approval carries alice's OpenSSH
  signature over its payload (engine.approvals.sshsig). Both keys: both checks.
Checked when the approval is given (`admit`) and again under the fence (`recheck`).
"""

from __future__ import annotations

import os
import pwd
import uuid
from dataclasses import dataclass

from engine.approvals import sshsig
from engine.codec.timefmt import now_iso, parse_iso
from engine.errors import Refused
from engine.ledger.model import Approval, Approver, Ledger


def _same(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and a.strip().casefold() == b.strip().casefold()


@dataclass(frozen=True)
class Signed:
    """A signed approval payload, made before the ledger's transaction (a person may have
    to touch a key): the payload text and its armored signature."""

    payload: str
    sig: str


def verified_entry(ledger: Ledger, name: str) -> Approver | None:
    """The verified approver entry named `name` (the `--as` name), or None."""
    return next((a for a in ledger.approvers or [] if isinstance(a, Approver) and _same(a.name, name)), None)


def plain_names(ledger: Ledger) -> list[str]:
    return [a for a in ledger.approvers or [] if isinstance(a, str)]


def how(entry: Approver | None) -> str:
    """What an approval by `entry` is verified by: none | os_user | ssh_key | os_user+ssh_key."""
    if entry is None:
        return "none"
    return "+".join(kind for kind, on in (("os_user", entry.os_user), ("ssh_key", entry.ssh_key)) if on) or "none"


def uid_is(user: str, uid: int | None = None) -> str | None:
    """None when the kernel uid of this process (or `uid`) is `user`'s; else why not."""
    uid = os.getuid() if uid is None else uid
    try:
        wanted = pwd.getpwnam(user).pw_uid
    except KeyError:
        return f"os_user {user!r} is no user on this host"
    if wanted != uid:
        try:
            running = pwd.getpwuid(uid).pw_name
        except KeyError:
            running = str(uid)
        return f"the approving process runs as uid {uid} ({running}), not {user}'s uid {wanted}"
    return None


def admit(ledger: Ledger, who_name: str, who_user: str, signed: Signed | None, expect: dict) -> tuple[str, str]:
    """May this person approve now? Returns (the approver's name, how it was verified);
    raises Refused saying why not. `expect`: the payload fields a signature must carry."""
    if ledger.approvers is None:
        return who_name, "none"
    entry = verified_entry(ledger, who_name)
    if entry is None:
        if any(_same(who_user, n) for n in plain_names(ledger)):
            return who_name, "none"
        names = ", ".join(a if isinstance(a, str) else a.name for a in ledger.approvers) or "none"
        raise Refused(f"OS user {who_user!r} is not in this ledger's approvers ({names}), nor is {who_name!r}; "
                      "a verified approver names themselves with --as NAME", title="Not an approver")
    if entry.os_user:
        why = uid_is(entry.os_user)
        if why:
            raise Refused(f"approver {entry.name} must approve as OS user {entry.os_user}: {why}", title="Not that person")
    if entry.ssh_key:
        if signed is None:
            raise Refused(f"approver {entry.name} signs approvals (ssh_key): run `handoff approve` with --key FILE, "
                          "or with SSH_AUTH_SOCK set to an agent holding that key", title="Signature needed")
        why = signature_problem(signed.payload, signed.sig, entry, expect)
        if why:
            raise Refused(f"approver {entry.name}: {why}; nothing was approved", title="Bad signature")
    return entry.name, how(entry)


def signature_problem(text: str | None, sig: str | None, entry: Approver, expect: dict) -> str | None:
    """Why `sig` over `text` is not `entry`'s approval of exactly `expect`, or None."""
    if not text or not sig:
        return "the approval carries no signature"
    fields = sshsig.parse_payload(text)
    if fields is None:
        return "the signed payload is not an approval payload"
    for key, want in expect.items():
        if fields.get(key) != want:
            return f"the signature is over {key} {fields.get(key)!r}, not {want!r}"
    return sshsig.verify(text, sig, entry.ssh_key or "")


def recheck(ledger: Ledger, name: str, approval: Approval) -> str | None:
    """Under the fence: why `approval` no longer stands for a verified approver, or None."""
    if ledger.approvers is None:
        return None
    entry = verified_entry(ledger, approval.by)
    if entry is None:
        if any(_same(approval.user, n) for n in plain_names(ledger)):
            return None
        return f"{approval.by} (OS user {approval.user}) is not in this ledger's approvers"
    if entry.os_user and not _same(approval.user, entry.os_user):
        return f"approver {entry.name} approves as OS user {entry.os_user}, but this approval ran as {approval.user}"
    if entry.os_user and "os_user" not in (approval.verified or ""):
        return f"approver {entry.name}'s uid was not verified when this approval was given"
    if entry.ssh_key:
        why = signature_problem(approval.signed, approval.sig, entry, expected(ledger, name, approval))
        if why:
            return f"approver {entry.name}: {why}"
    return None


def expected(ledger: Ledger, name: str, approval: Approval) -> dict:
    """The payload fields an approval's signature must carry (all but the revision seen)."""
    return {"ledger": ledger.id, "target": name, "step": approval.step, "hash": approval.hash,
            "checkpoint": approval.checkpoint, "at": approval.at, "approver": approval.by}


def admit_signed(ledger: Ledger, name: str, who_name: str, who_user: str, step: str, digest: str, checkpoint: str | None,
                 signed: Signed | None) -> tuple[str, str, str]:
    """(approver name, how verified, time) for an approval of `step` on `name` (hash
    `digest`) now, or Refused: `admit`, plus a signature's freshness and single use."""
    at = now_iso()
    fields = (sshsig.parse_payload(signed.payload) or {}) if signed else {}
    # A ledger with no id yet takes the one its first signed approval names (engine.approvals.signing).
    new_id = fields.get("ledger") if ledger.id is None and _is_uuid(fields.get("ledger")) else None
    expect = {"ledger": ledger.id or new_id, "target": name, "step": step, "hash": digest, "checkpoint": checkpoint}
    by, verified = admit(ledger, who_name, who_user, signed, expect)
    if signed is None:
        return by, verified, at
    age = (parse_iso(at) or 0) - (parse_iso(fields.get("at")) or 0)
    if not 0 <= age <= SIGNED_FRESH or not isinstance(fields.get("revision"), int) or fields["revision"] > ledger.revision:
        raise Refused(f"the signature was made at {fields.get('at')} for revision {fields.get('revision')}; an approval "
                      f"signature is good for {SIGNED_FRESH:.0f}s and only for a revision already written: sign again",
                      title="Stale signature")
    if any(a.sig == signed.sig for a in ledger.targets[name].approvals):
        raise Refused("this signature was already given for an approval; sign again", title="Signature reused")
    if new_id:
        ledger.id = new_id
    return by, verified, fields["at"]


def _is_uuid(text: object) -> bool:
    try:
        return isinstance(text, str) and str(uuid.UUID(text)) == text
    except ValueError:
        return False


SIGNED_FRESH = 600.0  # seconds a signature may take from signing to recording: never a replay of an old one
