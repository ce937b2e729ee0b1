"""The second, independent reviewer (`agent: {review: model}`): a model reads the note too.

Its own fresh conversation (the reviewer's system prompt, the ledger's brief, the
previous note and the note), with the `review_note {ok, problems}` tool forced, or asked
for in words where the model refuses forcing. Its problems are added to the note's
`Reviewer:` section beside the deterministic review's (engine.audit.review). A reviewer that
cannot be reached, or answers without the tool, is journaled and the note goes on with
the deterministic review alone: a review never blocks a handoff.
"""

from __future__ import annotations

from typing import Any

from engine.audit.redact import Redactor
from engine.planners.brief import BriefContext, build
from engine.planners.client import PlannerInterrupted, PlannerRefused, PlannerUnavailable
from engine.planners.models import Usage
from engine.planners.prompts import REVIEW_TOOL, REVIEWER

SYSTEM = [{"type": "text", "text": REVIEWER, "cache_control": {"type": "ephemeral"}}]


def model_review(planner, s, note: str, previous: str | None) -> list[str] | None:
    """The model reviewer's problems ([] for a clean note), or None when it gave no verdict."""
    ledger = s.store.read()
    brief = build(ledger, BriefContext(ledger_path=s.ledger_arg, session=s.sid, statuses=s.statuses))
    redact = Redactor(ledger.redact).text
    content = (f"{brief}\n\nThe previous handoff note:\n{redact(previous or '(none)')}\n\n"
               f"The handoff note to review:\n{redact(note)}")
    messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
    usage, calls = Usage(), 0
    try:
        # The session is ending when it asks: a bounded wait, not one a stop would cut short.
        response = planner._call(s, messages, usage, force="review_note", system=SYSTEM, tools=[REVIEW_TOOL], max_tokens=2048,
                                 limit=60.0, stop=lambda: None)
        calls += 1
        verdict = _verdict(response)
        if verdict is None:
            s.out.say("the model reviewer answered without a verdict; the deterministic review stands alone", kind="warning")
        return verdict
    except (PlannerUnavailable, PlannerRefused, PlannerInterrupted) as err:
        s.out.say(f"the model reviewer could not be reached ({err}); the deterministic review stands alone", kind="warning")
        return None
    finally:
        planner._account(s, "note review", usage, calls)


def _verdict(response) -> list[str] | None:
    for block in response.content:
        if block.type != "tool_use" or block.name != "review_note" or not isinstance(block.input, dict):
            continue
        ok, problems = block.input.get("ok"), block.input.get("problems")
        if not isinstance(ok, bool) or not isinstance(problems, list):
            return None
        found = [" ".join(str(p).split()) for p in problems if str(p).strip()]
        return [] if ok and not found else (found or ["the model reviewer found the note wanting but named no problem"])
    return None
