"""`handoff-tui serve --public-url`: the Origin a browser sends for the page is what the websocket
must come from (tui.serve.origin_of), whatever the spelling of the URL given."""

from __future__ import annotations

import pytest

pytest.importorskip("textual_serve")

from tui.serve import origin_of, public_url_problem  # noqa: E402 - after the serve extra is known present


@pytest.mark.parametrize(("url", "origin"), [
    ("https://handoff.example.com", "https://handoff.example.com"),
    ("https://Handoff.Example.com:443/handoff", "https://handoff.example.com"),  # default port, path: not in an Origin
    ("http://handoff.example.com:80", "http://handoff.example.com"),
    ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
    ("https://[2001:db8::1]:8443", "https://[2001:db8::1]:8443"),
])
def test_the_websocket_must_come_from_the_origin_of_the_public_url(url: str, origin: str) -> None:
    assert public_url_problem(url) is None
    assert origin_of(url) == origin


@pytest.mark.parametrize("url", ["handoff.example.com", "ftp://h", "https://user:pw@h", "https://h/?a=1", "https://h#x",
                                 "https://h:port"])
def test_a_public_url_browsers_cannot_open_is_refused(url: str) -> None:
    assert public_url_problem(url) is not None
