"""Textual themes for handoff-tui: a dark default, a light one and a high-contrast one.

Each `Theme` sets Textual's base colours plus our semantic variables
(`danger`, `state-*`, `mode-*`); `theme_defaults()` supplies those variables for
any other theme a user picks, so the TCSS (which uses only variables, never
hex) parses under every theme. Colours are chosen to stay distinct when the
terminal downgrades to 16 colours; meaning never rests on colour alone.
"""

from __future__ import annotations

from pathlib import Path

from textual.theme import Theme

TCSS_PATH = Path(__file__).with_name("handoff.tcss")

# Fallbacks for themes that do not set our variables (Textual's built-in ones):
# each of our variables borrows one of Textual's own semantic colours.
FALLBACKS: dict[str, str] = {
    "danger": "error",
    "state-awaiting": "warning",
    "state-failed": "error",
    "state-blocked": "error",
    "state-active": "accent",
    "state-ready": "primary",
    "state-queued": "foreground-muted",
    "state-done": "success",
    "state-other": "foreground",
    "mode-operator": "success",
    "mode-readonly": "warning",
    "changed-row": "accent-muted",
    "state-missing": "error",
    # The selected row in a theme that does not choose: the theme's own text and background,
    # swapped (the pair it already keeps legible, and near the extremes in 16 colours and NO_COLOR).
    "cursor-background": "foreground",
    "cursor-foreground": "background",
}
# Contrast (WCAG) of the selected row's text on its background, in every theme and colour
# mode (truecolor, 256, 16, NO_COLOR); tests/tui/test_contrast.py measures it.
MIN_CURSOR_CONTRAST = 4.5

DARK = Theme(
    name="handoff-dark",
    primary="#5fafff",
    secondary="#87afd7",
    accent="#d787ff",
    warning="#ffaf00",
    error="#ff5f5f",
    success="#5fd75f",
    foreground="#e4e4e4",
    background="#121212",
    surface="#1c1c1c",
    panel="#262626",
    dark=True,
    variables={
        "danger": "#ff0000",
        "state-awaiting": "#ffaf00",
        "state-failed": "#ff5f5f",
        "state-blocked": "#ff875f",
        "state-active": "#5fd7ff",
        "state-ready": "#87afd7",
        "state-queued": "#8a8a8a",
        "state-done": "#5fd75f",
        "state-other": "#d0d0d0",
        "mode-operator": "#00af00",
        "mode-readonly": "#d78700",
        "changed-row": "#5f5f00",
        "state-missing": "#ff5fd7",
        "cursor-background": "#87d7ff",
        "cursor-foreground": "#000000",
    },
)

LIGHT = Theme(
    name="handoff-light",
    primary="#005fd7",
    secondary="#5f5faf",
    accent="#8700af",
    warning="#af5f00",
    error="#d70000",
    success="#008700",
    foreground="#1c1c1c",
    background="#fafafa",
    surface="#eeeeee",
    panel="#e4e4e4",
    dark=False,
    variables={
        "danger": "#d70000",
        "state-awaiting": "#af5f00",
        "state-failed": "#d70000",
        "state-blocked": "#af0000",
        "state-active": "#005faf",
        "state-ready": "#5f5faf",
        "state-queued": "#6c6c6c",
        "state-done": "#008700",
        "state-other": "#303030",
        "mode-operator": "#008700",
        "mode-readonly": "#af5f00",
        "changed-row": "#ffffaf",
        "state-missing": "#af005f",
        "cursor-background": "#0000af",
        "cursor-foreground": "#ffffff",
    },
)

HIGH_CONTRAST = Theme(
    name="handoff-high-contrast",
    primary="#00ffff",
    secondary="#ffffff",
    accent="#ff00ff",
    warning="#ffff00",
    error="#ff0000",
    success="#00ff00",
    foreground="#ffffff",
    background="#000000",
    surface="#000000",
    panel="#000000",
    dark=True,
    variables={
        "danger": "#ff0000",
        "state-awaiting": "#ffff00",
        "state-failed": "#ff0000",
        "state-blocked": "#ff00ff",
        "state-active": "#00ffff",
        "state-ready": "#ffffff",
        "state-queued": "#c0c0c0",
        "state-done": "#00ff00",
        "state-other": "#ffffff",
        "mode-operator": "#00ff00",
        "mode-readonly": "#ffff00",
        "changed-row": "#0000ff",
        "state-missing": "#ff00ff",
        "cursor-background": "#ffffff",
        "cursor-foreground": "#000000",
    },
)

THEMES: tuple[Theme, ...] = (DARK, LIGHT, HIGH_CONTRAST)
DEFAULT_THEME = DARK.name
THEME_NAMES: tuple[str, ...] = tuple(t.name for t in THEMES)


def theme_defaults(theme: Theme) -> dict[str, str]:
    """Our variables for `theme`, resolved from its colour system where it sets none.

    A theme that sets its own cursor background but no text colour gets black or
    white, whichever stands out more (one of the two always reaches 4.58:1)."""
    base = theme.to_color_system().generate()
    out = {name: base[source] for name, source in FALLBACKS.items() if source in base}
    background = theme.variables.get("cursor-background")
    if background and "cursor-foreground" not in theme.variables:
        out["cursor-foreground"] = best_text_on(background)
    return out


def luminance(colour: str) -> float:
    """WCAG relative luminance of a `#rrggbb` (or any Textual colour) string."""
    from textual.color import Color

    r, g, b = Color.parse(colour).rgb

    def channel(c: int) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two colours (1 to 21)."""
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def best_text_on(background: str) -> str:
    """`#000000` or `#ffffff`, whichever contrasts more with `background`."""
    return "#000000" if contrast("#000000", background) >= contrast("#ffffff", background) else "#ffffff"


def next_theme(current: str) -> str:
    """The theme after `current` in our cycle (from any other theme: the default)."""
    if current not in THEME_NAMES:
        return DEFAULT_THEME
    return THEME_NAMES[(THEME_NAMES.index(current) + 1) % len(THEME_NAMES)]
