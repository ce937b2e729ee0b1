"""Pointing at the line and column of a key or value in a ledger's text.

Findings are rare on a good ledger, so nothing is parsed until one needs a place: the
part of the document outside `targets:` (short) is composed once by the strict loader,
with the targets block blanked so every line number stays true; a target is found by
its name at the start of its line, so a 10,000-target ledger is never composed whole.
"""

from __future__ import annotations

import json
import re

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from engine.codec import strict
from engine.errors import LedgerInvalid

_TARGETS_HEAD = re.compile(r"targets:[ \t]*(?:#.*)?$")
Where = tuple[int | None, int | None]


class Locator:
    """`key(...)` and `value(...)` give (line, column), 1-based, or the nearest parent's."""

    def __init__(self, text: str | None, path: str) -> None:
        self.text, self.path = text, path
        self._root = None
        self._composed = False
        self._lines = text.split("\n") if text is not None else []
        self._start = next((i for i, line in enumerate(self._lines) if _TARGETS_HEAD.match(line)), None)

    def key(self, *keys) -> Where:
        """Where the last key of the path is written (for an unknown or misspelt key)."""
        return self._find(keys, want_key=True)

    def value(self, *keys) -> Where:
        """Where the value at the path starts."""
        return self._find(keys, want_key=False)

    def _find(self, keys: tuple, *, want_key: bool) -> Where:
        if self.text is None:
            return None, None
        if keys and keys[0] == "targets" and len(keys) >= 2 and self._start is not None:
            return self._target(self._start, str(keys[1]), keys[2] if len(keys) > 2 else None)
        node, key_node = self._walk(keys)
        mark = (key_node if want_key and key_node is not None else node)
        if mark is None:
            return None, None
        return mark.start_mark.line + 1, mark.start_mark.column + 1

    def _compose(self):
        if not self._composed:
            self._composed = True
            lines = self._lines
            if self._start is not None:
                end = self._start + 1
                while end < len(lines) and (not lines[end] or lines[end][0] in " #\t"):
                    end += 1
                lines = lines[: self._start + 1] + [""] * (end - self._start - 1) + lines[end:]
            try:
                self._root = strict.compose("\n".join(lines), self.path)
            except LedgerInvalid:
                self._root = None  # the store read it, so this cannot happen; no place then, not a crash
        return self._root

    def _walk(self, keys: tuple):
        node, key_node = self._compose(), None
        for key in keys:
            found: tuple[Node, ScalarNode | None] | None = None
            if isinstance(node, MappingNode):
                for k, v in node.value:
                    if isinstance(k, ScalarNode) and k.value == str(key):
                        found = (v, k)
                        break
            elif isinstance(node, SequenceNode) and isinstance(key, int) and key < len(node.value):
                found = (node.value[key], None)
            if found is None:
                return node, key_node if node is not None else None
            node, key_node = found
        return node, key_node

    def _target(self, start: int, name: str, field: str | None) -> Where:
        spellings = {name, json.dumps(name), f"'{name}'"}
        for index in range(start + 1, len(self._lines)):
            line = self._lines[index]
            if not line.startswith("  ") or line[2:3] in (" ", "#"):
                continue
            head = _quoted_head(line[2:]) if line[2:3] in ('"', "'") else line[2:].split(":", 1)[0].strip()
            if head in spellings:
                column = 3
                if field:
                    found = re.search(rf"(?<![\w-]){re.escape(field)}\s*:", line)
                    column = found.start() + 1 if found else 3
                return index + 1, column
        return start + 1, 1


def _quoted_head(text: str) -> str:
    """The quoted key at the start of `text`, quotes included (`"db 1": ...` -> `"db 1"`)."""
    quote = text[0]
    end = text.find(quote, 1)
    while end > 0 and quote == '"' and text[end - 1] == "\\":
        end = text.find(quote, end + 1)
    return text[: end + 1] if end > 0 else text
