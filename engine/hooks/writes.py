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
import itertools
import os
import re

from engine.hooks import options
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
JUDGED = {"sed", "perl", "yq", "sort", "git", "dd", "find", "handoff", "tar", "bsdtar", "zip", *AWKS, *COPIERS, *CHANGERS,
          *options.UNPACKERS}
# Readers when given one file (with two, the second is written: `uniq IN OUT`, `xxd -r IN OUT`).
ONE_FILE_READERS = {"uniq", "xxd"}
FIND_ACTIONS = {"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"}
# Code that writes a file (python, perl, ruby, node); with the ledger's name in it, a write to the ledger.
CODE_WRITES = re.compile(r"""open\s*\([^,()]*,\s*(?:mode\s*=\s*)?['"][rbtU]*[wax+]|mode\s*=\s*['"][rbtU]*[wax+]"""
                         r"""|write_(?:text|bytes)|(?<!stdout)(?<!stderr)\.write\s*\(|\.(?:unlink|rename|replace|"""
                         r"""symlink_to|hardlink_to|touch|truncate|chmod)\s*\(|\bos\.(?:remove|unlink|rename|replace|"""
                         r"""truncate|symlink|link|chmod|open)\b|\bshutil\b|\b(?:yaml|json)\.(?:safe_)?dump\s*\([^)]*,"""
                         r"""|['"]\s*\+?>|>>?\s*['"]|\b(?:writeFile|appendFile|copyFile|rename|unlink|symlink|truncate)\w*\s*\("""
                         r"""|\bFile\.(?:write|open|rename|delete|symlink)|\bsubprocess\b|\bos\.system\b"""
                         # Running a command, or awk writing to a file named in a variable or piping to a command:
                         # with the ledger's name in the code, it may be its write.
                         r"""|\bsystem\s*\(|\bpopen\s*\(|\bexec[lv]p?e?\s*\(|\b(?:execSync|spawnSync|child_process)\b|`"""
                         r"""|\|\s*["']|>>?\s*[A-Za-z_]\w*\s*(?:[;}\n]|$)""")


def protected(ledger_real: str, path: str, cwd: str) -> bool:
    """Is `path` (as a command names it, from `cwd`) the ledger, a file beside it that is the
    engine's, or in one of the engine's per-user folders?"""
    return _names(ledger_real, path, cwd, own=True)


def is_ledger(ledger_real: str, path: str, cwd: str) -> bool:
    """Is `path` (from `cwd`) the ledger or one of its sidecars (what `handoff run PATH` drives)?"""
    return _names(ledger_real, path, cwd, own=False)


# Globs past this many matches are judged as naming the ledger (the hook cannot look at them all in time).
GLOB_MOST = 2000
# Per-process links: resolved in the hook's own process they name the hook's files, not the shell's.
_PROC_PLACE = re.compile(r"/proc/[^/]+/(?:task/[^/]+/)?(cwd|root)(?:/(.*))?$", re.S)
_PER_PROCESS = re.compile(r"/proc/[^/]+/(?:task/[^/]+/)?(?:fd|fdinfo|cwd|root|map_files)(?:/|$)|/dev/(?:fd|std(?:in|out|err))(?:/|$)")


def _names(ledger_real: str, path: str, cwd: str, *, own: bool) -> bool:
    if not path or path.startswith("-"):
        return False
    place = _PROC_PLACE.match(path)
    if place:  # `/proc/self/cwd/L`, `/proc/$$/cwd/L`, `/proc/1/root/...`: the shell's folder (or root), not the hook's
        rest = place.group(2) or "."
        return _names(ledger_real, rest, cwd if place.group(1) == "cwd" else "/", own=own) \
            or _named_like(ledger_real, path, own=own)
    if "$" in path or "`" in path or path.startswith(("~+", "~-")):
        return _may_name(ledger_real, path, cwd, own=own)
    full = os.path.join(cwd, os.path.expanduser(path))
    if "$" in full:  # a folder only the shell knows (`cd "$d"`, `popd`): a relative path may be anywhere
        return _may_name(ledger_real, full, "/", own=own)
    if any(ch in path for ch in "*?["):  # a glob names whatever it matches now (past GLOB_MOST: may be the ledger)
        matches = list(itertools.islice(glob.iglob(full), GLOB_MOST + 1))
        return len(matches) > GLOB_MOST or any(_names(ledger_real, match, cwd, own=own) for match in matches)
    real = os.path.realpath(full)
    if real == ledger_real or real.startswith(ledger_real + ".") or (own and (engine_own(real) or hook_settings(real))):
        return True
    # A hard link is the ledger itself under another name; a link through /proc or /dev/fd
    # leads, in the shell, where the hook cannot follow it: judged by the name it ends in.
    return _same_file(ledger_real, real) or (_through_per_process(full) and _named_like(ledger_real, full, own=own))


