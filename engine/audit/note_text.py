"""A note's text as the review reads it: markdown made plain, names written another way spelled
as the ledger spells them, ranges spelled out, and which target names it mentions.

Every regex here is linear: alternations of fixed words, no nested unbounded repeats.
"""

from __future__ import annotations

import re
import unicodedata

from engine.ledger.model import Ledger

# Markdown a note may be written in, read as the plain forms `engine.audit.note_claims` reads: emphasis
# and code marks dropped, `* x`/`1. x` items as `- x`, `## Done` as `Done:`, a table row's cells and an
# arrow as a colon ("| db-19 | done |", "db-19 -> done").
_MARKS = re.compile(r"\*\*|__|`")
# Single-mark emphasis (*db-18*, _done_): a mark that opens after a space and closes before one, so
# a `* item` bullet, `pg_upgrade` and `awaiting_approval` are left alone.
_EMPHASIS = re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n]*?[^\s*])\*(?![\w*])|(?<![\w_])_(?=[^\s_])([^_\n]*?[^\s_])_(?![\w_])")
# A checked task-list item ("- [x] db-18") is an item; an unchecked one stays as written.
_CHECKED = re.compile(r"^(\s*(?:[-*+]|\d{1,3}[.)])\s+)\[[xX]\]\s+", re.M)
_ITEM = re.compile(r"^(\s*)(?:[*+]|\d{1,3}[.)])\s+", re.M)
_HEADING = re.compile(r"^\s*#{1,6}\s*(.+?)\s*#*\s*$", re.M)
_ARROW = re.compile(r"\s*(?:->|=>|→)\s*")
# A check mark that ends a table cell or a line's words says "done" ("| db-19 | ✅ |", "db-19 ✅");
# one before a word ("db-19 ✓ done", "✅ verified") leaves the saying to the word.
_CHECK_MARK = re.compile(r"(?<=[ \t|])[✓✔✅☑]\ufe0f?(?=[ \t]*(?:$|[|,;.)]))", re.M)
# How else a name is written: any case, a separator left out or another one ("DB-19", "db19",
# "db 19", a non-breaking hyphen). Only names with a letter and a digit: "a" or "alpha" would
# turn the words of a sentence into targets.
_SEPS = "-_. \u00a0\u2010\u2011\u2012\u2013\u2014\u2212"
_SEP_CLASS = "[-_.\\s\u00a0\u2010\u2011\u2012\u2013\u2014\u2212]?"
_KEY = str.maketrans("", "", _SEPS)


# Letters a reader takes for Latin ones: Cyrillic, Greek and Armenian lookalikes ("dоne" with a
# Cyrillic о reads "done"). NFKC leaves them alone; the review reads them as they look.
_LOOKALIKES = str.maketrans({
    # Cyrillic
    "\u0430": "a", "\u0435": "e", "\u043e": "o", "\u0440": "p", "\u0441": "c", "\u0443": "y", "\u0445": "x",
    "\u0456": "i", "\u0458": "j", "\u0455": "s", "\u0501": "d", "\u04bb": "h", "\u051b": "q", "\u051d": "w",
    "\u043a": "k", "\u0410": "A", "\u0412": "B", "\u0415": "E", "\u041a": "K", "\u041c": "M", "\u041d": "H",
    "\u041e": "O", "\u0420": "P", "\u0421": "C", "\u0422": "T", "\u0425": "X", "\u0423": "Y", "\u0406": "I",
    "\u0408": "J", "\u0405": "S",
    # Greek
    "\u03bf": "o", "\u03b1": "a", "\u03bd": "v", "\u03b9": "i", "\u03ba": "k", "\u03c1": "p", "\u0391": "A",
    "\u0392": "B", "\u0395": "E", "\u0396": "Z", "\u0397": "H", "\u0399": "I", "\u039a": "K", "\u039c": "M",
    "\u039d": "N", "\u039f": "O", "\u03a1": "P", "\u03a4": "T", "\u03a5": "Y", "\u03a7": "X",
    # Armenian, and Latin's dotless i
    "\u0585": "o", "\u057d": "u", "\u0578": "n", "\u0131": "i",
})


def _key(text: str) -> str:
    return unicodedata.normalize("NFKC", text).translate(_LOOKALIKES).lower().translate(_KEY)


