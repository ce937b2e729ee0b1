"""What a handoff note claims about targets' states, read the way people write it.

The review (`engine.audit.review`) compares these claims with the ledger. The forms read:
- a name or a list of names, then a state, with or without a verb: "db-18 done.",
  "db-18 has finished", "db-18 is complete", "db-17, db-18 and db-19 are done",
  "db-20 (blocked)", "db-27: failed";
- a state, then names: "Finished db-18", "We completed db-17 and db-18",
  "Completed: db-17, db-18", "Failed: db-23" (a state other than done only with a colon);
- a heading line that is a state ("Done:", "## Done") over "- db-17" (or "* db-17", "1. db-17") items;
- a negated state, as a claim that the target is not in it ("db-17 is not done",
  "db-20 is no longer blocked", "hasn't finished", "isn’t blocked");
- a runbook step said done, as a claim that the target has reached that step's `to` or gone past
  it ("db-19 cutover done", "db-19's cutover is complete": db-19 is done);
- the past tense of a job's verb as a done word ("db-19 upgraded", "Migrated db-19"), unless the
  ledger has it as a state of its own;
- names written another way ("DB-19", "db19", "db 19", "db-１９", `db-19`, **db-19**, *db-19*), ranges
  ("db-17..db-19", "db-17 through db-19", "db-17–db-19", "db-17-19"), markdown tables
  ("| db-19 | done |", "| db-19 | ✅ |"), checked task items ("- [x] db-19"), arrows ("db-19 -> done")
  and check marks ("db-19 ✓ done", "db-19 ✅"), as `engine.audit.note_text` makes them plain;
- a time, a date or a duration after a done word is still a claim ("db-18 done at 02:10Z");
- "approved" ("db-21 approved"), which an approval still awaited denies.
Not claims: a hedged state ("will be done", "may not be finished", "almost done", "once
db-18 is done"), an order or a plan ("Next: cut over db-18", "need to complete db-19",
"cut over db-18 once lag < 5s"), a question ("Is db-18 done?"), a state word that names an
activity ("finished replicating", "done with the check"), and anything inside a "do not" rule
("do not retry it, already done"); a rule ends at a comma or colon before a name
("Don't worry, db-18 is done" claims db-18 done).
Every regex here is linear: alternations of fixed words, no nested unbounded repeats.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.ledger.model import Ledger

DONE_WORDS = r"done|finished|complete|completed|cut over"
# What a job does, in the past tense: a target "upgraded" or "rolled out" is finished (`done_words`).
_JOB_VERBS = ("upgraded", "migrated", "rolled out", "deployed", "rotated")
_SYNONYMS = {
    "awaiting_approval": r"awaiting[ _](?:human |an? )?approval|waiting (?:on|for) (?:a |an |the )?(?:human )?approval"
                         r"|awaits (?:an? )?approval|pending approval",
    "in_flight": r"in flight|running",
    # An approval given: false while the target still awaits one ("db-21 approved, cutover can go").
    "approved": r"approved",
}
# Words that may stand between a name and its state ("db-18 is now done").
_FILL = (r"is|are|was|were|has|have|had|been|now|still|stays|stay|remains?|also|both|all|already|fully|just"
         r"|successfully|finally|marked|set|as|to|in state|state|the|its|their")
# A hedge or negation in that gap or before the state means it is no claim.
_HEDGE = re.compile(r"\b(?:not|never|no longer|yet|will|would|should|could|may|might|must|can|cannot|almost|nearly"
                    r"|about|soon|going|expected|supposed|hopefully|probably|likely|to be)\b|n['’]t\b", re.I)
# A contraction comes first: "is" alone would leave "n't" of "isn't" behind and end the gap.
_GAP = re.compile(rf"^(?P<gap>(?:\s*(?:\w+n['’]t\b|{_FILL}|not|never|no longer|yet|will|would|should|could|may|might|must|can"
                  rf"|cannot|almost|nearly|about|soon|going|expected|supposed|hopefully|probably|likely|be"
                  rf"|[=:(,–—✓✔✅☑\ufe0f-]))*)\s*", re.I)
# Of those, a plain negation is a claim too, that the target is not in the state ("db-17 is not done yet")...
_NEGATION = re.compile(r"\b(?:not|never|no longer)\b|n['’]t\b", re.I)
# ... unless it is also hedged ("will not be done", "may not be finished").
_MAYBE = re.compile(r"\b(?:will|would|should|could|may|might|must|can|cannot|almost|nearly|about|soon|going|expected"
                    r"|supposed|hopefully|probably|likely|be)\b|won['’]t\b", re.I)
# A name list preceded by one of these is a condition, not a fact ("once db-18 is done").
_CONDITION = re.compile(r"\b(?:once|when|whenever|until|till|after|before|if|unless|whether|wait for|waiting for"
                        r"|as soon as|in case)\s*$", re.I)
# "finished replicating", "done with the check", "completed its check": an activity ended, not the target.
# A time, a date or a duration after "on/by/at/in" says when or how long, not what: "done at 02:10Z",
# "done in 4 minutes", "done on 2026-09-10" are claims.
_ACTIVITY = re.compile(r"^\s*(?:\w+ing\b|with\b|its\b|their\b|the\b|a\b|an\b"
                       r"|(?:on|by|at|in)\b(?!\s+(?:about\s+|around\s+|~\s*)?\d))", re.I)
# ... unless a guess follows the time: "done by 04:00, hopefully", "done in 10 minutes (ETA)" is a plan.
_ETA = re.compile(r"^\s*(?:on|by|at|in)\s+\S.{0,40}?\b(?:hopefully|probably|likely|expected|eta|estimated)\b", re.I)
# An order or a plan before a done word is work still to do ("Next: cut over db-18", "need to complete db-19").
_PLAN = re.compile(r"\b(?:next|then|todo|to do|please|need|needs|plan|planned|remaining|left to)\b|\bto\s*$", re.I)
# ... and so is a condition after the names ("cut over db-18 once lag < 5s").
_LATER = re.compile(r"^\s*(?:once|when|after|if|until|as soon as|before)\b", re.I)
_SEP = re.compile(r"^\s*(?:,\s*and|,|and|&|/|plus|as well as)\s*$", re.I)
# A "do not" rule starts here: what follows is a rule, not a claim ("do not retry it, already done").
_RULE = re.compile(r"\b(?:do not|don['’]t|dont|never|must not|mustn['’]t|should not|shouldn['’]t|no\s+\w+\s+retry)\b", re.I)
# ... and ends at a comma, colon or dash: what comes after is read again, so "Don't worry, db-18 is
# done" claims db-18 done while "do not retry it, already done" names no target after the comma.
_RULE_END = re.compile(r"[,:–—]\s|\s-\s")
_CLAUSE = re.compile(r"(?<=[.!?])\s+|\n|;|\s+but\s+|\s+while\s+|\s+whereas\s+", re.I)


@dataclass(frozen=True)
class Claim:
    """One target said to be in one state (`state` is a ledger state or "in_flight"), or,
    `negated`, said not to be ("db-17 is not done", "db-20 is no longer blocked"); `onward`: in
    it or past it, as a step said done says of its `to` ("db-18 link done": replicating or later)."""

    name: str
    state: str
    sentence: str
    negated: bool = False
    onward: bool = False


# (state, whether it is denied, whether a later state is as good): what a name list is said to be.
Said = tuple[str, bool, bool]


def _job_verbs(ledger: Ledger) -> list[str]:
    """The job's verbs that say done in this ledger: one it has as a state of its own (the k8s
    template's `upgraded`) says that state instead."""
    states = {s.replace("_", " ") for s in ledger.states()}
    return [v for v in _JOB_VERBS if v not in states]


