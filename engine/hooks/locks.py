"""The ledger's locks are the engine's: a command that would hold one is refused.

The engine's writers take a `flock` on `<ledger>.lock` (engine.store.filelock), the journal's
appends one on the journal itself, the Slack record's one on its file; each waits at most
HANDOFF_LOCK_TIMEOUT seconds. An agent holding one (`flock ledger.yaml.lock sleep 3600 &`)
makes a person's `handoff pause` and every `handoff run` fail after that wait. `flock` only
reads its file, so engine.hooks.writes let it through, and, being a wrapper, its file was
not even a word of the command it runs. Refused here:
- any word, redirection or descriptor naming the ledger's lock file (nothing but the engine
  has a use for it; reading it is no exception);
- `flock` given the ledger or a file beside it (the journal, the heartbeat, ...), or a
  descriptor number on a line that opens one of them (`exec 9<L.journal.jsonl; flock 9`);
- code that names the ledger (or a file beside it) and takes a lock (`fcntl.flock`, `lockf`,
  perl's `flock`).
"""

from __future__ import annotations

import os
import re

from engine.hooks.shell import Command
from engine.hooks.wrappers import peel
from engine.hooks.writes import mentions, protected, start_folders

LOCK_SUFFIX = ".lock"  # engine.ledger.access.LOCK_SUFFIX (not imported: the hook's path stays light)
FLOCK_VALUED = {"-w", "--timeout", "--wait", "-E", "--conflict-exit-code"}
CODE_LOCKS = re.compile(r"\b(?:fcntl|flock|lockf|LOCK_EX|LOCK_SH|F_SETLKW?|F_OFD_SETLKW?)\b")
WHY = "holding it stops every writer of the ledger, a person's `handoff pause` included; only the engine takes its locks"


def locks_ledger(commands: list[Command], ledger_real: str, cwd: str) -> str | None:
    """How one of `commands` would hold a lock of the ledger's, or None."""
    lock = ledger_real + LOCK_SUFFIX
    opened = [(f, c) for c in commands for f in c.opens + c.writes_to]
    for command in commands:
        where = start_folders(command, cwd)
        for word in [*command.words, *command.opens, *command.writes_to]:
            if any(_is(lock, word, place) for place in where):
                return f"it names {word}, the ledger's lock: {WHY}"
        for target in _flocked(command.words):
            if target.isdigit():
                bound = next((f for f, c in opened for place in start_folders(c, cwd) if protected(ledger_real, f, place)), None)
                if bound is not None:
                    return f"`flock {target}` would lock {bound}, open on that descriptor, a lock of the ledger's: {WHY}"
            elif any(protected(ledger_real, target, place) for place in where):
                return f"`flock` would lock {target}, a lock of the ledger's: {WHY}"
    return None


def code_locks(code: str, ledger_real: str) -> bool:
    """Does interpreter code name the ledger (or a file beside it) and take a lock?"""
    return mentions(code, ledger_real) and bool(CODE_LOCKS.search(code))


def _is(lock: str, word: str, place: str) -> bool:
    """Is `word` (from `place`) the lock file itself (not a glob, not a word only the shell knows)?"""
    if not word or word.startswith("-") or "$" in word or "`" in word or "\0" in word:
        return False
    return os.path.realpath(os.path.join(place, os.path.expanduser(word))) == lock


def _flocked(words: list[str]) -> list[str]:
    """The file (or descriptor) each `flock` that `words` run locks: its first word that is no option."""
    out = []
    for i, word in enumerate(words):
        if os.path.basename(word) != "flock" or peel([*words[:i], "true"]) != ["true"]:
            continue  # not `flock` run (`grep flock F`): only wrappers come before it (`nohup flock`, `timeout 9 flock`)
        j = i + 1
        while j < len(words) and words[j].startswith("-") and words[j] != "-":
            j += 2 if words[j] in FLOCK_VALUED else 1
        if j < len(words):
            out.append(words[j])
    return out
