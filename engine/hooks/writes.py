"""Does a command write the ledger, a file beside it, or the engine's per-user files? Every common spelling of it.

Only the engine writes the ledger and its sidecars (`L.*` beside it: the journal, the
lock, the last-write record, the heartbeat), and its own per-user files
(engine.host.folders: the hook's facts, the parse cache, the high-water marks, session
nonces: forged facts would blind the hook, a removed mark the rollback witness). A command writes one when it redirects
output onto it, edits it in place (`sed -i`/`-Ei`/`-i.bak`/`--in-place=.bak`/`-ni`,
`perl -pi`, `awk -i inplace`, `yq -i`, an editor), copies, moves or links onto it (`cp`,
`mv`, `install`, `rsync`, `ln -sf X L`, a destination folder that holds it), removes,
truncates or re-permissions it, restores it with `git checkout`/`git restore`, or makes
a symlink to it (writing through a link is out of the hook's sight, so the link itself
is refused). Reading is not writing: `cat L`, `cp L /tmp/copy`, `grep x L` pass here.
"""

from __future__ import annotations

import fnmatch
import functools
import glob
import os
import re

from engine.hooks.shell import Command
from engine.hooks.wrappers import peel, wrapper_folders
from engine.host.folders import engine_dirs

# Any argument naming the ledger means a change.
CHANGERS = {"tee", "rm", "unlink", "shred", "truncate", "touch", "chmod", "chown", "chgrp", "chattr", "setfacl",
            "sponge", "mv", "ln", "patch", "ed", "ex", "vi", "vim", "nvim", "view", "vimdiff", "nano", "pico", "emacs",
            "emacsclient", "joe", "jed", "micro", "kak", "hx", "helix", "mcedit", "red"}
COPIERS = {"cp", "install", "rsync", "scp", "mv", "ln"}  # the last positional word is the destination
# Options that take the next word as their value, per program (the rest are flags).
COPY_VALUED = {"cp": {"-S", "--suffix"}, "mv": {"-S", "--suffix"}, "ln": {"-S", "--suffix"},
               "install": {"-S", "--suffix", "-m", "--mode", "-o", "--owner", "-g", "--group"},
               "rsync": {"-e", "--rsh", "--exclude", "--include", "-f", "--filter", "-B", "--block-size"},
               "scp": {"-P", "-i", "-o", "-F", "-c", "-l", "-J", "-S"}}
AWKS = {"awk", "gawk", "nawk", "mawk"}
GIT_WRITES = {"checkout", "restore", "rm", "mv", "apply", "am", "stash", "switch", "reset", "merge", "pull", "rebase",
              "cherry-pick", "revert"}
# Programs that only read the files they are given: any other program given the ledger (or a
# file beside it) may write it (`uniq IN OUT`, `iconv -o`, `curl -o`, a script of its own),
# and is refused. Those judged by their options below (sed, perl, awk, yq, sort, git, dd,
# the copiers) and `handoff` itself are not in it.
READERS = {"cat", "tac", "less", "more", "most", "head", "tail", "grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack",
           "wc", "diff", "diff3", "cmp", "comm", "colordiff", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum",
           "sha512sum", "b2sum", "cksum", "sum", "file", "stat", "ls", "du", "test", "[", "[[", "realpath", "readlink",
           "dirname", "basename", "echo", "printf", "jq", "yamllint", "nl", "od", "hexdump", "strings", "column", "cut",
           "paste", "fold", "fmt", "expand", "unexpand", "bat", "batcat", "zcat", "zless", "bzcat", "xzcat", "lsattr",
           "getfacl", "namei", "tree", "pr", "look", "join", "lsof", "fuser", "flock"}
JUDGED = {"sed", "perl", "yq", "sort", "git", "dd", "find", "handoff", *AWKS, *COPIERS, *CHANGERS}
# Programs that write files named inside what they read (an archive, a patch): refused in the
# ledger's folder (or above it), whatever their arguments.
EXTRACT = {"tar": ("x", "--extract", "--get"), "bsdtar": ("x", "--extract"), "unzip": ("",), "cpio": ("i", "--extract"),
           "7z": ("x", "e"), "7za": ("x", "e"), "unrar": ("x", "e"), "patch": ("",)}
