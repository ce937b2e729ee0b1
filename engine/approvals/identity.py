"""Who is acting: the OS login user, and the name given with --as."""

from __future__ import annotations

import os
import pwd


def os_user() -> str:
    """The login user of this process (not $USER, which anyone can set)."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def hostname() -> str:
    """This host's name: what gethostname(2) gives, without importing socket (a Claude Code
    hook writes it in a heartbeat on every tool call)."""
    return os.uname().nodename
