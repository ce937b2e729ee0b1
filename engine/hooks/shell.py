"""A small POSIX-shell reader for the pre-tool-use hook: every simple command of a line.

`shlex` alone sees `"$(handoff approve ...)"` as one word and a here-doc as words, so
the hook would judge only the outer command. This reader follows the shell's own rules
far enough to find every command a line can run: quotes and backslashes, `;`, `&&`,
`||`, `|`, `&`, newlines, `( )` and `{ }`, `$(...)` and backticks (also inside double
quotes and unquoted here-docs), redirections (`>`, `>>`, `2>`, `&>`, `<>`, `>|`), and
here-docs and here-strings, whose text is kept as the command's stdin (it is data for
`handoff note --set -`, a script for `bash`), and function definitions (`f() { ...; }`,
`function f { ...; }`), whose body is kept whole: it runs where the function is called.
Nested scripts come back as text in `Command.scripts`; engine.hooks.unwrap reads them
again, to a bounded depth.
Anything it cannot follow (an unclosed quote) is read as far as it goes: the guard
inside `handoff run` and the engine's own refusal of people-only operations are the lock.
"""

from __future__ import annotations

import re

# Words that are shell syntax, not a program, at the start of a command.
KEYWORDS = {"{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "time"}
_REDIRECT = re.compile(r"(\d*)(>>|>\||>&|>|<<<|<<-|<<|<>|<&|<|&>>|&>)")
_BREAK = set(" \t\n;&|()<>")
_ANSI_C = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
           "\\": "\\", "'": "'", '"': '"', "?": "?"}
_OCTAL, _HEX = "01234567", "0123456789abcdefABCDEF"
_HEX_WIDTH = {"x": 2, "u": 4, "U": 8}
# A function definition's head: `NAME()`, `function NAME`, `function NAME()`, then its body's opening.
_FUNCTION = re.compile(r"(?:function[ \t]+([^\s()<>;&|'\"`$]+)(?:[ \t]*\([ \t]*\))?|([^\s()<>;&|'\"`$=]+)[ \t]*\([ \t]*\))"
                       r"\s*([{(])")


def _run(text: str, start: int, chars: str, limit: int) -> str:
    """The longest run of `chars` in `text` from `start`, at most `limit` long."""
    end = start
    while end < len(text) and end - start < limit and text[end] in chars:
        end += 1
    return text[start:end]


class Command:
    """One simple command: its words, the paths it redirects output into, its stdin
    text (a here-doc or here-string), the scripts nested in it, and the command piped
    into it (the text `echo ... | bash` runs is in there). A plain class, not a
    dataclass: see engine.hooks.facts."""

    __slots__ = ("words", "writes_to", "stdin_text", "reads_from", "opens", "scripts", "piped_from", "depth", "container",
                 "cwd", "script_file", "code", "function", "unknown")

    def __init__(self, words: list[str] | None = None, *, depth: int = 0) -> None:
        self.words: list[str] = [] if words is None else words
        self.writes_to: list[str] = []
        self.stdin_text: str | None = None
        self.reads_from: str | None = None  # the file redirected into its stdin (`< FILE`)
        self.opens: list[str] = []  # every file it opens for reading on a descriptor (`< F`, `3<F`, `exec 4<F`)
        self.scripts: list[str] = []
        self.piped_from: Command | None = None
        self.depth = depth
        self.container = False  # its real work is nested commands, judged on their own
        self.cwd: str | None = None  # where it runs, after the line's own `cd`s (engine.hooks.unwrap)
        self.script_file: str | None = None  # the script file it runs, as the line names it (engine.hooks.unwrap)
        self.code: str | None = None  # the text of the script or code it runs, when the line shows it (engine.hooks.unwrap)
        self.function: str | None = None  # the name of the function it defines (its body is `scripts[0]`)
        self.unknown: list[str] = []  # its words of positional parameters the hook could not put in (engine.hooks.unwrap)

    def __repr__(self) -> str:
        return f"Command(words={self.words!r}, depth={self.depth})"

    def program(self) -> tuple[str, list[str]]:
        """(program's file name, its arguments), past wrappers such as `env`, `sudo`, `timeout`."""
        from engine.hooks.wrappers import peel

        words = peel(self.words)
        if not words:
            return "", []
        return words[0].rsplit("/", 1)[-1], words[1:]


