"""A session pages once per target and reason until it changes.

A real session object over a real ledger, paging through a real notify command that
appends each page to a file: the same failure said again is journaled as
`page_repeat` and not paged; a new reason, or another target, pages at once. A
timestamp inside the words (a drift's "at ...") is no new reason.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import yaml

from engine.ledger.access import open_writer
from engine.session.actor import Actor
from engine.session.loop import Options, Session

PAGER = "import sys; open(sys.argv[1], 'a').write(sys.argv[-1].replace('\\n', ' ') + '\\n')"


def session(tmp_path: Path) -> tuple[Session, Path]:
    pages = tmp_path / "pages.txt"
    data = {"task": "dedup", "owner_shift": "test-oncall", "targets": {"a": {}, "b": {}},
            "notify": [{"run": [sys.executable, "-c", PAGER, str(pages)]}]}
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text(yaml.safe_dump(data, sort_keys=False))
    s = Session(Options(ledger=str(ledger)))
    Actor.__init__(s, open_writer(str(ledger)), s.sid, ledger_arg=str(ledger), stream=io.StringIO())
    return s, pages


def sent(pages: Path) -> list[str]:
    return pages.read_text().splitlines() if pages.exists() else []


def test_the_same_failure_is_paged_once(tmp_path: Path) -> None:
    s, pages = session(tmp_path)
    assert s.page("failed", "a: link failed: exit 1") is True
    assert s.page("failed", "a: link failed: exit 1") is False
    assert len(sent(pages)) == 1
    repeats = [r for r in s.handle.journal.read(0)[0] if r["kind"] == "page_repeat"]
    assert len(repeats) == 1 and "a: link failed: exit 1" in repeats[0]["msg"]


def test_a_new_reason_or_another_target_pages_again(tmp_path: Path) -> None:
    s, pages = session(tmp_path)
    s.page("failed", "a: link failed: exit 1")
    s.page("failed", "b: link failed: exit 1")
    s.page("failed", "a: link failed: exit 2")
    assert len(sent(pages)) == 3


def test_a_timestamp_is_no_new_reason(tmp_path: Path) -> None:
    s, pages = session(tmp_path)
    s.page("drift", "a: ledger and reality disagree: says 0/1, probe says 0/2 (at 2026-12-01T10:00:01Z)")
    s.page("drift", "a: ledger and reality disagree: says 0/1, probe says 0/2 (at 2026-12-01T10:00:31Z)")
    assert len(sent(pages)) == 1
