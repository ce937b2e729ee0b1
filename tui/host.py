"""The typed seams between the app and its screens, as Protocols (no screen imports the app).

`AppHost` is what a screen may ask of the app: the controller (the engine's port), the
mode, the clock, and the few services that run engine work in workers (`submit`,
`reload`, `load_history`, `show_error`). `MainView` is what the app's mutation side asks
of the main screen. Both are checked structurally, so `tui.app` imports the screens and
no screen imports `tui.app`: the import graph of `tui/` has no loop (tests/tui/test_tui_imports.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual.screen import Screen

    from tui.controller import Controller
    from tui.requests import Request
    from tui.timefmt import Clock


class AppHost(Protocol):
    """The app as its screens see it."""

    controller: Controller
    clock: Clock

    @property
    def read_only(self) -> bool: ...

    @property
    def read_only_reason(self) -> str | None: ...

    def submit(self, request: Request) -> None:
        """Run one engine change in a worker; its outcome comes back as a Message."""

    def reload(self) -> None:
        """Re-read ledger and journal now."""

    def show_error(self, error: BaseException) -> None:
        """The one error view."""

    def load_history(self, name: str, screen: Any) -> None:
        """Read `name`'s journal history in a worker; `screen` gets a HistoryLoaded."""

    def edit_note_or_draft(self, current: str) -> None:
        """Open the note editor (on a draft a conflict left, if any)."""

    def take_draft(self, verb: str, target: str | None = None) -> str | None:
        """The reason a refused request left for the prompt of `verb` (on `target`), if any, taken."""

    def set_theme(self, name: str | None) -> None: ...

    def push_screen(self, screen: Screen[Any], callback: Any = None) -> Any: ...

    def copy_to_clipboard(self, text: str) -> None: ...

    def get_key_display(self, binding: Any) -> str: ...

    def call_later(self, callback: Any, *args: Any) -> bool: ...

    async def action_quit(self) -> None: ...


class MainView(Protocol):
    """The main screen as the app's mutation side sees it."""

    def mark_acknowledged(self) -> None:
        """The note was acknowledged: say so in the note panel."""

    def batch_approved(self, names: list[str]) -> None:
        """A batch approval went through: unmark the targets it approved."""
