"""A target's recorded checkpoint drift, and what an approval that was shown it binds.

`engine.session.reconcile.verify_target` records a probe that disagrees with the ledger
as the target's `reason`, worded `checkpoint drift: ...`; every later session refuses
the target until it is reconciled. A drift is in no approval hash, so each place that
shows an approval (the TUI's dialogs, `handoff approve`, Slack) passes what drift it
showed (`expect_drift`: None for "none shown", else the drift's text) and
`engine.ledger.ops.approve` refuses, under the ledger's lock, when the target's drift is
no longer that: nobody approves a drift they were not shown, nor "anyway" one that moved.
"""

from __future__ import annotations

from typing import Any, Final

# How engine.session.reconcile.verify_target words a recorded checkpoint mismatch (the
# target's reason); every later session refuses the target until it is reconciled.
DRIFT_PREFIX = "checkpoint drift:"


class _Unchecked:
    """The default of `expect_drift`: the caller showed no drift either way (engine.api's
    own callers, Temporal): the approval is not bound to one."""

    def __repr__(self) -> str:
        return "DRIFT_UNCHECKED"


DRIFT_UNCHECKED: Final = _Unchecked()


def checkpoint_drift(target: Any) -> str | None:
    """The recorded checkpoint mismatch of `target` (its reason), or None."""
    reason = getattr(target, "reason", None) or ""
    return reason if reason.startswith(DRIFT_PREFIX) else None


def drift_said(drifted: str) -> str:
    """The mismatch itself, without the prefix and the `Resolve with ...` advice:
    `the ledger says 0/5555, `lag web-05` says 0/5600 (at ...)`."""
    return drifted.removeprefix(DRIFT_PREFIX).split(". Resolve with")[0].strip()


DRIFT_HEADING = "\u26a0 CHECKPOINT DRIFT: "  # what the warning's line starts with (the TUI makes it bold)


def drift_line(drifted: str) -> str:
    """The words an approval shows for a drifted target, as one plain line: the TUI's dialogs
    (tui.screens.approve.drift_text) and Slack's request and Review modal."""
    return f"{DRIFT_HEADING}{drift_said(drifted)}. Sessions refuse this target until it is reconciled; approve anyway?"


def drift_refusal(name: str, shown: str | None, now: str | None) -> str:
    """Why an approval bound to the drift `shown` is refused when `name`'s drift is `now`."""
    if now is not None and shown is None:
        what = (f"a checkpoint drift was recorded since you looked ({drift_said(now)}), and you were not shown it. "
                f"Nothing was approved: look again; approve it anyway only once you have seen the drift "
                f"(sessions refuse {name} until `handoff reconcile` records where it really is)")
    elif now is None:
        what = ("the checkpoint drift you were shown is no longer recorded (it was reconciled since you looked). "
                "Nothing was approved: look again, then approve what is there now")
    else:
        what = (f"its checkpoint drift changed since you looked (now: {drift_said(now)}). "
                "Nothing was approved: look again, then approve what is there now, anyway if you still mean it")
    return f"{name}: {what}"
