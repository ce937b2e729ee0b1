"""`handoff import FILE URL` and `handoff export URL`: move a ledger between a YAML file
and the PostgreSQL store (the stored text is the canonical YAML, so it stays diffable)."""

from __future__ import annotations

import sys

from engine.cli.arguments import output_file
from engine.errors import UsageError


def register(sub) -> None:
    p = sub.add_parser("import", help="share a ledger between hosts: copy a YAML ledger into PostgreSQL (postgresql://host/db#name)")
    p.add_argument("file", help="the YAML ledger to copy")
    p.add_argument("url", help="postgresql://host/db#name: where it goes (an existing ledger only with --replace)")
    p.add_argument("--replace", action="store_true",
                   help="replace a ledger already there (refused while a session holds it; its revision never goes back)")
    p.set_defaults(handler=cmd_import)
    p = sub.add_parser("export", help="print a PostgreSQL ledger as YAML, to read, diff or keep")
    p.add_argument("url", help="postgresql://host/db#name")
    p.add_argument("-o", "--output", type=output_file, help="write to this file (atomically) instead of stdout")
    p.set_defaults(handler=cmd_export)


def _pg(url: str):
    if not url.startswith(("postgresql://", "postgres://")):
        raise UsageError(f"{url!r} is not a postgresql:// URL (postgresql://host/db#ledger-name)")
    from engine.store.postgres import PostgresStore

    return PostgresStore(url)


def cmd_import(args) -> int:
    from engine.store.file import FileStore, decode

    store = _pg(args.url)
    if args.replace:  # replacing a shared ledger is for people (engine.approvals.people)
        from engine.approvals.identity import os_user
        from engine.approvals.refusal import refuse_if_agent

        refuse_if_agent(store.open_journal(), "import", flag="--replace", ledger=store.name, actor=os_user(), user=os_user())
    source = FileStore(args.file, read_only=True)
    source.snapshot()  # validates, with file:line:col on a bad file
    with open(args.file, "rb") as fh:
        text = decode(fh.read(), args.file)
    revision = store.import_text(text, replace=args.replace)
    print(f"imported {args.file} as {store.name!r} (revision {revision})")
    return 0


def cmd_export(args) -> int:
    store = _pg(args.url)
    text = store.export_text()
    if args.output:
        from engine.store.atomic import atomic_write

        atomic_write(args.output, text.encode("utf-8"))
    else:
        sys.stdout.write(text)
    return 0
