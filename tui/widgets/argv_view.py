"""An argv, one argument per line, exactly as it will run.

Each argument is shell-quoted only when it needs it (so a space or an empty
argument shows), a newline or a control character inside one is written as its
escape (`$'web-02\\n'`, engine.api.shell_word), so one argument is one line and an
argument can never push the next one out of sight, and an argument too long for
the width wraps with `↪` in front of each continuation, so the tail of a long
argument (`…-really-long-name`) can never be mistaken for a flag of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.text import Text
from textual.widget import Widget

from tui.text import argument

FIRST = "  "       # before an argument
CONTINUED = "↪ "   # before each wrapped piece of the same argument


def argv_lines(argv: Sequence[str], width: int) -> list[tuple[str, str]]:
    """(prefix, piece) lines for `argv` in `width` cells."""
    room = max(4, width - cell_len(FIRST))
    lines: list[tuple[str, str]] = []
    for arg in argv:
        text = argument(arg)  # one line: a newline inside it is `$'...\n'`, never a line of its own
        pieces, piece, used = [], "", 0
        for char in text:
            size = cell_len(char)
            if used + size > room:
                pieces.append(piece)
                piece, used = "", 0
            piece += char
            used += size
        pieces.append(piece)
        lines.append((FIRST, pieces[0]))
        lines.extend((CONTINUED, p) for p in pieces[1:])
    return lines


class ArgvView(Widget):
    """The argv as lines; its height follows the width it gets."""

    DEFAULT_CSS = """
    ArgvView { height: auto; }
    """

    def __init__(self, argv: Sequence[str], *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.argv = [str(a) for a in argv]

    def set_argv(self, argv: Sequence[str]) -> None:
        self.argv = [str(a) for a in argv]
        self.refresh(layout=True)

    def get_content_height(self, container, viewport, width: int) -> int:
        return max(1, len(argv_lines(self.argv, width)))

    def render(self) -> Text:
        text = Text(end="", no_wrap=True)
        for n, (prefix, piece) in enumerate(argv_lines(self.argv, self.content_size.width or 60)):
            if n:
                text.append("\n")
            text.append(prefix, style="dim" if prefix == CONTINUED else "")
            text.append(piece)
        return text

    def plain(self, width: int) -> str:
        """The lines as plain text (tests read them)."""
        return "\n".join(p + t for p, t in argv_lines(self.argv, width))
