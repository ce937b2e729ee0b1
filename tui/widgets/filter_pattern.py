r"""A filter word as a pattern whose search cannot run away.

A filter arrives in a link (`?filter=`) as well as from the keyboard, and a search by Python's `re`
cannot be stopped once it runs. So a word is a regular expression only within a small language
whose search is at worst quadratic in a field's length, never exponential, built by allowing
rather than by spotting the dangerous:
- single characters: a letter, `.`, `[a-z0-9]` (no set inside a set), `\d \w \s \D \W \S`, and
  any punctuation escaped (`\.`, `\-`);
- the anchors `^`, `$`, `\b`, `\B`;
- at most one repeat with a choice (`?`, `*`, `+`, `{m,}`, `{m,n}`) after a single character; an
  exact `{m}` has no choice and is not counted. A repeat spans at most MAX_REPEAT characters
  (`*` is `{0,256}`; a larger count is text), so a search is linear in the text searched.
  A repeat at the word's very start or end only asks for its least count, which finds the same
  rows: `.*prod.*` is `prod`, `web-\d+` is `web-\d`.
Anything else (a group, a second repeat, a lazy or possessive repeat, a back-reference or other
lettered escape, a word that is no regular expression) is matched as the text it is.
"""

from __future__ import annotations

import re

MAX_WORD = 200  # a longer word is text
MAX_REPEAT = 256  # the most characters one repeat spans
_COUNTED = re.compile(r"\{(\d{1,4})(?:,(\d{0,4}))?\}")
_SHORT = {"?": (0, 1), "*": (0, MAX_REPEAT), "+": (1, MAX_REPEAT)}
_CLASS_ESCAPES = frozenset("dwsDWS")
_ANCHOR_ESCAPES = frozenset("bB")

Item = tuple[str, str]  # (kind, source): kind is "one" (a single character), "anchor" or "repeat" (`{m}`, `{m,n}`)


def pattern_of(word: str) -> re.Pattern[str]:
    """`word` compiled case-insensitively, each line of the text searched one field: as a regular
    expression of the language above, else as the text it is."""
    items = _items(word) if len(word) <= MAX_WORD else None
    if items is not None:
        items = _trimmed(items)
        if sum(1 for kind, source in items if kind == "repeat" and not _exact(source)) <= 1:
            try:
                return re.compile("".join(source for _, source in items), re.IGNORECASE | re.MULTILINE)
            except re.error:  # `[z-a]`: no regular expression after all
                pass
    return re.compile(re.escape(word), re.IGNORECASE)


def _items(word: str) -> list[Item] | None:
    """The word as single characters, anchors and repeats; None when it leaves the language."""
    items: list[Item] = []
    at = 0
    while at < len(word):
        char = word[at]
        if char == "\\":
            nxt = word[at + 1:at + 2]
            if not nxt or (nxt.isalnum() and nxt not in _CLASS_ESCAPES | _ANCHOR_ESCAPES) or not nxt.isascii():
                return None
            items.append(("anchor" if nxt in _ANCHOR_ESCAPES else "one", char + nxt))
            at += 2
        elif char == "[":
            end = _class_end(word, at)
            if end is None:
                return None
            items.append(("one", word[at:end]))
            at = end
        elif char in "^$":
            items.append(("anchor", char))
            at += 1
        elif char in "*+?{":
            counted = _COUNTED.match(word, at) if char == "{" else None
            if (char == "{" and counted is None) or not items or items[-1][0] != "one":
                return None  # a repeat of nothing, of an anchor, or of a repeat (`a**`, `a*?`, `a++`)
            least, most = _SHORT[char] if counted is None else _counts(counted)
            if not least <= most <= MAX_REPEAT:
                return None
            items.append(("repeat", f"{{{least}}}" if least == most else f"{{{least},{most}}}"))
            at += len(counted.group(0)) if counted else 1
        elif char in "()|}]":
            return None
        else:
            items.append(("one", char))
            at += 1
    return items


def _class_end(word: str, start: int) -> int | None:
    """Where the set `[...]` opening at `start` ends (after its `]`); None if it is not a plain set."""
    at = start + 1
    if word[at:at + 1] == "^":
        at += 1
    if word[at:at + 1] == "]":
        at += 1  # `[]a]`: a leading `]` is a member
    while at < len(word):
        char = word[at]
        if char == "]":
            return at + 1
        if char == "[":
            return None  # `[[`: a set inside a set, as a future Python reads it
        if char == "\\":
            nxt = word[at + 1:at + 2]
            if not nxt or (nxt.isalnum() and nxt not in _CLASS_ESCAPES) or not nxt.isascii():
                return None
            at += 2
            continue
        at += 1
    return None


def _counts(counted: re.Match[str]) -> tuple[int, int]:
    least, most = counted.group(1, 2)
    return int(least), MAX_REPEAT if most == "" else int(least if most is None else most)


def _exact(repeat: str) -> bool:
    return "," not in repeat


def _least(one: str, repeat: str) -> list[Item]:
    """A repeat asked for its least count: nothing, the character once, or `{m}` times."""
    least = int(repeat[1:].split(",")[0].rstrip("}"))
    return [] if least == 0 else [("one", one)] if least == 1 else [("one", one), ("repeat", f"{{{least}}}")]


def _trimmed(items: list[Item]) -> list[Item]:
    """A repeat at the word's start or end at its least count: a search finds a match of the
    word exactly where it finds one of the trimmed word (the rest of the run is optional)."""
    while len(items) >= 2 and items[0][0] == "one" and items[1][0] == "repeat" and not _exact(items[1][1]):
        items = _least(items[0][1], items[1][1]) + items[2:]
    while len(items) >= 2 and items[-1][0] == "repeat" and not _exact(items[-1][1]):
        items = items[:-2] + _least(items[-2][1], items[-1][1])
    return items
