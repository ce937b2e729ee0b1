"""Which approvals were given by one person: by what proves who gave them, not by name.

Under `approvals: {count: N}` the N must be N people. A name (`--as`) proves nothing by
itself; what does is in the approvers table (engine.approvals.approvers): the OS user
whose uid was checked (a verified `os_user`, or a plain name, which is that login), the
`ssh_key` that signed, the Slack id. Two approvals that share any of these were given by
one person, whatever names they carry: `{name: alice, os_user: nobody}` and `{name: bob,
os_user: nobody}` are one login under two names, as are a plain `nobody` and `{name:
alice, os_user: nobody}`. Without a table nothing is proved and names are all there is.
"""

from __future__ import annotations

import base64
import binascii
import hashlib

from engine.ledger.model import Approval, Approver

Table = list[str | Approver] | None


def _fold(text: str) -> str:
    return text.strip().casefold()


def key_fingerprint(public_key: str) -> str:
    """`SHA256:...` as `ssh-keygen -l` shows it; the key text itself when it is not one."""
    parts = public_key.split()
    try:
        blob = base64.b64decode(parts[1], validate=True) if len(parts) > 1 else b""
    except (binascii.Error, ValueError):
        blob = b""
    if not blob:
        return public_key.strip()
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def entry_proofs(entry: Approver) -> set[str]:
    """What proves a verified entry's approvals: `OS user U`, `ssh key SHA256:...`, `Slack user T/U`."""
    out = set()
    if entry.os_user:
        out.add(f"OS user {_fold(entry.os_user)}")
    if entry.ssh_key:
        out.add(f"ssh key {key_fingerprint(entry.ssh_key)}")
    if entry.slack:
        out.add(f"Slack user {entry.slack}")
    return out


def proven_by(approvers: Table, approval: Approval) -> frozenset[str]:
    """The identities behind `approval`: its name always; with a table (`approvers`), the
    OS user a uid check or a plain login proved, the Slack id it came from, and what the
    table's entry for its name is proved by (the table's word on who that name is)."""
    out = {f"name {_fold(approval.by)}"}
    if approvers is None:
        return frozenset(out)
    if approval.via == "slack":
        ids = approval.slack or {}
        out.add(f"Slack user {ids.get('team')}/{ids.get('user')}")
    elif "os_user" in (approval.verified or "") and approval.user:
        out.add(f"OS user {_fold(approval.user)}")
    entry = None
    for a in approvers:
        if isinstance(a, str) and _fold(a) == _fold(approval.by):
            out.add(f"OS user {_fold(a)}")  # a plain name is that login
        elif isinstance(a, Approver) and _fold(a.name) == _fold(approval.by):
            entry = entry or a
    if entry is not None:
        out |= entry_proofs(entry)
    return frozenset(out)


def one_person(approvers: Table, a: Approval, b: Approval) -> str | None:
    """What shows `a` and `b` were given by one person (`OS user nobody`), or None."""
    shared = proven_by(approvers, a) & proven_by(approvers, b)
    return sorted(shared, key=lambda s: (s.startswith("name "), s))[0] if shared else None


def shared_proofs(approvers: Table) -> list[str]:
    """One sentence per identity that proves two entries of the table (`check --strict`):
    two names on one OS user, key or Slack id, or a plain login also some entry's os_user,
    which then count as one person under `count`."""
    if not approvers:
        return []
    names: dict[str, list[str]] = {}
    for a in approvers:
        proofs = {f"OS user {_fold(a)}"} if isinstance(a, str) else entry_proofs(a) if isinstance(a, Approver) else set()
        for proof in proofs:
            names.setdefault(proof, []).append(a if isinstance(a, str) else a.name)
    return [f"approvers {', '.join(who)} share {proof}: to the engine they are one person, so under `count` their "
            "approvals count once (a second is refused)" for proof, who in sorted(names.items()) if len(who) > 1]


def shared_names(approvers: Table) -> list[str]:
    """One sentence per approver name listed more than once (`check --strict`): an approval is
    admitted by what proves it (a Slack id, an OS user, a key), but found again by its name, which
    then means the first entry only (engine.approvals.approvers.verified_entry)."""
    entries: dict[str, list[str]] = {}
    for a in approvers or []:
        if isinstance(a, (str, Approver)):
            name = a if isinstance(a, str) else a.name
            proofs = {f"OS user {_fold(a)}"} if isinstance(a, str) else entry_proofs(a)
            entries.setdefault(_fold(name), []).append(", ".join(sorted(proofs)) or "nothing")
    return [f"approver {name} is listed {len(each)} times ({'; '.join(each)}): an approval is admitted by the entry "
            f"whose id proves it, but checked by its name, against the first entry only; give each entry its own name"
            for name, each in sorted(entries.items()) if len(each) > 1]
