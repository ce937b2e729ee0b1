"""The deterministic reviewer of handoff notes: does the note say what the ledger says?

The article: "add a second reviewer agent if you want an independent check on the
handoff note before a human sees it". This one is code, so it runs on every note:
- every target in flight, awaiting approval, or failed or blocked since `since` (the
  session's start, or the previous note's time for a person's note) is named; when a
  kind has more than LIST_MAX targets, LIST_MAX named and the rest counted ("and 7 more";
  a time, a lag or a ticket number is no count) will do;
- no target is described in a state it is not in ("db-19 is done" while it awaits an
  approval), or said not to be in the one it is in ("db-17 is not done"), in any of the
  forms `engine.audit.note_claims` reads ("db-18 done.", "Finished db-18", "Completed:
  db-17, db-18", "DB-19 done", "| db-19 | done |"), never one in a "do not ..." rule;
- nothing it says of the whole fleet is false, in any of the forms `engine.audit.fleet_claims`
  reads: "nothing else is in flight" (else than the targets it speaks of as in flight), "no
  approvals pending", "Nothing blocked", "No failures", "all done", "12 of 40 done", a pasted
  `handoff status` line ("17 done, 1 replicating, 20 queued, 1 blocked, 1 failed");
- the previous note's rules ("Do NOT retry link on db-18 ...") that still apply (a
  target they name is not done, or they name none) are kept by meaning
  (`engine.audit.note_rules`): some sentence of the new note prohibits the same action on the
  same targets (or names none and says much the same words), and none allows it.
Only the text before a `Reviewer:` line is judged. `amend` appends what is wrong as a
`Reviewer:` section (planners' notes); a person's note is stored as written and the
findings are printed and journaled instead.
"""

from __future__ import annotations

import re

from engine.audit import note_rules
from engine.audit.fleet_claims import LIST_MAX, fleet_claims
from engine.audit.note_claims import Reader, holds, onward
from engine.audit.note_rules import rules_in
from engine.audit.note_text import named, plain_text
from engine.codec.timefmt import now_iso, parse_iso
from engine.ledger.model import Ledger

REVIEWER = "Reviewer:"


def judged(note: str) -> str:
    """The part of a note a review judges: everything before a `Reviewer:` line."""
    match = re.search(r"(?m)^\s*Reviewer\b.*$", note or "")
    return (note or "")[: match.start()] if match else (note or "")


def _since(ledger: Ledger, name: str, since: str | None) -> bool:
    if since is None:
        return True
    changed, start = parse_iso(ledger.targets[name].changed_at), parse_iso(since)
    if changed is None:
        return False  # never changed by the engine: it was so before `since`
    return start is None or changed >= start


# A number that counts targets ("and 7 more", "+3 others", "12 in all"), never one inside a time,
# a lag, a date or a ticket ("03:00Z", "3.2s", "PLAT-3"), which would stand for the unnamed ones.
_COUNTED = re.compile(r"(?<![\w.:/-])(\d+)(?![\w:/-]|[.,]\d)\s*(?:more|others?|further|additional|remaining|left"
                      r"|in total|total|in all|altogether)\b", re.I)


def _coverage(kind: str, members: dict[str, str], mentioned: set[str], text: str) -> list[str]:
    missing = [n for n in members if n not in mentioned]
    if not missing:
        return []
    if len(members) > LIST_MAX and len(members) - len(missing) >= LIST_MAX:
        counts = {len(missing), len(members)}
        if counts & {int(n) for n in _COUNTED.findall(text)}:
            return []  # the first ones named, the rest counted ("and 7 more")
    return [f"{n} {members[n]}, but the note does not name it" for n in missing[:LIST_MAX]] + (
        [f"... and {len(missing) - LIST_MAX} more {kind} targets the note does not name"] if len(missing) > LIST_MAX else [])