def _named_like(ledger_real: str, path: str, *, own: bool) -> bool:
    """Does `path` end in the ledger's name or a sidecar's (`L.*`), or run through an engine folder's tail?"""
    base = os.path.basename(ledger_real)
    name = os.path.basename(path.rstrip("/"))
    return name == base or name.startswith(base + ".") or (own and mentions(path, ledger_real))


def _through_per_process(full: str) -> bool:
    """Does `full`, followed link by link as the kernel would, pass through /proc/PID/{fd,cwd,root}
    or /dev/fd (whose targets differ from process to process)?"""
    parts = [p for p in full.split("/") if p and p != "."]
    resolved, hops = "/", 0
    while parts:
        part = parts.pop(0)
        if part == "..":
            resolved = os.path.dirname(resolved)
            continue
        candidate = os.path.join(resolved, part)
        if _PER_PROCESS.match(candidate + "/"):
            return True
        try:
            target = os.readlink(candidate)
        except OSError:
            resolved = candidate
            continue
        hops += 1
        if hops > 40:
            return True  # a loop: the kernel refuses it, the hook need not tell
        parts = [p for p in target.split("/") if p and p != "."] + parts
        resolved = "/" if target.startswith("/") else resolved
    return False


def _same_file(ledger_real: str, real: str) -> bool:
    """Is `real` a hard link to the ledger or one of its sidecars (same device and inode)?"""
    try:
        st = os.stat(real)
    except OSError:
        return False
    return st.st_nlink > 1 and (st.st_dev, st.st_ino) in _identities(ledger_real)


def _identities(ledger_real: str) -> frozenset[tuple[int, int]]:
    """(device, inode) of the ledger and every file beside it, as they are now (each engine write
    swaps in a new inode; asked only about a file with more than one link, which is rare)."""
    folder, base = os.path.split(ledger_real)
    out = set()
    try:
        names = [n for n in os.listdir(folder) if n == base or n.startswith(base + ".")]
    except OSError:
        names = [base]
    for name in names:
        try:
            st = os.stat(os.path.join(folder, name))
        except OSError:
            continue
        out.add((st.st_dev, st.st_ino))
    return frozenset(out)


def hook_settings(real: str) -> bool:
    """Is the real path `real` a Claude Code settings file that wires (or could switch off) these hooks:
    the project's `.claude/settings.json` or `settings.local.json`, or the user's `~/.claude/settings.json`?"""
    if not real.endswith(".json") or f"{os.sep}.claude{os.sep}" not in real:
        return False
    files = [os.path.join(os.path.expanduser("~"), ".claude", "settings.json")]
    project = os.environ.get("CLAUDE_PROJECT_DIR")
    if project:
        files += [os.path.join(project, ".claude", name) for name in ("settings.json", "settings.local.json")]
    return real in {os.path.realpath(f) for f in files}


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
        return _names(ledger_real, text, "/" if os.path.isabs(text) else cwd, own=own)
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
    return _through_descriptor(commands, ledger_real, cwd)


def _through_descriptor(commands: list[Command], ledger_real: str, cwd: str) -> str | None:
    """`cp X /dev/fd/3 3<L`, `exec 3<L; dd of=/dev/fd/3`, `cp X /dev/stdin < L`: a line that opens the
    ledger (or a file beside it) on a descriptor and names a per-process path (/dev/fd/N, /dev/stdin,
    /proc/self/fd/N), which reopens that very file for writing."""
    bound = next((f for c in commands for f in c.opens for place in start_folders(c, cwd) if protected(ledger_real, f, place)),
                 None)
    if bound is None:
        return None
    for command in commands:
        program, args = command.program()
        words = command.writes_to + ([] if program in READERS else [a.split("=", 1)[-1] for a in args])  # `of=/dev/fd/3`
        via = next((w for w in words for place in start_folders(command, cwd)
                    if w and _through_per_process(os.path.join(place, os.path.expanduser(w)))), None)
        if via is not None:
            return f"it opens {bound} on a file descriptor and names {via}, which is that file again, open for writing"
    return None


