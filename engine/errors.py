"""Errors the engine raises: each carries a title and a message a person can act on.

The CLI prints `str(error)`; the TUI shows `title` and `message` in one error view.
Where the error is about a place in a file, `path`, `line` and `column` (1-based)
say where, and `str()` starts with `path:line:col:` as compilers do.
"""

from __future__ import annotations


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