FIND_ACTIONS = {"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"}
# Code that writes a file (python, perl, ruby, node); with the ledger's name in it, a write to the ledger.
CODE_WRITES = re.compile(r"""open\s*\([^,()]*,\s*(?:mode\s*=\s*)?['"][rbtU]*[wax+]|mode\s*=\s*['"][rbtU]*[wax+]"""
                         r"""|write_(?:text|bytes)|(?<!stdout)(?<!stderr)\.write\s*\(|\.(?:unlink|rename|replace|"""
                         r"""symlink_to|hardlink_to|touch|truncate|chmod)\s*\(|\bos\.(?:remove|unlink|rename|replace|"""
                         r"""truncate|symlink|link|chmod|open)\b|\bshutil\b|\b(?:yaml|json)\.(?:safe_)?dump\s*\([^)]*,"""
                         r"""|['"]\s*\+?>|>>?\s*['"]|\b(?:writeFile|appendFile|copyFile|rename|unlink|symlink|truncate)\w*\s*\("""
                         r"""|\bFile\.(?:write|open|rename|delete|symlink)|\bsubprocess\b|\bos\.system\b""")


def protected(ledger_real: str, path: str, cwd: str) -> bool:
    """Is `path` (as a command names it, from `cwd`) the ledger, a file beside it that is the
    engine's, or in one of the engine's per-user folders?"""
    return _names(ledger_real, path, cwd, own=True)


def is_ledger(ledger_real: str, path: str, cwd: str) -> bool:
    """Is `path` (from `cwd`) the ledger or one of its sidecars (what `handoff run PATH` drives)?"""
    return _names(ledger_real, path, cwd, own=False)


def _names(ledger_real: str, path: str, cwd: str, *, own: bool) -> bool:
    if not path or path.startswith("-"):
        return False
    if "$" in path or "`" in path or path.startswith(("~+", "~-")):
        return _may_name(ledger_real, path, cwd, own=own)
    full = os.path.join(cwd, os.path.expanduser(path))
    if "$" in cwd:  # a folder only the shell knows (`cd "$d"`, `popd`): the path may be anywhere
        return _may_name(ledger_real, full, cwd, own=own)
    if any(ch in path for ch in "*?["):  # a glob names whatever it matches now
        return any(_names(ledger_real, match, cwd, own=own) for match in glob.glob(full))
    real = os.path.realpath(full)
    return real == ledger_real or real.startswith(ledger_real + ".") or (own and engine_own(real))


# What only the shell knows: `$(...)`, `${...}`, `$NAME`, `$1`, backticks (the reader keeps them in the word).
_RUN_TIME = re.compile(r"\$\((?:[^()]|\([^()]*\))*\)|\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9?#@*$!-]|`[^`]*`|\$")
_KNOWN = re.compile(r"\$\{(PWD|HOME)\}|\$(PWD|HOME)\b")


def _may_name(ledger_real: str, path: str, cwd: str, *, own: bool) -> bool:
    """Could `path`, part of it chosen at run time (`$f.yaml`, `"$PWD/L.journal.jsonl"`,
    `$(echo L)`), be the ledger or a file beside it? `$PWD`, `$HOME` and `~+` are known; any
    other part may be anything, so it matches as `*` does (across folders too)."""
    known = {"PWD": cwd, "HOME": os.path.expanduser("~")}
    text = _KNOWN.sub(lambda m: known[m.group(1) or m.group(2)], path)
    text = cwd + text[2:] if text.startswith("~+") else "*" + text[2:] if text.startswith("~-") else text
    if "$" not in text and "`" not in text and not text.startswith("*"):
        return _names(ledger_real, text, cwd, own=own)
    pattern = _RUN_TIME.sub("*", text)
    if not pattern.startswith(("/", "*")):
        pattern = os.path.join(cwd, os.path.expanduser(pattern))
    folder, base = os.path.split(ledger_real)
    try:
        beside = [os.path.join(folder, n) for n in os.listdir(folder) if n.startswith(base + ".")]
    except OSError:
        beside = []
    return any(fnmatch.fnmatchcase(name, pattern) for name in [ledger_real, *beside])


def engine_own(real: str) -> bool:
    """Is the real path `real` in one of the engine's per-user folders (engine.host.folders)?"""
    return any(real == d or real.startswith(d + os.sep) for d in _own_dirs())


def holds_engine_dir(path: str, cwd: str) -> bool:
    """Is `path` (from `cwd`) a folder that holds one of the engine's per-user folders (`~/.cache`, `~`)?"""
    if not path or path.startswith("-"):
        return False
    real = os.path.realpath(os.path.join(cwd, os.path.expanduser(path)))
    return any(d.startswith(real.rstrip(os.sep) + os.sep) for d in _own_dirs())


