"""What a handoff note claims about targets' states, read the way people write it.

The review (`engine.audit.review`) compares these claims with the ledger. The forms read:
- a name or a list of names, then a state, with or without a verb: "db-18 done.",
  "db-18 has finished", "db-18 is complete", "db-17, db-18 and db-19 are done",
  "db-20 (blocked)", "db-27: failed";
- a state, then names: "Finished db-18", "We completed db-17 and db-18",
  "Completed: db-17, db-18", "Failed: db-23" (a state other than done only with a colon);
- a heading line that is a state ("Done:", "## Done") over "- db-17" (or "* db-17", "1. db-17") items;
- a negated state, as a claim that the target is not in it ("db-17 is not done",
  "db-20 is no longer blocked", "hasn't finished");
- names written another way ("DB-19", "db19", "db 19", `db-19`, **db-19**), ranges
  ("db-17..db-19"), markdown tables ("| db-19 | done |") and arrows ("db-19 -> done").
Not claims: a hedged state ("will be done", "may not be finished", "almost done", "once
db-18 is done"), an order or a plan ("Next: cut over db-18", "need to complete db-19",
"cut over db-18 once lag < 5s"), a question ("Is db-18 done?"), a state word that names an
activity ("finished replicating", "done with the check"), and anything inside a "do not" rule.
Every regex here is linear: alternations of fixed words, no nested unbounded repeats.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.ledger.model import Ledger

DONE_WORDS = r"done|finished|complete|completed|cut over"
_SYNONYMS = {
    "done": DONE_WORDS,
    "awaiting_approval": r"awaiting[ _](?:human |an? )?approval|waiting (?:on|for) (?:a |an |the )?(?:human )?approval"
                         r"|awaits (?:an? )?approval|pending approval",
    "in_flight": r"in flight|running",
}
# Words that may stand between a name and its state ("db-18 is now done").
_FILL = (r"is|are|was|were|has|have|had|been|now|still|stays|stay|remains?|also|both|all|already|fully|just"
         r"|successfully|finally|marked|set|as|to|in state|state|the|its|their")
# A hedge or negation in that gap or before the state means it is no claim.
_HEDGE = re.compile(r"\b(?:not|never|no longer|yet|will|would|should|could|may|might|must|can|cannot|almost|nearly"
                    r"|about|soon|going|expected|supposed|hopefully|probably|likely|to be)\b|n['’]t\b", re.I)
_GAP = re.compile(rf"^(?P<gap>(?:\s*(?:{_FILL}|not|never|no longer|yet|will|would|should|could|may|might|must|can"
                  rf"|cannot|almost|nearly|about|soon|going|expected|supposed|hopefully|probably|likely|be"
                  rf"|\w+n['’]t|[=:(,–—-]))*)\s*", re.I)
# Of those, a plain negation is a claim too, that the target is not in the state ("db-17 is not done yet")...
_NEGATION = re.compile(r"\b(?:not|never|no longer)\b|n['’]t\b", re.I)
# ... unless it is also hedged ("will not be done", "may not be finished").
_MAYBE = re.compile(r"\b(?:will|would|should|could|may|might|must|can|cannot|almost|nearly|about|soon|going|expected"
                    r"|supposed|hopefully|probably|likely|be)\b|won['’]t\b", re.I)
# A name list preceded by one of these is a condition, not a fact ("once db-18 is done").
_CONDITION = re.compile(r"\b(?:once|when|whenever|until|till|after|before|if|unless|whether|wait for|waiting for"
                        r"|as soon as|in case)\s*$", re.I)
# "finished replicating", "done with the check", "completed its check": an activity ended, not the target.
_ACTIVITY = re.compile(r"^\s*(?:\w+ing\b|with\b|its\b|their\b|the\b|a\b|an\b|on\b|by\b|at\b|in\b)", re.I)
# An order or a plan before a done word is work still to do ("Next: cut over db-18", "need to complete db-19").
_PLAN = re.compile(r"\b(?:next|then|todo|to do|please|need|needs|plan|planned|remaining|left to)\b|\bto\s*$", re.I)
# ... and so is a condition after the names ("cut over db-18 once lag < 5s").
_LATER = re.compile(r"^\s*(?:once|when|after|if|until|as soon as|before)\b", re.I)
_SEP = re.compile(r"^\s*(?:,\s*and|,|and|&|/|plus|as well as)\s*$", re.I)
# A "do not" rule starts here: what follows is a rule, not a claim ("do not retry it, already done").
_RULE = re.compile(r"\b(?:do not|don['’]t|dont|never|must not|mustn['’]t|should not|shouldn['’]t|no\s+\w+\s+retry)\b", re.I)
_CLAUSE = re.compile(r"(?<=[.!?])\s+|\n|;|\s+but\s+|\s+while\s+|\s+whereas\s+", re.I)


# Markdown a note may be written in, read as the plain forms above: emphasis and code marks
# dropped, `* x`/`1. x` items as `- x`, `## Done` as `Done:`, a table row's cells and an
# arrow as a colon ("| db-19 | done |", "db-19 -> done").
_MARKS = re.compile(r"\*\*|__|`")
_ITEM = re.compile(r"^(\s*)(?:[*+]|\d{1,3}[.)])\s+", re.M)
_HEADING = re.compile(r"^\s*#{1,6}\s*(.+?)\s*#*\s*$", re.M)
_ARROW = re.compile(r"\s*(?:->|=>|→)\s*")
# How else a name is written: any case, a separator left out or another one ("DB-19", "db19",
# "db 19", a non-breaking hyphen). Only names with a letter and a digit: "a" or "alpha" would
# turn the words of a sentence into targets.
_SEPS = "-_. \u00a0\u2010\u2011\u2012\u2013\u2014\u2212"
_SEP_CLASS = "[-_.\\s\u00a0\u2010\u2011\u2012\u2013\u2014\u2212]?"
_KEY = str.maketrans("", "", _SEPS)


def _key(text: str) -> str:
    return text.lower().translate(_KEY)


def plain_text(text: str, ledger: Ledger) -> str:
    """`text` as the reader reads it: markdown made plain, and each target name written
    another way (case, separators) spelled as the ledger spells it."""
    text = _MARKS.sub("", text)
    text = _ITEM.sub(r"\1- ", text)
    text = _HEADING.sub(lambda m: m.group(1).rstrip(":") + ":", text)
    text = "\n".join(line.replace("|", " : ") if line.lstrip().startswith("|") else line for line in text.split("\n"))
    text = _ARROW.sub(": ", text)
    text = _range(text, ledger)
    folded = _key(text)
    keys: dict[str, list[str]] = {}
    for name in ledger.targets:
        keys.setdefault(_key(name), []).append(name)
    for key, same in keys.items():
        if len(same) > 1 or len(key) < 3 or key not in folded or not (re.search(r"[a-z]", key) and re.search(r"\d", key)):
            continue  # two targets written alike (`db-1`, `db1`): each only as the ledger spells it
        name = same[0]
        parts = [p for p in re.split(r"[-_. ]+", name) if p]
        pattern = re.compile(r"(?<![\w.-])" + _SEP_CLASS.join(re.escape(p) for p in parts) + r"(?![\w-])", re.I)
        text = pattern.sub(name.replace("\\", "\\\\"), text)  # the ledger's spelling (a backslash in it kept as one)
    return text


_RANGE = re.compile(r"(?<![\w.-])([\w.-]*\w)\s*(?:\.\.|…)\s*([\w.-]*\w)(?![\w-])")


def _range(text: str, ledger: Ledger) -> str:
    """`db-17..db-19` as the names from one to the other in the ledger's order (both must be targets)."""
    def names(m: re.Match[str]) -> str:
        order = list(ledger.targets)
        if m.group(1) in ledger.targets and m.group(2) in ledger.targets:
            a, b = order.index(m.group(1)), order.index(m.group(2))
            if a <= b:
                return ", ".join(order[a: b + 1])
        return m.group(0)
    return _RANGE.sub(names, text) if ".." in text or "…" in text else text


