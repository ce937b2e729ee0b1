"""`handoff-tui`: the console script.

    handoff-tui LEDGER [--read-only] [--as NAME] [--theme NAME]
    handoff-tui --demo [DIR]

A missing, unreadable or invalid ledger is one line on stderr
(`handoff-tui: file:line:col: reason`) and exit 2, before the screen opens.
`--demo` copies `ledgers/demo/` into DIR (default: a new temporary folder,
printed on exit), starts the demo's script (`director.py`: agent sessions, a failed
check, a drift and its reconcile, then a session that waits for your approvals) and
opens the screen.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from engine.errors import HandoffError
from engine.redact import redact


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from engine.version import version

    parser = argparse.ArgumentParser(prog="handoff-tui", description="The operator screen over a handoff ledger.")
    parser.add_argument("--version", action="version", version=f"handoff-tui {version()}")
    parser.add_argument("ledger", nargs="?", help="path to ledger.yaml (or a postgresql:// location)")
    parser.add_argument("--read-only", action="store_true", help="observe only: nothing can be changed")
    parser.add_argument("--as", dest="actor", metavar="NAME", help="who you are in the journal (default: login user)")
    parser.add_argument("--theme", metavar="NAME", help="handoff-dark (default), handoff-light, handoff-high-contrast")
    parser.add_argument("--demo", nargs="?", const="", metavar="DIR",
                        help="copy the demo fleet into DIR (default: a temp folder), start a session, open it")
    args = parser.parse_args(argv)
    if args.demo is None and not args.ledger:
        parser.error("a LEDGER path is required (or --demo)")
    if args.demo is not None and args.ledger:
        parser.error("give either LEDGER or --demo, not both")
    return args


def prepare_demo(target: str) -> Path:
    """Copy the demo fleet into `target` (or a new temp folder); returns the ledger path."""
    from engine.api import demo_dir  # the same lookup in a checkout and in an installed wheel

    source = demo_dir()
    if not (source / "ledger.yaml").is_file():
        raise HandoffError(f"the demo fleet is missing: {source / 'ledger.yaml'}", title="Demo")
    folder = Path(target) if target else Path(tempfile.mkdtemp(prefix="handoff-demo-"))
    folder.mkdir(parents=True, exist_ok=True)
    if (folder / "ledger.yaml").exists():
        raise HandoffError(f"{folder / 'ledger.yaml'} already exists; choose an empty folder", title="Demo")
    for item in source.iterdir():
        if item.is_file():
            shutil.copy2(item, folder / item.name)
    return folder / "ledger.yaml"


def start_director(ledger: Path) -> int:
    """Start the demo's script (ledgers/demo/director.py) as its own detached process:
    it runs the sessions, a failure, a drift and its reconcile, then a session that
    waits for the newcomer's approvals. Closing the TUI does not stop it."""
    proc = subprocess.Popen(
        [sys.executable, str(ledger.parent / "director.py"), str(ledger)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
        cwd=str(ledger.parent),
    )
    return proc.pid


def main(argv: list[str] | None = None) -> int:
    """Run the app; returns the exit code (2 for a usage error or an unreadable ledger)."""
    args = parse_args(argv)
    from tui.app import make_app  # after argument parsing: --help stays fast

    demo_path: Path | None = None
    director = 0
    try:
        if args.demo is not None:
            demo_path = prepare_demo(args.demo)
            location = str(demo_path)
        else:
            location = args.ledger
        app = make_app(location, read_only=args.read_only, actor=args.actor, theme=args.theme)
        if demo_path is not None:
            director = start_director(demo_path)
    except HandoffError as error:
        print(f"handoff-tui: {redact(str(error))}", file=sys.stderr)
        return 2
    app.run()
    if demo_path is not None:
        print(f"handoff-tui: the demo ledger is at {demo_path}")
        print(f"handoff-tui: the demo's script (pid {director}) may still be running sessions; "
              f"`kill -- -{director}` ends it and its session")
    return 0


if __name__ == "__main__":
    sys.exit(main())
