"""The headless engine of handoff-tui (the ledger, the guard, sessions, the CLI)."""

from engine import bytecode as _bytecode

_bytecode.install(__path__[0])  # its modules stay compiled under PYTHONDONTWRITEBYTECODE (engine/bytecode.py)