class _Reader:
    """One pass over a text: tokens, then commands."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def balanced(self, open_: str, close: str) -> str:
        """The text up to the `close` that matches an `open_` just read (quotes respected)."""
        depth, start = 1, self.i
        while self.i < len(self.text):
            ch = self.text[self.i]
            if ch == "\\":
                self.i += 2
                continue
            if ch in "'\"":
                end = self.text.find(ch, self.i + 1)
                self.i = len(self.text) if end < 0 else end + 1
                continue
            self.i += 1
            if ch == open_:
                depth += 1
            elif ch == close:
                depth -= 1
                if depth == 0:
                    return self.text[start:self.i - 1]
        return self.text[start:]

    def substitution(self, scripts: list[str]) -> str:
        """After `$`: `$(...)` (a script), `$((...))` (arithmetic), `${...}`; returns the text kept in the word."""
        text = self.text
        if text.startswith("((", self.i):
            self.i += 2
            return "$((" + self.balanced("(", ")") + ")"
        if text.startswith("(", self.i):
            self.i += 1
            inner = self.balanced("(", ")")
            scripts.append(inner)
            return "$(" + inner + ")"
        if text.startswith("{", self.i):
            self.i += 1
            return "${" + self.balanced("{", "}") + "}"
        if text.startswith("'", self.i):
            self.i += 1
            return self.ansi_c()
        if text.startswith('"', self.i):  # `$"..."`: a double-quoted string the locale may translate
            self.i += 1
            return self.double_quoted(scripts)
        return "$"

    def ansi_c(self) -> str:
        """After `$'`: bash's ANSI-C quoting, its escapes decoded as bash decodes them
        (`$'\\x61pprove'` is the word `approve`), up to the closing quote."""
        out, text = [], self.text
        while self.i < len(text) and text[self.i] != "'":
            ch = text[self.i]
            self.i += 1
            if ch != "\\" or self.i >= len(text):
                out.append(ch)
                continue
            esc = text[self.i]
            self.i += 1
            if esc in _ANSI_C:
                out.append(_ANSI_C[esc])
            elif esc in _OCTAL:  # \nnn: one to three octal digits
                digits = esc + _run(text, self.i, _OCTAL, 2)
                self.i += len(digits) - 1
                out.append(chr(int(digits, 8) & 0xFF))
            elif esc in _HEX_WIDTH and _run(text, self.i, _HEX, 1):  # \xHH, \uHHHH, \UHHHHHHHH
                digits = _run(text, self.i, _HEX, _HEX_WIDTH[esc])
                self.i += len(digits)
                out.append(chr(min(int(digits, 16), 0x10FFFF)))
            elif esc == "c" and self.i < len(text):  # \cX: the control character
                out.append(chr(ord(text[self.i]) & 0x1F))
                self.i += 1
            else:
                out.append("\\" + esc)  # bash keeps an unknown escape as it is
        self.i += 1
        return "".join(out)

    def backtick(self, scripts: list[str]) -> str:
        end = self.text.find("`", self.i)
        end = len(self.text) if end < 0 else end
        inner = self.text[self.i:end].replace("\\`", "`")
        self.i = end + 1
        scripts.append(inner)
        return "`" + inner + "`"

    def word(self, scripts: list[str]) -> str:
        """One word, quotes removed, starting at a character that is not a break."""
        out, text = [], self.text
        while self.i < len(text) and text[self.i] not in _BREAK:
            ch = text[self.i]
            self.i += 1
            if ch == "\\":
                if self.i < len(text) and text[self.i] != "\n":
                    out.append(text[self.i])
                self.i += 1
            elif ch == "'":
                end = text.find("'", self.i)
                end = len(text) if end < 0 else end
                out.append(text[self.i:end])
                self.i = end + 1
            elif ch == '"':
                out.append(self.double_quoted(scripts))
            elif ch == "$":
                out.append(self.substitution(scripts))
            elif ch == "`":
                out.append(self.backtick(scripts))
            else:
                out.append(ch)
        return "".join(out)

    def double_quoted(self, scripts: list[str]) -> str:
        out, text = [], self.text
        while self.i < len(text) and text[self.i] != '"':
            ch = text[self.i]
            self.i += 1
            if ch == "\\" and self.i < len(text) and text[self.i] in '$`"\\\n':
                out.append(text[self.i] if text[self.i] != "\n" else "")
                self.i += 1
            elif ch == "$":
                out.append(self.substitution(scripts))
            elif ch == "`":
                out.append(self.backtick(scripts))
            else:
                out.append(ch)
        self.i += 1
        return "".join(out)

    def heredoc(self, delimiter: str, strip_tabs: bool) -> str:
        """The body of a here-doc: the lines after the current one, up to the delimiter line."""
        nl = self.text.find("\n", self.i)
        if nl < 0:
            return ""
        lines, pos = [], nl + 1
        while pos <= len(self.text):
            end = self.text.find("\n", pos)
            end = len(self.text) if end < 0 else end
            line = self.text[pos:end]
            pos = end + 1
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                break
            lines.append(line.lstrip("\t") if strip_tabs else line)
        # The body is consumed: cut it out so the reader goes on after the delimiter line.
        self.text = self.text[:nl + 1] + self.text[min(pos, len(self.text)):]
        return "\n".join(lines) + ("\n" if lines else "")


def split(text: str, depth: int = 0) -> list[Command]:
    """The simple commands of `text`, in order; nested scripts stay text in `.scripts`."""
    reader, out = _Reader(text), []
    current, previous_pipe = Command(depth=depth), None

    def finish(piped: bool) -> None:
        nonlocal current, previous_pipe
        while current.words and current.words[0] in KEYWORDS:
            if current.words.pop(0) == "time" and current.words[:1] == ["-p"]:
                current.words.pop(0)  # bash's `time -p CMD`: the keyword's own flag
        if current.words or current.writes_to or current.scripts:
            current.piped_from = previous_pipe
            out.append(current)
            previous_pipe = current if piped else None
        elif not piped:
            previous_pipe = None
        current = Command(depth=depth)

    pending: list[tuple[Command, str, bool]] = []
    while reader.i < len(reader.text):
        ch = reader.text[reader.i]
        if ch in " \t":
            reader.i += 1
        elif ch == "#" and (reader.i == 0 or reader.text[reader.i - 1] in " \t\n;&|()"):
            end = reader.text.find("\n", reader.i)
            reader.i = len(reader.text) if end < 0 else end
        elif ch == "\n":
            for command, delimiter, tabs in pending:
                body = reader.heredoc(delimiter, tabs)
                command.stdin_text = body if command.stdin_text is None else command.stdin_text + body
            pending = []
            finish(False)
            reader.i += 1
        elif all(w in KEYWORDS for w in current.words) and (defined := _FUNCTION.match(reader.text, reader.i)):
            reader.i = defined.end()
            body = reader.balanced(defined.group(3), "}" if defined.group(3) == "{" else ")")
            current.function = defined.group(1) or defined.group(2)
            current.scripts.append(body)
            finish(False)
        elif ch in ";&|()" and not reader.text.startswith("&>", reader.i):
            op = reader.text[reader.i:reader.i + 2]
            reader.i += 2 if op in ("&&", "||", "|&", ";;") else 1
            finish(op[0] == "|" and op != "||")
        elif reader.text.startswith(("<(", ">("), reader.i):  # process substitution: a word (`/dev/fd/63`) a script fills
            opener = reader.text[reader.i]
            reader.i += 2
            inner = reader.balanced("(", ")")
            current.scripts.append(inner)
            current.words.append(f"{opener}({inner})")
        else:
            redirect = _REDIRECT.match(reader.text, reader.i)
            if redirect and (redirect.group(1) == "" or reader.text[reader.i] in "<>" or redirect.start(2) > reader.i):
                reader.i = redirect.end()
                while reader.i < len(reader.text) and reader.text[reader.i] in " \t":
                    reader.i += 1
                op = redirect.group(2)
                quoted = reader.i < len(reader.text) and reader.text[reader.i] in "'\"\\"
                target = reader.word(current.scripts)
                if op in ("<<", "<<-"):
                    pending.append((current, target, op == "<<-"))
                    if not quoted:
                        current.scripts.append("\0heredoc")  # marker: the body may hold $(...) too
                elif op == "<<<":
                    current.stdin_text = target
                elif op == "<":
                    current.reads_from = target  # `python3 < go.py`, `bash < x.sh`: the file is its stdin
                    current.opens.append(target)
                elif op in (">", ">>", ">|", "<>", "&>", "&>>") or (op == ">&" and not re.fullmatch(r"\d+|-", target)):
                    current.writes_to.append(target)
            else:
                current.words.append(reader.word(current.scripts))
    for command, _delimiter, _tabs in pending:  # a here-doc on the last line: no body
        command.stdin_text = command.stdin_text or ""
    finish(False)
    return _expand_heredocs(out)


def _expand_heredocs(commands: list[Command]) -> list[Command]:
    """An unquoted here-doc's body runs its `$(...)` and backticks: keep those as scripts."""
    for command in commands:
        if "\0heredoc" in command.scripts:
            command.scripts = [s for s in command.scripts if s != "\0heredoc"]
            reader = _Reader(command.stdin_text or "")
            scripts: list[str] = []
            while reader.i < len(reader.text):
                ch = reader.text[reader.i]
                reader.i += 1
                if ch == "\\":
                    reader.i += 1
                elif ch == "$":
                    reader.substitution(scripts)
                elif ch == "`":
                    reader.backtick(scripts)
            command.scripts += scripts
    return commands
