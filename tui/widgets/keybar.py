"""The footer: the keys of whatever has the focus (a dialog's own keys while it is open), on one line.

Built from the screen's active bindings (so it can never disagree with them), in
their order, keeping only what the screen offers now (`offered(action)`: nothing
read-only mode cannot do). What does not fit is dropped whole from the end, but
Help and Quit (or a dialog's Cancel) are kept: the footer never clips to `q Qu`.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding
from textual.widget import Widget

# Always kept, whatever the width: the way to every other key, and the way out.
KEEP = frozenset({"help", "quit", "cancel", "close", "dismiss_error", "close_help"})


def footer_items(bindings: list[Binding], display: Callable[[Binding], str], width: int) -> list[tuple[str, str]]:
    """(key, description) pairs that fit in `width`, in order; KEEP actions first in line for room."""
    seen: set[str] = set()
    items: list[tuple[Binding, str, str]] = []
    for binding in bindings:
        if binding.action in seen:
            continue
        seen.add(binding.action)
        items.append((binding, display(binding), binding.description))

    def cost(key: str, text: str) -> int:
        return cell_len(key) + 1 + cell_len(text) + 2

    room = width - 1
    kept = [i for i in items if i[0].action in KEEP]
    room -= sum(cost(k, t) for _, k, t in kept)
    chosen = {id(i) for i in kept}
    for item in items:
        if id(item) in chosen:
            continue
        size = cost(item[1], item[2])
        if size > room:
            break
        chosen.add(id(item))
        room -= size
    return [(k, t) for item in items if id(item) in chosen for _, k, t in [item]]


class KeyBar(Widget):
    """One line of `key description` pairs."""

    COMPONENT_CLASSES = {"keybar--key", "keybar--description"}
    DEFAULT_CSS = """
    KeyBar { dock: bottom; height: 1; }
    """

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def _bindings_changed(self, screen) -> None:
        self.refresh()

    def items(self) -> list[tuple[str, str]]:
        """What the footer shows now, at its width."""
        screen = self.screen
        offered: Callable[[str], bool] = getattr(screen, "offered", lambda action: True)
        bindings = [
            binding for (_node, binding, enabled, _tooltip) in screen.active_bindings.values()
            if binding.show and enabled and offered(binding.action)
        ]
        return footer_items(bindings, self.app.get_key_display, self.size.width or 80)

    def render(self) -> Text:
        key_style = self.get_component_rich_style("keybar--key")
        text_style = self.get_component_rich_style("keybar--description")
        line = Text(end="", no_wrap=True)
        for key, description in self.items():
            line.append(f" {key}", key_style)
            line.append(f" {description} ", text_style)
        return line
