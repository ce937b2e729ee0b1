"""Command palette provider: every action of the main screen, by name.

Built from the main screen's bindings after `check_action`, so the palette
offers exactly what the footer and help offer; in read-only mode no mutating
action appears here either.
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
        for binding, help_text in screen.visible_actions():
            key = binding.key_display or binding.key
            out.append((f"{binding.description} ({key})", help_text, partial(screen.run_action, binding.action)))
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
