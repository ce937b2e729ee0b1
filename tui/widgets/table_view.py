"""The target table's data side: rows as shown, and the filtered, sorted order of them.

Pure functions over plain strings (no Textual), so the table widget only paints.
A row keeps only cleaned, one-line text; a target the file lost keeps what the
screen last knew of it, marked missing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from tui.attention import DRIFT_WORD, drift, next_shown, outside
from tui.states import MISSING, label, look, needs_human
from tui.text import clean, clean_line
from tui.widgets.filter_pattern import pattern_of

if TYPE_CHECKING:
    from engine.api import Target

SORTS: tuple[str, ...] = ("ledger", "state", "name", "age")


class Row(NamedTuple):
    """One target as the table shows it: cleaned, one-line strings."""

    name: str
    state: str
    next_action: str
    last_action: str
    checkpoint: str
    changed_at: str
    reason: str
    drifted: bool = False  # a recorded checkpoint mismatch: sessions refuse it until reconciled
    outside: bool = False  # changed outside the engine (changed_outside): sessions stop on it


def row_of(name: str, target: Target) -> Row:
    """The table's view of one target (all text made safe here, once)."""
    return Row(
        clean_line(name),
        target.state,
        clean_line(next_shown(name, target)),
        clean_line(target.last_action),
        clean_line(target.checkpoint),
        target.changed_at or "",
        clean_line(target.reason),
        drift(target) is not None,
        outside(target) is not None,
    )


def state_cell(row: Row) -> str:
    """`⚑ awaiting_approval`, with `≠ DRIFT` after it when the checkpoint drifted."""
    return label(row.state) + (f" {DRIFT_WORD}" if row.drifted else "")


def wants_person(row: Row) -> bool:
    """Whether the row needs a person: its state does, it drifted, or it was changed outside the engine."""
    return row.drifted or row.outside or needs_human(row.state)


def missing_row(name: str, last: Row | None) -> Row:
    """A target the file lost: what this screen last knew of it, or only its name."""
    if last is None:
        return Row(clean_line(name), MISSING, "restore the file, or :accept-removal", "", "", "", "not in the file")
    if last.state == MISSING:
        return last
    return last._replace(state=MISSING, reason=f"was {clean_line(last.state)}")


@dataclass
class View:
    """The filtered, sorted order of row keys and each key's position in it."""

    order: list[str] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)


def order_with_missing(previous: list[str], names: list[str], gone: list[str]) -> list[str]:
    """Ledger order, with each missing target kept where it was in `previous` (unknown ones at the end)."""
    if not gone:
        return names
    present = set(names) | set(gone)
    order = [n for n in previous if n in present]
    known = set(order)
    order += [n for n in names if n not in known]
    order += [n for n in gone if n not in known]
    return order


Term = tuple[str, str, "re.Pattern[str] | None"]  # (kind, text, pattern): kind is state, is or text


def _term(word: str) -> Term:
    if word.startswith("state:"):
        return ("state", word[6:], None)
    if word.startswith("is:"):
        return ("is", word[3:], None)
    return ("text", word, pattern_of(word))


def compile_filter(text: str) -> list[tuple[bool, list[Term]]]:
    """Words of a filter, k9s style: each a regular expression of a language whose search cannot run
    away (anything beyond it is matched as plain text: see `tui.widgets.filter_pattern`); or `state:PREFIX`, or
    `is:attention` / `is:drifted` / `is:outside`); `!word` must not match; `a|b` matches either side. Each field
    of a row is one line of the text searched, so `^` and `$` anchor to a field."""
    out = []
    for word in text.split():
        negate = word.startswith("!") and len(word) > 1
        body = word[1:] if negate else word
        out.append((negate, [_term(part) for part in body.split("|") if part] or [_term(body)]))
    return out


# `is:WORD` filters: what each asks of a row. The one list `_hit` matches with and
# `filter_problem` checks a link's filter against.
IS_KINDS: dict[str, Callable[[Row], bool]] = {
    "attention": wants_person,
    "drifted": lambda row: row.drifted,
    "outside": lambda row: row.outside,
}


def filter_problem(text: str) -> str | None:
    """Why `text` is no filter a person meant (None if it is one): an `is:` word the table does
    not know, or a control character. A word that is no regular expression is not a problem:
    it is matched as the text it is (see `tui.widgets.filter_pattern`)."""
    if any(ord(c) < 32 or ord(c) == 127 for c in text) or clean(text) != text:  # C1 (the one-byte CSI), bidi too
        return "it holds control characters"
    for word in text.split():
        for part in word.lstrip("!").split("|"):
            if part.startswith("is:") and part[3:] not in IS_KINDS:
                return f"is: takes {', '.join(IS_KINDS)}"
    return None


def _hit(row: Row, term: Term, hay: str) -> bool:
    kind, text, pattern = term
    if kind == "state":
        return row.state.startswith(text) or (row.state == MISSING and "missing".startswith(text))
    if kind == "is":
        test = IS_KINDS.get(text)
        return test is not None and test(row)
    return pattern is not None and pattern.search(hay) is not None


def matches(row: Row, words: list[tuple[bool, list[Term]]], hay: str) -> bool:
    """Whether `row` matches every compiled word (see `compile_filter`)."""
    for negate, terms in words:
        if any(_hit(row, term, hay) for term in terms) == negate:
            return False
    return True


def view_order(keys: list[str], rows: dict[str, Row], *, filter_text: str, sort_key: str, reverse: bool,
               epoch: Callable[[str], float], haystack: dict[str, str]) -> list[str]:
    """The names to show, filtered and sorted (`haystack` caches each row's searchable text)."""
    names = keys
    if filter_text:
        words = compile_filter(filter_text)
        kept = []
        for name in names:
            hay = haystack.get(name)
            if hay is None:
                row = rows[name]
                hay = "\n".join((row.name, state_cell(row), row.next_action, row.last_action, row.checkpoint, row.reason)).lower()
                haystack[name] = hay
            if matches(rows[name], words, hay):
                kept.append(name)
        names = kept
    if sort_key == "name":
        names = sorted(names, key=lambda n: rows[n].name)
    elif sort_key == "state":
        position = {n: i for i, n in enumerate(keys)}
        # A drifted target sorts with the failed ones: it needs a person as much.
        names = sorted(names, key=lambda n: (min(look(rows[n].state).rank, 1) if rows[n].drifted or rows[n].outside else look(rows[n].state).rank,
                                             position[n]))
    elif sort_key == "age":
        names = sorted(names, key=epoch, reverse=True)
    else:
        names = list(names)
    if reverse:
        names.reverse()
    return names


def queue_position(order: list[str], rows: dict[str, Row], name: str, old_state: str, index: int) -> int | None:
    """Under sort-by-state, the cursor's target moved to another group (it was approved, say):
    where the cursor stays in the group it was working through (the row that took its place,
    or the group's last). None when the target did not change group."""
    if name not in rows:
        return None
    rank = look(old_state).rank
    if look(rows[name].state).rank == rank:
        return None
    same = [i for i, n in enumerate(order) if look(rows[n].state).rank == rank]
    if not same:
        return None
    after = [i for i in same if i >= index]
    return after[0] if after else same[-1]
