"""Which Claude model a session uses, what it costs, and what it accepts: the one place.

The default model is named here and nowhere else (`--model` and the ledger's
`agent.model` override it). Prices are USD per million tokens from Anthropic's
pricing page (checked 2026-10): input, output, 5-minute cache writes (the kind
`cache_control: ephemeral` makes) and cache reads. A model not in the table still
works; its cost shows as unknown rather than as a guess.

`forces_tools` says whether the model accepts a forced `tool_choice`
(`{"type": "tool", "name": ...}`): Claude Opus 5.5, Sonnet 5.5 and Fable 5.1 answer
it with a 400 ("forced tool use returns an error" in their migration guides). For those
the planner asks for the tool in words with `tool_choice: auto`, and the engine's own
note stands in if the model does not call it. A model not in the table is tried with
forcing, and the planner falls back the first time the API refuses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_MODEL = "claude-sonnet-5-5"


@dataclass(frozen=True)
class ModelInfo:
    """Prices in USD per million tokens, and whether a forced tool_choice is accepted."""

    input: float
    output: float
    cache_write: float
    cache_read: float
    forces_tools: bool = True


MODELS: dict[str, ModelInfo] = {
    "claude-fable-5-1": ModelInfo(10.0, 50.0, 12.5, 0.25, forces_tools=False),
    "claude-opus-5-5": ModelInfo(4.0, 20.0, 5.0, 0.20, forces_tools=False),
    "claude-opus-5": ModelInfo(5.0, 25.0, 6.25, 0.50),
    "claude-opus-4-8": ModelInfo(5.0, 25.0, 6.25, 0.50),
    "claude-sonnet-5-5": ModelInfo(2.0, 10.0, 2.5, 0.10, forces_tools=False),
    "claude-sonnet-5": ModelInfo(2.0, 10.0, 2.5, 0.20),
    # Haiku 5.5 costs five times as much for prompts over 100,000 tokens; a brief is
    # far below that, so the lower band is the one a session pays.
    "claude-haiku-5-5": ModelInfo(0.10, 0.50, 0.125, 0.01),
    "claude-haiku-4-5": ModelInfo(1.0, 5.0, 1.25, 0.10),
}


def model_info(model: str) -> ModelInfo | None:
    """The table's row for `model` (a dated id such as `claude-haiku-4-5-20251001` finds its
    family's row), or None."""
    if model in MODELS:
        return MODELS[model]
    family, _, date = model.rpartition("-")
    return MODELS.get(family) if date.isdigit() and len(date) == 8 else None


def forces_tools(model: str) -> bool:
    info = model_info(model)
    return True if info is None else info.forces_tools


@dataclass
class Usage:
    """Tokens a session (or one turn) used, by kind."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    def add(self, usage: Any) -> None:
        """Add one API response's `usage` (the SDK's object; missing counts are 0)."""
        self.input += getattr(usage, "input_tokens", 0) or 0
        self.output += getattr(usage, "output_tokens", 0) or 0
        self.cache_read += getattr(usage, "cache_read_input_tokens", 0) or 0
        self.cache_write += getattr(usage, "cache_creation_input_tokens", 0) or 0

    def plus(self, other: Usage) -> Usage:
        return Usage(self.input + other.input, self.output + other.output,
                     self.cache_read + other.cache_read, self.cache_write + other.cache_write)


def cost_usd(model: str, usage: Usage) -> float | None:
    """What `usage` cost on `model`, or None when the model's prices are not in the table."""
    info = model_info(model)
    if info is None:
        return None
    return (usage.input * info.input + usage.output * info.output + usage.cache_read * info.cache_read
            + usage.cache_write * info.cache_write) / 1_000_000
