"""The deterministic reviewer of handoff notes: does the note say what the ledger says?

The article: "add a second reviewer agent if you want an independent check on the
handoff note before a human sees it". This one is code, so it runs on every note:
- every target in flight, awaiting approval, or failed or blocked since `since` (the
  session's start, or the previous note's time for a person's note) is named; when a
  kind has more than LIST_MAX targets, LIST_MAX named and the rest counted will do;
- no target is described in a state it is not in ("db-19 is done" while it awaits an
  approval); only a state word right after the name counts ("db-19 is now done",
  "db-19 (done)", "db-19: done"), never one in a "do not ..." rule or after a "not";
- the previous note's rules ("Do NOT retry link on db-18 ...") that still apply (a
  target they name is not done, or they name none) are kept: some rule of the new note
  names the same target, or says much the same words.
Only the text before a `Reviewer:` line is judged. `amend` appends what is wrong as a
`Reviewer:` section (planners' notes); a person's note is stored as written and the
findings are printed and journaled instead.
"""

from __future__ import annotations

import re

from engine.model import Ledger
from engine.session.handoff_note import rules_in
from engine.timefmt import now_iso, parse_iso

REVIEWER = "Reviewer:"
LIST_MAX = 5
_TOKEN = re.compile(r"[\w.-]+")
_SIMPLE_NAME = re.compile(r"^[\w.-]+$")
_SYNONYMS = {
    "done": r"done|finished|completed?|cut over",
    "awaiting_approval": r"awaiting[ _](?:human |an? )?approval|waiting (?:on|for) (?:a |an |the )?(?:human )?approval|awaits (?:an? )?approval|pending approval",
    "in_flight": r"in flight|running",
}
_FILLER = r"(?:\s*(?:is|are|was|now|still|stays|remains|has been|been|state|in state|=|:|\(|,|-|–)\s*)*"


def judged(note: str) -> str:
    """The part of a note a review judges: everything before a `Reviewer:` line."""
    match = re.search(r"(?m)^\s*Reviewer\b.*$", note or "")
    return (note or "")[: match.start()] if match else (note or "")


def named(text: str, ledger: Ledger) -> list[str]:
    """Target names the text mentions, in ledger order."""
    tokens = {tok.rstrip(".") for tok in _TOKEN.findall(text)} | set(_TOKEN.findall(text))
    return [n for n in ledger.targets if (n in tokens if _SIMPLE_NAME.match(n) else n in text)]


def _since(ledger: Ledger, name: str, since: str | None) -> bool:
    if since is None:
        return True
    changed, start = parse_iso(ledger.targets[name].changed_at), parse_iso(since)
    if changed is None:
        return False  # never changed by the engine: it was so before `since`
    return start is None or changed >= start


def _coverage(kind: str, members: dict[str, str], mentioned: set[str], text: str) -> list[str]:
    missing = [n for n in members if n not in mentioned]
    if not missing:
        return []
    if len(members) > LIST_MAX and len(members) - len(missing) >= LIST_MAX:
        counts = {str(len(missing)), str(len(members))}
        if counts & set(re.findall(r"\d+", text)):
            return []  # the first ones named, the rest counted ("and 7 more")
    return [f"{n} {members[n]}, but the note does not name it" for n in missing[:LIST_MAX]] + (
        [f"... and {len(missing) - LIST_MAX} more {kind} targets the note does not name"] if len(missing) > LIST_MAX else [])


def _state_pattern(ledger: Ledger) -> re.Pattern:
    phrases = []
    for state in sorted(ledger.states(), key=len, reverse=True):
        phrases.append((state, re.escape(state).replace("_", "[ _]")))
    phrases += list(_SYNONYMS.items())
    alternatives = "|".join(f"(?P<s{i}>{p})" for i, (_, p) in enumerate(phrases))
    return re.compile(rf"^{_FILLER}(?P<neg>(?:not|never|no longer)\s+)?(?:{alternatives})\b", re.I), [s for s, _ in phrases]


def _claims_true(ledger: Ledger, name: str, claimed: str) -> bool:
    t = ledger.targets[name]
    if claimed == "in_flight":
        return t.in_flight is not None or t.state in ("in_progress", "replicating")
    return claimed in (t.state, ledger.position(name))


def contradictions(text: str, ledger: Ledger) -> list[str]:
    """"the note says X is S; the ledger says T" for each state claim the ledger denies."""
    pattern, states = _state_pattern(ledger)
    rules = set(rules_in(text))
    found: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+|\n", text):
        if not sentence.strip() or any(sentence.strip().removeprefix("- ") in r or r in sentence for r in rules):
            continue
        for name in named(sentence, ledger):
            for at in [m.end() for m in re.finditer(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", sentence)]:
                match = pattern.match(sentence[at: at + 60])
                if not match or match.group("neg"):
                    continue
                claimed = next(states[i] for i in range(len(states)) if match.group(f"s{i}"))
                if not _claims_true(ledger, name, claimed):
                    t = ledger.targets[name]
                    actual = t.state + (f", {t.in_flight.step} in flight" if t.in_flight else ", nothing in flight")
                    found.append(f"the note says {name} is {claimed.replace('_', ' ')}; the ledger says {actual}")
    return list(dict.fromkeys(found))


def dropped_rules(text: str, previous: str | None, ledger: Ledger) -> list[str]:
    """The previous note's rules that still apply and that the note does not keep."""
    new_rules = rules_in(text)
    out = []
    for rule in rules_in(judged(previous or "")):
        names = named(rule, ledger)
        if names and all(ledger.targets[n].state == "done" for n in names):
            continue  # its targets are finished: the rule has done its job
        if names:
            kept = any(set(names) & set(named(r, ledger)) for r in new_rules)
        else:
            words = {w.lower() for w in re.findall(r"[\w-]{4,}", rule)}
            kept = any(len(words & {w.lower() for w in re.findall(r"[\w-]{4,}", r)}) >= 0.6 * max(1, len(words)) for r in new_rules)
        if not kept:
            out.append(f'the previous note\'s rule still applies but is missing: "{rule.strip()}"')
    return out


def review(note: str, ledger: Ledger, *, previous: str | None, since: str | None) -> list[str]:
    """Everything the note gets wrong or leaves out, as sentences; [] when it passes."""
    text = judged(note)
    mentioned = set(named(text, ledger))
    flight = {n: f"has {t.in_flight.step} in flight" for n, t in ledger.targets.items() if t.in_flight is not None}
    awaiting = {n: f"awaits approval of {t.awaiting}" for n, t in ledger.targets.items() if t.state == "awaiting_approval"}
    halted = {n: f"is {t.state} ({t.reason or 'no reason recorded'})" for n, t in ledger.targets.items()
              if t.state in ("failed", "blocked") and _since(ledger, n, since)}
    problems = (_coverage("in flight", flight, mentioned, text) + _coverage("awaiting approval", awaiting, mentioned, text)
                + _coverage("failed or blocked", halted, mentioned, text))
    return problems + contradictions(text, ledger) + dropped_rules(text, previous, ledger)


def amend(note: str, problems: list[str], *, model_problems: list[str] | None = None) -> str:
    """The note with a `Reviewer:` section listing `problems` (an earlier one is replaced)."""
    problems = list(problems) + [f"(model review) {p}" for p in model_problems or []]
    if not problems:
        return note
    body = judged(note).rstrip("\n")
    lines = [f"{REVIEWER} (checked against the ledger at {now_iso()})"] + [f"- {p}" for p in problems]
    return body + "\n" + "\n".join(lines) + "\n"