def contradictions(text: str, ledger: Ledger) -> list[str]:
    """"the note says X is S; the ledger says T" for each state claim the ledger denies."""
    found: list[str] = []
    for claim in Reader(ledger).claims(text):
        if not holds(ledger, claim):
            t = ledger.targets[claim.name]
            actual = t.state + (f", {t.in_flight.step} in flight" if t.in_flight else ", nothing in flight")
            later = " or past it" if claim.onward and len(onward(ledger, claim.state)) > 1 else ""
            said = ("not " if claim.negated else "") + claim.state.replace("_", " ") + later
            found.append(f"the note says {claim.name} is {said}; the ledger says {actual}")
    return list(dict.fromkeys(found))


def _overlap(rule: str, sentence: str) -> bool:
    """Much the same words (a rule that names no target is matched by its words)."""
    words = {w.lower() for w in re.findall(r"[\w-]{4,}", rule)}
    return len(words & {w.lower() for w in re.findall(r"[\w-]{4,}", sentence)}) >= 0.6 * max(1, len(words))


def dropped_rules(text: str, previous: str | None, ledger: Ledger) -> list[str]:
    """The previous note's rules that still apply and that the note drops or reverses."""
    said = note_rules.sentences(text)
    out = []
    for rule in rules_in(judged(previous or "")):
        names = named(rule, ledger)
        if names and all(ledger.targets[n].state == "done" for n in names):
            continue  # its targets are finished: the rule has done its job
        verbs = {r.verb for r in note_rules.read(rule) if not r.allowed}

        def about(sentence: str, name: str | None, rule: str = rule) -> bool:
            return name in named(sentence, ledger) if name else _overlap(rule, sentence)

        scope: list[str | None] = [*names] or [None]
        reversal = next((s for s in said for n in scope for v in verbs if about(s, n) and note_rules.allows(s, v)), None)
        kept = all(any(about(s, n) and any(note_rules.prohibits(s, v) for v in verbs) for s in said) for n in scope)
        if not verbs:  # a rule whose action we cannot tell: kept by naming its targets in a rule, or its words
            kept = any(all(about(r, n) for n in scope) for r in rules_in(text))
        if reversal is not None:
            out.append(f'the note reverses the previous rule "{rule.strip()}": it says "{reversal.strip()}"')
        elif not kept:
            out.append(f'the previous note\'s rule still applies but is missing: "{rule.strip()}"')
    return out


def review(note: str, ledger: Ledger, *, previous: str | None, since: str | None) -> list[str]:
    """Everything the note gets wrong or leaves out, as sentences; [] when it passes."""
    text = plain_text(judged(note), ledger)
    mentioned = set(named(text, ledger))
    flight = {n: f"has {t.in_flight.step} in flight" for n, t in ledger.targets.items() if t.in_flight is not None}
    awaiting = {n: f"awaits approval of {t.awaiting}" for n, t in ledger.targets.items() if t.state == "awaiting_approval"}
    halted = {n: f"is {t.state} ({t.reason or 'no reason recorded'})" for n, t in ledger.targets.items()
              if t.state in ("failed", "blocked") and _since(ledger, n, since)}
    problems = (_coverage("in flight", flight, mentioned, text) + _coverage("awaiting approval", awaiting, mentioned, text)
                + _coverage("failed or blocked", halted, mentioned, text))
    return problems + contradictions(text, ledger) + fleet_claims(text, ledger) + dropped_rules(text, previous, ledger)


def amend(note: str, problems: list[str], *, model_problems: list[str] | None = None) -> str:
    """The note with a `Reviewer:` section listing `problems` (an earlier one is replaced)."""
    problems = list(problems) + [f"(model review) {p}" for p in model_problems or []]
    if not problems:
        return note
    body = judged(note).rstrip("\n")
    lines = [f"{REVIEWER} (checked against the ledger at {now_iso()})"] + [f"- {p}" for p in problems]
    return body + "\n" + "\n".join(lines) + "\n"
