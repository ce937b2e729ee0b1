"""Letters that look like Latin ones (Cyrillic, Greek, Armenian) in a handoff note: a person reads
"db-19 dоne" with a Cyrillic о as "db-19 done", so the review reads it the same way; a target whose
name really is written in such letters is still read as the ledger spells it.

The demo ledger: db-01..db-17 done, db-18 replicating, db-19 queued, db-20 blocked.
"""

from __future__ import annotations

import yaml
from session_kit import DEMO

from engine.audit.note_text import plain_text
from engine.audit.review import review
from engine.ledger.model import Ledger

PREVIOUS = "Do NOT retry pg_upgrade on db-18, the --link step is irreversible.\n"
RULE = "\nDo NOT retry pg_upgrade on db-18."
SINCE = "2026-12-01T00:00Z"
WRONG = "the note says db-19 is done; the ledger says queued, nothing in flight"


def demo(**targets) -> Ledger:
    data = yaml.safe_load((DEMO / "ledger.yaml").read_text())
    data["targets"].update(targets)
    return Ledger.model_validate(data)


def findings(note: str, ledger: Ledger) -> list[str]:
    return review(note + RULE, ledger, previous=PREVIOUS, since=SINCE)


def test_a_claim_written_in_lookalike_letters_is_read_as_it_looks() -> None:
    ledger = demo()
    assert findings("db-19 done.", ledger) == [WRONG]  # the control
    for lie in ["db-19 d\u043ene.",            # Cyrillic o
                "db-19 \u0501one.",            # Cyrillic komi de
                "db-19 c\u043emplet\u0435.",   # Cyrillic o and ie
                "db-19 d\u03bfne.",            # Greek omicron
                "\u0501b-19 done.",            # a Cyrillic d in the name
                "db-19 \u0501\u03bfn\u0435.",    # Cyrillic d and ie, Greek omicron
                "DB-19 D\u041eNE.",            # capital Cyrillic O
                "db-19 d\u0585ne."]:           # Armenian o
        assert WRONG in findings(lie, ledger), f"passes the review: {lie!r}"


def test_a_target_named_in_cyrillic_keeps_its_own_spelling() -> None:
    """A target really named `сервер-1` (Cyrillic с, е, р) is not turned into Latin letters: the note's
    mention of it is the ledger's name, and a lie about it is still caught."""
    name = "\u0441\u0435\u0440\u0432\u0435\u0440-1"
    ledger = demo(**{name: {"state": "queued"}})
    assert name in plain_text(f"{name} is next.", ledger)
    wrong = f"the note says {name} is done; the ledger says queued, nothing in flight"
    assert wrong in findings(f"{name} d\u043ene.", ledger)
    assert findings(f"{name} is next.", ledger) == []
