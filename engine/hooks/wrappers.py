"""Wrappers: programs that run the rest of their words as a command (`env X=1`, `sudo -u
alice`, `timeout 5`, `nohup`, `nice -n 5`, `xargs -n1`, `command`, `exec`, `stdbuf`, ...).

`peel` takes them off, with their own options, so the hook judges the command they run:
`timeout 5 handoff approve ...` is `handoff approve ...`. `env -S STRING` splits its
string into words first, as env does.
"""

from __future__ import annotations

import os
import shlex

# Wrapper -> (its options that take a value, how many positional words precede the command).
WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "env": (frozenset({"-u", "--unset", "-C", "--chdir"}), 0),
    "sudo": (frozenset({"-u", "--user", "-g", "--group", "-h", "--host", "-p", "--prompt", "-C", "--close-from",
                        "-D", "--chdir", "-r", "--role", "-t", "--type", "-U", "--other-user", "-T",
                        "--command-timeout", "-R", "--chroot"}), 0),
    "doas": (frozenset({"-u", "-C"}), 0),
    "runuser": (frozenset({"-u", "--user", "-g", "--group", "-G", "--supp-group"}), 0),
    "command": (frozenset(), 0), "builtin": (frozenset(), 0), "exec": (frozenset({"-a"}), 0),
    "nohup": (frozenset(), 0), "setsid": (frozenset(), 0), "unbuffer": (frozenset(), 0),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "--class", "-n", "--classdata", "-p", "--pid", "-P", "--pgid", "-u", "--uid"}), 0),
    "stdbuf": (frozenset({"-i", "--input", "-o", "--output", "-e", "--error"}), 0),
    "chrt": (frozenset(), 1), "taskset": (frozenset(), 1),
    "flock": (frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}), 1),
    "xargs": (frozenset({"-a", "--arg-file", "-d", "--delimiter", "-E", "-I", "-L", "--max-lines", "-n", "--max-args",
                         "-P", "--max-procs", "-s", "--max-chars", "--process-slot-var"}), 0),
    "watch": (frozenset({"-n", "--interval", "-q", "--equexit"}), 0),
    "strace": (frozenset({"-o", "-e", "-p", "-s", "-u", "-E"}), 0),
}
ASSIGNMENT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


def assignment(word: str) -> bool:
    """Is `word` a shell variable assignment (`NAME=value`)?"""
    name, eq, _ = word.partition("=")
    return bool(eq) and bool(name) and name[0] in ASSIGNMENT and name.replace("_", "a").isalnum()


XARGS_WORD = "$XARGS"  # what `xargs` adds to the command it runs: words only its stdin knows


def _valued(word: str, with_value: frozenset[str]) -> bool:
    """Does option `word` take the next word as its value (a long one by any unambiguous prefix, as getopt reads it)?"""
    if word in with_value:
        return True
    return word.startswith("--") and "=" not in word and len(word) > 3 and \
        len([v for v in with_value if v.startswith(word)]) == 1


def peel(words: list[str]) -> list[str]:
    """`words` past leading `VAR=x` and wrappers (with their options): the command that runs.
    A command `xargs` runs gets the words it reads from stdin as one word only the shell
    knows (XARGS_WORD): where `-I STR` is given, in STR's place."""
    words = list(words)
    xargs: list[str | None] = []
    while words:
        if assignment(words[0]):
            words.pop(0)
            continue
        name = os.path.basename(words[0])
        if name not in WRAPPERS:
            break
        with_value, positional = WRAPPERS[name]
        i = 1
        while i < len(words) and words[i].startswith("-") and len(words[i]) > 1:
            word = words[i]
            if word == "--":
                i += 1
                break
            if name == "xargs" and (word == "-I" or word.startswith(("-I", "--replace"))):
                xargs.append(words[i + 1] if word == "-I" and i + 1 < len(words) else
                             word[2:] if word.startswith("-I") else (word.split("=", 1)[1] if "=" in word else "{}"))
            if name == "env" and word.startswith(("-S", "--split-string")):
                # `env -S "handoff approve ..."` splits its string into the command's words.
                if word in ("-S", "--split-string"):
                    text, rest = (words[i + 1] if i + 1 < len(words) else ""), words[i + 2:]
                else:
                    text, rest = word.split("=", 1)[1] if "=" in word else word[2:], words[i + 1:]
                return peel(["env", *_words(text), *rest])
            i += 2 if _valued(word, with_value) else 1
        while name == "env" and i < len(words) and assignment(words[i]):
            i += 1
        if name == "xargs" and not xargs:
            xargs.append(None)
        words = words[i + positional:]
    for replace in xargs:
        if words and replace is None:
            words = [*words, XARGS_WORD]
        elif words and replace is not None:
            words = [w.replace(replace, XARGS_WORD) for w in words]
    return words


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


# Wrappers' options that run the command in another folder.
CHDIR = {"env": ("-C", "--chdir"), "sudo": ("-D", "--chdir")}


def wrapper_folders(words: list[str]) -> list[str]:
    """The folders `env -C DIR` / `sudo -D DIR` (any of the line's wrappers) run their command in."""
    out = []
    for i, word in enumerate(words):
        name = os.path.basename(word)
        if name not in CHDIR:
            continue
        for j in range(i + 1, len(words)):
            arg = words[j]
            if not arg.startswith("-"):
                break
            short, long = CHDIR[name]
            abbreviated = arg.startswith("--") and len(arg.split("=", 1)[0]) > 3 and long.startswith(arg.split("=", 1)[0])
            if (arg == short or abbreviated and "=" not in arg) and j + 1 < len(words):
                out.append(words[j + 1])
            elif abbreviated:
                out.append(arg.split("=", 1)[1])
            elif arg.startswith(short) and len(arg) > 2:
                out.append(arg[2:])
    return out