def _own_dirs() -> tuple[str, ...]:
    """engine_dirs(), resolved once for each environment that names them, not once a word."""
    return _resolved(os.environ.get("XDG_CACHE_HOME"), os.environ.get("XDG_STATE_HOME"), os.environ.get("HOME"))


@functools.lru_cache(maxsize=4)
def _resolved(*environment: str | None) -> tuple[str, ...]:
    return engine_dirs()


def writes_ledger(commands: list[Command], ledger_real: str, cwd: str) -> str | None:
    """How one of `commands` would write the ledger or a sidecar directly, or None."""
    for command in commands:
        why = _one(command, ledger_real, cwd)
        if why:
            return why
    return None


def _one(command: Command, ledger_real: str, cwd: str) -> str | None:
    # Paths are read from where the line's `cd`s lead and from where it started (a `cd`
    # inside `( )` does not last): a write either way is a write.
    places = [cwd] + ([command.cwd] if command.cwd and command.cwd != cwd else [])
    places += [os.path.join(place, folder) for place in list(places) for folder in wrapper_folders(command.words)]
    program_words = peel(command.words)
    if program_words and os.path.basename(program_words[0]) == "git":  # `git -C DIR`: its paths are from DIR
        places += [os.path.join(place, d) for place in list(places) for d in _git_folders(program_words[1:])]

    def hit(word: str) -> bool:
        return any(protected(ledger_real, word, place) for place in places)

    for path in command.writes_to:
        if hit(path):
            return f"it redirects output into {path}"
    program, args = command.program()

    named = [a for a in args if hit(a.split("=", 1)[1] if a.startswith(("of=", "--output=", "--target-directory=")) else a)]
    if program in EXTRACT and _extracts(program, args) and any(_holds_ledger(d, ledger_real) for d in _into(program, args, places)):
        return f"`{program}` would write the files it unpacks in the ledger's folder, and they may be the ledger or files beside it"
    if program == "sed" and any(_mentions(text, ledger_real) for text in _sed_scripts(args)):
        return "`sed`'s script names the ledger or a file beside it, and sed writes files (`w FILE`)"
    if program == "dd" and any(a.startswith("of=") and hit(a[3:]) for a in args):
        return f"`dd` would write {next(a[3:] for a in args if a.startswith('of=') and hit(a[3:]))}"
    if program == "cp" and any(a == "--link" or (a[:1] == "-" and a[1:2] != "-" and "l" in a[1:]) for a in args):
        # A hard link is the ledger itself under another name: a Write or Edit there writes it (realpath cannot tell).
        linked = named + [a for a in args if not a.startswith("-") for place in places
                          if os.path.realpath(ledger_real).startswith(os.path.realpath(os.path.join(place, a)).rstrip(os.sep) + os.sep)]
        if linked:
            return f"`cp --link` would make a hard link to {linked[0]}{'' if linked[0] in named else ' (the ledger inside)'}"
    if program in COPIERS:
        onto = [p for place in places for p in _copy_destinations(program, args, place, ledger_real)]
        if any(hit(p) for p in onto):
            return f"`{program}` would change {next(p for p in onto if hit(p))}"
    # `rm -rf ~/.local/state`, `mv ~/.cache x`, `rsync --delete src/ ~/.cache/`: the engine's folders go with it.
    # (`mv x ~`, `ln -s x ~/` write into the folder, not over it: their destination is judged above.)
    if program in CHANGERS or (program == "rsync" and any(a.startswith("--del") for a in args)):
        moved = args[:-1] if program in ("mv", "ln") else args
        holder = next((a for a in moved for place in places if holds_engine_dir(a, place)), None)
        if holder is not None:
            return f"`{program}` would change {holder}, which holds the engine's per-user files"
    if not named:
        return None
    if program in CHANGERS:
        what = "make a link to" if program == "ln" else "change"
        return f"`{program}` would {what} {named[0]}"
    if (program == "sed" and _sed_in_place(args)) or (program == "perl" and _perl_in_place(args)) \
            or (program in AWKS and _awk_in_place(args)) or (program == "yq" and _yq_in_place(args)):
        return f"`{program}` would edit {named[0]} in place"
    if program == "sort" and any(a in ("-o", "--output") or a.startswith(("-o", "--output=")) for a in args):
        return f"`sort -o` would write {named[0]}"
    if program == "git" and (_git_subcommand(args) in GIT_WRITES or any(a.startswith(("--output", "-o")) for a in args)):
        return f"`git {_git_subcommand(args)}` would change {named[0]}"
    return None