@dataclass(frozen=True)
class Claim:
    """One target said to be in one state (`state` is a ledger state or "in_flight"), or,
    `negated`, said not to be ("db-17 is not done", "db-20 is no longer blocked")."""

    name: str
    state: str
    sentence: str
    negated: bool = False


def _phrases(ledger: Ledger) -> list[tuple[str, str]]:
    """(state, regex) pairs, longest first so "in_progress" wins over a shorter word."""
    pairs = [(s, re.escape(s).replace("_", "[ _]")) for s in sorted(ledger.states(), key=len, reverse=True)]
    return pairs + list(_SYNONYMS.items())


class Reader:
    """Compiled patterns for one ledger's names and states; `claims(text)` lists what it says."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.pairs = _phrases(ledger)
        alternatives = "|".join(f"(?P<s{i}>{p})" for i, (_, p) in enumerate(self.pairs))
        self.state = re.compile(rf"(?:{alternatives})(?![\w-])", re.I)

    def _names_in(self, text: str) -> re.Pattern[str] | None:
        """A pattern of the target names that occur in `text` at all, longest first: a
        name not in the text cannot match, and one alternation of 10,000 names took 0.15 s
        to compile at every session's end."""
        names = sorted((n for n in self.ledger.targets if n in text), key=len, reverse=True)
        return re.compile(r"(?<![\w.-])(?:" + "|".join(re.escape(n) for n in names) + r")(?![\w-])") if names else None

    def _which(self, match: re.Match) -> str:
        return next(self.pairs[i][0] for i in range(len(self.pairs)) if match.group(f"s{i}"))

    def groups(self, clause: str, pattern: re.Pattern[str] | None) -> list[tuple[int, int, list[str]]]:
        """Runs of names (`pattern`'s) joined by commas and "and": (start, end, names)."""
        out: list[tuple[int, int, list[str]]] = []
        for m in pattern.finditer(clause) if pattern else []:
            if out and _SEP.match(clause[out[-1][1]: m.start()]):
                start, _, names = out.pop()
                out.append((start, m.end(), names + [m.group(0)]))
            else:
                out.append((m.start(), m.end(), [m.group(0)]))
        return out

    def _after(self, clause: str, end: int) -> tuple[str, bool] | None:
        """(the state claimed right after a name list, whether it is denied), or None."""
        rest = clause[end: end + 80]
        if rest.startswith(("'s", "’s")):
            return None  # "db-18's check is done" speaks of the check
        gap = _GAP.match(rest)
        assert gap is not None  # _GAP matches the empty string too
        m = self.state.match(rest, gap.end())
        if not m:
            return None
        hedged = _HEDGE.search(gap.group("gap"))
        negated = hedged is not None and _NEGATION.search(gap.group("gap")) and not _MAYBE.search(gap.group("gap"))
        if hedged and not negated:
            return None
        state = self._which(m)
        if state == "done" and _ACTIVITY.match(rest[m.end():]):
            return None
        return state, bool(negated)

    def _before(self, clause: str, start: int, end: int) -> tuple[str, bool] | None:
        """The state claimed by a verb or a "State:" label right before a name list, or None."""
        head = clause[:start]
        m = re.search(rf"(?:^|[\s(])(?P<w>{DONE_WORDS})\s*[:–—-]?\s*(?:with\s+|the\s+[\w-]+\s+(?:of|on|for)\s+)?$", head, re.I)
        lead = head[max(0, m.start("w") - 30): m.start("w")] if m else ""
        if m and not _HEDGE.search(lead) and not _CONDITION.search(lead) and not _PLAN.search(lead) \
                and not _LATER.match(clause[end:]):
            return "done", False
        m = re.match(r"^\s*(?:-\s*)?(?P<label>[\w ]{2,40}?)\s*:\s*$", head)
        if m:
            s = self.state.fullmatch(m.group("label"))
            return (self._which(s), False) if s else None
        return None

    def claims(self, text: str) -> list[Claim]:
        """Every claim in `text`; a clause is read only up to a "do not" rule in it."""
        out: list[Claim] = []
        heading: str | None = None
        pattern = self._names_in(text)
        for line in text.splitlines():
            stripped = line.strip()
            label = self.state.fullmatch(stripped[:-1].strip()) if stripped.endswith(":") else None
            if label:
                heading = self._which(label)
                continue
            if not stripped or not stripped.startswith("- "):
                heading = None
            for clause in _CLAUSE.split(line):
                if clause.rstrip().endswith("?"):
                    continue  # a question claims nothing ("Is db-18 done?")
                rule = _RULE.search(clause)
                clause = clause[: rule.start()] if rule else clause
                for i, (start, end, names) in enumerate(self.groups(clause, pattern)):
                    if _CONDITION.search(clause[:start]):
                        continue
                    state = self._after(clause, end) or self._before(clause, start, end)
                    if state is None and heading and i == 0 and not clause[:start].strip(" -"):
                        state = heading, False
                    if state:
                        out.extend(Claim(n, state[0], clause.strip(), state[1]) for n in names)
        return out


def holds(ledger: Ledger, claim: Claim) -> bool:
    """Whether the ledger agrees with a claim."""
    t = ledger.targets[claim.name]
    if claim.state == "in_flight":
        so = t.in_flight is not None or t.state in ("in_progress", "replicating")
    else:
        so = claim.state in (t.state, ledger.position(claim.name))
    return so != claim.negated
