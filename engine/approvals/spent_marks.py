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
user; `handoff unapprove` also leaves `upto-...`, the time before which every approval of the
step is withdrawn. A mark an agent makes itself only refuses an approval (a person approves
again). engine.store.pg_attest keeps the same marks as rows, read by the same rules here.
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
ALWAYS = "9999"  # the time of a withdrawal mark that cannot be read: every approval is before it (it only blocks)
_MAX = 4096


def digest(prefix: str, fields: dict[str, str]) -> str:
    """A mark's name: `prefix` and a digest of what it names."""
    return prefix + hashlib.sha256(json.dumps(fields, sort_keys=True).encode("utf-8")).hexdigest()[:40]


def mark_name(target: str, approval: Approval) -> str:
    """The name of `approval`'s mark: what an `unapproval` record names of it too (target, step,
    hash, who, when), so a withdrawal is marked from its record alone."""
    return digest("spent-", {"target": target, "step": approval.step, "hash": approval.hash, "by": approval.by,
                             "at": approval.at})


def until_name(target: str, step: str) -> str:
    """The name of the mark that every approval of `step` on `target` given before a time was withdrawn."""
    return digest("upto-", {"target": target, "step": step})


def refusing(found: list[dict[str, Any]], token: str | None) -> dict[str, Any] | None:
    """Of the marks `found` of one approval, the one that refuses it for the intent `token`
    (None: for any intent): a withdrawal's first, then any but that intent's own; or None."""
    withdrawn = [m for m in found if str(m.get("token") or "").startswith(WITHDRAWN)]
    others = [m for m in found if not (token is not None and m.get("own") and m.get("token") == token)]
    first = withdrawn or others
    return first[0] if first else None


def already(approval: Approval, mark: dict[str, Any]) -> str:
    """Why `approval` may not be spent: `mark` says it was, or that it was withdrawn."""
    return (f"the approval of {approval.step} by {approval.by} at {approval.at} was already used or withdrawn "
            f"({mark['witness']}, {mark['actor']} at {mark['ts']}); it never authorises another run: a person approves "
            "again")


def _places(ledger_path: str) -> list[str]:
    """The folders a mark of this ledger's may be in: the ledger's own and, where its path is a
    symbolic link, each folder the link passes through on its way to the file. A ledger moved
    behind a link (its files may be moved, the marks' folders may not) leaves the marks made
    beside it where they were."""
    places, path = [], os.path.abspath(ledger_path)
    for _ in range(40):  # the kernel's own limit on links followed
        places.append(os.path.realpath(os.path.dirname(path)))
        if not os.path.islink(path):
            break
        path = os.path.join(os.path.dirname(path), os.readlink(path))
    places.append(os.path.dirname(os.path.realpath(ledger_path)))
    return list(dict.fromkeys(places))


def _folders(ledger_path: str) -> list[str]:
    """Every folder in each of `_places`, whatever its name; OSError when one cannot be listed."""
    found = []
    for place in _places(ledger_path):
        with os.scandir(place) as entries:
            found += sorted(os.path.join(place, e.name) for e in entries if e.is_dir(follow_symlinks=False))
    return found


def _own_folder(ledger_path: str) -> str:
    """This process's uid's folder of marks (made 0755 if need be); PermissionError when what is
    there is not a folder only that uid may write (its marks could be taken away)."""
    uid = os.geteuid()
    mine = os.path.realpath(ledger_path) + f"{SUFFIX}{uid}"
    try:
        os.mkdir(mine, 0o755)
        os.chmod(mine, 0o755)  # whatever the umask: others read it, only its owner writes it
    except FileExistsError:
        pass
    st = os.lstat(mine)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or stat.S_IMODE(st.st_mode) & 0o022:
        raise PermissionError(13, f"{mine} is not a folder of uid {uid}'s that only it may write, so this process's "
                                  f"marks could be taken away: remove it (`rm -r {mine}`), then run again")
    return mine