def may_write(commands: list[Command], ledger_real: str, cwd: str) -> str | None:
    """Why one of `commands` may write the ledger or a sidecar, for all the hook can tell: a
    program that is no known reader is given one (`uniq IN OUT`, `iconv -o`, `curl -o`, a
    script of the agent's own). None: each is a reader, judged by writes_ledger, or given none."""
    for command in commands:
        program, args = command.program()
        places = [cwd] + ([command.cwd] if command.cwd and command.cwd != cwd else [])
        if program == "find":  # what it acts on is `{}`, which only find knows
            found = _find_writes(args, places, ledger_real)
            if found:
                return found
        if program in READERS or program in JUDGED or not program:
            continue
        named = next((a for a in args for place in places if protected(ledger_real, a, place)), None)
        if named is not None:
            return (f"`{program}` is given {named}, and the hook cannot tell whether it writes it; read the ledger "
                    f"with `handoff status`, `cat` or `grep`, or pipe it in (`cat {named} | {program} ...`)")
    return None


def _mentions(text: str, ledger_real: str) -> bool:
    """Does `text` (a program's code or script) name the ledger (or a sidecar), or one of the
    engine's per-user folders (by its last two parts: `.cache/handoff`, `state/handoff`; the
    whole path if it has fewer)?"""
    tails = [d if d.count(os.sep) < 2 else os.path.join(*d.split(os.sep)[-2:]) for d in _own_dirs()]
    return any(name in text for name in [os.path.basename(ledger_real), *tails])


def _holds_ledger(folder: str, ledger_real: str) -> bool:
    """Is `folder` the ledger's folder or one above it (a folder only the shell knows may be)?"""
    if "$" in folder or "`" in folder:
        return True
    real = os.path.realpath(folder).rstrip(os.sep) + os.sep
    return (os.path.dirname(ledger_real) + os.sep).startswith(real)


def _extracts(program: str, args: list[str]) -> bool:
    """Does this `tar`/`unzip`/`cpio`/`7z`/`patch` write what it unpacks (not only list or test it)?"""
    if program in ("unzip", "patch"):
        return not any(a in ("-l", "-t", "-v", "-p", "-Z", "-z", "--dry-run", "-C", "--check") for a in args)
    modes = EXTRACT[program]
    for i, arg in enumerate(args):
        if arg in modes or (arg.startswith("--") and arg in modes):
            return True
        bundle = arg[1:] if arg.startswith("-") and not arg.startswith("--") else (arg if i == 0 and program != "cpio" else "")
        if any(len(m) == 1 and m in bundle for m in modes):
            return True
    return False


def _into(program: str, args: list[str], places: list[str]) -> list[str]:
    """Where an unpacking program writes: where it runs, or its `-C DIR` / `-d DIR` / `--directory=DIR`."""
    out = list(places)
    for i, arg in enumerate(args):
        value = None
        if arg in ("-C", "-d", "--directory", "-D") and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--directory="):
            value = arg.split("=", 1)[1]
        elif program == "7z" and arg.startswith("-o"):
            value = arg[2:]
        if value:
            out += [os.path.join(place, os.path.expanduser(value)) for place in places]
    return out


def _find_writes(args: list[str], places: list[str], ledger_real: str) -> str | None:
    """`find . -name L -delete`, `find . -name L -exec cp X {} ;`: an action on what find finds, where what it may
    find includes the ledger or a file beside it."""
    if not any(a in FIND_ACTIONS for a in args):
        return None
    starts = []
    for arg in args:
        if arg.startswith(("-", "(", "!", ")")):
            break
        starts.append(arg)
    roots = [os.path.join(place, os.path.expanduser(start)) for place in places for start in (starts or ["."])]
    if not any(_holds_ledger(root, ledger_real) or protected(ledger_real, root, "/") for root in roots):
        return None
    names = [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-name", "-iname", "-path", "-ipath", "-wholename",
                                                                   "-iwholename", "-regex", "-iregex", "-lname")]
    base = os.path.basename(ledger_real)
    candidates = [base, base + ".journal.jsonl", base + ".last-write.json", base + ".attest", base + ".x"]
    if names and not any(a in ("-regex", "-iregex", "-o", "-or", "-not", "!") for a in args) and not any(
            fnmatch.fnmatch(c, pattern) or fnmatch.fnmatch(os.path.join(os.path.dirname(ledger_real), c), pattern)
            or fnmatch.fnmatch(c, os.path.basename(pattern)) for pattern in names for c in candidates):
        return None  # every name it looks for is another file's
    action = next(a for a in args if a in FIND_ACTIONS)
    return f"`find {action}` would act on what it finds, and it may find the ledger or a file beside it"


