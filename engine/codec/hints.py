"""What to do about a YAML syntax error people make often, added to the parser's message.

The common one: a command in a `[...]` flow list with an unquoted `{target}` in an
argument (`[eksctl, --name={target}]`). In a flow list `{` starts a mapping, so libyaml
says only "did not find expected ',' or ']'". The fix is to quote the argument.
The other: a tab where YAML wants an indent (an editor that inserts tabs); libyaml says
"found character that cannot start any token".
"""

from __future__ import annotations

import re

# A runbook placeholder: `{target}`, `{checkpoint}`, a target's field.
_BRACE = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")


def _unquoted_brace(line: str) -> bool:
    """Whether `line` (one or a few lines) has a `{name}` after a `[`, outside quotes and comments."""
    quote, depth, comment = None, 0, False
    for i, ch in enumerate(line):
        if ch == "\n":
            comment = False
        elif comment:
            continue
        elif quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \n"):
            comment = True
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        elif ch == "{" and depth and _BRACE.match(line, i):
            return True
    return False


def brace_hint(text: str, err) -> str | None:
    """The advice for a MarkedYAMLError `err` caused by an unquoted `{...}` in a flow list, or None."""
    problem = err.problem_mark or err.context_mark
    if problem is None:
        return None
    # A flow list may span lines: read from where it opened (or a few lines up) to the error.
    first = err.context_mark.line if err.context_mark is not None else problem.line - 5
    lines = text.split("\n")[max(0, min(first, problem.line - 5)): problem.line + 1]
    if not _unquoted_brace("\n".join(lines)):
        return None
    return ('quote arguments that contain `{...}`, for example "--name={target}": inside a [...] list an '
            "unquoted { starts a mapping")


def tab_hint(text: str, err) -> str | None:
    """The advice for a MarkedYAMLError `err` found at a tab, or None."""
    mark = err.problem_mark
    if mark is None:
        return None
    lines = text.split("\n")
    line = lines[mark.line] if mark.line < len(lines) else ""
    if line[mark.column : mark.column + 1] != "\t":
        return None
    said = "tab" in (err.problem or "")  # libyaml names the tab in some of its messages, not in others
    return ("" if said else "the character there is a tab: ") + "YAML indents with spaces only, so replace the tab with spaces"
