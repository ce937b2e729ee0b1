"""The host's approvers table: `/etc/handoff-tui/approvers.yaml`, owned by root.

A ledger's own `approvers:` table is part of a file the agent's OS user can write where
agents have their own user and write access to the ledger's folder: it could map a name to
its own login, key or Slack id and then approve under that name. When this file exists, it,
not the ledger's table, says who may approve and how each is verified, for every ledger on
the host (same shape: `approvers: [alice, {name: bob, os_user: bob, ssh_key: ...}]`). It must
be owned by root and writable by root only, as must its folder; otherwise nothing is
approved and the error says how to fix it. `HANDOFF_APPROVERS_FILE` names another path
(tests, hosts that keep it elsewhere), honoured only where the default path does not exist.
"""

from __future__ import annotations

import os
import stat
from typing import Any

from engine.errors import HandoffError

PATH = "/etc/handoff-tui/approvers.yaml"
ENV = "HANDOFF_APPROVERS_FILE"

_READ: dict[str, tuple[tuple, list[Any]]] = {}  # path -> (its identity when read, its table)


class HostTableRefused(HandoffError):
    """The host's approvers table exists but cannot be trusted or read: nothing is approved."""

    title = "Host approvers table"
    exit_code = 2


def path() -> str | None:
    """The host table's path, or None when there is none."""
    if os.path.exists(PATH):
        return PATH
    return os.environ.get(ENV) or None


def _trusted(where: str) -> None:
    real = os.path.realpath(where)  # a link's target, and the folder it is in, are what can be changed
    for at, what in ((real, "file"), (os.path.dirname(real), "folder")):
        try:
            st = os.stat(at)
        except OSError as err:
            raise HostTableRefused(f"{where}: the host's approvers table cannot be read ({err.strerror}); nothing was "
                                   f"approved: fix it or unset {ENV}") from None
        if st.st_uid != 0 or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise HostTableRefused(
                f"{where}: the host's approvers table's {what} {at} must be owned by root and writable by root only "
                f"(it is uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o}), or anyone could make themselves an "
                f"approver; nothing was approved: `sudo chown root: {at} && sudo chmod go-w {at}`")


def table() -> list[Any] | None:
    """The host's approvers (plain names and Approver entries), or None when there is no host table."""
    where = path()
    if where is None:
        return None
    _trusted(where)
    st = os.stat(where)
    identity = (st.st_ino, st.st_size, st.st_mtime_ns)
    kept = _READ.get(where)
    if kept is not None and kept[0] == identity:
        return kept[1]
    import yaml
    from pydantic import TypeAdapter, ValidationError

    from engine.ledger.model import Approver

    try:
        with open(where, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
        entries = TypeAdapter(list[str | Approver]).validate_python((data or {}).get("approvers"))
    except (OSError, yaml.YAMLError, ValidationError, AttributeError) as err:
        first = str(err).splitlines()[0]
        raise HostTableRefused(f"{where}: the host's approvers table does not read as `approvers: [...]` ({first}); "
                               "nothing was approved: fix it") from None
    _READ[where] = (identity, entries)
    return entries