def _sed_scripts(args: list[str]) -> list[str]:
    """The scripts `sed` runs: each `-e`/`--expression` value, or else its first word that is no option."""
    scripts, i, positional = [], 0, []
    while i < len(args):
        arg = args[i]
        if arg in ("-e", "--expression") and i + 1 < len(args):
            scripts.append(args[i + 1])
            i += 2
            continue
        if arg.startswith("--expression="):
            scripts.append(arg.split("=", 1)[1])
        elif arg.startswith("-e") and len(arg) > 2 and not arg.startswith("--"):
            scripts.append(arg[2:])
        elif arg in ("-f", "--file", "-l", "--line-length") and i + 1 < len(args):
            i += 2
            continue
        elif not arg.startswith("-"):
            positional.append(arg)
        i += 1
    return scripts or positional[:1]


def _copy_destinations(program: str, args: list[str], cwd: str, ledger_real: str) -> list[str]:
    """Where `cp`/`mv`/`install`/`rsync`/`ln` would write: the destination, or each source's
    name inside a destination folder (and the folder itself, when a folder is copied into
    the ledger's own)."""
    positional, target, i = [], None, 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            positional += args[i + 1:]
            break
        if arg in ("-t", "--target-directory"):
            target = args[i + 1] if i + 1 < len(args) else None
            i += 2
            continue
        if arg.startswith("--target-directory="):
            target = arg.split("=", 1)[1]
        elif arg in COPY_VALUED[program]:
            i += 1
        elif not arg.startswith("-"):
            positional.append(arg)
        i += 1
    if target is None:
        if len(positional) < 2:
            return []
        target, positional = positional[-1], positional[:-1]
    full = os.path.join(cwd, os.path.expanduser(target))
    out = [target]
    if os.path.isdir(full):
        out += [os.path.join(target, os.path.basename(src.rstrip("/"))) for src in positional]
        folder = os.path.dirname(ledger_real)
        real = os.path.realpath(full)
        if (real == folder or folder.startswith(real + os.sep)) and any(
                os.path.isdir(os.path.join(cwd, src)) for src in positional):
            out.append(ledger_real)  # a folder copied over the ledger's folder may overwrite it
    return out


def _sed_in_place(args: list[str]) -> bool:
    for arg in args:
        if arg == "--":
            return False
        if arg.startswith("--in-place"):
            return True
        if arg.startswith("-") and not arg.startswith("--"):
            for ch in arg[1:]:
                if ch == "i":
                    return True
                if ch in "efl":  # the rest of the word is this option's value
                    break
    return False


def _perl_in_place(args: list[str]) -> bool:
    for arg in args:
        if arg == "--" or not arg.startswith("-"):
            continue
        for ch in arg[1:]:
            if ch == "i":
                return True
            if ch in "eEIMmxdDCV":
                break
    return False


def _awk_in_place(args: list[str]) -> bool:
    for i, arg in enumerate(args):
        value = None
        if arg in ("-i", "--include") and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--include="):
            value = arg.split("=", 1)[1]
        elif arg.startswith("-i") and len(arg) > 2:
            value = arg[2:]
        if value is not None and os.path.basename(value).startswith("inplace"):
            return True
    return False


def _yq_in_place(args: list[str]) -> bool:
    return any(a in ("-i", "--inplace") or (a.startswith("-") and not a.startswith("--") and "i" in a[1:]) for a in args)


def _git_folders(args: list[str]) -> list[str]:
    """The folders `git -C DIR` runs in (before its subcommand)."""
    out, i = [], 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "-C" and i + 1 < len(args):
            out.append(args[i + 1])
        i += 2 if args[i] in ("-C", "-c", "--git-dir", "--work-tree") else 1
    return out


def _git_subcommand(args: list[str]) -> str:
    i = 0
    while i < len(args):
        if args[i] in ("-C", "-c", "--git-dir", "--work-tree"):
            i += 2
        elif args[i].startswith("-"):
            i += 1
        else:
            return args[i]
    return ""


def code_writes_protected(code: str, ledger_real: str) -> bool:
    """Does interpreter code name the ledger (or a sidecar), or one of the engine's per-user
    folders (`_mentions`), and write a file? A heuristic, as for the ledger: code that builds
    the path in pieces is out of its sight (the hook is a net, not the lock)."""
    return _mentions(code, ledger_real) and bool(CODE_WRITES.search(code))
