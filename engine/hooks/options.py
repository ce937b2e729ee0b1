"""What a program's options say it will do, read as the program reads them (engine.hooks.writes
judges the paths): sed's, perl's, awk's and yq's in-place editing and scripts, tar's, zip's and
the unpackers' archives and folders, git's folders and subcommand. GNU long options are taken
by any unambiguous prefix (`--in-pl`, `--expr=`, `--extr`), as getopt takes them.
"""

from __future__ import annotations

import os
import re


def long_option(arg: str, full: str, shortest: int = 3) -> bool:
    """Is `arg` (`--NAME` or `--NAME=VALUE`) `full` or a prefix of it at least `shortest` characters after `--`?"""
    name = arg.split("=", 1)[0]
    return name.startswith("--") and len(name) - 2 >= min(shortest, len(full) - 2) and full.startswith(name)


def rsync_link_dests(args: list[str]) -> list[str]:
    """The folders `rsync --link-dest=DIR` (any prefix of it, `=DIR` or the next word) hard-links unchanged files from."""
    out = []
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if long_option(arg, "--link-dest", 6):
            out.append(arg.split("=", 1)[1] if "=" in arg else args[i + 1] if i + 1 < len(args) else ".")
    return out


def sed_in_place(args: list[str]) -> bool:
    for arg in args:
        if arg == "--":
            return False
        if long_option(arg, "--in-place", 1):
            return True
        if arg.startswith("-") and not arg.startswith("--"):
            for ch in arg[1:]:
                if ch == "i":
                    return True
                if ch in "efl":  # the rest of the word is this option's value
                    break
    return False


def sed_scripts(args: list[str], cwd: str) -> list[str]:
    """The scripts `sed` runs: each `-e`/`--expression` value and `-f`/`--file` file's text,
    or else its first word that is no option."""
    scripts, i, positional = [], 0, []
    while i < len(args):
        arg = args[i]
        value_next = i + 1 < len(args)
        if arg in ("-e", "-f") or (long_option(arg, "--expression") or long_option(arg, "--file")) and "=" not in arg:
            if value_next:
                scripts.append(_text(args[i + 1], cwd) if arg == "-f" or long_option(arg, "--file") else args[i + 1])
            i += 2
            continue
        if long_option(arg, "--expression"):
            scripts.append(arg.split("=", 1)[1])
        elif long_option(arg, "--file"):
            scripts.append(_text(arg.split("=", 1)[1], cwd))
        elif arg.startswith("-e") and len(arg) > 2 and not arg.startswith("--"):
            scripts.append(arg[2:])
        elif arg.startswith("-f") and len(arg) > 2 and not arg.startswith("--"):
            scripts.append(_text(arg[2:], cwd))
        elif arg in ("-l",) or long_option(arg, "--line-length") and "=" not in arg:
            i += 2
            continue
        elif not arg.startswith("-"):
            positional.append(arg)
        i += 1
    return scripts or positional[:1]


def sed_writes(script: str, name: str) -> bool:
    """Does a sed `script` write or run something naming `name` (`w FILE`, `W FILE`, `s///w FILE`, `e COMMAND`)?"""
    return re.search(r"(?:^|[^A-Za-z0-9_])[wWe]\b[^;\n}]*" + re.escape(name), script) is not None


def awk_code(args: list[str], cwd: str) -> str:
    """What an awk program is: its program text (or `-f` files' text), `-e`/`--source` texts and
    `-v` assignments, never its input files."""
    parts, i, program = [], 0, None
    while i < len(args):
        arg = args[i]
        if arg in ("-f", "-e", "-v", "--source", "--file", "--assign") and i + 1 < len(args):
            value = args[i + 1]
            parts.append(_text(value, cwd) if arg in ("-f", "--file") else value)
            i += 2
            continue
        if arg.startswith(("-v", "-e")) and len(arg) > 2 and not arg.startswith("--"):
            parts.append(arg[2:])
        elif arg.startswith("-f") and len(arg) > 2 and not arg.startswith("--"):
            parts.append(_text(arg[2:], cwd))
        elif arg.startswith(("--source=", "--assign=")):
            parts.append(arg.split("=", 1)[1])
        elif arg == "--":
            program = program if program is not None or any(a in ("-f", "-e") for a in args) else (
                args[i + 1] if i + 1 < len(args) else "")
            break
        elif not arg.startswith("-") and program is None and not any(a in ("-f", "--file") for a in args[:i]):
            program = arg
            break
        i += 1
    return "\n".join(parts + ([program] if program else []))


def perl_in_place(args: list[str]) -> bool:
    for arg in args:
        if arg == "--" or not arg.startswith("-"):
            continue
        for ch in arg[1:]:
            if ch == "i":
                return True
            if ch in "eEIMmxdDCV":
                break
    return False


def awk_in_place(args: list[str]) -> bool:
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


def yq_in_place(args: list[str]) -> bool:
    return any(a in ("-i", "--inplace") or (a.startswith("-") and not a.startswith("--") and "i" in a[1:]) for a in args)


# Programs that write the files named inside what they read (an archive, a patch), in their folder,
# and the option naming that folder where they have one (tar -C, unzip -d, patch -d, cpio -D).
FOLDER_OPTION = {"tar": "-C", "bsdtar": "-C", "unzip": "-d", "patch": "-d", "cpio": "-D", "ar": "", "7z": "", "7za": "",
                 "unrar": "", "gunzip": "", "gzip": "", "unxz": "", "bunzip2": ""}
