"""A filter word is a regular expression only within a language whose search cannot run away
(tui.widgets.filter_pattern): a `?filter=` link or a word typed at `/` never pins the process.
The reviewer's attack (web review, finding 6) first, then the documented syntax still working."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT
from tui.widgets.filter_pattern import pattern_of

# 30 optional dots and a character no row holds (spelled `\x00`: four printable characters, so
# filter_problem's control-character check does not apply). No group, no back-reference, no `*`,
# `+` or `{n,}`, yet a backtracking search tries 2**30 ways to split the line among the `.?`s
# before `\x00` fails. In a link: ?filter=.%3F.%3F...%5Cx00
LINK_FILTER = ".?" * 30 + "\\x00"

CHILD = textwrap.dedent("""
    import sys
    from tui.widgets.table_view import compile_filter, filter_problem
    text = sys.argv[1]
    if filter_problem(text) is not None:
        print("refused"); sys.exit(0)
    hay = "\\n".join(("db-18", "replicating", "verify lag < 5s then cutover",
                     "pg_upgrade --link ok, logical replication started", "0/9A3F2C10", ""))
    for _negate, terms in compile_filter(text):
        for _kind, _text, pattern in terms:
            if pattern is not None:
                pattern.search(hay)
    print("filtered")
""")


@pytest.mark.parametrize("link_filter", [LINK_FILTER, ".?" * 30 + "z", "d" + ".?" * 30 + "#", "(.*.*)*@", ".{0,99}" * 9 + "z"])
def test_a_link_filter_of_optional_dots_cannot_pin_the_viewer_process(link_filter: str) -> None:
    """Every start position of every line would try 2**30 splits: the word is not run as such."""
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, link_filter], cwd=ROOT, capture_output=True, text=True,
                              timeout=10)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"filtering one row with ?filter={link_filter} ran over 10 s: the viewer's process "
                             "is stuck at 100% CPU") from None
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() in ("refused", "filtered")


HAY = "\n".join(("web-02", "failed", "pg_upgrade --link ok", "colour=red", "db-18.prod.eu"))


@pytest.mark.parametrize(("word", "found"), [
    (r"web-0[12]$", True), (r"^web-0[34]", False), (r"web-\d+", True), (r"db-\d+\.prod", True),
    (r".*prod.*", True), (r"prod.*eu", True), (r"eu.*prod", False), (r"colou?r", True), (r"colour{2,}", False),
    (r"\bfailed\b", True), ("FAILED", True), (r"pg.+link", True), (r"[a-c]olou?r", True),
    ("web-0(", False), ("(.*.*)*@", False), ("a.*b.*c", False), (r"\1", False),
])
def test_the_documented_filter_words_still_match_as_regular_expressions(word: str, found: bool) -> None:
    assert (pattern_of(word).search(HAY) is not None) is found, pattern_of(word).pattern


@pytest.mark.parametrize("word", ["web-0(", "a.*b.*c", "a.?" * 20 + "z", r"\1", "(a|aa)+", "a{300}", "a*?", "[[a]"])
def test_a_word_beyond_the_language_is_matched_as_the_text_it_is(word: str) -> None:
    assert pattern_of(word).search(f"x {word.upper()} y"), pattern_of(word).pattern


def test_one_repeat_spans_a_bounded_run_so_a_long_field_is_searched_in_linear_time() -> None:
    """`a.*b` over a long run of `a`: each start position tries at most MAX_REPEAT ends, not the whole line."""
    done = subprocess.run([sys.executable, "-c", "from tui.widgets.filter_pattern import pattern_of; "
                           "print(pattern_of('a.*b').search('a' * 200_000))"],
                          cwd=ROOT, capture_output=True, text=True, timeout=20)
    assert done.stdout.strip() == "None", done.stderr
