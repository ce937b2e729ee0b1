"""The `claude` planner: the Messages API with tool use, one fresh conversation per turn.

"Keep the model out of the durability path. The framework remembers; the model reasons."
A turn starts when the ledger says something changed (a step ended, a human approved,
an invariant moved): its first message is a brief built from the ledger now
(engine.planners.brief), never an earlier turn's transcript, so no request carries an earlier
turn's tool_use ids. Within the turn the model may call tools several times; each
`run_step` goes through `Session.attempt` (the one guard and step runner, as autopilot's
proposals do) and its result goes back as the tool result. The next turn starts fresh.

Every response's usage (input, output, cache read and cache write tokens) is added to
the session's total and journaled once per turn, with its cost from
engine.planners.models. At the hand-off point the session proposes nothing new, lets
running steps finish and asks for the note with `write_handoff_note` forced (in words
for models that refuse a forced tool_choice). Failures: see engine.planners.client.
"""

from __future__ import annotations

import json
import time
from typing import Any

from engine.audit.redact import Redactor
from engine.errors import NoSuchStep, NoSuchTarget
from engine.ledger.model import Ledger
from engine.planners.autopilot import Action, Autopilot
from engine.planners.brief import BriefContext, build, step_line
from engine.planners.client import (
    ForcedToolRefused,
    PlannerInterrupted,
    PlannerRefused,
    PlannerUnavailable,
    make_client,
    wait_for,
)
from engine.planners.models import DEFAULT_MODEL, Usage, cost_usd, forces_tools
from engine.planners.prompts import PLANNER
from engine.planners.tools import CACHE, TOOLS, check_call

MAX_ROUNDS = 10  # model calls in one turn; then the turn ends and the next starts fresh
MAX_OUTPUT = 4096  # max_tokens of one request (thinking included)
NOTE_ROUNDS = 2  # tries for the handoff note before the engine writes its own
NOTE_OUTPUT = 1024  # tokens kept back for the note's answer: a note is a few hundred words
NOTE_MIN = 256  # less room than this left in the token budget: the engine writes the note
NOTE_WAIT = 60.0  # seconds the session waits for the model's note once it is ending
LEDGER_POLL = 1.0  # how often a wait on the model reads the ledger for `handoff stop`
TAIL_BYTES = 256 * 1024  # more journal than this since the last turn: read only its tail
SYSTEM = [{"type": "text", "text": PLANNER, "cache_control": CACHE}]


