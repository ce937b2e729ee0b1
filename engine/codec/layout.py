"""Where each entry of a ledger's text begins and ends, and where its comments are.

A document is kept as blocks of whole lines: the top-level entries (`task: ...`,
`runbook:` and everything under it), each target of the `targets:` block, and the gaps
between them (comments, blank lines, the header). Spans come from the YAML nodes
themselves: an entry runs from its key's line to the last line of its value's last
scalar (a block scalar's trailing blank lines are its own only when it keeps them,
`|+`). Comments and blank lines after that belong to the gap, so a rewritten entry
leaves them where they were.
"""

from __future__ import annotations

from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from engine.codec import strict

GAP, TOP, TARGET = "gap", "top", "target"


def last_line(node, lines: list[str], offset: int = 0) -> int:
    """The last line (of `lines`, whose first is the node text's line `offset`) that
    holds part of `node`'s value."""
    while isinstance(node, (MappingNode, SequenceNode)) and not node.flow_style and node.value:
        # A block collection's own end mark is the next token's start (past trailing
        # comments and blank lines): its last child says where it really ends.
        node = node.value[-1][1] if isinstance(node, MappingNode) else node.value[-1]
    end = node.end_mark
    line = end.line + offset - (1 if end.column == 0 and end.line > node.start_mark.line else 0)
    keeps = isinstance(node, ScalarNode) and node.style in ("|", ">") and node.value.endswith("\n\n")
    if not keeps:
        start = node.start_mark.line + offset
        while line > start and not lines[line].strip():
            line -= 1
    return line


def entry_spans(root, lines: list[str], offset: int = 0, column: int | None = 0) -> list[tuple[int, int, str]] | None:
    """(first, last, key) per entry of the block mapping `root`, or None when the
    mapping is not one whose entries can be told apart by line (a flow mapping, a
    complex key, two entries on one line, keys not in one column)."""
    if not isinstance(root, MappingNode) or root.flow_style:
        return None
    spans: list[tuple[int, int, str]] = []
    for key, value in root.value:
        if not isinstance(key, ScalarNode):
            return None
        if column is None:
            column = key.start_mark.column
        if key.start_mark.column != column:
            return None
        first = key.start_mark.line + offset
        if spans and first <= spans[-1][1]:
            return None
        spans.append((first, max(first, last_line(value, lines, offset)), key.value))
    return spans


def _scalar_ranges(node, out: list) -> None:
    stack = [node]
    while stack:
        node = stack.pop()
        if isinstance(node, ScalarNode):
            start = (node.start_mark.line, node.start_mark.column)
            if node.style in ("|", ">"):
                start = (node.start_mark.line + 1, 0)  # its indicator's line may end in a comment
            out.append((start, (node.end_mark.line, node.end_mark.column)))
        elif isinstance(node, MappingNode):
            for key, value in node.value:
                stack.append(key)
                stack.append(value)
        elif isinstance(node, SequenceNode):
            stack.extend(node.value)


def comments(text: str) -> tuple[str | None, list[str]]:
    """The comments of one entry's text: (the one at the end of its first line, the
    others in order). A `#` is a comment's only when it is outside every scalar and
    starts the line or follows white space: block scalars, quoted and plain text that
    hold `#` are data, not comments."""
    if "#" not in text:
        return None, []
    ranges: list = []
    _scalar_ranges(strict.compose(text, "<entry>"), ranges)
    first: str | None = None
    moved: list[str] = []
    for number, line in enumerate(text.split("\n")):
        column = line.find("#")
        while column != -1:
            at = (number, column)
            inside = any(start <= at < end for start, end in ranges)
            if not inside and (column == 0 or line[column - 1] in " \t"):
                found = line[column:].rstrip("\r")
                if number == 0:
                    first = line[:column][len(line[:column].rstrip(" \t")):] + found
                else:
                    moved.append(found)
                break
            column = line.find("#", column + 1)
    return first, moved


def value_style(text: str, path: tuple[str, ...] = ()) -> str | None:
    """How the scalar at `path` inside one entry's text is written: None (plain), '"',
    "'", '|' or '>'; None too when there is no such scalar."""
    node = strict.compose(text, "<entry>")
    if not isinstance(node, MappingNode) or not node.value:
        return None
    node = node.value[0][1]
    for key in path:
        if not isinstance(node, MappingNode):
            return None
        node = next((v for k, v in node.value if isinstance(k, ScalarNode) and k.value == key), None)
    return node.style if isinstance(node, ScalarNode) else None


def block_source(text: str) -> list[str] | None:
    """The source of one entry's value when it is a block scalar (`|` or `>`): its
    indicator, then its lines as written. None for any other value (or a comment on the
    indicator's line). Lets a note moved elsewhere keep the line breaks a human chose."""
    node = strict.compose(text, "<entry>")
    if not isinstance(node, MappingNode) or len(node.value) != 1:
        return None
    value = node.value[0][1]
    if not isinstance(value, ScalarNode) or value.style not in ("|", ">"):
        return None
    lines = text.split("\n")
    head = lines[value.start_mark.line][value.start_mark.column :].rstrip()
    if "#" in head:
        return None
    return [head] + lines[value.start_mark.line + 1 : last_line(value, lines) + 1]


def key_source(text: str) -> str | None:
    """How the first key of one entry's text is written (`1.10`, `"db 1"`), or None."""
    node = strict.compose(text, "<entry>")
    if not isinstance(node, MappingNode) or not node.value:
        return None
    key = node.value[0][0]
    if not isinstance(key, ScalarNode) or key.start_mark.line != key.end_mark.line:
        return None
    return text.split("\n")[key.start_mark.line][key.start_mark.column : key.end_mark.column]
