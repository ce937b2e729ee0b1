"""Where the ledgers that ship with handoff-tui are: the demo fleet, the example
ledgers and the `handoff init` templates.

`ledgers/` sits at the top of the repository, beside `engine/`, and the wheel installs
it beside `engine/` too (pyproject lists it as a package of data), so one rule finds it
in a checkout, in an editable install and in an installed wheel: the folder named
`ledgers` next to the folder this module's package lives in.
"""

from __future__ import annotations

from pathlib import Path

from engine.errors import HandoffError

LEDGERS = Path(__file__).resolve().parent.parent / "ledgers"


def ledgers_dir(part: str = "") -> Path:
    """`ledgers/` (or a part of it: `demo`, `templates`); a clear error if this install
    lacks it (a wheel built without its data)."""
    folder = LEDGERS / part if part else LEDGERS
    if not folder.is_dir():
        raise HandoffError(
            f"the bundled ledgers are missing: {folder} is not there; reinstall handoff-tui "
            "(a wheel must be built from the repository with pyproject's package data)",
            title="Installation incomplete",
        )
    return folder


def demo_dir() -> Path:
    """The demo fleet: ledger.yaml, sim.py, director.py, world.seed.json."""
    return ledgers_dir("demo")


def templates_dir() -> Path:
    """The `handoff init` templates, one NAME.yaml each."""
    return ledgers_dir("templates")
