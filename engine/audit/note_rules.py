"""What a "do not" rule of a handoff note means, so a review can tell kept from dropped or reversed.

A rule is a prohibition: a negation ("do not", "never", "must not", "no link retry") that
governs an action verb ("retry") on targets ("db-18"). A later note keeps it when some
sentence of it prohibits the same action (or everything: "do not touch") on the same
targets. It reverses it when it allows or asks for that action on those targets: "retry
pg_upgrade on db-18", "it is fine to retry pg_upgrade on db-18", "do not hesitate to
retry ...", "do not skip the retry ...". A rule that merely drops its "not" is both
not kept and, when it reads as an instruction, reversed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_RULE = re.compile(r"\b(do not|don't|never|must not|no\s+\w+\s+retry)\b", re.I)


def rules_in(note: str) -> list[str]:
    """The sentences of a note that forbid something ("Do NOT retry ..."), to say them aloud."""
    # List items ("- ...") are sentences of their own; headings ("Do not touch:") are not rules.
    lines = [line.strip().removeprefix("- ") for line in note.splitlines()]
    text = " ".join(line for line in lines if line and not line.endswith(":"))
    sentences = re.split(r"(?<=[.!?])\s+", text)
    return [s for s in sentences if _RULE.search(s)]


_NEG = re.compile(r"\b(?:do not|don['’]t|dont|never|must not|mustn['’]t|should not|shouldn['’]t|may not|shall not"
                  r"|cannot|can['’]t|no longer)\s+(?:(?:ever|again|yet|even|try to|attempt to|under any circumstances)\s+)*"
                  r"(?P<verb>[\w-]+)|\bno\s+[\w-]+\s+(?P<noun>retry|retries|restart|rerun)\b", re.I)
# "do not hesitate to retry" asks for the retry: the verb that follows is the action, allowed.
_REVERSERS = {"hesitate", "forget", "skip", "stop", "fail", "wait", "delay", "neglect", "avoid", "refrain", "postpone",
              "omit", "miss", "worry", "fear", "bother", "hold", "be"}
# Words that allow or ask for what follows ("it is fine to retry", "you can retry", "go ahead and retry").
_ALLOW = re.compile(r"\b(?:fine|ok|okay|safe|allowed|alright|acceptable|free|go ahead(?: and)?|can|may|could|should"
                    r"|please|now|need to|needs to|must|have to|has to|want to|permitted|cleared|approved)\b", re.I)
_WORDS = re.compile(r"[\w-]+")
ANY_ACTION = "touch"


def stem(word: str) -> str:
    """A crude stem so "retry", "retrying", "retried" and "retries" compare equal."""
    w = word.lower()
    for suffix, repl in (("ies", "y"), ("ied", "y"), ("ying", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            return w[: -len(suffix)] + repl
    return w


@dataclass(frozen=True)
class Rule:
    """A prohibition (`allowed` False) or a reversal (`allowed` True) of `verb`."""

    verb: str
    allowed: bool
    sentence: str


def read(sentence: str) -> list[Rule]:
    """The prohibitions a sentence states, and the actions it allows through a reverser."""
    out = []
    for m in _NEG.finditer(sentence):
        if m.group("noun"):
            out.append(Rule(stem(m.group("noun")), False, sentence))
            continue
        verb = stem(m.group("verb"))
        if verb in _REVERSERS:
            rest = _WORDS.findall(sentence[m.end():])
            action = next((w for w in rest if w.lower() not in ("to", "the", "a", "an", "off", "on", "about", "back")), None)
            if action:
                out.append(Rule(stem(action), True, sentence))
        else:
            out.append(Rule(verb, False, sentence))
    return out


def allows(sentence: str, verb: str) -> bool:
    """Whether a sentence allows or asks for `verb` (stem) outside any prohibition of it."""
    if any(r.allowed and r.verb == verb for r in read(sentence)):
        return True
    text = _NEG.sub(" ", sentence)  # a prohibited verb is not an allowed one
    words = _WORDS.findall(text)
    for i, w in enumerate(words):
        if stem(w) != verb:
            continue
        before = " ".join(words[max(0, i - 4): i])
        if (i == 0 and not re.search(r"(?:ed|ing|s)$", w.lower())) or _ALLOW.search(before):
            return True  # an imperative at the start ("Retry ..."), or allowed by a word just before
    return False


def sentences(text: str) -> list[str]:
    """A note's sentences and clauses, each line on its own (a list item need not end in a full stop); headings left out."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip().removeprefix("- ")
        if line.endswith(":"):
            continue  # "Do not touch:" heads a list; it forbids nothing by itself
        # Clauses too: "do not retry link on db-18; you may retry the check on db-19" allows nothing on db-18.
        out.extend(s for s in re.split(r"(?<=[.!?])\s+|\s*[;—–]\s*|,?\s+but\s+", line) if s.strip())
    return out


def prohibits(sentence: str, verb: str) -> bool:
    """Whether a sentence prohibits `verb`, or every action ("do not touch")."""
    return any(not r.allowed and r.verb in (verb, ANY_ACTION) for r in read(sentence))
