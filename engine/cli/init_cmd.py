"""`handoff init`: a new ledger from a template, in one command.

    handoff init [PATH] --template NAME [--targets FILE | --target NAME ...] [--as NAME]
    handoff init --list [--json]

Exit 0 written, 1 the file exists (it is never overwritten), 2 usage. The templates
(`ledgers/templates/NAME.yaml`, shipped in the wheel) are complete ledgers whose
commands are placeholders that fail loudly until replaced; `handoff check --strict`
names each one left. The written file starts with the `yaml-language-server` line
that points editors at `ledger.schema.json`, written beside it when it is not there.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

from engine.codec.jsontext import json_line
from engine.errors import UsageError

SCHEMA_FILE = "ledger.schema.json"
EXISTS = 1


def register(sub) -> None:
    p = sub.add_parser("init", help="start a new job: write a ledger from a template (pg-fleet, k8s-rollout, tls-rotation, blank)")
    p.add_argument("path", nargs="?", default="ledger.yaml", help="where to write it (default ./ledger.yaml); an existing file is never overwritten")
    p.add_argument("--template", metavar="NAME", help="which job to start from (`handoff init --list` shows them)")
    p.add_argument("--list", action="store_true", help="list the templates, one line each")
    p.add_argument("--json", action="store_true", help="with --list: one JSON array of {name, summary, path}")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--targets", metavar="FILE", help="the targets, one name a line (`-` reads them from stdin; # comments)")
    group.add_argument("--target", action="append", metavar="NAME", help="a target (repeat it); default: the template's examples")
    p.add_argument("--as", dest="actor", metavar="NAME", help="who writes it: named in the header and as owner_shift (default: the login user, in the header only)")
    p.set_defaults(handler=cmd_init)


def templates() -> dict[str, Path]:
    """Template name -> file, in name order."""
    from engine.bundled import templates_dir

    return {p.stem: p for p in sorted(templates_dir().glob("*.yaml"))}


def summary(path: Path) -> str:
    """A template's one-line description: its first comment line."""
    first = path.read_text(encoding="utf-8").split("\n", 1)[0]
    return first.lstrip("#").strip()


def cmd_init(args) -> int:
    from engine.codec.textsafe import visible

    found = templates()
    if args.list and args.json:

        print(json_line([{"name": n, "summary": summary(p), "path": str(p)} for n, p in found.items()]))
        return 0
    if args.list:
        width = max(len(n) for n in found)
        for name, path in found.items():
            print(visible(f"{name:<{width}}  {summary(path)}"))
        return 0
    if not args.template:
        raise UsageError(f"say which template: --template NAME, one of {', '.join(found)} (`handoff init --list`)")
    if args.template not in found:
        raise UsageError(f"no template called {args.template!r}; choose one of {', '.join(found)}")
    names = _target_names(args)
    text = build(found[args.template], args.template, names, actor=args.actor)
    path = Path(args.path)
    if path.is_dir():
        raise UsageError(f"{path} is a folder; give the ledger's file name (for example {path / 'ledger.yaml'})")
    if not path.parent.is_dir():
        raise UsageError(f"the folder {path.parent} does not exist; create it first")
    if not _create(path, text.encode("utf-8")):
        print(visible(f"handoff: {path} already exists; nothing was written (choose another PATH, or remove it)"), file=sys.stderr)
        return EXISTS
    schema = path.parent / SCHEMA_FILE
    wrote_schema = _create(schema, _schema_text().encode("utf-8"))
    print(visible(_next_steps(path, args.template, schema if wrote_schema else None)))
    return 0


