"""Every command a Bash-tool line runs, however it is wrapped: the hook judges each one.

engine.hooks.shell splits a line into simple commands; this module goes inside them:
- wrappers that run the rest of their words as a command (`env X=1`, `sudo -u alice`,
  `timeout 5`, `nohup`, `nice -n 5`, `xargs -n1`, `command`, `exec`, `stdbuf`, ...) are
  peeled off, so `timeout 5 handoff approve ...` is judged as `handoff approve ...`;
- scripts inside a command are read again as command lines, to a bounded depth:
  `$(...)` and backticks, `bash -c`/`sh -c` strings, `eval`, `su -c`, `flock -c`,
  `find -exec`, a here-doc or here-string fed to a shell, `echo ... | bash`, and a shell
  script file that exists when the hook runs (also through `source` or `.`);
- `cd DIR` and `NAME=value` earlier on the line are followed: later commands know where
  they run and what `$NAME` holds (as far as the line shows it);
- code given to an interpreter (`python -c`, a here-doc fed to `python3 -`, a `.py` file,
  `python3 < FILE`, `perl -e`, `ruby -e`, `node -e`, an awk program) is kept as text for
  engine.hooks.judge to read;
- what runs later or elsewhere is read as a script too: `trap 'CMD' EXIT`, an alias's
  body, `git -c alias.x='!CMD'`, `script -qc CMD`, a file run as a program (`./go.sh`, by
  its `#!`), and words after bash's brace expansion (`{handoff,approve}`);
- a shell function or an alias defined earlier on the line is read again where it is
  called: a function's body (as a `bash -c` string or a script file's text) with the
  call's words in place of `"$@"`, `$1`, `$0`..., an alias's text followed by the call's
  words. Where the hook cannot put them in (after `shift` or `set --`, `"${@:2}"`, the
  line's own positional parameters), the words stay in `Command.unknown`: a command that
  runs a step's script with them is refused (engine.hooks.commands.raw_step).
"""

from __future__ import annotations

import os
import re
import shlex

from engine.hooks.options import awk_code
from engine.hooks.shell import Command, split
from engine.hooks.wrappers import assignment as _assignment
from engine.hooks.wrappers import peel

MAX_DEPTH = 6  # nesting beyond this is refused: no honest command line needs it
MAX_FILE = 256 * 1024  # a script file larger than this is not read
SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "busybox"}
INTERPRETERS = {"perl": "-eE", "ruby": "-e", "node": "-ep", "nodejs": "-ep"}
AWKS = {"awk", "gawk", "mawk", "nawk"}
_VARIABLE = re.compile(r"\$\{(\w+)\}|\$(\w+)")
DECLARE = {"export", "declare", "typeset", "local", "readonly"}
STDIN = {"-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"}  # a script argument that means "read it on stdin"
# Positional parameters: `$1`, `${1}`, `$@`, `"$*"`, `$0` (put in when known), and the forms never put in (`${@:2}`).
_POSITIONAL = re.compile(r"\$(?:[@*0-9]|\{[@*0-9#])")
_PLAIN_POSITIONAL = re.compile(r"\$\{([0-9]|[@*#])\}|\$([0-9]|[@*#])")
RESHUFFLE = {"shift", "getopts"}  # (and `set` with words): the positional parameters after them are unknown


