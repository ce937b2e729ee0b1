"""The pre-tool-use hook's own deadline holds even when its first alarm lands where Python drops
exceptions (a `__del__`, a gc callback): the hook still answers before Claude Code's timeout."""

from __future__ import annotations

import gc
import time

import pytest

from engine import hooks
from engine.hooks.deadline import TooSlow, deadline


class _SlowToCollect:
    """Its finaliser runs past the deadline: an exception raised inside it is ignored by Python."""

    def __del__(self) -> None:
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            pass


def test_a_deadline_first_missed_inside_a_finaliser_still_ends_the_judging(monkeypatch) -> None:
    """The alarm fires while a finaliser runs (its TooSlow is dropped); judging goes on, and is still
    stopped moments later instead of running into Claude Code's kill (which lets the call through)."""
    monkeypatch.setitem(hooks.TIMEOUTS, "pre-tool-use", 0.15)  # a deadline of 0.1 s
    dropped = []
    monkeypatch.setattr("sys.unraisablehook", lambda info: dropped.append(info.exc_type))
    with pytest.raises(TooSlow):
        with deadline("pre-tool-use"):
            _SlowToCollect()  # collected at once: its __del__ takes the first alarm
            gc.collect()
            end = time.monotonic() + 30.0
            while time.monotonic() < end:  # the judging, going on after the dropped alarm
                pass
            # Reached only if no alarm came after the dropped one: the block ends without TooSlow.
    assert dropped and set(dropped) == {TooSlow}  # the first alarm really was swallowed (under load, more)
