"""Planners that call a model: `claude` (the anthropic SDK's Messages API with tool use).

The deterministic `autopilot` lives in engine.session.planner. A planner proposes;
the guard (engine.guard) decides, through `Session.attempt`; the engine writes.
"""