class Scope:
    """What a script sees of the shell that runs it: the line's variables (`env`), its
    positional parameters (`args`, None when unknown; `zero` is `$0`), the functions and aliases
    defined so far, and whether it is a function's body read where it is defined (`defining`:
    its parameters come at the call, where it is read again)."""

    __slots__ = ("env", "args", "zero", "functions", "aliases", "defining")

    def __init__(self, env: dict[str, str] | None = None, args: list[str] | None = None, zero: str | None = None,
                 functions: dict[str, str] | None = None, aliases: dict[str, str] | None = None,
                 defining: bool = False) -> None:
        self.env = {} if env is None else env
        self.args, self.zero, self.defining = args, zero, defining
        self.functions = {} if functions is None else functions
        self.aliases = {} if aliases is None else aliases

    def nested(self, args: list[str] | None | bool = True, zero: str | None = None, defining: bool | None = None,
               without: str | None = None) -> Scope:
        """A copy for a nested script: `args` True keeps the parameters (a subshell, `eval`, an alias), a list
        gives new ones (a function call, `bash -c S NAME ARGS`, a script file's); `without`: an alias
        being expanded (bash does not expand it again inside its own text)."""
        aliases = {k: v for k, v in self.aliases.items() if k != without}
        defining = self.defining if defining is None else defining
        if args is True:
            return Scope(dict(self.env), self.args, self.zero, dict(self.functions), aliases, defining)
        return Scope(dict(self.env), args if isinstance(args, list) else None, zero, dict(self.functions), aliases,
                     defining)


class Parsed:
    """Every simple command of a line at every depth, the code given to interpreters
    ((interpreter, text) pairs), and whether nesting went deeper than MAX_DEPTH."""

    __slots__ = ("commands", "code", "too_deep")

    def __init__(self) -> None:
        self.commands: list[Command] = []
        self.code: list[tuple[str, str]] = []
        self.too_deep = False


def parse(line: str, cwd: str = ".") -> Parsed:
    """All of `line`: each command, and each command nested in it (see the module's doc)."""
    parsed = Parsed()
    _walk(split(line), 0, parsed, cwd, Scope())
    return parsed


def _nest(text: str, depth: int, parsed: Parsed, cwd: str, scope: Scope) -> str:
    """Walk a nested script from `cwd`; returns where it ends (what an `eval` or `source` leaves the shell in)."""
    if depth + 1 > MAX_DEPTH:
        parsed.too_deep = True
        return cwd
    return _walk(split(text, depth + 1), depth + 1, parsed, cwd, scope)


def _positional(words: list[str], scope: Scope) -> list[str]:
    """`words` with the positional parameters put in, where the scope knows them: `"$@"` is the
    call's words, `$1`/`${1}` one of them (or nothing), `$#` how many, `$0` the name."""
    args = scope.args
    if args is None or scope.defining:
        return words
    values = {"@": " ".join(args), "*": " ".join(args), "#": str(len(args)), "0": scope.zero or "bash"}
    values.update((str(n), args[n - 1] if n <= len(args) else "") for n in range(1, 10))
    out: list[str] = []
    for word in words:
        if word in ("$@", "$*", "${@}", "${*}"):
            out += args
        elif "$" in word:
            out.append(_PLAIN_POSITIONAL.sub(lambda m: values[m.group(1) or m.group(2)], word))
        else:
            out.append(word)
    return out


def _follow(command: Command, cwd: str, scope: Scope) -> str:
    """Substitute the positional parameters and the line's own variables in `command`; record its
    assignments and `cd`; returns the new cwd."""
    env = scope.env
    command.words = [_VARIABLE.sub(lambda m: env.get(m.group(1) or m.group(2), m.group(0)), w)
                     for w in _positional(command.words, scope)]
    if not scope.defining:
        # A word of its own (`"$@"`, `${@:2}`), not one inside a code string (`-c 'print("$1")'`).
        command.unknown = [w for w in command.words if _POSITIONAL.search(w) and not any(c.isspace() for c in w)]
    words = command.words[1:] if command.words[:1] and command.words[0] in DECLARE else command.words
    if words and all(_assignment(w) for w in words):
        env.update(dict(w.split("=", 1) for w in words))
    command.cwd = cwd
    # `cd` however it is spelled: `builtin cd`, `command cd`, `X=1 cd`, `pushd`; `popd` and
    # `cd -` go where only the shell knows (a path through them matches as `*` does).
    moving = [w for w in command.words if not _assignment(w)]
    while moving[:1] in (["builtin"], ["command"]):
        moving = moving[1:]
    if moving[:1] in (["cd"], ["pushd"], ["popd"]):
        target = next((w for w in moving[1:] if not w.startswith(("-", "+"))), None)
        if moving[0] == "popd" or moving[1:2] == ["-"] or (moving[0] == "pushd" and target is None):
            return os.path.join(cwd, "$OLDPWD")
        return os.path.normpath(os.path.join(cwd, os.path.expanduser(target or "~")))
    return cwd


