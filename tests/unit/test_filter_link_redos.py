"""A served page's `?filter=` (and the `/` filter) is compiled as a regular expression and searched
over every row's text (tui.widgets.table_view). A nested quantifier backtracks exponentially: one
link pins the viewer's process at 100% CPU for good; it never reads the "quit" its closed tab sends,
so textual-serve's handler never returns, and the viewer slot (--max-viewers) is never given back.
Either `filter_problem` refuses such a filter (the link then opens unfiltered, saying why), or
filtering a realistic row with it ends promptly. Run in a child process, bounded, so the suite never hangs."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.conftest import ROOT

LINK_FILTER = "(.*.*)*@"  # ?filter=(.*.*)*%40

CHILD = textwrap.dedent("""
    import sys
    from tui.widgets.table_view import compile_filter, filter_problem
    text = sys.argv[1]
    if filter_problem(text) is not None:
        print("refused"); sys.exit(0)
    # One row's searchable text as view_order builds it: name, state, next action, last action, checkpoint, reason.
    hay = "\\n".join(("media-export", "failed", "csr: openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:p-256",
                     "issue failed 02:14z", "serial=648d3623af2f65a469afa2250e09283b",
                     "issue: openssl ca refused: the csr's subjectaltname is outside the ca's name constraints"))
    for _negate, terms in compile_filter(text):
        for _kind, _text, pattern in terms:
            if pattern is not None:
                pattern.search(hay)
    print("filtered")
""")


def test_a_link_filter_cannot_pin_the_viewer_process() -> None:
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, LINK_FILTER], cwd=ROOT, capture_output=True, text=True,
                              timeout=10)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"filtering one row with ?filter={LINK_FILTER} ran over 10 s (the viewer's process is "
                             "stuck: its tab's quit is never read, its viewer slot never freed)") from None
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() in ("refused", "filtered")