def plain_text(text: str, ledger: Ledger) -> str:
    """`text` as the reader reads it: markdown made plain, and each target name written
    another way (case, separators) spelled as the ledger spells it."""
    # Full-width digits and letters ("db-１８") as plain ones, lookalike letters as the Latin they look like.
    text = unicodedata.normalize("NFKC", text).translate(_LOOKALIKES)
    for name in ledger.targets:  # a name that this changes ("ｗｅｂ", "сервер-1"): as the ledger spells it
        folded_name = unicodedata.normalize("NFKC", name).translate(_LOOKALIKES)
        if folded_name != name:
            folded = re.escape(folded_name)
            text = re.sub(rf"(?<![\w.-]){folded}(?![\w-])", name.replace("\\", "\\\\"), text)
    text = _MARKS.sub("", text)
    text = _EMPHASIS.sub(lambda m: m.group(1) or m.group(2), text)
    text = _CHECKED.sub(r"\1", text)
    text = _CHECK_MARK.sub("done", text)
    text = _ITEM.sub(r"\1- ", text)
    text = _HEADING.sub(lambda m: m.group(1).rstrip(":") + ":", text)
    text = "\n".join(line.replace("|", " : ") if line.lstrip().startswith("|") else line for line in text.split("\n"))
    text = _ARROW.sub(": ", text)
    text = _range(text, ledger)
    folded = _key(text)
    keys: dict[str, list[str]] = {}
    for name in ledger.targets:
        keys.setdefault(_key(name), []).append(name)
    for key, same in keys.items():
        if len(same) > 1 or len(key) < 3 or key not in folded or not (re.search(r"[a-z]", key) and re.search(r"\d", key)):
            continue  # two targets written alike (`db-1`, `db1`): each only as the ledger spells it
        name = same[0]
        parts = [p for p in re.split(r"[-_. ]+", unicodedata.normalize("NFKC", name)) if p]
        pattern = re.compile(r"(?<![\w.-])" + _SEP_CLASS.join(re.escape(p) for p in parts) + r"(?![\w-])", re.I)
        text = pattern.sub(name.replace("\\", "\\\\"), text)  # the ledger's spelling (a backslash in it kept as one)
    return text


_RANGE = re.compile(r"(?<![\w.-])([\w.-]*\w)(?:\s*(?:\.\.|…|–|—)\s*|\s+(?:through|thru|to|-)\s+)([\w.-]*\w)(?![\w-])",
                    re.I)
# "db-17-19": a name, a hyphen and the last name's number (a token, split in `_short_range`).
_SHORT_RANGE = re.compile(r"(?<![\w.-])[\w.-]*\d-\d+(?![\w-])")
_LAST_NUMBER = re.compile(r"\d+$")


def _span(ledger: Ledger, first: str, last: str) -> str | None:
    """The names from `first` to `last` in the ledger's order, or None (not both targets, or backwards)."""
    if first not in ledger.targets or last not in ledger.targets:
        return None
    order = list(ledger.targets)
    a, b = order.index(first), order.index(last)
    return ", ".join(order[a: b + 1]) if a <= b else None


def _short_range(ledger: Ledger, token: str) -> str | None:
    """`db-17-19` as db-17 to db-19, when it is no target itself and both ends are."""
    if token in ledger.targets:
        return None
    first, _, number = token.rpartition("-")
    return _span(ledger, first, _LAST_NUMBER.sub(number, first))


def _range(text: str, ledger: Ledger) -> str:
    """`db-17..db-19`, "db-17 through db-19", "db-17–db-19", "db-17-19" as the names from one to the
    other in the ledger's order (both must be targets): a range claims what is in its middle."""
    text = _RANGE.sub(lambda m: _span(ledger, m.group(1), m.group(2)) or m.group(0), text)
    return _SHORT_RANGE.sub(lambda m: _short_range(ledger, m.group(0)) or m.group(0), text)


_TOKEN = re.compile(r"[\w.-]+")
_SIMPLE_NAME = re.compile(r"^[\w.-]+$")


def named(text: str, ledger: Ledger) -> list[str]:
    """Target names the text mentions, in ledger order."""
    tokens = {tok.rstrip(".") for tok in _TOKEN.findall(text)} | set(_TOKEN.findall(text))
    return [n for n in ledger.targets if (n in tokens if _SIMPLE_NAME.match(n) else n in text)]
