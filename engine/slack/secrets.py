"""The Slack app's secrets: from the environment (Slack's usual names) or a 0600 file,
never from a ledger, and masked in everything the process prints or stores.

Names: SLACK_BOT_TOKEN (xoxb-, Web API), SLACK_APP_TOKEN (xapp-, Socket Mode only),
SLACK_SIGNING_SECRET (HTTP mode: verifies each request), SLACK_APP_ID (the app whose
requests are accepted, both modes). `--secrets FILE` reads `NAME=value` lines instead
(the environment wins per name); a file anyone but its owner may read is refused, and so
is one owned by another user than the process's (or root), or in a folder someone else may
write (as engine.approvals.host_table checks its table): whoever controls the file chooses
the signing secret that proves "Slack says alice approved".
HANDOFF_SLACK_API_URL points the Web API client elsewhere (default Slack's).
"""

from __future__ import annotations

import os
import pwd
import stat
from collections.abc import Mapping
from dataclasses import dataclass

from engine.errors import UsageError

NAMES = ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_ID")
DEFAULT_API_URL = "https://slack.com/api/"


@dataclass(frozen=True)
class Secrets:
    """What the process talks to Slack with. `repr` never shows a value."""

    bot_token: str
    app_token: str | None
    signing_secret: str | None
    app_id: str
    api_url: str

    def __repr__(self) -> str:
        return f"Secrets(app_id={self.app_id!r}, api_url={self.api_url!r}, tokens=***)"

    def mask(self, text: str) -> str:
        """`text` with every secret replaced by `***` (an error from the SDK may quote one)."""
        for value in (self.bot_token, self.app_token, self.signing_secret):
            if value:
                text = text.replace(value, "***")
        return text


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _trusted(uid: int) -> bool:
    return uid in (os.geteuid(), 0)


def _check_folders(path: str, real: str) -> None:
    """Every folder above the file: owned by this user or root, and not open to others'
    renames (not writable by group or others, or sticky, as /tmp is)."""
    folder = os.path.dirname(real)
    while True:
        st = os.stat(folder)
        if not _trusted(st.st_uid) or (st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX):
            fix = f"chmod go-w {folder}" if _trusted(st.st_uid) else f"chown {_user(os.geteuid())} {folder} && chmod go-w {folder}"
            raise UsageError(f"--secrets {path}: the folder {folder} (owner {_user(st.st_uid)}, mode "
                             f"{stat.filemode(st.st_mode)}) may be written by another user, who could put their own "
                             f"Slack signing secret in the file: run `{fix}`, or move the file into a folder only you "
                             "can write, then start again")
        if os.path.dirname(folder) == folder:
            return
        folder = os.path.dirname(folder)


def _check_file(path: str, st: os.stat_result) -> None:
    """The file itself: read by its owner only, and that owner this user (or root)."""
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise UsageError(f"--secrets {path}: it may be read by others (mode {stat.filemode(st.st_mode)}); it holds "
                         f"Slack tokens: run `chmod 600 {path}`, then start again")
    if not _trusted(st.st_uid):
        me = _user(os.geteuid())
        raise UsageError(f"--secrets {path}: it is owned by {_user(st.st_uid)}, not by {me} who runs `handoff slack`; "
                         f"its owner could write their own Slack signing secret into it: run `chown {me} {path} && "
                         f"chmod 600 {path}` (check what it holds first), then start again")


def _read_file(path: str) -> dict[str, str]:
    real = os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(path))), os.path.basename(path))
    try:
        _check_folders(path, real)
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as err:
        raise UsageError(f"--secrets {path}: cannot open it ({err.strerror}); write NAME=value lines "
                         f"({', '.join(NAMES)}) into a file only you can read (chmod 600)") from None
    with os.fdopen(fd, encoding="utf-8") as fh:
        _check_file(path, os.fstat(fh.fileno()))
        values: dict[str, str] = {}
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, eq, value = line.partition("=")
            if not eq or name.strip() not in NAMES:
                raise UsageError(f"--secrets {path}:{n}: expected NAME=value with NAME one of {', '.join(NAMES)}; "
                                 f"line {n} is not (its text is not shown: it may hold a secret)")
            values[name.strip()] = value.strip().strip('"').strip("'")
    return values


def load(env: Mapping[str, str] | None = None, file: str | None = None, *, socket_mode: bool) -> Secrets:
    """The secrets this mode needs, or UsageError naming what is missing and where to put it."""
    env = os.environ if env is None else env
    values = _read_file(file) if file else {}
    values.update({n: env[n] for n in NAMES if env.get(n)})
    need = ["SLACK_BOT_TOKEN", "SLACK_APP_ID", "SLACK_APP_TOKEN" if socket_mode else "SLACK_SIGNING_SECRET"]
    missing = [n for n in need if not values.get(n)]
    if missing:
        mode = "Socket Mode" if socket_mode else "HTTP mode"
        raise UsageError(f"{mode} needs {', '.join(missing)}: set {'it' if len(missing) == 1 else 'them'} in the "
                         "environment or in a 0600 file named by --secrets (NAME=value lines); never in the ledger")
    return Secrets(bot_token=values["SLACK_BOT_TOKEN"], app_token=values.get("SLACK_APP_TOKEN"),
                   signing_secret=values.get("SLACK_SIGNING_SECRET"), app_id=values["SLACK_APP_ID"],
                   api_url=env.get("HANDOFF_SLACK_API_URL") or DEFAULT_API_URL)
