"""The baseline for the TUI benchmarks: an empty Textual app (one label), nothing else.

Started by bench/tui_startup.py and bench/tui_update.py exactly like handoff-tui:
same interpreter, environment and pseudo-terminal. `q` quits.
"""

from textual.app import App, ComposeResult
from textual.widgets import Static


class EmptyApp(App[None]):
    BINDINGS = [("q", "quit", "Quit")]

    def compose(self) -> ComposeResult:
        yield Static("empty-app-ready")


if __name__ == "__main__":
    EmptyApp().run()