def done_words(ledger: Ledger) -> str:
    """The words that say a target is done in this ledger (a regex alternation)."""
    return "|".join([DONE_WORDS, *_job_verbs(ledger)])


def _step_key(name: str) -> str:
    """A step's name as a note may write it: any case, `_` or a space alike ("cut_over", "Cut over")."""
    return name.lower().replace("_", " ")


def onward(ledger: Ledger, state: str) -> set[str]:
    """`state` and every state the runbook's steps lead to from it."""
    reached, todo = {state}, [state]
    while todo:
        here = todo.pop()
        for step in ledger.steps():
            if step.from_ == here and step.to not in reached:
                reached.add(step.to)
                todo.append(step.to)
    return reached


def _phrases(ledger: Ledger) -> list[tuple[str, str]]:
    """(state, regex) pairs, longest first so "in_progress" wins over a shorter word."""
    pairs = [(s, re.escape(s).replace("_", "[ _]")) for s in sorted(ledger.states(), key=len, reverse=True)]
    return [*pairs, ("done", done_words(ledger)), *_SYNONYMS.items()]


class Reader:
    """Compiled patterns for one ledger's names and states; `claims(text)` lists what it says."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.pairs = _phrases(ledger)
        alternatives = "|".join(f"(?P<s{i}>{p})" for i, (_, p) in enumerate(self.pairs))
        self.state = re.compile(rf"(?:{alternatives})(?![\w-])", re.I)
        # "db-19 cutover done", "db-19's cutover is done": a step's name between a name and a done word.
        steps = sorted(ledger.steps(), key=lambda step: len(step.name), reverse=True)
        self.steps = {_step_key(step.name): step.to for step in steps}
        names = "|".join(re.escape(step.name).replace("_", "[ _]") for step in steps)
        self.step = re.compile(rf"(?:['’]s)?[\s:–—-]*(?P<step>{names})(?![\w-])", re.I) if names else None
        verbs = "|".join(_job_verbs(ledger))
        # "Finished the cutover of db-18" is a claim; "Upgraded the kernel on db-18" is not: a job's verb only right before.
        self.done_before = re.compile(rf"(?:^|[\s(])(?:(?P<w>{DONE_WORDS})\s*[:–—-]?\s*(?:with\s+|the\s+[\w-]+\s+(?:of|on|for)\s+)?"
                                      + (rf"|(?P<v>{verbs})\s*[:–—-]?\s*" if verbs else "") + ")$", re.I)

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

    def _after(self, clause: str, end: int) -> Said | None:
        """The state claimed right after a name list, or None."""
        rest = clause[end: end + 80]
        step = self.step.match(rest) if self.step else None
        if step:
            rest = rest[step.end():]  # a step said done: its `to` reached ("db-19 cutover done")
        elif rest.startswith(("'s", "’s")):
            return None  # "db-18's disk is full" speaks of something else
        gap = _GAP.match(rest)
        assert gap is not None  # _GAP matches the empty string too
        m = self.state.match(rest, gap.end())
        if not m or (step and self._which(m) != "done"):
            return None
        hedged = _HEDGE.search(gap.group("gap"))
        negated = hedged is not None and _NEGATION.search(gap.group("gap")) and not _MAYBE.search(gap.group("gap"))
        if hedged and not negated:
            return None
        state = self._which(m)
        if state == "done" and (_ACTIVITY.match(rest[m.end():]) or _ETA.match(rest[m.end():])):
            return None
        if step:
            return self.steps[_step_key(step.group("step"))], bool(negated), True
        return state, bool(negated), False

    def _before(self, clause: str, start: int, end: int) -> Said | None:
        """The state claimed by a verb or a "State:" label right before a name list, or None."""
        head = clause[:start]
        m = self.done_before.search(head)
        at = (m.start("w") if m.group("w") else m.start("v")) if m else 0
        lead = head[max(0, at - 30): at]
        if m and not _HEDGE.search(lead) and not _CONDITION.search(lead) and not _PLAN.search(lead) \
                and not _LATER.match(clause[end:]):
            return "done", False, False
        m = re.match(r"^\s*(?:-\s*)?(?P<label>[\w ]{2,40}?)\s*:\s*$", head)
        if m:
            s = self.state.fullmatch(m.group("label"))
            return (self._which(s), False, False) if s else None
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
                for part in self._outside_rules(clause):
                    out.extend(self._read(part, pattern, heading))
        return out

    def _outside_rules(self, clause: str) -> list[str]:
        """The parts of a clause outside its "do not" rules: before a rule, and after the comma, colon
        or dash that ends one ("Don't worry, db-18 is done"; "do not retry it, already done" names none)."""
        parts: list[str] = []
        while (rule := _RULE.search(clause)) is not None:
            parts.append(clause[: rule.start()])
            end = _RULE_END.search(clause, rule.end())
            clause = clause[end.end():] if end else ""
        return [*parts, clause]

    def _read(self, clause: str, pattern: re.Pattern[str] | None, heading: str | None) -> list[Claim]:
        """The claims of one clause (or the part of one outside a rule), under the `heading` state if any."""
        out: list[Claim] = []
        for i, (start, end, names) in enumerate(self.groups(clause, pattern)):
            if _CONDITION.search(clause[:start]):
                continue
            state = self._after(clause, end) or self._before(clause, start, end)
            if state is None and heading and i == 0 and not clause[:start].strip(" -"):
                state = heading, False, False
            if state:
                out.extend(Claim(n, state[0], clause.strip(), state[1], state[2]) for n in names)
        return out


def holds(ledger: Ledger, claim: Claim) -> bool:
    """Whether the ledger agrees with a claim."""
    t = ledger.targets[claim.name]
    if claim.state == "approved" and claim.state not in ledger.states():
        # False only while it awaits an approval none has given yet (one of two given is "approved by
        # alice"); "not approved" is not judged: the ledger does not say which targets ever needed one.
        return claim.negated or t.state != "awaiting_approval" or any(
            a.step == t.awaiting and not a.used_at for a in t.approvals)
    if claim.state == "in_flight":
        so = t.in_flight is not None or t.state in ("in_progress", "replicating")
    elif claim.onward:
        so = ledger.position(claim.name) in onward(ledger, claim.state)
    else:
        so = claim.state in (t.state, ledger.position(claim.name))
    return so != claim.negated
