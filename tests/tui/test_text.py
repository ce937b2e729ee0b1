"""Ledger text is data: control characters become visible and markup is never parsed."""

from __future__ import annotations

from rich.text import Text

from tui.text import clean, clean_line, one_line, safe


def test_escape_sequences_become_visible() -> None:
    """An ANSI escape in a note cannot reach the terminal: ESC is shown as ␛."""
    assert clean("\x1b[31mred\x1b[0m") == "␛[31mred␛[0m"


def test_newline_and_tab_survive_other_controls_do_not() -> None:
    """Newline and tab stay; NUL, BEL, backspace, DEL and C1 CSI are made visible."""
    assert clean("a\nb\tc\x00\x07\x08\x7f\x9b") == "a\nb\tc␀␇␈␡<U+009B>"


def test_bidi_overrides_are_shown() -> None:
    """A right-to-left override cannot make a name read backwards."""
    assert "<U+202E>" in clean("db-\u202e81")


def test_zero_width_and_separators_are_shown() -> None:
    """Zero-width space, line/paragraph separators: the TUI uses the engine's one helper, which shows them."""
    assert clean("db\u200b-18\u2028x\u2029") == "db<U+200B>-18<U+2028>x<U+2029>"
    import tui.text

    assert not hasattr(tui.text, "_TABLE") and not hasattr(tui.text, "_build_table")  # no second copy


def test_one_line_shows_newlines() -> None:
    """Table cells and titles stay on one line."""
    assert clean_line("a\nb") == "a ⏎ b"
    assert one_line("a\nb").plain == "a ⏎ b"


def test_markup_is_not_parsed() -> None:
    """`[bold red]` in a target name is text, not style."""
    text = safe("[bold red]db-1[/]")
    assert isinstance(text, Text)
    assert text.plain == "[bold red]db-1[/]"
    assert not text.spans


def test_none_is_empty() -> None:
    """Missing fields render as nothing, not 'None'."""
    assert clean(None) == "" and clean_line(None) == ""


def test_log_renders_a_page_template_or_says_it_could_not() -> None:
    """`paged run '{python}' '{ledger_dir}/sim.py' page` (an older session's words): the folder is filled in,
    and what this screen cannot know is said, not left looking like a command that ran."""
    from tui.widgets.log_pane import format_record

    record = {"ts": "2026-11-29T02:11:04Z", "kind": "page",
              "msg": "paged run '{python}' '{ledger_dir}/sim.py' page (approval_needed)"}
    line = format_record(record, "/srv/fleet").plain
    assert line == ("02:11:04 paged run '{python}' '/srv/fleet/sim.py' page (approval_needed)"
                    " (template; {python} not known here)")
    rendered = {**record, "msg": "paged run /usr/bin/python3 /srv/fleet/sim.py page (approval_needed)"}
    assert format_record(rendered, "/srv/fleet").plain.endswith("page (approval_needed)")
    other = {**record, "kind": "log", "msg": "note says {python} literally"}
    assert format_record(other, "/srv/fleet").plain == "02:11:04 note says {python} literally"
