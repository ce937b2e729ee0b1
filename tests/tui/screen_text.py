"""Read what the user sees as plain text, for assertions (no SVG, no pixels)."""

from __future__ import annotations

from textual.app import App


def screen_text(app: App) -> str:
    """Every line of the current screen, as the terminal would show it."""
    strips = app.screen._compositor.render_strips()
    return "\n".join(strip.text.rstrip() for strip in strips)
