"""The baseline for the TUI benchmarks: an empty Textual app (one label), nothing else.

Started by bench/tui_startup.py and bench/tui_update.py exactly like handoff-tui:
same interpreter, environment and pseudo-terminal. `q` quits.

    python3 bench/tui_empty_app.py                 # the baseline
    python3 bench/tui_empty_app.py --engine        # ... after importing engine.api
    python3 bench/tui_empty_app.py --engine LEDGER # ... after importing it and reading LEDGER

The two `--engine` forms are the floor of handoff-tui's first paint: what it must do
before it can draw its first row (the engine's import, with pydantic's, and the read
and validation of the ledger), with no screen of its own. They start as handoff-tui
does (tui.main): the cyclic collector off until the first frame is up, then what is
alive frozen and the collector on again (engine.api.started).
"""

import sys

from textual.app import App, ComposeResult
from textual.widgets import Static


class EmptyApp(App[None]):
    BINDINGS = [("q", "quit", "Quit")]

    def __init__(self, after_first_frame=None) -> None:
        super().__init__()
        self.after_first_frame = after_first_frame

    def compose(self) -> ComposeResult:
        yield Static("empty-app-ready")

    def on_mount(self) -> None:
        if self.after_first_frame is not None:
            self.call_after_refresh(self.after_first_frame)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--engine"]:
        import gc

        gc.disable()
        from engine.api import open_ledger, started

        if len(sys.argv) > 2:
            kept = open_ledger(sys.argv[2], read_only=True).snapshot()  # held, as the screen holds its reading
        EmptyApp(after_first_frame=started).run()
    else:
        EmptyApp().run()
