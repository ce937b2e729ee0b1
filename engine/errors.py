"""Errors the engine raises: each carries a title and a message a person can act on.

The CLI prints `str(error)`; the TUI shows `title` and `message` in one error view.
Where the error is about a place in a file, `path`, `line` and `column` (1-based)
say where, and `str()` starts with `path:line:col:` as compilers do.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


class HandoffError(Exception):
    """Base of every error a user can meet; never shown with a traceback."""

    title = "Error"
    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        title: str | None = None,
        path: str | None = None,
        line: int | None = None,
        column: int | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if title:
            self.title = title
        self.path = path
        self.line = line
        self.column = column
        self.hint = hint

    @property
    def run_code(self) -> int:
        """The exit code of a run that ends on this error (`handoff resume`, in every runtime): its
        own where DESIGN gives a run one (2 to 6), else 2: the ledger cannot be driven as it is."""
        return self.exit_code if self.exit_code in (2, 3, 4, 5, 6) else 2

    @property
    def where(self) -> str:
        """`path:line:col` (as much of it as is known), or ''."""
        if not self.path:
            return ""
        parts = [self.path]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)

    def __str__(self) -> str:
        text = f"{self.where}: {self.message}" if self.where else self.message
        if self.hint:
            text = f"{text} ({self.hint})"
        return text


class LedgerInvalid(HandoffError):
    """The ledger file cannot be read, parsed or validated. Nothing was written."""

    title = "Invalid ledger"
    exit_code = 2


class LedgerUnreadable(LedgerInvalid):
    """No ledger file can be read at the path (deleted, moved, a folder, a FIFO, no
    permission): nothing there to parse, so nothing to fix in it: it must be put back."""

    title = "No ledger file"


class UsageError(HandoffError):
    """A command was called wrongly."""

    title = "Usage"
    exit_code = 2


CLOSE = 0.7  # how alike (difflib's ratio, case aside) a name must be to be suggested


class NamesItsLedger:
    """An error whose words name the ledger (its location as people may see it), which the
    operation that raised it may not know: whoever knows it fills it in (`at`), once."""

    ledger: str | None
    message: str
    args: tuple

    def at(self, ledger: str):
        """Name the ledger, unless it is named already."""
        if self.ledger is None:
            self.ledger = ledger
            self.message = self._text()
            self.args = (self.message,)
        return self

    def _text(self) -> str:
        raise NotImplementedError


class NoSuchName(NamesItsLedger, UsageError):
    """A name the ledger does not have (mistyped, or gone from the file): nothing was changed.
    Every command raises one of these for a target, runbook step or state it was given that
    the ledger lacks (exit 2, usage, as `handoff --help` and docs/ledger.md give it). It says
    the name as typed (escaped: it is user text), the ledger (`at`: whoever knows its location
    fills it in) and the nearest names, when some are close, else some of the names there are."""

    title = "No such name"
    NEAR = 3  # names suggested at most
    noun, plural, SAMPLE = "name", "names", 5

    def __init__(self, name: str, known: Iterable[str], *, ledger: str | None = None) -> None:
        names = list(known)
        self.name = name
        self.near = nearest(name, names, self.NEAR)
        self.sample = names[:self.SAMPLE]
        self.ledger = ledger
        super().__init__(self._text())

    def _text(self) -> str:
        where = self.ledger or "this ledger"
        said = f"no {self.noun} named {self.name!r} in {where}"
        if self.near:
            return f"{said}; did you mean {_alternatives(self.near)}?"
        if self.sample:
            return f"{said} ({self.plural} include {', '.join(self.sample)})"
        return f"{said} (it has no {self.plural})"


class NoSuchTarget(NoSuchName):
    """A target name the ledger does not have: `no target named 'db-9' in fleet.yaml; did you mean db-1?`."""

    title = "No such target"
    noun, plural = "target", "targets"


class NoSuchStep(NoSuchName):
    """A runbook step the ledger does not have (`handoff run T STEP`, `--step`, a planner's call)."""

    title = "No such step"
    noun, plural, SAMPLE = "runbook step", "runbook steps", 10


class NoSuchState(NoSuchName):
    """A state the ledger does not know (`--to STATE`); `known`: the states the command could take."""

    title = "No such state"
    noun, plural, SAMPLE = "state", "states", 12


def nearest(name: str, names: Sequence[str], most: int) -> list[str]:
    """Up to `most` of `names` close to `name`, closest first, ledger order among equals: the
    name in another case alone when there is one (`DB-18`: db-18), else those about as
    close as the closest (`db-99`: db-09, db-19; not db-01 as well)."""
    import difflib

    wanted = name.casefold()
    same = [candidate for candidate in names if candidate.casefold() == wanted]
    if same:
        return same[:most]
    matcher = difflib.SequenceMatcher(b=wanted)
    scored = []
    for index, candidate in enumerate(names):
        matcher.set_seq1(candidate.casefold())
        if matcher.real_quick_ratio() >= CLOSE and matcher.quick_ratio() >= CLOSE and (score := matcher.ratio()) >= CLOSE:
            scored.append((-score, index, candidate))
    scored.sort()
    return [candidate for score, _, candidate in scored[:most] if -score >= -scored[0][0] - 0.1]


def _alternatives(names: Sequence[str]) -> str:
    """`db-09`, `db-09 or db-19`, `db-09, db-19 or db-29`."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


class Refused(HandoffError):
    """The engine's rules refuse an operation (an approval, a retry, a step)."""

    title = "Refused"
    exit_code = 1


class Conflict(Refused):
    """Someone changed the ledger underneath; carries what is there now."""

    title = "Changed underneath"

    def __init__(self, message: str, *, theirs: object = None, **kw) -> None:
        super().__init__(message, **kw)
        self.theirs = theirs


class ApprovalChanged(Conflict):
    """What an approval would approve is no longer what the approver was shown.

    `seen`: the hash the approver was shown; `now`: what is there now (an
    `engine.ledger.ops.PendingCommand`, or None when nothing awaits any more)."""

    title = "Changed since you looked"

    def __init__(self, message: str, *, seen: str, now: object = None, **kw) -> None:
        super().__init__(message, theirs=now, **kw)
        self.seen = seen
        self.now = now


class ReadOnly(Refused):
    """A mutating call on a read-only view."""

    title = "Read-only"


class LeaseHeld(HandoffError):
    """Another live session drives this ledger."""

    title = "Session running"
    exit_code = 5


class WriteFailed(HandoffError):
    """The system refused a write (disk full, read-only mount): nothing was changed."""

    title = "Cannot write"
    exit_code = 1


class JournalIncomplete(HandoffError):
    """The ledger changed but its journal record could not be written whole."""

    title = "Not in the journal"
    exit_code = 1


class ServiceUnavailable(HandoffError):
    """A service the engine needs (the ledger's database) stayed unreachable."""

    title = "Service unavailable"
    exit_code = 6


def os_error_text(err: OSError) -> str:
    """`No space left on device (the disk is full)`: what the system said, and what it means."""
    import errno

    meaning = {
        errno.ENOSPC: "the disk is full: free some space",
        errno.EDQUOT: "the disk quota is used up: free some space",
        errno.EROFS: "the file system is mounted read-only",
        errno.EACCES: "permission denied",
        errno.EPERM: "not permitted",
        errno.EISDIR: "it is a folder",
        errno.EIO: "the disk reported an I/O error",
    }.get(err.errno or 0)
    said = err.strerror or str(err)
    return f"{said} ({meaning})" if meaning and meaning.lower() != said.lower() else said
