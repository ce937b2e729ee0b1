"""A runbook step's script under another name: a copy, a link, its text fed to an interpreter.

engine.hooks.commands.raw_step knows a step's command by its words: the script's file name
(`sim.py`), the step's other literal words (`cutover`) and a target's name. The same script
under another name runs the same step: a copy or a link made by an earlier call (`cp sim.py
x.py`, `ln -s`, `cat sim.py > x.py`), a glob (`python3 s*.py`), or its text fed to an
interpreter (`python3 - cutover db-18 < sim.py`, `cat sim.py | python3 -`, `python3 -c
"$(cat sim.py)"`). So the steps' scripts (the files a step's `run` names, from the ledger's
folder, where steps run) are compared byte for byte with what a command runs: the script file
or code engine.hooks.unwrap found, and every word that names a file. A script file the hook
cannot read before the command runs (made earlier on the same line, `cp sim.py x.py && python3
x.py`, or named at run time, `python3 $(ls s*)`) may be any step's script. Only the files whose
size is a script's are read. Code that builds a script's path at run time is out of reach
(README: "Driving it from Claude Code").
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable

from engine.hooks.shell import Command
from engine.hooks.unwrap import MAX_FILE


def scripts(named: Iterable[str], ledger_dir: str) -> dict[str, str]:
    """The step words (as raw_step shows them: a path's file name) that name a file from the
    ledger's folder -> that file's path. Only such a file is a step's script."""
    out = {}
    for text in named:
        path = os.path.join(ledger_dir, os.path.expanduser(text))
        if os.path.isfile(path):
            out[os.path.basename(text) if "/" in text else text] = path
    return out


def _sized(known: dict[str, str]) -> dict[int, list[str]]:
    """The scripts' words by their files' sizes (only a file of a script's size is read)."""
    sized: dict[int, list[str]] = {}
    for word, path in known.items():
        try:
            sized.setdefault(os.path.getsize(path), []).append(word)
        except OSError:
            continue
    return sized


def runs_script(command: Command, known: dict[str, str]) -> set[str]:
    """The scripts of `known` that `command` runs as its script (the file it runs, or the code it is fed),
    under any name; a script file the hook cannot read may be any of them. Its other words are not looked at."""
    script, cwd = command.script_file, command.cwd or "."
    if script is not None:
        if not _readable(script, cwd):
            return set(known)
        sized = _sized(known)
        return {w for path in _files(script, cwd) for w in _same(_bytes(path), sized.get(_size(path), []), known)}
    return _fed(command, _sized(known), known) if command.code is not None else set()


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return -1


def _fed(command: Command, sized: dict[int, list[str]], known: dict[str, str]) -> set[str]:
    """The scripts whose text is the code `command` is fed."""
    text = (command.code or "").encode("utf-8", "surrogateescape")
    for fed in (text, text + b"\n"):  # a here-doc or `$(cat F)` loses the last newline
        same = _same(fed, sized.get(len(fed), []), known)
        if same:
            return same
    return set()


def named(words: list[str], cwd: str, known: dict[str, str]) -> tuple[set[str], str]:
    """The scripts of `known` that one of `words` (a command's, or the path-like words of code it runs) names
    under another name: a copy, a link, a glob; and how the hook saw it."""
    sized = _sized(known)
    for word in dict.fromkeys(words):
        for path in _files(word, cwd):
            size = _size(path)
            same = _same(_bytes(path), sized[size], known) if size in sized else set()
            if same:
                return same, f"{word} is {_listed(same)} under another name"
    return set(), ""


def runs_one(command: Command, known: dict[str, str]) -> tuple[set[str], str]:
    """The scripts of `known` that `command` runs under another name (their words, as raw_step
    shows them), and how the hook saw it; an empty set and "" when it runs none of them."""
    cwd = command.cwd or "."
    script = command.script_file
    if script is not None and not _readable(script, cwd):  # made before it runs, or named at run time
        return set(known), f"the hook cannot read {script} before it runs, so it may be {_listed(set(known))}"
    if script is None and command.code is not None:
        same = _fed(command, _sized(known), known)
        if same:
            return same, f"the code it is fed is {_listed(same)}"
    return named(command.words, cwd, known)


def _same(raw: bytes | None, words: list[str], known: dict[str, str]) -> set[str]:
    """The words of `words` whose script has exactly the bytes `raw`."""
    return {w for w in words if raw is not None and _bytes(known[w]) == raw}


def _listed(words: set[str]) -> str:
    return " or ".join(sorted(words))


def _readable(word: str, cwd: str) -> bool:
    return "$" not in word and "`" not in word and any(True for _ in _files(word, cwd))


def _files(word: str, cwd: str) -> list[str]:
    """The regular files a word names from `cwd` (a glob: what it matches now, at most a few)."""
    if not word or word.startswith("-") or "$" in word or "`" in word:
        return []
    full = os.path.join(cwd, os.path.expanduser(word))
    found = glob.glob(full)[:16] if any(ch in word for ch in "*?[") else [full]
    return [f for f in found if os.path.isfile(f)]


def _bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(MAX_FILE + 1)
    except OSError:
        return None
