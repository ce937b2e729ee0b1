"""Keep secrets out of everything people can read: the ledger's `redact:` patterns plus
common shapes (assignments, flags, URLs with passwords, auth headers, vendor tokens,
private keys).

The shapes follow the rule sets of the well-kept secret scanners (gitleaks' rules,
detect-secrets' keyword detector), written our own way for one job: masking text the
engine stores or shows, in linear time. Every repetition before a secret is bounded,
so a match attempt costs a constant and a 1 MB token costs one pass per rule (a rule
such as `[a-z0-9.-]*://` would rescan the token from every position: quadratic).
Private-key bodies whose BEGIN line was cut off (an output tail) are found from their
END line, walking back, also in one pass.

`Redactor.text` masks (the journal, stored reasons, pages, errors); `Redactor.find`
says which rule matched, for callers that must refuse text rather than mask it (a
probe whose output would become a checkpoint).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, NamedTuple

MASK = "[REDACTED]"

# Plurals are counts, not secrets (`tokens: 5000` in a budget line).
_KEYWORD = r"(?:pass(?:word|wd|phrase)|secret(?!s)|token(?!s)|api[_-]?key|apikey|private[_-]?key|access[_-]?key|auth[_-]?key|credentials?)"
# A value: in escaped quotes (JSON inside JSON), in quotes (all of it, spaces too), or up
# to whitespace or a quote. No length bound and no closing quote required: the value is
# the last thing a rule matches, so it is read once and never backtracked over, and a
# value of any length is masked whole (a bound would leave a long value's tail in clear).
_VALUE = r"(?:\\\"(?P<secret4>[^\"\\\n]+)|\"(?P<secret>[^\"\n]+)|'(?P<secret2>[^'\n]+)|(?P<secret3>[^\s'\"]+))"
# Between a key and its value: `=`, `:`, `=>`, and the value may sit on the next line
# (a tool that prints "Generated password:" and then the password).
_SEP = r"\\?[\"']?\s{0,5}(?:=>|[=:])[ \t]{0,5}(?:\r?\n[ \t]{0,40})?"


class Rule(NamedTuple):
    """One secret shape: a name people can read, its pattern (groups named secret* are
    masked), and lowercase pieces one of which any match contains: a text with none of
    them skips the pattern (most text has no secret). Few and short, because each is a
    scan of the whole text: `status --json` of 10,000 targets is 3.7 MB."""

    name: str
    pattern: str
    triggers: tuple[str, ...]


RULES: tuple[Rule, ...] = (
    # NAME=value, name: value, "name": "value" where NAME looks secret (PGPASSWORD, X-Api-Key,
    # client_secret). The match starts at the keyword: a prefix repetition would be tried
    # from every position of a long token.
    Rule("a secret-named value", rf"(?i){_KEYWORD}[a-z0-9_.-]{{0,40}}{_SEP}{_VALUE}",
         ("passw", "passp", "secret", "token", "credential", "key")),
    # DB_PASS=x, PASS=x (not bypass=, compass=, DB_PASSING=); Pwd=x in a connection string,
    # MYSQL_PWD=x (not PWD=/home/..., the working directory in an env dump).
    Rule("a password variable", rf"(?i)(?<![a-z])pass\s{{0,5}}=\s{{0,5}}{_VALUE}", ("pass",)),
    Rule("a pwd value", r"(?i)(?<![a-z])pwd\s{0,5}[=:]\s{0,5}(?![/~])(?P<secret>[^\s;'\"]+)", ("pwd",)),
    # PGPASSWORD s3cret, ENV PGPASSWORD s3cret (a Dockerfile): an upper-case name, a space, a value.
    Rule("a password variable without =", r"(?<![a-z])PASSWORD[ \t]{1,5}(?!(?:is|was|for|to|and|or|the|not|required|reset"
         r"|changed|expired|set|missing|policy|rotation|must|will)\b)(?P<secret>[^\s'\"]+)", ("password",)),
    # mysql -pPW (the password glued to -p; -P is the port), sshpass -p PW.
    Rule("a mysql -p password", r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mariadb)\b[^\n]{0,300}?\s-p(?P<secret>[^\s'\"]+)",
         ("mysql", "mariadb")),
    Rule("an sshpass password", r"\bsshpass\b[^\n]{0,100}?\s-p\s{0,5}[\"']?(?P<secret>[^\s'\"]+)", ("sshpass",)),
    # An Azure SAS URL's signature (?sv=...&sig=...).
    Rule("a SAS signature", r"[?&]sig=(?P<secret>[^&\s'\"#]{8,})", ("sig=",)),
    # A .pgpass line, host:port:database:user:password (not an IPv6 address: its fields are
    # hex of up to four digits, so a database field like that is taken for one).
    Rule("a .pgpass line", r"(?m)^[ \t]*[^:\s]{1,253}:(?:\d{2,5}|\*):(?![0-9a-fA-F]{0,4}:)[^:\s]{1,63}:"
         r"[^:\s]{1,63}:(?P<secret>\S+)$", ()),
    # --password x, --token x (the `=` form is the rule above).
    Rule("a secret command-line flag", rf"(?i)(?<![\w-])--?(?:pass(?:word|wd)?|secret|token|api[_-]?key|auth[_-]?token|client[_-]?secret)\s{{1,5}}{_VALUE}",
         ("-pass", "-secret", "-token", "-api", "-auth", "-client")),
    # scheme://user:password@host, also with no user (redis://:pw@host).
    Rule("a URL with a password", r"(?i)\b[a-z][a-z0-9+.-]{0,30}://[^\s:/@]{0,200}:(?P<secret>[^\s@/]{1,400})@", ("://",)),
    # Authorization: Basic/Bearer/Token/anything.
    Rule("an Authorization header", r"(?i)\b(?:proxy-)?authorization\s{0,5}[:=]\s{0,5}[\"']?(?:(?:basic|bearer|token|digest|negotiate|api-?token)\s{1,5})?(?P<secret>[^\s'\"]{4,1000})",
         ("authorization",)),
    Rule("a bearer token", r"(?i)\bbearer\s{1,5}(?P<secret>[a-z0-9._~+/=-]{8,2000})", ("bearer",)),
    # Vendor token shapes (gitleaks keeps the full list; these are the common ones). Each
    # starts with its literal prefix and checks the word boundary just after it: a pattern
    # that starts with a literal is searched for at C speed, one that starts with \b is not.
    Rule("an API key (sk-/pk-/rk-)", r"(?P<secret>[spr]k(?<![A-Za-z0-9_][spr]k)[-_](?:live_|test_|ant-)?[A-Za-z0-9_-]{16,400})",
         ("sk-", "sk_", "pk-", "pk_", "rk-", "rk_")),
    Rule("a GitHub token", r"(?P<secret>gh(?<![A-Za-z0-9_]gh)[pousr]_[A-Za-z0-9]{20,255}"
         r"|github_pat_(?<![A-Za-z0-9_]github_pat_)[A-Za-z0-9_]{20,255})", ("gh", "github_pat_")),
    Rule("a Vault token", r"(?P<secret>hv[sbr](?<![A-Za-z0-9_]hv[sbr])\.[A-Za-z0-9_-]{24,400})", ("hvs.", "hvb.", "hvr.")),
    Rule("an npm token", r"(?P<secret>npm_(?<![A-Za-z0-9_]npm_)[A-Za-z0-9]{36})(?![A-Za-z0-9])", ("npm_",)),
    Rule("a DigitalOcean token", r"(?P<secret>do[por]_v1_(?<![A-Za-z0-9_]do[por]_v1_)[a-f0-9]{64})", ("_v1_",)),
    Rule("a Grafana token", r"(?P<secret>glsa_(?<![A-Za-z0-9_]glsa_)[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"
         r"|glc_(?<![A-Za-z0-9_]glc_)[A-Za-z0-9+/]{32,400}={0,2})", ("glsa_", "glc_")),
    Rule("a GitLab token", r"(?P<secret>gl(?<![A-Za-z0-9_]gl)(?:pat|dt|rt|ptt|ft|oas|cbt|soat|agent|imt|ffct)-[A-Za-z0-9_.-]{20,300})",
         ("gl",)),
    Rule("a Google API key", r"(?P<secret>AIza(?<![A-Za-z0-9_]AIza)[A-Za-z0-9_-]{35})", ("aiza",)),
    Rule("a Slack token", r"(?P<secret>xox(?<![A-Za-z0-9_]xox)[abposr]-[A-Za-z0-9-]{10,255})", ("xox",)),
    Rule("an AWS access key", r"(?P<secret>A(?<![A-Za-z0-9_]A)(?:KIA|SIA)[0-9A-Z]{16})\b", ("akia", "asia")),
    Rule("a JSON web token", r"(?P<secret>eyJ(?<![A-Za-z0-9_]eyJ)[A-Za-z0-9_-]{8,2000}\.eyJ[A-Za-z0-9_-]{8,4000}\.[A-Za-z0-9_-]{0,2000})", ("eyj",)),
    # A whole private key, or one whose END line was cut off (a step killed mid-print).
    Rule("a private key", r"(?P<secret>-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z))",
         ("private key",)),
)
_KEY_END = re.compile(r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_KEY_LINE = re.compile(r"[A-Za-z0-9+/=]+")


class BadPattern(ValueError):
    """A `redact:` pattern that is not a regular expression."""


# A rule's pattern as written, compiled where a text first holds one of its triggers (`re`
# keeps it compiled from then on): most processes never need most rules, and compiling all
# of them cost every `handoff` process about 4 ms. A ledger's own patterns are compiled at
# once, so a bad one is an error before anything is redacted with it.
Compiled = tuple[tuple[str, "str | re.Pattern[str]", tuple[str, ...]], ...]


@lru_cache(maxsize=64)
def _compile(extra: tuple[str, ...]) -> Compiled:
    compiled: list[tuple[str, str | re.Pattern[str], tuple[str, ...]]] = [
        (rule.name, rule.pattern, rule.triggers) for rule in RULES]
    for pattern in extra:
        compiled.append((f"the ledger's redact pattern {pattern!r}", ledger_pattern(pattern), ()))
    return tuple(compiled)


# Where a value quoted in a message starts and ends: after or before a space or punctuation.
_QUOTED_START = r"""(?:^|(?<=[\s:=,;"'(\[{]))"""
_QUOTED_END = r"""(?:$|(?=[\s:,;.!?"')\]}]))"""


def ledger_pattern(pattern: str) -> re.Pattern[str]:
    r"""A ledger's `redact:` pattern as the engine applies it. Its anchors (`^`, `$`, `\A`, `\Z`)
    hold at a value's ends, and also where a message quotes that value (`db-1: blocked:
    hunter22`, a status line, a page): a pattern written for the whole value (`^hunter\d+$`)
    masks it there too, never less than the pattern says. BadPattern if it does not compile."""
    try:
        compiled = re.compile(pattern)
    except re.error as err:
        raise BadPattern(bad_pattern_message(pattern, err)) from None
    loose = _unanchored(pattern)
    if loose == pattern:
        return compiled
    try:
        return re.compile(loose)
    except re.error:  # an anchor inside a look-behind, say: the pattern as written
        return compiled


def _unanchored(pattern: str) -> str:
    """`pattern` with each anchor outside a character class also holding at a quoted value's ends."""
    out: list[str] = []
    i, n, in_class, class_first = 0, len(pattern), False, 0
    while i < n:
        c = pattern[i]
        if c == "\\":
            two = pattern[i : i + 2]
            out.append(_QUOTED_START if two == "\\A" and not in_class else _QUOTED_END if two == "\\Z" and not in_class else two)
            i += 2
            continue
        if in_class:
            in_class = not (c == "]" and i > class_first)  # `]` first in a class is itself
            out.append(c)
        elif c == "[":
            j = i + 1 + (pattern[i + 1 : i + 2] == "^")
            in_class, class_first = True, j
            out.append(pattern[i:j])
            i = j
            continue
        else:
            out.append(_QUOTED_START if c == "^" else _QUOTED_END if c == "$" else c)
        i += 1
    return "".join(out)


def bad_pattern_message(pattern: str, err: re.error) -> str:
    """`redact pattern 'ab((' is not a regular expression (missing ), ... at position 4)`."""
    where = f" at position {err.pos}" if err.pos is not None else ""
    return f"redact pattern {pattern!r} is not a regular expression ({err.msg}{where})"


def check_patterns(patterns: Iterable[str]) -> None:
    """Raise BadPattern naming the first `redact:` pattern that does not compile."""
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as err:
            raise BadPattern(bad_pattern_message(pattern, err)) from None


def _mask(match: re.Match) -> str:
    spans = [match.span(name) for name in match.re.groupindex if name.startswith("secret") and match.group(name) is not None]
    if not spans:
        return MASK
    start, end = spans[0]
    offset = match.start()
    whole = match.group()
    return whole[: start - offset] + MASK + whole[end - offset :]


def _headless_keys(value: str) -> str:
    """Mask the key lines just above each private key END line whose BEGIN is gone
    (an output tail that starts mid-key). Each END walks back only over its own lines."""
    if "PRIVATE KEY" not in value:
        return value
    out: list[str] = []
    done = 0  # value[:done] is already in `out`
    for match in _KEY_END.finditer(value):
        start = cut = match.start()
        while cut > done and value[cut - 1] == "\n":
            line_end = cut - 1
            newline = value.rfind("\n", done, line_end)
            line_start = done if newline < 0 else newline + 1
            if not _KEY_LINE.fullmatch(value[line_start:line_end].rstrip("\r")):
                break
            cut = line_start
        if cut < start:
            out.append(value[done:cut] + MASK + "\n")
            done = start
        out.append(value[done : match.end()])
        done = match.end()
    out.append(value[done:])
    return "".join(out)


class Redactor:
    """Masks secrets in text; a rule's `secret` group (or the whole match) becomes MASK."""

    def __init__(self, extra: Iterable[str] = ()) -> None:
        self.patterns = _compile(tuple(extra))
        self.own = tuple(pattern for _name, pattern, _triggers in self.patterns if isinstance(pattern, re.Pattern))

    def _live(self, value: str, *, own: bool = True) -> list[tuple[str, re.Pattern[str]]]:
        """The patterns that can match `value` (the ledger's own always can; `own=False`: the
        built-in shapes only)."""
        low = value.lower()
        return [(name, re.compile(pattern)) for name, pattern, triggers in self.patterns
                if (own or not isinstance(pattern, re.Pattern)) and (not triggers or any(word in low for word in triggers))]

    def text(self, value: str) -> str:
        for _name, pattern in self._live(value):
            value = pattern.sub(_mask, value)
        return _headless_keys(value)

    def find(self, value: str) -> str | None:
        """The name of the first rule `value` matches (a secret is in it), or None."""
        for name, pattern in self._live(value):
            if pattern.search(value):
                return name
        if _KEY_END.search(value) and _headless_keys(value) != value:
            return "a private key"
        return None

    def value(self, value: Any) -> Any:
        """Redact strings anywhere inside a JSON-like value."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        return value

    def document(self, data: Any) -> Any:
        r"""`data` redacted: a big document in which no rule matches (the usual case) is
        returned as it is, at the cost of one scan per live rule over the distinct strings
        `value` would mask, one per line. A rule matching inside one string matches there
        too (a line's ends read as a string's ends do: `\n` is no word character and starts
        a line), and a string met twice would match the same way twice, so nothing `value`
        would mask is missed; a match across two lines only costs the walk. Not the JSON
        text: its 10,000 repeated keys were 60% of what was scanned, and made rules live
        for words no value holds ("token"); distinct strings are 1/6 of a fleet's (states,
        step names, "cutover done" repeated per target). The ledger's own patterns are tried
        string by string: one may hold to a value's ends (`^hunter\d+$`, `\A`), which the
        joined text has only once."""
        strings: dict[str, None] = {}
        _strings(data, strings)
        joined = "\n".join(strings)
        if ("PRIVATE KEY" in joined or any(pattern.search(joined) for _name, pattern in self._live(joined, own=False))
                or any(pattern.search(value) for pattern in self.own for value in strings)):
            return self.value(data)
        return data


def _strings(value: Any, out: dict[str, None]) -> None:
    """Every string `Redactor.value` would look at in `value`, once each, into `out` (keys are not)."""
    if isinstance(value, str):
        out[value] = None
    elif isinstance(value, dict):
        for item in value.values():
            if isinstance(item, str):
                out[item] = None
            elif isinstance(item, (dict, list)):
                _strings(item, out)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, str):
                out[item] = None
            elif isinstance(item, (dict, list)):
                _strings(item, out)


_DEFAULT: Redactor | None = None


def redact(value: str, extra: Iterable[str] = ()) -> str:
    """`value` with secrets masked (the default rules, plus `extra` patterns)."""
    global _DEFAULT
    extra = tuple(extra)
    if extra:
        return Redactor(extra).text(value)
    if _DEFAULT is None:
        _DEFAULT = Redactor()
    return _DEFAULT.text(value)