def start_folders(command: Command, cwd: str) -> list[str]:
    """Where `command`'s relative paths may start: where the line started and where its `cd`s
    lead (a `cd` inside `( )` does not last: a write either way is a write), and the folders
    of `env -C`, `sudo -D` and `git -C`."""
    places = [cwd] + ([command.cwd] if command.cwd and command.cwd != cwd else [])
    places += [os.path.join(place, folder) for place in list(places) for folder in wrapper_folders(command.words)]
    program_words = peel(command.words)
    if program_words and os.path.basename(program_words[0]) == "git":  # `git -C DIR`: its paths are from DIR
        places += [os.path.join(place, d) for place in list(places) for d in options.git_folders(program_words[1:])]
    return places


def _one(command: Command, ledger_real: str, cwd: str) -> str | None:
    places = start_folders(command, cwd)

    def hit(word: str) -> bool:
        return any(protected(ledger_real, word, place) for place in places)

    for path in command.writes_to:
        if hit(path):
            return f"it redirects output into {path}"
    program, args = command.program()

    named = [a for a in args if hit(a.split("=", 1)[1] if a.startswith(("of=", "--output=", "--target-directory=")) else a)]
    if program in options.UNPACKERS and options.unpacks(program, args):
        if options.unpacks_anywhere(program, args):
            return f"`{program}` would write what it unpacks wherever the archive says, the ledger's folder included"
        if any(_holds_ledger(d, ledger_real) for d in options.unpack_folders(program, args, places)):
            return f"`{program}` would write the files it unpacks in the ledger's folder, and they may be the ledger or files beside it"
    if program in ("tar", "bsdtar", "zip"):
        archive = next((a for a in options.archive_written(program, args) if hit(a)), None)
        if archive is not None:
            return f"`{program}` would write its archive to {archive}"
        if named and options.removes_sources(program, args):
            return f"`{program}` would remove {named[0]} once archived"
    if program == "sed" and any(options.sed_writes(text, name) for text in options.sed_scripts(args, places[-1])
                                for name in _protected_names(ledger_real)):
        return "`sed`'s script writes or runs something naming the ledger or a file beside it (`w FILE`, `e COMMAND`)"
    if program == "git":
        why = _git_rewrites(args, places, ledger_real)
        if why:
            return why
    if program == "dd" and any(a.startswith("of=") and hit(a[3:]) for a in args):
        return f"`dd` would write {next(a[3:] for a in args if a.startswith('of=') and hit(a[3:]))}"
    if program == "cp" and any(options.long_option(a, "--link", 1) or options.long_option(a, "--symbolic-link", 2)
                               or (a[:1] == "-" and a[1:2] != "-" and ("l" in a[1:] or "s" in a[1:])) for a in args):
        # A link is the ledger itself under another name: a Write or Edit there writes it.
        linked = named + [a for a in args if not a.startswith("-") for place in places
                          if os.path.realpath(ledger_real).startswith(os.path.realpath(os.path.join(place, a)).rstrip(os.sep) + os.sep)]
        if linked:
            return f"`cp --link` would make a link to {linked[0]}{'' if linked[0] in named else ' (the ledger inside)'}"
    if program == "rsync":
        # DIR relative to the destination (the last word), and, to be safe, to where the line runs.
        dest = next((a for a in reversed(args) if not a.startswith("-")), ".")
        linked_from = [p for d in options.rsync_link_dests(args) for p in (d, os.path.join(dest, d))]
        if any(_holds_ledger(os.path.join(place, d), ledger_real) for d in linked_from for place in places):
            return "`rsync --link-dest` would make hard links to the files of the ledger's folder, the ledger among them"
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
    if (program == "sed" and options.sed_in_place(args)) or (program == "perl" and options.perl_in_place(args)) \
            or (program in AWKS and options.awk_in_place(args)) or (program == "yq" and options.yq_in_place(args)):
        return f"`{program}` would edit {named[0]} in place"
    if program == "sort" and any(a in ("-o", "--output") or a.startswith(("-o", "--output=")) for a in args):
        return f"`sort -o` would write {named[0]}"
    subcommand = options.git_subcommand(args)[0] if program == "git" else ""
    if program == "git" and (subcommand in GIT_WRITES or any(a.startswith(("--output", "-o")) for a in args)):
        return f"`git {subcommand}` would change {named[0]}"
    return None


