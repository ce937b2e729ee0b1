"""What a handoff note claims about targets' states, read the way people write it.

The review (`engine.audit.review`) compares these claims with the ledger. The forms read:
- a name or a list of names, then a state, with or without a verb: "db-18 done.",
  "db-18 has finished", "db-18 is complete", "db-17, db-18 and db-19 are done",
  "db-20 (blocked)", "db-27: failed";
- a state, then names: "Finished db-18", "We completed db-17 and db-18",
  "Completed: db-17, db-18", "Failed: db-23" (a state other than done only with a colon);
- a heading line that is a state ("Done:") over "- db-17" items.
Not claims: a negated or hedged state ("db-18 is not done", "hasn't finished", "will be
done", "almost done", "once db-18 is done"), a state word that names an activity
("finished replicating", "done with the check"), and anything inside a "do not" rule.
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
# A name list preceded by one of these is a condition, not a fact ("once db-18 is done").
_CONDITION = re.compile(r"\b(?:once|when|whenever|until|till|after|before|if|unless|whether|wait for|waiting for"
                        r"|as soon as|in case)\s*$", re.I)
# "finished replicating", "done with the check", "completed its check": an activity ended, not the target.
_ACTIVITY = re.compile(r"^\s*(?:\w+ing\b|with\b|its\b|their\b|the\b|a\b|an\b|on\b|by\b|at\b|in\b)", re.I)
_SEP = re.compile(r"^\s*(?:,\s*and|,|and|&|/|plus|as well as)\s*$", re.I)
# A "do not" rule starts here: what follows is a rule, not a claim ("do not retry it, already done").
_RULE = re.compile(r"\b(?:do not|don['’]t|dont|never|must not|mustn['’]t|should not|shouldn['’]t|no\s+\w+\s+retry)\b", re.I)
_CLAUSE = re.compile(r"(?<=[.!?])\s+|\n|;|\s+but\s+|\s+while\s+|\s+whereas\s+", re.I)


@dataclass(frozen=True)
class Claim:
    """One target said to be in one state (`state` is a ledger state or "in_flight")."""

    name: str
    state: str
    sentence: str


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

    def _after(self, clause: str, end: int) -> str | None:
        """The state claimed right after a name list, or None."""
        rest = clause[end: end + 80]
        if rest.startswith(("'s", "’s")):
            return None  # "db-18's check is done" speaks of the check
        gap = _GAP.match(rest)
        assert gap is not None  # _GAP matches the empty string too
        m = self.state.match(rest, gap.end())
        if not m or _HEDGE.search(gap.group("gap")):
            return None
        state = self._which(m)
        if state == "done" and _ACTIVITY.match(rest[m.end():]):
            return None
        return state

    def _before(self, clause: str, start: int) -> str | None:
        """The state claimed by a verb or a "State:" label right before a name list, or None."""
        head = clause[:start]
        m = re.search(rf"(?:^|[\s(])(?P<w>{DONE_WORDS})\s*[:–—-]?\s*(?:with\s+)?$", head, re.I)
        lead = head[max(0, m.start("w") - 30): m.start("w")] if m else ""
        if m and not _HEDGE.search(lead) and not _CONDITION.search(lead):
            return "done"
        m = re.match(r"^\s*(?:-\s*)?(?P<label>[\w ]{2,40}?)\s*:\s*$", head)
        if m:
            s = self.state.fullmatch(m.group("label"))
            return self._which(s) if s else None
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
                rule = _RULE.search(clause)
                clause = clause[: rule.start()] if rule else clause
                for i, (start, end, names) in enumerate(self.groups(clause, pattern)):
                    if _CONDITION.search(clause[:start]):
                        continue
                    state = self._after(clause, end) or self._before(clause, start)
                    if state is None and heading and i == 0 and not clause[:start].strip(" -"):
                        state = heading
                    out.extend(Claim(n, state, clause.strip()) for n in names if state)
        return out


def holds(ledger: Ledger, claim: Claim) -> bool:
    """Whether the ledger agrees with a claim."""
    t = ledger.targets[claim.name]
    if claim.state == "in_flight":
        return t.in_flight is not None or t.state in ("in_progress", "replicating")
    return claim.state in (t.state, ledger.position(claim.name))
