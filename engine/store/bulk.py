"""A process's first read of a ledger, and Python's cyclic garbage collector.

Reading 10,000 targets makes about a million container objects (the parsed data, the
validated models) that live on. With the collector on, every few hundred of them start a
collection, and the older generations are walked again and again over everything read so
far: 15-20% of `handoff status` at 10,000 targets and about 40% at 100,000, where it made
the read worse than linear. So the first read runs with the collector off and then moves
everything alive into the permanent generation (`gc.freeze`), which collections skip, as
large Python services do after loading. Nothing is kept longer for it: objects are freed
by their reference counts as ever, and the collector is on again for what comes after.

Only the first read of a process: a session or a TUI reads its ledger again and again for
days, and what is frozen is never collected if it later becomes part of a reference cycle;
one freeze bounds that at what was alive once, early. How it is used: `with first_read():`
around a store's parse and validation (engine.store.file, engine.store.postgres).

A program whose whole start-up is felt (the TUI until its first frame: imports, the read,
10,000 rows) turns the collector off as its first act and calls `started()` (through
engine.api) once it is up: one freeze then, and the reads after it leave the collector alone.
A short command (`handoff status`, `approve`: engine.cli.main.READ_FIRST) turns it off before
its imports with `off_until_read()`: they leave ~33,000 objects the collector tracks, and its
passes over them during the imports cost `status` ~16 ms of CPU (measured at 10,000 targets,
~4% of the process). Its first read then turns the collector back on and freezes, as any first
read does; `settle()` turns it on if no read came.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_done = False
_until_read = False  # off_until_read() turned the collector off: the first read turns it back on


def off_until_read() -> None:
    """The collector off from now until the end of this process's first read (first_read), or
    `settle()`. For a command that reads a ledger first and ends soon: a server, a worker or a
    TUI must never be left without it."""
    global _until_read
    if _done or _until_read or not gc.isenabled():
        return
    gc.disable()
    _until_read = True


def settle() -> None:
    """The command is over: a collector `off_until_read` left off (no read came, an error
    before it) is on again, for a process that goes on (main() called in-process)."""
    global _until_read
    if _until_read:
        _until_read = False
        gc.enable()


@contextmanager
def first_read() -> Iterator[None]:
    """The collector off while the block reads, then what is alive frozen: once per process."""
    global _done, _until_read
    if _done or not (gc.isenabled() or _until_read):  # a later read, or inside one (or the caller turned it off)
        yield
        return
    _done = True
    gc.disable()
    try:
        yield
    finally:
        _until_read = False
        gc.freeze()
        gc.enable()


def started() -> None:
    """A program's start-up is over: if it turned the collector off for it (tui.main), what
    is alive is frozen and the collector is on again; from now on `first_read` does nothing."""
    global _done
    _done = True
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
