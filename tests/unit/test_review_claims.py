"""The note review catches plain lies: every common "target + state" form, and "do not" rules by meaning."""

from __future__ import annotations

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from session_kit import DEMO

from engine.audit.review import review
from engine.ledger.model import BASE_STATES, InFlight, Ledger

DEMO_DATA = yaml.safe_load((DEMO / "ledger.yaml").read_text())
PREVIOUS = "Do NOT retry pg_upgrade on db-18, the --link step is irreversible.\n"


def demo(**targets) -> Ledger:
    data = yaml.safe_load((DEMO / "ledger.yaml").read_text())
    data["targets"].update(targets)
    return Ledger.model_validate(data)


LIES = ["db-18 done.", "Finished db-18.", "db-18 has finished.", "db-18 is complete.", "Completed: db-17, db-18.",
        "db-17 and db-18 are done.", "We completed db-18 last night.", "Done:\n- db-17\n- db-18\n", "db-18 – finished",
        "db-18 has been completed successfully."]


def test_each_common_form_of_a_false_done_is_flagged() -> None:
    """db-18 replicates: every way people write "db-18 is done" is a finding naming db-18 and its real state."""
    ledger = demo(**{"db-17": {"state": "done"}})
    for lie in LIES:
        problems = review(lie + "\nDo NOT retry pg_upgrade on db-18.", ledger, previous=PREVIOUS, since="2026-12-01T00:00Z")
        assert problems == ["the note says db-18 is done; the ledger says replicating, nothing in flight"], lie


def test_negated_hedged_and_activity_forms_are_no_claims() -> None:
    """"not done", "hasn't finished", "will be done", "once ... done", "finished replicating" claim nothing."""
    ledger = demo()
    for text in ["db-18 is not done.", "db-18 hasn't finished.", "db-18 is not yet complete.", "db-18 will be done by 04:00.",
                 "Once db-18 is done, start db-19.", "db-18 is almost done.", "We have not finished db-18.",
                 "db-18 finished replicating its first half.", "db-18 is done with the check.", "db-18 isn't done",
                 "Do not call db-18 done."]:
        assert review(text + "\nNever retry pg_upgrade on db-18.", ledger, previous=PREVIOUS, since="2026-12-01T00:00Z") == [], text


def test_a_claim_before_a_rule_in_the_same_sentence_is_still_read() -> None:
    """"db-18 is done, do not retry it": the rule does not hide the lie before it."""
    assert review("db-18 is done, do not retry pg_upgrade on db-18.", demo(), previous=PREVIOUS, since="2026-12-01T00:00Z") == [
        "the note says db-18 is done; the ledger says replicating, nothing in flight"]


def test_a_rule_kept_in_other_words_passes() -> None:
    ledger = demo()
    for kept in ["Never retry pg_upgrade on db-18.", "db-18: do not retry the upgrade, it ran.", "Do not touch db-18.",
                 "You must not retry pg_upgrade --link on db-18 under any circumstances.",
                 "Do not retry pg_upgrade on db-18; you may retry the check on db-19.",
                 "Never retry pg_upgrade on db-18, but retry the check on db-19 if it fails."]:
        assert review(kept, ledger, previous=PREVIOUS, since="2026-12-01T00:00Z") == [], kept


def test_a_rule_negated_or_reversed_is_not_kept() -> None:
    """Dropping the "not", allowing the action or asking for it is a finding that quotes the rule."""
    ledger = demo()
    for reversed_ in ["Retry pg_upgrade on db-18.", "It is fine to retry pg_upgrade on db-18.",
                      "Do not hesitate to retry pg_upgrade on db-18.", "Do not forget to retry pg_upgrade on db-18.",
                      "You can retry pg_upgrade on db-18 now.", "Do not touch db-19. Go ahead and retry pg_upgrade on db-18."]:
        problems = review(reversed_, ledger, previous=PREVIOUS, since="2026-12-01T00:00Z")
        assert len(problems) == 1 and problems[0].startswith(
            'the note reverses the previous rule "Do NOT retry pg_upgrade on db-18, the --link step is irreversible."'), reversed_
    # Another rule on db-18 that is not this one does not keep it.
    assert review("Do not restart db-18.", ledger, previous=PREVIOUS, since="2026-12-01T00:00Z") == [
        'the previous note\'s rule still applies but is missing: "Do NOT retry pg_upgrade on db-18, the --link step is irreversible."']


# --- the lie generator --------------------------------------------------------------------------

PHRASES = {"done": ["done", "finished", "complete", "completed"],
           "awaiting_approval": ["awaiting approval", "waiting on human approval", "pending approval"],
           "in_flight": ["in flight", "running"]}
FILLERS = ["", "is ", "is now ", "has been ", "still ", "remains "]
NAMES = ["db-1", "db-18", "db-180", "pg-eu-west-2", "node.a", "k8s-prod-07", "db-18b"]


def phrase(state: str) -> list[str]:
    return PHRASES.get(state, [state, state.replace("_", " ")])


