"""handoff-tui: the operator's Textual screen over a handoff ledger.

Talks to the engine's public API only (`engine.api`); never writes a file itself
and never runs a command from the ledger.
"""
