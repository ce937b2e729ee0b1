"""Planners: who proposes the next action; the guard (engine.ledger.guard) decides.

- `base`: the `Planner` protocol the session loop relies on;
- `autopilot`: deterministic, runbook order, no network;
- `claude`: a model's tool calls through the anthropic SDK (with `brief`, `prompts`,
  `tools`, `reviewer`, `client`, `models`);
- `choose`: `get_planner(name)` for `--planner`.
"""