def _reshuffles(commands: list[Command]) -> bool:
    """Does a script change its positional parameters (`shift`, `set -- ...`, `getopts`)? Then which
    word is `$1` depends on how it runs: they are unknown all through it."""
    for command in commands:
        words = peel(command.words)
        if words and (words[0] in RESHUFFLE or words[0] == "set" and any(not w.startswith(("-", "+")) or w == "--"
                                                                          for w in words[1:])):
            return True
    return False


def _walk(commands: list[Command], depth: int, parsed: Parsed, cwd: str, scope: Scope) -> str:
    """Each command and what it nests; returns the folder the commands end in."""
    script: str | None  # a nested script of the command, then the one it runs
    if scope.args is not None and _reshuffles(commands):
        scope = scope.nested(args=None, zero=scope.zero)
    for command in commands:
        cwd = _follow(command, cwd, scope)
        parsed.commands.append(command)
        if command.function is not None:  # read here without its parameters, and again where it is called
            scope.functions[command.function] = command.scripts[0]
            _nest(command.scripts[0], depth, parsed, cwd, scope.nested(defining=True))
            continue
        for script in command.scripts:
            _nest(script, depth, parsed, cwd, scope.nested())
        expanded = braces(command.words)
        if expanded != command.words:  # `{handoff,approve} L`, `handoff {approve,x} L`: judged as bash runs them too
            parsed.commands.append(Command(words=expanded, depth=depth))
        words = peel(expanded)
        if not words:
            continue
        program, args = os.path.basename(words[0]), words[1:]
        if program == "busybox" and args:
            program, args = os.path.basename(args[0]), args[1:]
        script, inner = None, scope.nested()  # inner: what the script it runs sees
        if words[0] in scope.aliases:  # an alias: its text, then the call's words
            script, inner = " ".join([scope.aliases[words[0]], *(shlex.quote(a) for a in args)]), \
                scope.nested(without=words[0])
        elif words[0] in scope.functions:  # a function: its body, with the call's words as its parameters
            script, inner = scope.functions[words[0]], scope.nested(args=args, zero=scope.zero)
        elif program in SHELLS:
            script = command.code = _shell_script(args, command, cwd)
            inner = scope.nested(*_shell_arguments(args))
        elif program == "eval":
            script = " ".join(args)
        elif program in ("source", ".") and args:
            script = _read(args[0], cwd)  # runs in this shell: read it like a script file
            inner = scope.nested(args=args[1:], zero=scope.zero) if len(args) > 1 else inner
        elif program in ("su", "flock", "script", "runuser") and _dash_c(args) is not None:
            script = _dash_c(args)
        elif program == "trap" and args and not args[0].startswith("-"):
            script = args[0]  # run when the signal comes (EXIT: when the shell ends)
        elif program == "alias":
            script = "\n".join(a.split("=", 1)[1] for a in args if "=" in a)  # what the alias will run
            scope.aliases.update((a.partition("=")[0], a.partition("=")[2]) for a in args if "=" in a)
        elif program == "git":
            script = "\n".join(v[1:] for v in _git_aliases(args) if v.startswith("!")) or None
        elif program == "find":
            _find_exec(args, command, depth, parsed, cwd, scope)
        elif program in AWKS:
            # Its program (not its input files): `system("...")` shows what it runs, `print > F` where it writes.
            parsed.code.append((program, awk_code(args, cwd)))
        elif program.startswith("python") or program in INTERPRETERS:
            code = command.code = _code(program, args, command, cwd)
            if code is not None:
                parsed.code.append((program, code))
        elif "/" in words[0] and program != "handoff":  # `handoff`: judged as itself
            command.script_file = words[0]
            script = _run_file(words[0], cwd, parsed)  # `./go.sh`: a file run as a program
            inner = scope.nested(args=args, zero=words[0])
        if script is not None:
            command.container = True
            ended = _nest(script, depth, parsed, cwd, inner)
            if program in ("eval", "source", "."):  # run by this shell: where they `cd` lasts
                cwd = ended
    return cwd