def _write(folder: str, name: str, body: bytes, *, new: bool) -> None:
    """`body` as `folder`/`name`, fsynced with the folder. `new`: made with O_EXCL, never over
    another (a mark cut short by a crash reads as none it can be, and refuses); else written
    beside and renamed over the old one, whole or not at all."""
    path = os.path.join(folder, name) if new else os.path.join(folder, f".{name}.{os.getpid()}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        os.write(fd, body)
        os.fsync(fd)
    finally:
        os.close(fd)
    if not new:
        os.replace(path, os.path.join(folder, name))
    dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def witness(kind_token: str | None, who: str) -> str:
    """How a mark is named to people: a spent mark, or a mark that the approval was withdrawn."""
    return f"a mark of {who}'s that it was withdrawn" if str(kind_token or "").startswith(WITHDRAWN) else f"a spent mark of {who}'s"


def _unknown(why: str) -> dict[str, Any]:
    """A mark that cannot be ruled out: it refuses the approval as one would."""
    return {"ts": "?", "actor": "?", "token": None, "witness": why}


def marks(ledger_path: str, target: str, approval: Approval) -> list[dict[str, Any]]:
    """Every mark of `approval` of `target` in the ledger's folder ({"ts", "actor", "token",
    "witness", "own"}), wherever and by whomever made: any one of them refuses the approval,
    except this process's own (`own`: a regular file in its own uid's folder). What is there
    and cannot be read as a mark (a FIFO, a link, an unreadable file) is one that cannot be
    ruled out. Read once per look: a file that says something else on each read (a FIFO)
    is never one."""
    name, uid = mark_name(target, approval), os.geteuid()
    mine = os.path.realpath(ledger_path) + f"{SUFFIX}{uid}"
    try:
        folders = _folders(ledger_path)
    except OSError as err:
        return [_unknown(f"the ledger's folder cannot be listed ({err.strerror}), so no spent mark can be ruled out")]
    found = []
    for sub in folders:
        path = os.path.join(sub, name)
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as err:
            found.append(_unknown(f"a spent mark at {path} ({err.strerror})"))
            continue
        if not stat.S_ISREG(st.st_mode):
            found.append(_unknown(f"something that is no file where a spent mark would be ({sub}/{name})"))
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as fh:
                held = os.fstat(fh.fileno())
                said = json.loads(fh.read(_MAX)) if stat.S_ISREG(held.st_mode) else None
        except (OSError, ValueError, TypeError):
            said = None
        if not isinstance(said, dict):
            found.append(_unknown(f"a spent mark at {path} that does not read as one"))
            continue
        found.append({"ts": said.get("at", "?"), "actor": said.get("user", "?"), "token": said.get("token"),
                      "witness": witness(said.get("token"), f"uid {held.st_uid}") + f" ({sub}/{name})",
                      "own": sub == mine and held.st_uid == uid})
    return found


def spent(ledger_path: str, target: str, approval: Approval, token: str | None = None) -> dict[str, Any] | None:
    """The mark that refuses `approval` of `target` for the intent `token` (`refusing`), or None."""
    return refusing(marks(ledger_path, target, approval), token)


def spend(ledger_path: str, target: str, approval: Approval, token: str, user: str) -> str | None:
    """Right before the spawn of the intent `token` (or at a withdrawal, token WITHDRAWN...):
    mark `approval` so, as this process's uid. Why it may not be (another's mark is there), or
    None. OSError when the mark cannot be made (the caller refuses the spawn, or says so)."""
    found = marks(ledger_path, target, approval)
    refused = refusing(found, token)
    if refused is not None:
        return already(approval, refused)
    if found:
        return None  # this intent's own mark (an earlier spawn of it: an `until` step, a retry here)
    body = json.dumps({"token": token, "user": user, "at": now_iso(), "target": target, "step": approval.step,
                       "approval_at": approval.at, "by": approval.by}, sort_keys=True).encode("utf-8")
    _write(_own_folder(ledger_path), mark_name(target, approval), body, new=True)
    return None


def withdraw_until(ledger_path: str, target: str, step: str, until: str) -> None:
    """`handoff unapprove`: every approval of `step` (`*`: of any step) on `target` given before
    `until` is withdrawn, whatever the ledger said each one was when it was taken back (an agent
    could have changed the copy a person withdrew). This process's uid's mark; OSError when it
    cannot be made."""
    mine = _own_folder(ledger_path)
    name = until_name(target, step)
    earlier = _until_in(os.path.join(mine, name))
    if earlier is None or earlier < until:
        _write(mine, name, json.dumps({"until": until, "target": target, "step": step}).encode("utf-8"), new=False)


def _until_in(path: str) -> str | None:
    """The time a regular file's withdrawal mark says, or None (none there, or none to read)."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return ALWAYS  # something else where a mark would be
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            said = json.loads(fh.read(_MAX))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError):
        return ALWAYS
    return str(said.get("until")) if isinstance(said, dict) and said.get("until") else ALWAYS


def withdrawn_until(ledger_path: str, target: str, step: str) -> tuple[str, str] | None:
    """(the latest time until which approvals of `step` on `target` were withdrawn, whose mark
    says so), over every folder in the ledger's folder and `*` (any step); None when none was."""
    try:
        folders = _folders(ledger_path)
    except OSError as err:
        return (ALWAYS, f"the ledger's folder cannot be listed ({err.strerror})")
    best: tuple[str, str] | None = None
    for sub in folders:
        for name in (until_name(target, step), until_name(target, "*")):
            until = _until_in(os.path.join(sub, name))
            if until is not None and (best is None or until > best[0]):
                try:
                    owner = os.lstat(os.path.join(sub, name)).st_uid
                except OSError:
                    owner = -1
                best = (until, f"a mark of uid {owner}'s that approvals given until then were withdrawn ({sub}/{name})")
    return best
