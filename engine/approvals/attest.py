"""The kernel's word that an `os_user` approver's own process gave an approval.

The approving process checks its uid (engine.approvals.approvers.admit), but whoever runs a
process controls it: an agent with its own OS user and write access to the ledger's folder
could run the engine's code with that check patched out, and write an approval saying
`user: alice, verified: os_user` with its journal record. What it cannot do is make a file
owned by alice's uid (only root can give a file away). So an `os_user` approval of a file
ledger leaves one: `<ledger>.attest/<digest>`, created by the approving process (owned by
its uid, mode 0644, never over an existing file), naming the target, step, hash, time,
approver and OS user. Before the step starts (engine.approvals.authority) the file
must be there, a regular file owned by the approver's OS user, saying exactly that.

The folder is sticky (as /tmp is): anyone who may write the ledger's folder may add a file,
and only its owner may remove or rename it. Removing one refuses its approval (a person
approves again); no one but root can forge one. A PostgreSQL ledger keeps its proofs in its
database instead, as rows the database stamps with the recording role (engine.store.pg_attest).
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import stat

from engine.ledger.model import Approval

SUFFIX = ".attest"


def _fields(target: str, approval: Approval) -> dict[str, str]:
    return {"target": target, "step": approval.step, "hash": approval.hash,
            "at": approval.at, "by": approval.by, "user": approval.user}


def proof_of(target: str, approval: Approval) -> tuple[str, bytes]:
    """(the proof's name, what it says) for this approval: a file's name and bytes here, a
    row's key and body in PostgreSQL (engine.store.pg_attest)."""
    body = json.dumps(_fields(target, approval), sort_keys=True).encode("utf-8")
    return hashlib.sha256(body).hexdigest()[:40], body + b"\n"


def _where(ledger_path: str, target: str, approval: Approval) -> tuple[str, bytes]:
    """(the file's path, the bytes it holds) for this approval (the folder names the ledger)."""
    name, body = proof_of(target, approval)
    return os.path.join(os.path.realpath(ledger_path) + SUFFIX, name), body


def record(ledger_path: str, target: str, approval: Approval) -> None:
    """In the approving process, just after its approval is written: the file that proves it
    (OSError when it cannot be made: the caller says what that means)."""
    path, body = _where(ledger_path, target, approval)
    folder = os.path.dirname(path)
    try:
        os.mkdir(folder, 0o700)
        # Whoever may write the ledger's folder may add a proof; each stays its owner's.
        os.chmod(folder, stat.S_ISVTX | (stat.S_IMODE(os.stat(os.path.dirname(folder)).st_mode) & 0o777))
    except FileExistsError:
        pass
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except FileExistsError:
        st = os.lstat(path)  # the same approval made again within its second: this process's own file stands
        if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and _held(path, len(body)) == body:
            return
        raise
    try:
        os.fchmod(fd, 0o644)
        os.write(fd, body)
        os.fsync(fd)
    finally:
        os.close(fd)


def _held(path: str, size: int) -> bytes:
    """What the file at `path` holds, up to one byte past `size` (never through a link, never waiting on a FIFO)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        return fh.read(size + 1)


def problem(ledger_path: str, target: str, approval: Approval) -> str | None:
    """Why the kernel does not vouch for `approval` by OS user `approval.user` (None: it does)."""
    path, body = _where(ledger_path, target, approval)
    try:
        uid = pwd.getpwnam(approval.user).pw_uid
    except KeyError:
        return f"OS user {approval.user} does not exist on this host"
    try:
        st = os.lstat(path)
    except OSError:
        return (f"no file of {approval.user}'s proves this approval ({os.path.basename(os.path.dirname(path))}/"
                f"{os.path.basename(path)} is missing): {approval.by} approves again")
    if not stat.S_ISREG(st.st_mode):
        return f"the file that should prove this approval is not a regular file: {approval.by} approves again"
    if st.st_uid != uid:
        return (f"the file that should prove this approval is owned by uid {st.st_uid}, not a file of "
                f"{approval.user}'s (uid {uid}): {approval.by} approves again")
    try:
        held = _held(path, len(body))
    except OSError as err:
        return f"the file that proves this approval cannot be read ({err.strerror})"
    if held != body:
        return f"the file of {approval.user}'s at that place proves another approval: {approval.by} approves again"
    return None