_BRACES = re.compile(r"^(.*?)\{([^{}]*,[^{}]*)\}(.*)$")


def braces(words: list[str]) -> list[str]:
    """Words after bash's brace expansion (one level: `{handoff,approve}` is two words)."""
    out: list[str] = []
    for word in words:
        found = _BRACES.match(word)
        out += [found.group(1) + part + found.group(3) for part in found.group(2).split(",")] if found else [word]
    return out


def _dash_c(args: list[str]) -> str | None:
    """The command string of `su`/`script`/`flock`/`runuser`: after `-c` (or `-qc`: the last of a
    cluster of short flags), `--command STRING` or `--command=STRING`; None when there is none."""
    for i, arg in enumerate(args):
        if arg.startswith("--command="):
            return arg.split("=", 1)[1]
        if arg == "--command" or (arg.startswith("-") and not arg.startswith("--") and arg.endswith("c")):
            return args[i + 1] if i + 1 < len(args) else ""
    return None


def _git_aliases(args: list[str]) -> list[str]:
    """The values of `git -c alias.NAME=VALUE` on the line (a `!` alias runs a shell command)."""
    return [args[i + 1].split("=", 1)[1] for i, a in enumerate(args[:-1])
            if a == "-c" and args[i + 1].startswith("alias.") and "=" in args[i + 1]]


def _run_file(path: str, cwd: str, parsed: Parsed) -> str | None:
    """A file run as a program (`./go.sh`): a shell script's text to read again, or (by its `#!`)
    an interpreter's code kept for the judge; None when it is no text file there."""
    text = _read(path, cwd)
    if text is None or "\0" in text[:4096]:
        return None
    first = text.split("\n", 1)[0]
    words = first[2:].split() if first.startswith("#!") else []
    interpreter = os.path.basename(words[0]) if words else "sh"
    if interpreter == "env" and len(words) > 1:
        interpreter = os.path.basename(next((w for w in words[1:] if not w.startswith("-")), ""))
    if interpreter.startswith("python") or interpreter in INTERPRETERS:
        parsed.code.append((interpreter, text))
        return None
    return text if interpreter in SHELLS else None


def _stdin(command: Command, cwd: str = ".") -> str | None:
    """The text a command reads on stdin, when the line shows it: a here-doc, a here-string,
    a file redirected in (`< FILE`), or `echo`/`printf`/`cat <<EOF`/`cat FILE` piped into it."""
    if command.stdin_text is not None:
        return command.stdin_text
    if command.reads_from is not None:
        return _read(command.reads_from, cwd)
    source = command.piped_from
    if source is None:
        return None
    words = peel(source.words)
    name = os.path.basename(words[0]) if words else ""
    if name in ("echo", "printf"):
        return "\n".join(w for w in words[1:] if not w.startswith("-"))
    if name == "cat" and len(words) == 1:
        return source.stdin_text
    if name == "cat":  # `cat go.sh | sh`: the files it shows, as `sh < go.sh` reads one
        texts = [_read(w, cwd) for w in words[1:] if not w.startswith("-")]
        return "\n".join(t for t in texts if t is not None) or None
    return None


def _read(path: str, cwd: str) -> str | None:
    full = os.path.join(cwd, os.path.expanduser(path))
    try:
        if os.path.isfile(full) and os.path.getsize(full) <= MAX_FILE:
            with open(full, encoding="utf-8", errors="replace") as fh:
                return fh.read()
    except OSError:
        return None
    return None


