"""The planner seam: what every planner offers the session loop (autopilot, claude).

A planner proposes; the guard decides. The loop calls only what `Planner` names; the
Claude planner's turn-taking (`wants_turn`, `turn`) is `TurnPlanner`, autopilot's
proposals are `ProposingPlanner`. `session` is the running `engine.session.loop.Session`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Iterator

    from engine.ledger.model import Ledger
    from engine.planners.autopilot import Action


@runtime_checkable
class Planner(Protocol):
    """What the session loop needs of any planner."""

    name: str

    def setup(self, session: Any, ledger: Ledger) -> None: ...

    def should_ask(self, ledger: Ledger, action: Action) -> bool: ...

    def tokens_used_fraction(self) -> float: ...

    def figures(self) -> dict[str, Any]: ...

    def final_note(self, session: Any, why: str) -> str | None: ...

    def review_note(self, session: Any, note: str, previous: str | None) -> list[str] | None: ...


@runtime_checkable
class ProposingPlanner(Planner, Protocol):
    """A planner that lists its next actions itself (autopilot)."""

    def propose(self, ledger: Ledger, busy: set[str] | frozenset[str] = ...) -> list[Action]: ...

    def proposals(self, ledger: Ledger, busy: set[str] | frozenset[str] = ...) -> Iterator[Action]: ...


@runtime_checkable
class TurnPlanner(Planner, Protocol):
    """A planner that takes turns, calling the engine's tools itself (claude)."""

    unavailable: bool  # set once its API failed for good: it proposes nothing more

    def spend_text(self) -> str: ...

    def wants_turn(self, session: Any, ledger: Ledger) -> bool: ...

    def turn(self, session: Any, ledger: Ledger) -> tuple[int, int]: ...
