"""Choosing a planner by name (`--planner autopilot|claude`), checked before anything is written."""

from __future__ import annotations

from engine.errors import UsageError
from engine.planners.autopilot import Autopilot
from engine.planners.base import Planner


def get_planner(name: str, *, model: str | None = None, max_tokens: int | None = None) -> Planner:
    """The planner called `name`; exit 2 for one that does not exist, or for `claude`
    without a credential the anthropic SDK can find (checked before anything is written)."""
    if name == "autopilot":
        if model or max_tokens:
            raise UsageError("--model and --max-tokens are for --planner claude", title="Not for autopilot")
        return Autopilot()
    if name == "claude":
        from engine.planners.claude import ClaudePlanner

        # Imported here: the anthropic SDK is paid for only by sessions that use it.
        return ClaudePlanner(model=model, max_tokens=max_tokens)
    raise UsageError(f"unknown planner {name!r}; choose autopilot or claude", title="Unknown planner")