def _protected_names(ledger_real: str) -> list[str]:
    """The names a script may write the ledger's files by: the ledger's, and the engine's folders' tails."""
    tails = [d if d.count(os.sep) < 2 else os.path.join(*d.split(os.sep)[-2:]) for d in _own_dirs()]
    return [os.path.basename(ledger_real), *tails]


# `git SUBCOMMAND` that rewrites tracked files without naming them (unless its pathspecs, after `--`, name none of the ledger's).
GIT_WORKTREE = {"checkout", "restore", "switch", "stash", "merge", "pull", "rebase", "cherry-pick", "revert", "am",
                "apply", "reset"}


def _git_rewrites(args: list[str], places: list[str], ledger_real: str) -> str | None:
    """`git checkout .`, `git stash`, `git reset --hard`, `git pull`, run in the repository that tracks the ledger;
    `git apply`/`git am` where the ledger is, as `patch` (in a repository or not)."""
    subcommand, rest = options.git_subcommand(args)
    if subcommand not in GIT_WORKTREE:
        return None
    if subcommand in ("apply", "am") and not any(a in ("--check", "--stat", "--numstat", "--summary") for a in rest) \
            and any(_holds_ledger(place, ledger_real) for place in places):
        return f"`git {subcommand}` would write the files its patch names in the ledger's folder, and they may be the ledger"
    if subcommand == "reset" and not any(a in ("--hard", "--merge", "--keep") for a in rest):
        return None
    if subcommand == "stash" and rest[:1] in (["list"], ["show"]):
        return None
    if "--" in rest:
        specs = rest[rest.index("--") + 1:]
        if specs and not any(_holds_ledger(os.path.join(place, spec), ledger_real) or protected(ledger_real, spec, place)
                             for spec in specs for place in places):
            return None
    if not any(_tracks(place, ledger_real) for place in places):
        return None
    return f"`git {subcommand}` would rewrite the files git tracks, the ledger among them"


def _tracks(place: str, ledger_real: str) -> bool:
    """Does the git repository `place` is in track the ledger (the same work tree, the file in its index)?"""
    import subprocess

    def git(*words: str, where: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", where, *words], capture_output=True, text=True, timeout=10,
                              stdin=subprocess.DEVNULL)

    folder = os.path.dirname(ledger_real)
    try:
        here, there = git("rev-parse", "--show-toplevel", where=place), git("rev-parse", "--show-toplevel", where=folder)
        if here.returncode != 0 or there.returncode != 0 or here.stdout.strip() != there.stdout.strip():
            return False
        return git("ls-files", "--error-unmatch", "--", os.path.basename(ledger_real), where=folder).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return "$" in place  # a folder only the shell knows may be the repository


def may_write(commands: list[Command], ledger_real: str, cwd: str) -> str | None:
    """Why one of `commands` may write the ledger or a sidecar, for all the hook can tell: a
    program that is no known reader is given one (`uniq IN OUT`, `iconv -o`, `curl -o`, a
    script of the agent's own), or `find` acts on what may be one. None: each is a reader,
    judged by writes_ledger, or given none. A word only the shell knows (`"$OUT"`) counts
    only where what is written of it names the ledger's file (`"$D/ledger.yaml"`): a path
    held whole in a variable is out of the hook's sight (README)."""
    for command in commands:
        program, args = command.program()
        places = start_folders(command, cwd)
        if program == "find":  # what it acts on is `{}`, which only find knows
            found = _find_writes(args, places, ledger_real)
            if found:
                return found
        if program in READERS or program in JUDGED or not program or program in QUIET:
            continue
        if program in ONE_FILE_READERS and len([a for a in args if not a.startswith("-")]) <= 1 and "-r" not in args:
            continue
        if program.startswith("python") and args[:2] == ["-m", "json.tool"] and len(args) <= 3:
            continue
        named = next((a for a in args for place in places if _given(ledger_real, a, place)), None)
        if named is not None:
            return (f"`{program}` is given {named}, and the hook cannot tell whether it writes it; read the ledger "
                    f"with `handoff status`, `cat` or `grep`, or pipe it in (`cat {named} | {program} ...`)")
    return None


# Shell syntax and folder changes: they run nothing that writes (their words are judged elsewhere).
QUIET = {"cd", "pushd", "popd", "pwd", "true", "false", ":", "exit", "wait", "set", "unset", "export", "declare",
         "typeset", "local", "readonly", "builtin", "command", "read", "shift", "return"}