def truths(ledger: Ledger, name: str) -> set[str]:
    """The states a true note may give `name`: its state, where guards see it, in flight when something runs."""
    t = ledger.targets[name]
    out = {t.state, "checked" if t.state == "awaiting_approval" else t.state}
    if t.in_flight is not None or t.state in ("in_progress", "replicating"):
        out.add("in_flight")
    return out


@st.composite
def fleets(draw):
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=6, unique=True))
    targets = {}
    for n in names:
        state = draw(st.sampled_from(BASE_STATES))
        targets[n] = {"state": state, **({"awaiting": "link"} if state == "awaiting_approval" else {})}
    ledger = Ledger.model_validate({**DEMO_DATA, "targets": targets})
    for n in names:
        if draw(st.booleans()) and ledger.targets[n].state not in ("done", "awaiting_approval"):
            ledger.targets[n].in_flight = InFlight(step="check", session="s1")
    return ledger


def sentence(draw, names: list[str], state: str) -> str:
    """One claim that `names` are in `state`, in one of the forms people write."""
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    word = draw(st.sampled_from(phrase(state)))
    form = draw(st.sampled_from(["after", "label", "heading"] + (["verb"] if state == "done" else [])))
    if form == "after":
        filler = draw(st.sampled_from(FILLERS + (["has "] if word in ("finished", "completed") else [])))
        if len(names) > 1:
            filler = filler.replace("is ", "are ").replace("has ", "have ").replace("remains ", "remain ")
        return f"{listed} {filler}{word}{draw(st.sampled_from(['.', '', ' (see the journal).', ' as of 02:00.']))}"
    if form == "label":
        return f"{word.capitalize()}: {', '.join(names)}."
    if form == "heading":
        return f"{word.capitalize()}:\n" + "".join(f"- {n}\n" for n in names)
    return f"{draw(st.sampled_from(['Finished', 'Completed', 'We finished', 'Just completed']))} {listed}."


@st.composite
def notes(draw):
    """(ledger, previous note, a true note, a false note and the finding the false note must produce)."""
    ledger = draw(fleets())
    lines = []
    for name in ledger.targets:  # every target named truly (the review also wants the waiting ones named)
        lines.append(sentence(draw, [name], draw(st.sampled_from(sorted(truths(ledger, name))))))
    if draw(st.booleans()):
        name = draw(st.sampled_from(list(ledger.targets)))
        wrong = next(s for s in ("done", "queued", "failed") if s not in truths(ledger, name))
        lines.append(f"{name} is not {draw(st.sampled_from(phrase(wrong)))}.")
    guarded = [n for n, t in ledger.targets.items() if t.state != "done"]
    previous = None
    if guarded and draw(st.booleans()):
        held = draw(st.sampled_from(guarded))
        previous = f"Do NOT retry link on {held}: irreversible.\n"
        lines.append(draw(st.sampled_from([f"Do not retry link on {held}.", f"Never retry link on {held}, it ran.",
                                           f"{held}: do not touch.", f"Don't retry the link step on {held}."])))
    true_note = "\n".join(draw(st.permutations(lines))) + "\n"
    if previous and draw(st.booleans()):
        rule = lines[-1]
        lie = draw(st.sampled_from([f"Retry link on {held}.", f"It is fine to retry link on {held}.",
                                    f"Do not hesitate to retry link on {held}.", "", f"You may retry link on {held} now."]))
        false_note = true_note.replace(rule, lie)
        finding = "reverses the previous rule" if lie else "rule still applies but is missing"
        return ledger, previous, true_note, false_note, finding
    name = draw(st.sampled_from(list(ledger.targets)))
    wrong = draw(st.sampled_from(sorted({"done", "queued", "failed", "blocked", "in_flight", "verified"} - truths(ledger, name))))
    false_note = true_note + sentence(draw, [name], wrong) + "\n"
    return ledger, previous, true_note, false_note, f"the note says {name} is {wrong.replace('_', ' ')};"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(notes())
def test_the_review_accepts_every_true_note_and_flags_every_false_one(case) -> None:
    """Random ledgers, random true claims in every form; one lie added (a false state, a dropped or reversed rule)."""
    ledger, previous, true_note, false_note, finding = case
    assert review(true_note, ledger, previous=previous, since=None) == []
    problems = review(false_note, ledger, previous=previous, since=None)
    assert any(finding in p for p in problems), (false_note, problems)


def test_a_reverser_verb_is_not_a_prohibition() -> None:
    """"Do not hesitate to retry" allows the retry; "do not retry" prohibits it; "do not touch" prohibits all."""
    from engine.audit import note_rules

    assert not note_rules.prohibits("Do not hesitate to retry link on db-18.", "retry")
    assert note_rules.allows("Do not hesitate to retry link on db-18.", "retry")
    assert note_rules.prohibits("Do NOT retry link on db-18.", "retry")
    assert not note_rules.allows("Do NOT retry link on db-18.", "retry")
    assert note_rules.prohibits("Never touch db-18.", "retry")
    assert not note_rules.allows("Retried link on db-18 at 02:00 and it failed.", "retry")  # narration, not an instruction