def _target_names(args) -> list[str] | None:
    """The targets given on the command line or in a file, or None for the template's."""
    if args.target:
        lines = [(f"--target {i + 1}", n) for i, n in enumerate(args.target)]
    elif args.targets:
        lines = [(f"{args.targets}:{i + 1}", n.strip()) for i, n in enumerate(_read_lines(args.targets))]
        lines = [(w, n) for w, n in lines if n and not n.startswith("#")]
        if not lines:
            raise UsageError(f"{args.targets} names no target (one name a line)")
    else:
        return None
    seen: dict[str, str] = {}
    for where, name in lines:
        if not name.strip() or name != name.strip() or any(ord(c) < 32 or c == "\x7f" for c in name):
            raise UsageError(f"{where}: {name!r} is not a target name (no blanks at either end, no control characters)")
        if name in seen:
            raise UsageError(f"{where}: target {name!r} is named twice (first at {seen[name]})")
        seen[name] = where
    return list(seen)


def _read_lines(source: str) -> list[str]:
    try:
        if source == "-":
            return sys.stdin.read().splitlines()
        with open(source, encoding="utf-8") as fh:
            return fh.read().splitlines()
    except OSError as err:
        raise UsageError(f"cannot read {source}: {err.strerror}") from None
    except UnicodeDecodeError as err:
        raise UsageError(f"{source} is not UTF-8 text (byte {err.start})") from None


def build(template: Path, name: str, targets: list[str] | None, *, actor: str | None = None, now: str | None = None) -> str:
    """The ledger text: the template with its targets, start time and header filled in."""
    from engine.approvals.identity import os_user
    from engine.codec.emit import scalar, target_lines
    from engine.codec.timefmt import now_iso

    started = now or now_iso()[:16] + "Z"
    lines = template.read_text(encoding="utf-8").split("\n")
    head = next(i for i, line in enumerate(lines) if line and not line.startswith("#"))
    header = [f"# yaml-language-server: $schema=./{SCHEMA_FILE}", *lines[:head],
              f"# Written by {actor or os_user()} with `handoff init --template {name}` on {started}."]
    body = [re.sub(r"^started: .*$", f"started: {started}", line) for line in lines[head:]]
    if actor:
        body = [f"owner_shift: {scalar(actor, flow=False)}" if line.startswith("owner_shift: ") else line for line in body]
    if targets is not None:
        start = body.index("targets:")
        end = start + 1
        while end < len(body) and body[end].startswith("  "):
            end += 1
        rows = [row for t in targets for row in target_lines(t, {"state": "queued"})]
        body = body[: start + 1] + rows + body[end:]
    return "\n".join(header + body).rstrip("\n") + "\n"


def _create(path: Path, data: bytes) -> bool:
    """Write a new file atomically; False (nothing written) if `path` exists."""
    try:
        return _link_new(path, data)
    except OSError as err:
        raise UsageError(f"cannot write {path}: {err.strerror}; nothing was written") from None


def _link_new(path: Path, data: bytes) -> bool:
    folder = str(path.parent) or "."
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        try:
            os.link(tmp, path)  # fails if it exists: no window in which a file could be replaced
        except FileExistsError:
            return False
        return True
    finally:
        os.unlink(tmp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _schema_text() -> str:
    import json

    from engine.ledger.schema import ledger_schema

    return json.dumps(ledger_schema(), indent=2) + "\n"


def _next_steps(path: Path, template: str, schema: Path | None) -> str:
    import shlex

    shown = shlex.quote(str(path))  # paste-able as it is
    return "\n".join([
        f"wrote {path} from the {template} template" + (f" (and {schema} for editors)" if schema else ""),
        "next:",
        "  1. edit it: each run, check, verify, metric and notify command is a placeholder that",
        "     fails until you replace it (the comment above each shows a real one)",
        f"  2. handoff check --strict {shown}",
        "     names each placeholder left, and anything that would stall a session",
        f"  3. handoff resume --ledger {shown} --dry-run",
        "     one full cycle on a copy, running only each step's check",
        f"  then: handoff resume --ledger {shown}; handoff-tui {shown} to watch and approve",
        *_examples(),
    ])


def _examples() -> list[str]:
    """Where the shipped example ledgers (whole jobs, several hops) are installed."""
    from engine.bundled import ledgers_dir

    folder = ledgers_dir()
    found = sorted(p.name for p in folder.glob("*.yaml"))
    return [f"whole example jobs to copy from, in {folder}: {', '.join(found)}"] if found else []