def _given(ledger_real: str, word: str, place: str) -> bool:
    """Is `word` an argument naming the ledger, a sidecar or an engine folder? A word with parts
    only the shell knows counts when the rest of it names the ledger's file."""
    if _RUN_TIME.search(word) and os.path.basename(ledger_real) not in _RUN_TIME.sub("", word):
        return False
    return protected(ledger_real, word, place)


def mentions(text: str, ledger_real: str) -> bool:
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


def _find_writes(args: list[str], places: list[str], ledger_real: str) -> str | None:
    """`find . -name L -delete`, `find . -name L -exec cp X {} ;`: an action on what find finds, where what it may
    find includes the ledger, a file beside it or an engine folder (an `-exec` of a reader only reads)."""
    writing = []
    for i, arg in enumerate(args):
        if arg not in FIND_ACTIONS:
            continue
        if arg in ("-exec", "-execdir", "-ok", "-okdir"):
            run = peel(args[i + 1:])
            if run and os.path.basename(run[0]) in READERS:
                continue
        writing.append(arg)
    if not writing:
        return None
    i = 0
    while i < len(args) and (args[i] in ("-L", "-H", "-P", "-D") or args[i].startswith("-O")):
        i += 2 if args[i] == "-D" else 1  # find's own options come before its starting points
    starts = []
    for arg in args[i:]:
        if arg.startswith(("-", "(", "!", ")")):
            break
        starts.append(arg)
    roots = [os.path.join(place, os.path.expanduser(start)) for place in places for start in (starts or ["."])]
    engine = [d for d in _own_dirs() if any(holds_engine_dir(root, "/") or protected(ledger_real, root, "/")
                                            and engine_own(os.path.realpath(root)) for root in roots)]
    if not engine and not any(_holds_ledger(root, ledger_real) or protected(ledger_real, root, "/") for root in roots):
        return None
    tests = [(a, args[j + 1]) for j, a in enumerate(args[:-1]) if a in ("-name", "-iname", "-path", "-ipath", "-wholename",
                                                                      "-iwholename", "-lname", "-ilname")]
    if tests and not any(a in ("-regex", "-iregex", "-o", "-or", "-not", "!") for a in args):
        folder, base = os.path.split(ledger_real)
        try:
            beside = [n for n in os.listdir(folder) if n.startswith(base + ".")]
        except OSError:
            beside = []
        found = [(folder, name) for name in (base, *beside)] + _engine_files(engine)  # what is there to find now
        if not any(_find_matches(test, pattern, name, where) for test, pattern in tests for where, name in found):
            return None  # every name it looks for is another file's
    return f"`find {writing[0]}` would act on what it finds, and it may find the ledger, a file beside it or the engine's files"


def _engine_files(folders: list[str], most: int = 2000) -> list[tuple[str, str]]:
    """(folder, name) of what is in the engine's per-user folders `folders` (and the folders themselves), at most `most`."""
    out: list[tuple[str, str]] = []
    for top in folders:
        out.append((os.path.dirname(top), os.path.basename(top)))
        for where, dirs, files in os.walk(top):
            out += [(where, n) for n in dirs + files]
            if len(out) > most:
                return out
    return out


def _find_matches(test: str, pattern: str, name: str, folder: str) -> bool:
    """Does find's `test PATTERN` match the file `name` in `folder` (by its name, or its path for -path)?"""
    fold = test.startswith("-i")
    pattern, subject = (pattern.lower(), name.lower()) if fold else (pattern, name)
    if test.lstrip("-i").lstrip("-") in ("name", "lname"):
        return fnmatch.fnmatchcase(subject, pattern)
    path = os.path.join(folder.lower() if fold else folder, subject)
    return fnmatch.fnmatchcase(path, pattern) or fnmatch.fnmatchcase(path, "*" + pattern.lstrip(".")) or \
        fnmatch.fnmatchcase(subject, os.path.basename(pattern))


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


def code_writes_protected(code: str, ledger_real: str) -> bool:
    """Does interpreter code name the ledger (or a sidecar), or one of the engine's per-user
    folders (`mentions`), and write a file? A heuristic, as for the ledger: code that builds
    the path in pieces is out of its sight (the hook is a net, not the lock)."""
    return mentions(code, ledger_real) and bool(CODE_WRITES.search(code))
