"""A served viewer's identity is data: whatever a trusted header or cookie says, the label
that names their mark holds only [A-Za-z0-9._@-], never `/`, a newline or an escape, and two
different raw values never share one; the link's values cross the process boundary as
ASCII-only JSON and come back unchanged."""

from __future__ import annotations

import re

import pytest

from tui.viewer import ANONYMOUS, VIEW_ENV, VIEWER_ENV, ServedView, from_environ, valid_label, viewer_label

SAFE = re.compile(r"[A-Za-z0-9._@-]+")


@pytest.mark.parametrize("raw", [
    "alice", "../../etc/passwd", "alice\nbob", "alice\r\nSet-Cookie: x=1", "\x1b[31mred\x1b[0m", "\x1b]52;c;aGk=\x07",
    "alice; rm -rf ~", "$(id)", "`id`", "ä li çe", "", ".", "a" * 500, "\ud800",
])
def test_a_label_is_safe_whatever_the_header_said(raw: str) -> None:
    label = viewer_label("user", raw)
    assert SAFE.fullmatch(label) and len(label) <= 80, label
    assert "/" not in label and "\n" not in label and "\x1b" not in label
    assert valid_label(label)
    assert viewer_label("user", raw) == label  # the same viewer, the same mark, every visit


def test_different_raw_values_get_different_labels() -> None:
    """`alice/` and `alice_` read alike once made safe; the digest keeps them apart (and kinds apart)."""
    raws = ["alice/", "alice_", "alice\n", "alice", "Alice"]
    assert len({viewer_label("user", r) for r in raws}) == len(raws)
    assert viewer_label("user", "x") != viewer_label("browser", "x")


def test_the_environment_round_trip_keeps_values_as_data() -> None:
    view = ServedView(viewer_label("user", "alice"), target="\x1b[2Jdb-18\n", filter="state:failed !web-0(")
    environ = view.environ()
    assert environ[VIEW_ENV].isascii() and not any(ord(c) < 32 for c in environ[VIEW_ENV])
    assert from_environ(environ) == view


@pytest.mark.parametrize("environ, viewer", [
    ({VIEWER_ENV: ANONYMOUS}, None),
    ({VIEWER_ENV: "../x"}, None),
    ({VIEWER_ENV: "a\nb"}, None),
    ({VIEWER_ENV: "user-alice-0123", VIEW_ENV: "not json"}, "user-alice-0123"),
])
def test_an_unusable_environment_keeps_no_mark_and_opens_plainly(environ: dict[str, str], viewer: str | None) -> None:
    view = from_environ(environ)
    assert view is not None and view.viewer == viewer and view.target is None and view.filter is None


def test_not_served_means_none() -> None:
    assert from_environ({}) is None
