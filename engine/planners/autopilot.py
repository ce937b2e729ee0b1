"""Planners: who proposes the next action. The guard (engine.ledger.guard) decides.

`autopilot` is deterministic and needs no network: it walks the targets in ledger
order and proposes, for each one that can move, the first runbook step (in runbook
order) that starts where the target is. It proposes; it never decides: every
proposal goes through `engine.ledger.guard.check` in the session, and again inside the
transaction that writes the intent.

`claude` (engine.planners.claude) proposes through a model's tool calls; both go
through the same `Session.attempt`. The interface both share is the `Planner` protocol
(engine.planners.base); `engine.planners.choose.get_planner` picks one by name.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from itertools import islice

from engine.ledger import sealed
from engine.ledger.model import Ledger, Step, Target
from engine.ledger.runbook import WAITING, touch_limit
from engine.ledger.touched import touched


@dataclass(frozen=True)
class Action:
    """Run `step` on `target`."""

    target: str
    step: Step


def _movable(states: frozenset[str], target: Target) -> bool:
    """Whether the autopilot could propose a step for `target`: nothing in flight, not
    waiting on a person, and a runbook step starts where it stands."""
    return target.in_flight is None and target.state not in WAITING and target.state in states


class Autopilot:
    """Runbook order within a target, ledger order across targets."""

    name = "autopilot"

    def setup(self, session, ledger: Ledger) -> None:
        """Nothing to choose: autopilot reads only the runbook."""

    def tokens_used_fraction(self) -> float:
        return 0.0

    def figures(self) -> dict:
        return {}  # no model, no tokens: nothing for the header or `status` to show

    def final_note(self, session, why: str) -> None:
        return None  # the engine's generated note is autopilot's note

    def review_note(self, session, note: str, previous: str | None) -> None:
        return None

    def propose(self, ledger: Ledger, busy: set[str] | frozenset[str] = frozenset()) -> list[Action]:
        """Every target's next step, in ledger order (`busy` targets are skipped)."""
        return list(self.proposals(ledger, busy))

    def proposals(self, ledger: Ledger, busy: set[str] | frozenset[str] = frozenset()) -> Iterator[Action]:
        """`propose`, one at a time: a session that can start nothing more stops asking
        (`ledger` is a reader's snapshot, never changed, so it may be read lazily)."""
        # `next_step` for each target, with the runbook looked at once: a target that can
        # be proposed is never awaiting an approval, so where it stands is its state.
        first: dict[str, Step] = {}
        for step in ledger.steps():
            first.setdefault(step.from_, step)
        targets = ledger.targets
        rules = ("movable", frozenset(first))
        test = partial(_movable, frozenset(first))
        # A readers' snapshot knows how many targets at its head cannot move (done ones,
        # mostly): the walk starts after them (engine.ledger.sealed).
        skip = sealed.start(targets, rules)
        walk = islice(dict.items(targets), skip, None) if skip else targets.items()
        found = False
        for at, (name, target) in enumerate(walk, skip):
            if not test(target):
                continue
            if not found:
                sealed.found_at(targets, rules, test, at)
                found = True
            if name not in busy:
                yield Action(name, first[target.state])
        if not found:
            sealed.found_at(targets, rules, test, len(targets))

    def should_ask(self, ledger: Ledger, action: Action) -> bool:
        """Ask a human to approve `action` only if it could run once approved: the
        touched limit must have room even counting the approvals already asked for.
        Twenty pages for links that could never run at once help nobody at 2 AM."""
        limit = touch_limit(ledger)
        if limit is None:
            return True
        taken = touched(ledger)
        mid_change = set(taken)
        if action.target in mid_change:
            return True  # it already holds its slot
        pending = sum(
            1
            for name, t in ledger.targets.items()
            if t.state == "awaiting_approval" and name != action.target and name not in mid_change
        )
        return len(taken) + pending < limit