UNPACKERS = frozenset(FOLDER_OPTION)


def unpacks(program: str, args: list[str]) -> bool:
    """Does this program write what it unpacks (not only list, test or print it)?"""
    if program == "unzip":
        return not any(a in ("-l", "-t", "-v", "-p", "-Z", "-z") for a in args)
    if program == "patch":
        return not any(a in ("-C", "--dry-run", "--check") or long_option(a, "--dry-run") for a in args)
    if program in ("gunzip", "gzip", "unxz", "bunzip2"):  # -N: the name stored in the archive, which may be the ledger's
        decompressing = program != "gzip" or any(a in ("-d", "--decompress") or (a[:1] == "-" and a[1:2] != "-" and "d" in a)
                                                 for a in args)
        return decompressing and any(a in ("-N", "--name") or (a[:1] == "-" and a[1:2] != "-" and "N" in a) for a in args)
    words = [a for a in args if a]
    first = words[0] if words else ""
    if program == "ar":
        return bool(first) and "x" in first.lstrip("-")
    if program in ("7z", "7za", "unrar"):
        return first in ("x", "e")
    if program == "cpio":
        return any(a in ("-i", "-p") or long_option(a, "--extract") or long_option(a, "--pass-through", 4)
                   or (a[:1] == "-" and a[1:2] != "-" and ("i" in a or "p" in a)) for a in args)
    for i, arg in enumerate(args):  # tar, bsdtar
        if long_option(arg, "--extract", 4) or long_option(arg, "--get", 3):
            return True
        bundle = arg[1:] if arg.startswith("-") and not arg.startswith("--") else (arg if i == 0 else "")
        if "x" in bundle:
            return True
    return False


def unpacks_anywhere(program: str, args: list[str]) -> bool:
    """Does it write members at the absolute paths the archive names (`tar -P`, `cpio` without
    `--no-absolute-filenames`): anywhere, the ledger's folder included?"""
    if program in ("tar", "bsdtar"):
        return any(a == "-P" or long_option(a, "--absolute-names", 4) or (a[:1] == "-" and a[1:2] != "-" and "P" in a)
                   for a in args)
    if program == "cpio":
        return not any(long_option(a, "--no-absolute-filenames", 5) for a in args)
    return False


def unpack_folders(program: str, args: list[str], places: list[str]) -> list[str]:
    """Where an unpacking program writes: the folder its option names (`tar -C DIR`, `unzip -d
    DIR`, `--directory=DIR`, 7z's `-oDIR`), else where it runs."""
    named = []
    for i, arg in enumerate(args):
        value = None
        if arg and arg == FOLDER_OPTION.get(program) and i + 1 < len(args):
            value = args[i + 1]
        elif long_option(arg, "--directory", 3):
            value = arg.split("=", 1)[1] if "=" in arg else (args[i + 1] if i + 1 < len(args) else None)
        elif program in ("7z", "7za") and arg.startswith("-o") and len(arg) > 2:
            value = arg[2:]
        if value:
            named += [os.path.join(place, os.path.expanduser(value)) for place in places]
    return named or list(places)


def archive_written(program: str, args: list[str]) -> list[str]:
    """The archive `tar -c`/`zip` would write (tar's `-f`/`--file` value; zip's first word that is no option)."""
    if program == "zip":
        return [a for a in args if not a.startswith("-")][:1]
    out = []
    for i, arg in enumerate(args):
        if long_option(arg, "--file", 3):
            value = arg.split("=", 1)[1] if "=" in arg else (args[i + 1] if i + 1 < len(args) else "")
            out.append(value)
        elif arg.startswith("-") and not arg.startswith("--") and "f" in arg:
            rest = arg[arg.index("f") + 1:]
            out.append(rest or (args[i + 1] if i + 1 < len(args) else ""))
        elif i == 0 and not arg.startswith("-") and "f" in arg:  # old style: `tar cf ARCHIVE ...`
            out.append(args[1] if len(args) > 1 else "")
    return [a for a in out if a]


def removes_sources(program: str, args: list[str]) -> bool:
    """Does `tar --remove-files` / `zip -m` delete the files it archives?"""
    if program == "zip":
        return any(a in ("-m", "--move") or (a[:1] == "-" and a[1:2] != "-" and "m" in a) for a in args)
    return any(long_option(a, "--remove-files", 4) for a in args)


def git_folders(args: list[str]) -> list[str]:
    """The folders `git -C DIR` runs in (before its subcommand)."""
    out, i = [], 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "-C" and i + 1 < len(args):
            out.append(args[i + 1])
        i += 2 if args[i] in ("-C", "-c", "--git-dir", "--work-tree") else 1
    return out


def git_subcommand(args: list[str]) -> tuple[str, list[str]]:
    """(git's subcommand, its arguments)."""
    i = 0
    while i < len(args):
        if args[i] in ("-C", "-c", "--git-dir", "--work-tree"):
            i += 2
        elif args[i].startswith("-"):
            i += 1
        else:
            return args[i], args[i + 1:]
    return "", []


def _text(path: str, cwd: str) -> str:
    """A script file's text (a regular file, up to 256 KiB: never a FIFO that would hang the
    hook), or its name when it cannot be read."""
    full = os.path.join(cwd, os.path.expanduser(path))
    try:
        if os.path.isfile(full) and os.path.getsize(full) <= 256 * 1024:
            with open(full, encoding="utf-8", errors="replace") as fh:
                return fh.read()
    except OSError:
        pass
    return path