class ClaudePlanner:
    """Proposes through tool calls; the session's guard decides (see the module docstring)."""

    name = "claude"

    def __init__(self, *, model: str | None = None, max_tokens: int | None = None) -> None:
        self.client = make_client()  # no credential: exit 2 before anything is written
        self.model_flag, self.tokens_flag = model, max_tokens
        self.model = model or DEFAULT_MODEL
        self.review_mode = "deterministic"
        self.tokens_budget = max_tokens
        self.forcing = True
        self.used = Usage()
        self.cost: float | None = 0.0
        self.turns = 0
        self.unavailable = False
        self.reserve_ending: str | None = None  # why the session ends to keep the note's tokens (a runtime may go on instead)
        self._autopilot = Autopilot()
        self._seen: Any = None  # the ledger's fingerprint when the last turn started
        self._fp: tuple[int, Any] | None = None  # (revision, targets part) cache
        self._offset: int | None = None  # journal offset where the last turn started
        self.note_input = 0  # input tokens of the last turn's first request: what the note's request will cost
        self.interrupted = False  # told to stop while waiting on the model: the engine writes the note

    # -- the session's planner interface --------------------------------------------

    def setup(self, s, ledger: Ledger) -> None:
        """Choose the model, review mode and token budget: flags, then the ledger's `agent:`."""
        agent = ledger.agent
        self.model = self.model_flag or (agent.model if agent and agent.model else DEFAULT_MODEL)
        self.review_mode = agent.review if agent else "deterministic"
        self.tokens_budget = self.tokens_flag or (ledger.budget.tokens if ledger.budget and ledger.budget.tokens else None)
        self.forcing = forces_tools(self.model)

    def should_ask(self, ledger: Ledger, action: Action) -> bool:
        return self._autopilot.should_ask(ledger, action)

    def tokens_used_fraction(self) -> float:
        return self.used.total / self.tokens_budget if self.tokens_budget else 0.0

    def figures(self) -> dict[str, Any]:
        """For the heartbeat, `handoff status` and the journal."""
        return {"model": self.model, "tokens_used": self.used.total, "tokens_budget": self.tokens_budget,
                "cost_usd": None if self.cost is None else round(self.cost, 4)}

    def spend_text(self) -> str:
        of = f" of {self.tokens_budget:,}" if self.tokens_budget else ""
        cost = "cost unknown" if self.cost is None else f"${self.cost:.2f}"
        return f"{self.model}, {self.used.total:,}{of} tokens, {cost}"

    def wants_turn(self, s, ledger: Ledger) -> bool:
        """A turn only when the ledger changed since the last one started (or never ran)."""
        return self._fingerprint(s, ledger) != self._seen

    def turn(self, s, ledger: Ledger) -> tuple[int, int]:
        """One planning turn; returns (steps started, approvals asked for)."""
        self._seen = self._fingerprint(s, ledger)
        self.turns += 1
        messages: list[dict[str, Any]] = [{"role": "user", "content": self._brief(s, ledger)}]
        usage, calls, started, gated = Usage(), 0, 0, 0
        try:
            for _ in range(MAX_ROUNDS):
                try:
                    response = self._call(s, messages, usage)
                except PlannerInterrupted as err:
                    self.interrupted = True
                    s.out.say(f"stopped waiting on the model: {err}; starting nothing new", kind="warning")
                    break
                if calls == 0:
                    u = response.usage
                    self.note_input = (u.input_tokens or 0) + (getattr(u, "cache_read_input_tokens", 0) or 0) + (
                        getattr(u, "cache_creation_input_tokens", 0) or 0)
                calls += 1
                self._say_text(s, response)
                uses = [b for b in response.content if b.type == "tool_use"]
                if uses and self._spent(s):
                    s.out.say(f"the token budget reached the hand-off point; {len(uses)} tool call(s) of the planner not acted on",
                              kind="warning")
                if self.tokens_budget and self._spent(s) and self.tokens_used_fraction() < s.handoff_at:  # _spent needs a budget
                    # Below the hand-off point, but one more round would eat what the note's request needs.
                    self.reserve_ending = (f"the token budget keeps its last {self.tokens_budget - self.used.total:,} "
                                           "tokens for the handoff note")
                    s.ending = s.ending or self.reserve_ending
                if not uses or self._spent(s):
                    break
                results = []
                for use in uses:
                    text, is_error, kind = self._dispatch(s, use)
                    started += kind == "started"
                    gated += kind in ("awaiting", "settled", "settling")
                    results.append({"type": "tool_result", "tool_use_id": use.id, "content": text, **({"is_error": True} if is_error else {})})
                messages += [{"role": "assistant", "content": _blocks(response)}, {"role": "user", "content": results}]
                if s.ending:
                    break
            else:
                s.out.say(f"planner turn {self.turns} reached {MAX_ROUNDS} model calls; the next turn starts fresh", kind="warning")
        finally:
            self._account(s, str(self.turns), usage, calls)
        if s.settling:  # an approval was still being recorded: the next look is a turn, though the ledger is the same
            self._seen = None
        return started, gated

    def final_note(self, s, why: str) -> str | None:
        """The model's handoff note, asked for with write_handoff_note forced; None if none came."""
        if self.unavailable:
            return None
        if self.interrupted:
            s.out.say("the session was told to stop while it waited on the model; the engine writes its own handoff note",
                      kind="warning")
            return None
        ask = (f"The session is ending now: {why}. Nothing new will start. Call write_handoff_note with the handoff "
               "note for the next session and the next human; it is the only thing left to do.")
        messages: list[dict[str, Any]] = [{"role": "user", "content": self._brief(s, s.store.read(), ending=why) + "\n\n" + ask}]
        usage, calls = Usage(), 0
        try:
            for _ in range(NOTE_ROUNDS):
                room = self._note_room()
                if room is not None and room < NOTE_MIN:
                    s.out.say(f"the token budget leaves no room for the model's handoff note ({self.spend_text()}); "
                              "the engine writes its own", kind="warning")
                    return None
                response = self._call(s, messages, usage, force="write_handoff_note", limit=NOTE_WAIT, stop=lambda: None,
                                      max_tokens=min(MAX_OUTPUT, room) if room is not None else MAX_OUTPUT)
                calls += 1
                uses = [b for b in response.content if b.type == "tool_use"]
                results = []
                for use in uses:
                    args, error = check_call(use.name, use.input)
                    if use.name == "write_handoff_note" and args is not None:
                        return args["text"]
                    results.append({"type": "tool_result", "tool_use_id": use.id, "is_error": True,
                                    "content": error or "refused: the session is handing off; only write_handoff_note is accepted now"})
                messages += [{"role": "assistant", "content": _blocks(response)},
                             {"role": "user", "content": results or "Call write_handoff_note now."}]
            s.out.say("the planner wrote no handoff note when asked; the engine writes its own", kind="warning")
        except (PlannerUnavailable, PlannerRefused, PlannerInterrupted) as err:
            s.out.say(f"the planner could not write the handoff note ({err}); the engine writes its own", kind="planner_unavailable")
        finally:
            self._account(s, "handoff note", usage, calls)
        return None

    def review_note(self, s, note: str, previous: str | None) -> list[str] | None:
        """With `agent: {review: model}`, an independent model's problems with `note`; else None."""
        if self.review_mode != "model" or self.unavailable:
            return None
        from engine.planners.reviewer import model_review

        return model_review(self, s, note, previous)

    # -- inside a turn ----------------------------------------------------------------

    def _call(self, s, messages: list[dict[str, Any]], usage: Usage, *, force: str | None = None,
              system: list[dict[str, Any]] | None = None, tools: list[dict[str, Any]] | None = None,
              max_tokens: int = MAX_OUTPUT, limit: float | None = None, stop=None):
        stop = stop or self._stopper(s)
        request: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "system": system or SYSTEM,
                                   "tools": tools or TOOLS, "messages": messages}
        if force and self.forcing:
            request["tool_choice"] = {"type": "tool", "name": force}
        try:
            response = wait_for(self.client, stop, limit=limit, **request)
        except ForcedToolRefused as err:
            self.forcing = False
            s.out.say(f"{self.model} does not accept a forced tool choice ({err}); asking in words instead", kind="warning")
            request.pop("tool_choice")
            response = wait_for(self.client, stop, limit=limit, **request)
        usage.add(response.usage)
        self.used.add(response.usage)
        return response

    def _spent(self, s) -> bool:
        """The hand-off point is reached, or going on would leave no room for the note's request."""
        if not self.tokens_budget:
            return False
        return self.tokens_used_fraction() >= s.handoff_at or self.used.total + self.note_input + NOTE_OUTPUT >= self.tokens_budget

    def _note_room(self) -> int | None:
        """Output tokens the note's request may use without passing the budget (None: no budget)."""
        if not self.tokens_budget:
            return None
        return self.tokens_budget - self.used.total - self.note_input

    def _stopper(self, s):
        """Why the session should stop waiting on the model (SIGTERM, `handoff stop`), or None."""
        seen = [0.0]

        def stop() -> str | None:
            if s.ending:
                return s.ending
            now = time.monotonic()
            if now - seen[0] >= LEDGER_POLL:  # `handoff stop` is a field in the ledger: read it now and then
                seen[0] = now
                lease = s.store.read().session
                if lease is not None and lease.stop_requested:
                    return f"stop requested by {lease.stop_requested_by or 'someone'}"
            return None

        return stop

    def _dispatch(self, s, use) -> tuple[str, bool, str]:
        """(tool result text, is it an error, the attempt's kind) for one tool call."""
        args, error = check_call(use.name, use.input)
        if args is None:
            s.out.say(f"the planner made a malformed {use.name!r} call: {error}", kind="warning", tool=use.name)
            return error, True, ""
        ledger = s.store.read()
        redact = Redactor(ledger.redact).text
        if use.name in ("run_step", "read_target") and args["target"] not in ledger.targets:  # as `handoff run` says it
            missing = NoSuchTarget(args["target"], ledger.targets, ledger=s.handle.display_location)
            return redact(f"error: {missing.message}"), True, ""
        if use.name == "run_step":
            step = ledger.step(args["step"])
            if step is None:
                unknown = NoSuchStep(args["step"], [st.name for st in ledger.steps()], ledger=s.handle.display_location)
                return redact(f"error: {unknown.message}"), True, ""
            result = s.attempt(Action(args["target"], step), args["reason"], ledger=ledger)
            return redact(result.tool_result()), False, result.kind
        if use.name == "read_target":
            return redact(_target_text(s, ledger, args["target"])), False, ""
        if use.name == "write_handoff_note":
            _text, problems, _rev = s.store_note(args["text"])
            if not problems:
                return "saved; the reviewer found nothing missing or wrong", False, ""
            return redact("saved, with a Reviewer: section appended:\n" + "\n".join(f"- {p}" for p in problems)), False, ""
        s.ending = s.ending or f"the planner ended the session: {args['reason']}"
        s.wake.set()
        return "ok: running steps finish, then you will be asked for the handoff note", False, ""

    def _brief(self, s, ledger: Ledger, *, ending: str | None = None) -> str:
        journal = s.out.journal
        end = journal.end_offset()
        if self._offset is None or end - self._offset > TAIL_BYTES:
            events = journal.tail(60)
        else:
            events, _ = journal.read(self._offset)
        self._offset = end
        budget = s.budget_text_now() + (f"; model tokens {self.used.total:,}" + (f" of {self.tokens_budget:,}" if self.tokens_budget else ""))
        return build(ledger, BriefContext(ledger_path=s.ledger_arg, session=s.sid, statuses=s.statuses, events=events,
                                          budget=budget, free_slots=max(0, s.parallel - len(s.workers)), ending=ending))

    def _fingerprint(self, s, ledger: Ledger) -> Any:
        if self._fp is None or self._fp[0] != ledger.revision:
            targets = tuple((n, t.state, t.in_flight.step if t.in_flight else None, len(t.approvals), t.reason)
                            for n, t in ledger.targets.items())
            self._fp = (ledger.revision, hash((targets, ledger.paused is not None, ledger.handoff_note)))
        return (self._fp[1], tuple((st.text, st.status) for st in s.statuses or []), frozenset(s.workers))

    def _say_text(self, s, response) -> None:
        for block in response.content:
            if block.type == "text" and block.text.strip():
                text = " ".join(block.text.split())
                s.out.say(f"planner: {text[:300]}" + ("…" if len(text) > 300 else ""), kind="planner_text")

    def _account(self, s, label: str, usage: Usage, calls: int) -> None:
        if not calls:
            return
        cost = cost_usd(self.model, usage)
        self.cost = None if cost is None or self.cost is None else self.cost + cost
        shown = "" if cost is None else f", ${cost:.4f}"
        s.out.say(f"planner turn {label}: {calls} call(s), {usage.total:,} tokens (input {usage.input:,}, output {usage.output:,}, "
                  f"cache read {usage.cache_read:,}, cache write {usage.cache_write:,}){shown}; session so far: {self.spend_text()}",
                  kind="planner_usage", turn=label, calls=calls, input_tokens=usage.input, output_tokens=usage.output,
                  cache_read_tokens=usage.cache_read, cache_write_tokens=usage.cache_write, tokens=usage.total,
                  tokens_used=self.used.total, tokens_budget=self.tokens_budget, cost_usd=cost,
                  cost_usd_total=None if self.cost is None else round(self.cost, 6), model=self.model)


def _blocks(response) -> list[dict[str, Any]]:
    """The response's content as request blocks (thinking blocks kept: the API wants them back)."""
    return [block.model_dump(mode="json", exclude_none=True) for block in response.content]


def _target_text(s, ledger: Ledger, name: str) -> str:
    t = ledger.targets[name]
    position = ledger.position(name)
    record = json.dumps(t.model_dump(mode="json", by_alias=True, exclude_none=True), ensure_ascii=False)
    lines = [f"target {name}: state {t.state}" + (f" (guards see it as {position})" if position != t.state else ""),
             "record: " + (record if len(record) <= 3000 else record[:2999] + "…")]
    steps = [step_line(st) for st in ledger.steps() if st.from_ == position]
    lines.append("steps from here: " + ("; ".join(steps) if steps else "none"))
    lines.append("recent journal:")
    for r in s.out.journal.for_target(name, limit=10):
        msg = " ".join(str(r.get("msg", "")).split())[:300]
        lines.append(f"- [{str(r.get('ts', ''))[:19]}] {r.get('kind')}: {msg}")
        if r.get("output_tail"):
            lines.append("  output tail: " + str(r["output_tail"])[-600:].replace("\n", " | "))
    return "\n".join(lines)
