"""The kernel's word that an approval was spent: a file beside a file ledger, owned by the
user whose process started the step, that no other user can take away.

The approval's own `used_at`, the journal's `step_start` and its index are files anyone who
may write the ledger's folder can rewrite; the high-water marks (engine.store.highwater)
are outside it but per user, so the next on-call engineer's session, under their own OS
user, has not seen a step the last one ran. So, right after the journal's `step_start` and
before it spawns an irreversible step, a process leaves `<ledger>.spent-<uid>/<mark>`: a
folder of its uid's (0755) in the ledger's own folder, holding a file naming the intent.

Nobody else can take it away. The file is in a folder only its owner may write. The folder
holds a file, so it cannot be removed, and it cannot be moved out of the ledger's folder: a
folder changes parent only with write permission on itself (its `..`). Whoever may write the
ledger's folder may rename it there, so every folder in the ledger's folder is looked in,
whatever its name. (In the sticky proof folder, `<ledger>.attest/`, a mark could be carried
away with the whole proof folder, which takes the ledger folder's permissions.)

Before an approval authorises a spawn, no such mark may exist: another user's session used
it. A withdrawal (`handoff unapprove`, an approval replaced as stale) leaves the same mark,
its token WITHDRAWN: written back into the ledger, the approval stays withdrawn for every
user. A mark an agent makes itself only refuses an approval (a person approves again).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from typing import Any

from engine.codec.timefmt import now_iso
from engine.ledger.model import Approval

WITHDRAWN = "withdrawn"  # the token of a mark that says the approval was taken back (`handoff unapprove`, replaced)
SUFFIX = ".spent-"  # <ledger>.spent-<uid>/: each user's folder of marks
_MAX = 4096


def mark_name(target: str, approval: Approval) -> str:
    """The name of `approval`'s mark: what an `unapproval` record names of it too (target, step,
    hash, who, when), so a withdrawal is marked from its record alone."""
    fields = {"target": target, "step": approval.step, "hash": approval.hash, "by": approval.by, "at": approval.at}
    return "spent-" + hashlib.sha256(json.dumps(fields, sort_keys=True).encode("utf-8")).hexdigest()[:40]


def witness(kind_token: str | None, who: str) -> str:
    """How a mark is named to people: a spent mark, or a mark that the approval was withdrawn."""
    return f"a mark of {who}'s that it was withdrawn" if str(kind_token or "").startswith(WITHDRAWN) else f"a spent mark of {who}'s"


def _unknown(why: str) -> dict[str, Any]:
    """A mark that cannot be ruled out: it refuses the approval as one would."""
    return {"ts": "?", "actor": "?", "token": None, "witness": why}


def spent(ledger_path: str, target: str, approval: Approval) -> dict[str, Any] | None:
    """The mark that `approval` of `target` was spent or withdrawn ({"ts", "actor", "token",
    "witness"}), in any folder in the ledger's folder; None when there is none."""
    folder = os.path.dirname(os.path.realpath(ledger_path))
    name = mark_name(target, approval)
    try:
        with os.scandir(folder) as entries:
            folders = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
    except OSError as err:
        return _unknown(f"the ledger's folder {folder} cannot be listed ({err.strerror}), so no spent mark can be ruled out")
    for sub in folders:
        path = os.path.join(folder, sub, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except PermissionError:
            if os.path.lexists(path):  # there, and not to be read: it is there
                return _unknown(f"a spent mark at {path} that cannot be read")
            continue
        except OSError as err:  # a link where a mark would be, a FIFO: it is there
            return _unknown(f"a spent mark at {path} ({err.strerror})")
        with os.fdopen(fd, "rb") as fh:
            owner = os.fstat(fh.fileno()).st_uid
            try:
                said = json.loads(fh.read(_MAX))
            except ValueError:
                said = {}
        said = said if isinstance(said, dict) else {}
        return {"ts": said.get("at", "?"), "actor": said.get("user", "?"), "token": said.get("token"),
                "witness": witness(said.get("token"), f"uid {owner}") + f" ({sub}/{name})"}
    return None


def spend(ledger_path: str, target: str, approval: Approval, token: str, user: str) -> str | None:
    """Right before the spawn of the intent `token` (or at a withdrawal, token WITHDRAWN...):
    mark `approval` so, as this process's uid. Why it may not be (another's mark is there), or
    None. OSError when the mark cannot be made (the caller refuses the spawn, or says so)."""
    found = spent(ledger_path, target, approval)
    if found is not None and found.get("token") != token:
        return (f"the approval of {approval.step} by {approval.by} at {approval.at} was already used or withdrawn "
                f"({found['witness']}, {found['actor']} at {found['ts']}); it never authorises another run: a person "
                "approves again")
    if found is not None:
        return None  # this intent's own mark (an earlier spawn of it: an `until` step, a retry here)
    uid = os.geteuid()
    mine = os.path.realpath(ledger_path) + f"{SUFFIX}{uid}"
    try:
        os.mkdir(mine, 0o755)
        os.chmod(mine, 0o755)  # whatever the umask: others read it, only its owner writes it
    except FileExistsError:
        pass
    st = os.lstat(mine)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or stat.S_IMODE(st.st_mode) & 0o022:
        return (f"{mine} is not a folder of uid {uid}'s that only it may write, so this process's spent mark could be "
                f"taken away: remove it (`rm -r {mine}`), then run again")
    body = json.dumps({"token": token, "user": user, "at": now_iso(), "target": target, "step": approval.step,
                       "approval_at": approval.at, "by": approval.by}, sort_keys=True).encode("utf-8")
    fd = os.open(os.path.join(mine, mark_name(target, approval)), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                 0o644)
    try:
        os.write(fd, body)
        os.fsync(fd)
    finally:
        os.close(fd)
    dfd = os.open(mine, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    return None
