"""The host's approvers table: `/etc/handoff-tui/approvers.yaml`, owned by root.

A ledger's own `approvers:` table is part of a file the agent's OS user can write where
agents have their own user and write access to the ledger's folder: it could map a name to
its own login, key or Slack id and then approve under that name. When this file exists, it,
not the ledger's table, says who may approve and how each is verified, for every ledger on
the host (same shape: `approvers: [alice, {name: bob, os_user: bob, ssh_key: ...}]`), and
`slack: {os_user: NAME}` names the OS user `handoff slack` runs as: only that user's
process records an approval from Slack, and for a file ledger leaves the file of that
user's that proves it (engine.approvals.attest). A table with no such entry refuses
approvals from Slack: nothing else can tell the Slack process from an agent.

It must be owned by root and writable by root only, and every folder above it root's and
not open to others' renames (not writable by group or others, or sticky, as /tmp is);
otherwise, or when the path exists but cannot be read, nothing is approved and the error
says how to fix it. A host that keeps it elsewhere links this path to it (the link's target
is what is checked, and what is read: one open, checked by its descriptor).
`HANDOFF_APPROVERS_FILE` names another path where this one does not exist: for tests only,
since an agent chooses its own environment.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Any

from engine.errors import HandoffError

PATH = "/etc/handoff-tui/approvers.yaml"
ENV = "HANDOFF_APPROVERS_FILE"



@dataclass(frozen=True)
class HostTable:
    """What the host's table says: its approvers (plain names and Approver entries), and the
    OS user `handoff slack` runs as (None: not named, so no approval from Slack stands)."""

    approvers: list[Any]
    slack_os_user: str | None


_READ: dict[str, tuple[tuple, HostTable]] = {}  # path -> (its identity when read, its table)


class HostTableRefused(HandoffError):
    """The host's approvers table exists but cannot be trusted or read: nothing is approved."""

    title = "Host approvers table"
    exit_code = 2


def path() -> str | None:
    """The host table's path, or None when there is none. One that exists but cannot be
    looked at (a folder made 0700, a link to nowhere) is refused, never taken for none."""
    try:
        os.stat(PATH)
        return PATH
    except FileNotFoundError:
        if os.path.islink(PATH):
            raise HostTableRefused(f"{PATH}: the host's approvers table is a link to nothing; nothing was approved: "
                                   "point it at the table, or remove it") from None
    except OSError as err:
        raise _unreadable(PATH, PATH, err) from None
    from engine.settings import text

    return text(ENV)


def _unreadable(where: str, at: str, err: OSError) -> HostTableRefused:
    return HostTableRefused(f"{where}: the host's approvers table cannot be read ({err.strerror} at {at}); nothing was "
                            f"approved: every user who approves or runs steps must be able to read it (`sudo chmod a+rX {at}`)")


def _refuse(where: str, at: str, what: str, st: os.stat_result) -> HostTableRefused:
    return HostTableRefused(
        f"{where}: the host's approvers table's {what} {at} must be owned by root and writable by root only "
        f"(it is uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o}), or anyone could make themselves an "
        f"approver; nothing was approved: `sudo chown root: {at} && sudo chmod go-w {at}`")


def _open(where: str) -> tuple[int, os.stat_result]:
    """The table opened (its descriptor and what fstat says of it), once every folder above
    it and the file itself were found to be root's alone."""
    real = os.path.realpath(where)  # a link's target is what is checked, and what is read
    folder = os.path.dirname(real)
    while True:
        try:
            st = os.stat(folder)
        except OSError as err:
            raise _unreadable(where, folder, err) from None
        if st.st_uid != 0 or (st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX):
            raise _refuse(where, folder, "folder", st)
        if os.path.dirname(folder) == folder:
            break
        folder = os.path.dirname(folder)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as err:
        raise _unreadable(where, real, err) from None
    st = os.fstat(fd)
    if st.st_uid != 0 or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise _refuse(where, real, "file", st)
    return fd, st


def table() -> list[Any] | None:
    """The host's approvers (plain names and Approver entries), or None when there is no host table."""
    found = read()
    return found.approvers if found is not None else None


def read() -> HostTable | None:
    """The host's table, or None when there is none (HostTableRefused: one that cannot be trusted or read)."""
    where = path()
    if where is None:
        return None
    fd, st = _open(where)
    identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    kept = _READ.get(where)
    if kept is not None and kept[0] == identity:
        os.close(fd)
        return kept[1]
    import yaml
    from pydantic import TypeAdapter, ValidationError

    from engine.ledger.model import Approver

    try:
        with os.fdopen(fd, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
        entries = TypeAdapter(list[str | Approver]).validate_python((data or {}).get("approvers"))
        slack = data.get("slack")
        if slack is not None and not (isinstance(slack, dict) and set(slack) == {"os_user"}
                                      and isinstance(slack["os_user"], str) and slack["os_user"].strip()):
            raise ValueError(f"`slack:` is {slack!r}, not `slack: {{os_user: NAME}}`")
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ValidationError, AttributeError, ValueError) as err:
        first = str(err).splitlines()[0]
        raise HostTableRefused(f"{where}: the host's approvers table does not read as `approvers: [...]` with an "
                               f"optional `slack: {{os_user: NAME}}` ({first}); nothing was approved: fix it") from None
    found = HostTable(entries, slack["os_user"].strip() if slack else None)
    _READ[where] = (identity, found)
    return found
