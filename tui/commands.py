"""Command palette provider: every action of the main screen, by name, from its bindings.

Built from the one action table (`MainScreen.door.palette()`, after read-only mode took
out what it cannot do), so the palette offers exactly what the footer and help offer,
and runs an entry through the same door as its key. The resolutions of a shrunk or
rolled-back file appear while the file needs one.
"""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from tui.screens.main import MainScreen


class ActionsProvider(Provider):
    """The main screen's actions as palette commands."""

    def _commands(self) -> list[tuple[str, str, object]]:
        screen = self.screen
        if not isinstance(screen, MainScreen):
            return []
        out = []
        for action in screen.door.palette():
            key = action.key_display or (self.app.get_key_display(action.binding()) if action.key else f":{action.command}")
            out.append((f"{action.description} ({key})", action.help, partial(screen.perform, action)))
        return out

    async def discover(self) -> Hits:
        for name, help_text, callback in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)  # type: ignore[arg-type]

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._commands():
            score = max(matcher.match(name), matcher.match(help_text) * 0.5)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)  # type: ignore[arg-type]
