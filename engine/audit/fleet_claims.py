"""What a handoff note says of the whole fleet, checked against the ledger (`engine.audit.review`).

The forms read:
- none of a kind, in flight, awaiting approval, blocked or failed: "Nothing in flight", "No steps
  running", "Nothing in progress", "No approvals pending at the moment", "Nothing to approve",
  "Nothing blocked", "No blocked or failed targets", "No failures", "0 blocked, 0 failed", and the
  labels "In flight: none", "Pending approvals: none", "Failed: 0"; with "else" or "other" ("Nothing
  else is in flight", "No other targets running") the targets the note speaks of as such elsewhere
  are left out. A scope after one ("No failures this shift", "nothing running on db-19") makes it no
  claim about the fleet;
- all in a state: "all done", "all 40 dbs done", "all verified", "everything is done";
- N of M in a state: "12 of 40 done", "12 out of 40 complete", "18 of the 40 dbs cut over", "Done: 12 of 40";
- the counts per state `handoff status` prints ("17 done, 1 replicating, 20 queued, 1 blocked, 1
  failed"), when they count the whole fleet: they add up to its size, or count every state it has
  targets in ("0 blocked, 0 failed" left out none).
A condition or a hedge before one ("once nothing is in flight") is no claim.
Every regex here is linear: alternations of fixed words, no nested unbounded repeats.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from engine.audit import note_rules
from engine.audit.note_claims import DONE_WORDS, done_words
from engine.audit.note_text import named
from engine.ledger.model import Ledger

LIST_MAX = 5  # names a finding lists; the rest are counted


@dataclass(frozen=True)
class _Kind:
    """Targets a note may say there are none of."""

    said: str  # how a note names the kind (a regex alternation)
    spoken: re.Pattern[str]  # words that speak of one target as of the kind ("db-19 check running")
    members: Callable[[Ledger], dict[str, str]]  # its targets, each with the step it is about ("" for none)
    finding: str  # what is wrong, `{}` the targets


_KINDS = (
    _Kind(r"in flight|running|in progress|under ?way", re.compile(r"\b(?:in flight|running|started|in progress|under ?way)\b", re.I),
          lambda ledger: {n: t.in_flight.step for n, t in ledger.targets.items() if t.in_flight is not None},
          "the note says nothing is in flight; the ledger has {} in flight"),
    _Kind(r"(?:awaiting|awaits|waiting (?:on|for)|waits (?:on|for)|pending|needing|needs?|requiring|requires?)\s+(?:an? |the )?"
          r"(?:human )?approvals?|(?:pending |outstanding )?approvals?(?:\s+(?:are\s+|is\s+)?(?:pending|waiting|outstanding|needed))?"
          r"|to approve", re.compile(r"\b(?:approv|await|wait)", re.I),
          lambda ledger: {n: t.awaiting or "" for n, t in ledger.targets.items() if t.state == "awaiting_approval"},
          "the note says no approval is waiting; {} await one"),
    _Kind(r"blocked", re.compile(r"\bblock", re.I),
          lambda ledger: {n: "" for n, t in ledger.targets.items() if t.state == "blocked"},
          "the note says nothing is blocked; the ledger has {} blocked"),
    _Kind(r"failed|failures?", re.compile(r"\bfail", re.I),
          lambda ledger: {n: "" for n, t in ledger.targets.items() if t.state == "failed"},
          "the note says nothing has failed; the ledger has {} failed"),
)
_KIND = "|".join(f"(?:{kind.said})" for kind in _KINDS)
_KIND_LIST = rf"(?:{_KIND})(?:\s*(?:,|/|\bor\b|\band\b|\bnor\b)\s*(?:{_KIND}))*"
_NOUN = r"(?:targets?|dbs?|databases?|hosts?|services?|clusters?|nodes?|instances?|steps?|commands?|work|jobs?)"
# What may follow "none" and leave it about the whole fleet now: a fleet noun, a time, the clause's end.
_NOW = r"(?:right now|now|currently|at the moment|at present|at this time|so far|anymore|any more|either)"
_END = rf"(?:\s+{_NOUN})?(?:\s+{_NOW})?(?=\s*(?:[.;,!:)–—]|$)|\s+-\s|\s+(?:and|but|so|while|whereas)\b)"
_NONE = re.compile(rf"(?:\b(?:nothing|none|no)|(?<![\w.,:/-])(?:zero|0))(?:['’]s)?(?P<other>\s+(?:else|other))?\s+"
                   rf"(?:{_NOUN}\s+)?(?:(?:is|are|was|were|has|have|been|still|currently|now)\s+)*(?P<kinds>{_KIND_LIST}){_END}",
                   re.I | re.M)
_NONE_LABEL = re.compile(rf"^[ \t]*(?:-\s*)?(?P<kinds>{_KIND_LIST})\s*:\s*(?:none|nothing|no|zero|0|n/?a)\s*(?:[.;,!]|$)",
                         re.I | re.M)
# "42 passed, 0 failed", "12 checks, no failures": a count of something else before one says what it counts.
_COUNT_BEFORE = re.compile(r"(?P<count>\d+\s+[\w-]+(?:\s+[\w-]+)?)\s*[,;/]\s*$")
_WORD = re.compile(r"[\w-]+")
# "all done", "all targets are verified", "4 of 40 dbs done": the fleet, not "all checks completed".
_FLEET = r"(?:(?:the\s+)?(?:targets?|dbs?|databases?|hosts?|services?|clusters?|nodes?|instances?|of them)\s+)?"
# "All 40 databases done": with a count, only when it is the fleet's size ("all 17 dbs done" counts some).
_ALL = re.compile(rf"\b(?:all|every)\s+(?:(?P<n>\d+)\s+)?{_FLEET}(?:are\s+|is\s+|were\s+)?(?:now\s+)?"
                  r"(?P<w>done|finished|complete|completed|verified)\b|\beverything\s+(?:is\s+)?(?P<w2>done|finished|complete)\b",
                  re.I)
_COUNT = re.compile(rf"\b(?P<n>\d+)\s*(?:out of|of|/)\s*(?:the\s+)?(?P<total>\d+)\s+{_FLEET}"
                    rf"(?:(?:are|is|were|now|all|already)\s+)*(?P<state>{DONE_WORDS}|verified|failed|blocked)(?![\w-])", re.I)
# "Done: 18 of 40." (the state first): only when nothing but a fleet word follows the count.
_COUNT_LABEL = re.compile(rf"\b(?P<state>{DONE_WORDS}|verified|failed|blocked)\s*:\s*(?P<n>\d+)\s*(?:out of|of|/)\s*(?P<total>\d+)"
                          r"(?P<rest>[^.,;:!?()\n]*)", re.I)
_FLEET_ONLY = re.compile(_FLEET, re.I)
_FLEET_HEDGE = re.compile(r"\b(?:once|when|until|after|if|unless|before|not|never|no longer|will|should|to be)\b[^.!?\n]*$", re.I)


def _state(word: str, done: str = DONE_WORDS) -> str:
    """A state word as the ledger's state: "complete" and "cut over" (and `done`'s others) are done."""
    return "done" if re.fullmatch(done, word, re.I) else word.lower().replace(" ", "_")


def _spoken_of(sentence: str, name: str, step: str, words: re.Pattern[str], ledger: Ledger) -> bool:
    """Whether a sentence names `name` beside `words` or its step ("db-19 check running", "db-21
    awaits approval"); "db-19 queued" does not speak of db-19's check."""
    return name in sentence and name in named(sentence, ledger) and bool(
        words.search(sentence) or step.lower() in {w.lower() for w in _WORD.findall(sentence)})


def _denied(matches: list[re.Match[str]], members: dict[str, str], words: re.Pattern[str], text: str,
            ledger: Ledger) -> list[str]:
    """The members (name: its step) a "nothing ..." sentence wrongly leaves out: all of them, or with
    "else" ("Nothing else is in flight") those the note does not speak of elsewhere."""
    for m in matches:
        sentences = note_rules.sentences(text) if m.groupdict().get("other") else []  # a label has no "else"
        left = [n for n, step in members.items() if not any(_spoken_of(s, n, step, words, ledger) for s in sentences)]
        if left:
            return left
    return []


def _runs(ledger: Ledger) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A run of counts per state ("17 done, 1 replicating, 20 queued"; not the 40 of "18 of 40 done"),
    and one count in it."""
    words = "|".join(re.escape(s).replace("_", "[ _]") for s in sorted(ledger.states(), key=len, reverse=True))
    one = rf"\d+\s+(?:{words}|{done_words(ledger)})(?![\w-])"
    run = re.compile(rf"(?<![\w.:/-])(?<!of ){one}(?:\s*(?:[,;·|]|\band\b)\s*{one})+", re.I)
    return run, re.compile(rf"(?P<n>\d+)\s+(?P<state>{words}|{done_words(ledger)})(?![\w-])", re.I)


def _of_targets(m: re.Match[str], text: str, pair: re.Pattern[str]) -> bool:
    """Whether a "none" counts targets: not after a count of something else ("42 passed, 0 failed")."""
    before = _COUNT_BEFORE.search(text[max(0, m.start() - 40): m.start()])
    return before is None or pair.fullmatch(before.group("count")) is not None


def _status(found: list[re.Match[str]], pair: re.Pattern[str], ledger: Ledger) -> list[str]:
    """The runs of counts per state that count the whole fleet, wrongly."""
    counts, done, out = ledger.counts(), done_words(ledger), []
    for run in found:
        said = {_state(p.group("state"), done): int(p.group("n")) for p in pair.finditer(run.group(0))}
        if sum(said.values()) != len(ledger.targets) and not set(counts) <= set(said):
            continue  # some of the fleet ("2 done, 1 failed" this shift)
        if any(counts.get(state, 0) != n for state, n in said.items()):
            have = ", ".join(f"{counts.get(state, 0)} {state}" for state in said)
            out.append(f"the note says {run.group(0).strip()}; the ledger has {have}")
    return out


def fleet_claims(text: str, ledger: Ledger) -> list[str]:
    """Sentences about the whole fleet the ledger denies (a condition or a hedge before one is no claim)."""
    out: list[str] = []

    def said(pattern: re.Pattern[str]) -> list[re.Match[str]]:
        return [m for m in pattern.finditer(text) if not _FLEET_HEDGE.search(text[max(0, m.start() - 60): m.start()])
                and not text[m.end(): m.end() + 1] == "?"]

    run, pair = _runs(ledger)
    nones = [m for m in said(_NONE) + said(_NONE_LABEL) if _of_targets(m, text, pair)]
    for kind in _KINDS:
        about = [m for m in nones if re.search(kind.said, m.group("kinds"), re.I)]
        if left := _denied(about, kind.members(ledger), kind.spoken, text, ledger):
            out.append(kind.finding.format(", ".join(left[:LIST_MAX])))
    for m in said(_ALL):
        if m.group("n") and int(m.group("n")) != len(ledger.targets):
            continue  # "all 17 dbs done", "all 3 done": some the note counted, not the fleet
        word = (m.group("w") or m.group("w2")).lower()
        state = "verified" if word == "verified" else "done"
        short = [n for n, t in ledger.targets.items() if t.state != state and not (state == "verified" and t.state == "done")]
        if short:
            out.append(f"the note says all are {state}; the ledger has {len(short)} that are not ({', '.join(short[:LIST_MAX])})")
    labels = [m for m in said(_COUNT_LABEL) if not m.group("rest").strip() or _FLEET_ONLY.fullmatch(m.group("rest").strip() + " ")]
    for m in said(_COUNT) + labels:
        n, total, state = int(m.group("n")), int(m.group("total")), _state(m.group("state"))
        have = sum(1 for t in ledger.targets.values() if t.state == state)
        if (n, total) != (have, len(ledger.targets)):
            out.append(f"the note says {n} of {total} are {state}; the ledger has {have} of {len(ledger.targets)}")
    return out + _status(said(run), pair, ledger)
