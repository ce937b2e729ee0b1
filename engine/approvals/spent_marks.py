"""The kernel's word that an approval was spent: a file beside a file ledger, owned by the
user whose process started the step, that no other user can take away.

The approval's own `used_at`, the journal's `step_start` and its index are files anyone who
may write the ledger's folder can rewrite; the high-water marks (engine.store.highwater)
are outside it but per user, so the next on-call engineer's session, under their own OS
user, has not seen a step the last one ran. So, right before it spawns an irreversible
step, a process leaves `<ledger>.attest/spent-<uid>/<proof>` (its uid's folder, 0755, in
the sticky proof folder: engine.approvals.attest), naming the intent. Nobody else can
remove it: a file in a folder of another user's, a folder that is not empty, in a sticky
folder its owner may rename but not move out. Before an approval authorises a spawn, no
such mark may exist in any `spent-*` folder there: another user's session used it.

A withdrawal (`handoff unapprove`, an approval replaced as stale) leaves the same mark, its
token WITHDRAWN: copied back into the ledger, the approval stays withdrawn for every user.
A mark an agent makes itself only refuses an approval (a person approves again); a proof
folder that is a link, or a uid's folder that is not that uid's, refuses every spawn.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from typing import Any

from engine.approvals.attest import SUFFIX
from engine.codec.timefmt import now_iso
from engine.ledger.model import Approval

WITHDRAWN = "withdrawn"  # the token of a mark that says the approval was taken back (`handoff unapprove`, replaced)

_PREFIX = "spent-"
_MAX = 4096


def _folder(ledger_path: str) -> str:
    return os.path.realpath(ledger_path) + SUFFIX


def mark_name(target: str, approval: Approval) -> str:
    """The name of `approval`'s mark: what an `unapproval` record names of it too (target, step,
    hash, who, when), so a withdrawal is marked from its record alone."""
    fields = {"target": target, "step": approval.step, "hash": approval.hash, "by": approval.by, "at": approval.at}
    return "spent-" + hashlib.sha256(json.dumps(fields, sort_keys=True).encode("utf-8")).hexdigest()[:40]


def witness(kind_token: str | None, who: str) -> str:
    """How a mark is named to people: a spent mark, or a mark that the approval was withdrawn."""
    return f"a mark of {who}'s that it was withdrawn" if str(kind_token or "").startswith(WITHDRAWN) else f"a spent mark of {who}'s"


def spent(ledger_path: str, target: str, approval: Approval) -> dict[str, Any] | None:
    """The mark that `approval` of `target` was spent ({"ts", "actor", "token", "witness"}), or None."""
    folder = _folder(ledger_path)
    name = mark_name(target, approval)
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return {"ts": "?", "actor": "?", "token": None,
                "witness": f"the proof folder {folder} is not a folder (a link?), so no spent mark can be trusted"}
    try:
        with os.scandir(folder) as entries:
            mine = [e for e in entries if e.name.startswith(_PREFIX) and e.is_dir(follow_symlinks=False)]
    except OSError as err:
        return {"ts": "?", "actor": "?", "token": None,
                "witness": f"the proof folder {folder} cannot be read ({err.strerror}), so no spent mark can be ruled out"}
    for entry in mine:
        path = os.path.join(entry.path, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            continue
        except OSError as err:  # a link, or a mark that cannot be read: it is there
            return {"ts": "?", "actor": "?", "token": None, "witness": f"a spent mark at {path} ({err.strerror})"}
        with os.fdopen(fd, "rb") as fh:
            owner = os.fstat(fh.fileno()).st_uid
            try:
                said = json.loads(fh.read(_MAX))
            except ValueError:
                said = {}
        said = said if isinstance(said, dict) else {}
        return {"ts": said.get("at", "?"), "actor": said.get("user", "?"), "token": said.get("token"),
                "witness": witness(said.get("token"), f"uid {owner}") + f" ({os.path.basename(entry.path)}/{name})"}
    return None


def spend(ledger_path: str, target: str, approval: Approval, token: str, user: str) -> str | None:
    """Right before the spawn of the intent `token`: mark `approval` spent, as this process's
    uid. Why it may not be spent (another intent's mark is there), or None. OSError when the
    mark cannot be made (the caller refuses the spawn)."""
    found = spent(ledger_path, target, approval)
    if found is not None and found.get("token") != token:
        return (f"the approval of {approval.step} by {approval.by} at {approval.at} was already used or withdrawn "
                f"({found['witness']}, {found['actor']} at {found['ts']}); it never authorises another run: a person "
                "approves again")
    folder = _folder(ledger_path)
    try:
        os.mkdir(folder, 0o700)
        # Whoever may write the ledger's folder may add a mark; each stays its owner's.
        os.chmod(folder, stat.S_ISVTX | (stat.S_IMODE(os.stat(os.path.dirname(folder)).st_mode) & 0o777))
    except FileExistsError:
        pass
    uid = os.geteuid()
    mine = os.path.join(folder, f"{_PREFIX}{uid}")
    try:
        os.mkdir(mine, 0o755)
    except FileExistsError:
        pass
    st = os.lstat(mine)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or stat.S_IMODE(st.st_mode) & 0o022:
        return (f"{mine} is not a folder of uid {uid}'s that only it may write, so this process's spent mark could be "
                f"taken away: remove it (`rm -r {mine}`), then run again")
    name = mark_name(target, approval)
    if found is not None:
        return None  # this intent's own mark (an earlier spawn of it: an `until` step, a retry here)
    body = json.dumps({"token": token, "user": user, "at": now_iso(), "target": target, "step": approval.step,
                       "approval_at": approval.at, "by": approval.by}, sort_keys=True).encode("utf-8")
    fd = os.open(os.path.join(mine, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
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
