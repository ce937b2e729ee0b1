"""Command palette provider: every action of the main screen, by name, from its bindings.

Built from the bindings' descriptions and tooltips (`MainScreen.visible_actions`,
after read-only mode took out what it cannot do), so the palette offers exactly
what the footer and help offer. The resolutions of a shrunk or rolled-back file
appear while the file needs one.
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
            key = binding.key_display or self.app.get_key_display(binding)
            out.append((f"{binding.description} ({key})", help_text, partial(screen.run_action, binding.action)))
        snap = screen.snapshot
        if snap is not None and not self.app.read_only:
            if snap.missing:
                out.append(("Accept removal (:accept-removal)", "The targets missing from the file were removed on purpose",
                            partial(screen.run_action, "accept_removal")))
            if snap.rollback:
                out.append(("Accept rollback (:accept-rollback)", "The older file is the right one",
                            partial(screen.run_action, "accept_rollback")))
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