def _shell_arguments(args: list[str]) -> tuple[list[str], str | None]:
    """The positional parameters (and `$0`) of the script a shell runs: `bash -c S NAME A B`, `bash F A B`,
    `bash -s A B`."""
    i = 0
    while i < len(args) and args[i][:1] in "-+" and len(args[i]) > 1:
        if args[i] == "--":
            i += 1
            break
        i += 2 if not args[i].startswith("--") and "o" in args[i][1:] else 1
    dash_c = any("c" in a[1:] for a in args[:i] if a[:1] in "-+" and not a.startswith("--"))
    dash_s = any("s" in a[1:] for a in args[:i] if a[:1] in "-+" and not a.startswith("--"))
    rest = args[i:]
    if dash_c:
        return rest[2:], (rest[1] if len(rest) > 1 else None)
    if dash_s or not rest:
        return rest, None
    return rest[1:], rest[0]


def _shell_script(args: list[str], command: Command, cwd: str) -> str | None:
    """The script a shell runs: its `-c` string, its script file, or its stdin (also with `-s`:
    the words after it are the script's arguments)."""
    dash_c, dash_s, i = False, False, 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg[:1] in "-+" and len(arg) > 1 and not arg.startswith("--"):
            dash_c, dash_s = dash_c or "c" in arg[1:], dash_s or "s" in arg[1:]
            i += 2 if "o" in arg[1:] else 1
            continue
        if arg.startswith("--"):
            i += 1
            continue
        break
    rest = args[i:]
    if dash_c:
        return _substituted(rest[0], cwd) if rest else ""
    if rest and rest[0] not in STDIN and not dash_s:
        command.script_file = rest[0]
        return _read(rest[0], cwd)
    return _stdin(command, cwd)


def _find_exec(args: list[str], command: Command, depth: int, parsed: Parsed, cwd: str, scope: Scope) -> None:
    """`find ... -exec CMD {} ;` runs CMD: judge it as a command of its own."""
    for i, arg in enumerate(args):
        if arg in ("-exec", "-execdir", "-ok", "-okdir"):
            words = []
            for word in args[i + 1:]:
                if word in (";", "+"):
                    break
                words.append(word)
            if words:
                _walk([Command(words=words, depth=depth + 1)], depth + 1, parsed, cwd, scope.nested())


def _code(program: str, args: list[str], command: Command, cwd: str) -> str | None:
    """The code an interpreter runs, when the line (or a file there) shows it."""
    flags = INTERPRETERS.get(program, "c")
    i = 0
    while i < len(args):
        arg = args[i]
        if program.startswith("python") and arg in ("-W", "-X", "-m"):
            if arg == "-m":
                return None  # a module: `-m engine...` is judged as a `handoff` command
            i += 2
            continue
        if arg.startswith("-") and len(arg) > 1 and not arg.startswith("--"):
            if any(f in arg[1:] for f in flags.lstrip("-")):
                tail = arg[1:].split(next(f for f in arg[1:] if f in flags.lstrip("-")), 1)[1]
                return _substituted(tail or (args[i + 1] if i + 1 < len(args) else ""), cwd)
            i += 1
            continue
        if arg.startswith("--eval"):
            return arg.split("=", 1)[1] if "=" in arg else (args[i + 1] if i + 1 < len(args) else "")
        if arg.startswith("--"):
            i += 1
            continue
        if arg in STDIN:
            return _stdin(command, cwd)
        command.script_file = arg
        return _read(arg, cwd)
    return _stdin(command, cwd)


_QUOTED = re.compile(r"""(?:'([^']*)'|"([^"]*)")""")


def code_words(code: str) -> list[str]:
    """The words of the quoted strings in code: what it may run or open (`'sim.py'`, `"handoff approve L"`)."""
    return " ".join(a or b for a, b in _QUOTED.findall(code)).split()


_CAT_FILE = re.compile(r"""^(?:\$\(|`)\s*(?:cat\s+(?:--\s+)?|<\s*)(['"]?)([^\s'"`;&|()<>$]+)\1\s*(?:\)|`)$""")


def _substituted(code: str, cwd: str) -> str:
    """Code given as `"$(cat FILE)"`, `"$(<FILE)"` or backticks: the file's text, as the shell puts it there."""
    found = _CAT_FILE.match(code.strip())
    text = _read(found.group(2), cwd) if found else None
    return code if text is None else text
