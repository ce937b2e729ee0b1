"""`handoff-tui`: the console script.

    handoff-tui LEDGER [--read-only] [--as NAME] [--theme NAME] [--no-bell]
    handoff-tui --demo [DIR]
    handoff-tui serve LEDGER [--bind HOST:PORT] [--public-url URL] (--token-file PATH | --trust-header NAME) [--max-viewers N]

A missing, unreadable or invalid ledger is one line on stderr
(`handoff-tui: file:line:col: reason`) and exit 2, before the screen opens.
`--demo` copies `ledgers/demo/` into DIR (default: a new temporary folder,
printed on exit), starts the demo's script (`director.py`: agent sessions, a failed
check, a drift and its reconcile, then a session that waits for your approvals) and
opens the screen. Leaving the demo ends the script and its session (`tui.demo`).
`serve` shows the read-only screen in a browser (`tui.serve`; the `serve` extra); its page
takes `?target=NAME` and `?filter=TEXT`, and each viewer keeps their own "since you last
looked" (`tui.viewer`).
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import tempfile
from pathlib import Path


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from engine.api import version

    parser = argparse.ArgumentParser(prog="handoff-tui", description="The operator screen over a handoff ledger.")
    parser.add_argument("--version", action="version", version=f"handoff-tui {version()}")
    parser.add_argument("ledger", nargs="?", help="path to ledger.yaml (or a postgresql:// location)")
    parser.add_argument("--read-only", action="store_true", help="observe only: nothing can be changed")
    parser.add_argument("--as", dest="actor", metavar="NAME", help="who you are in the journal (default: login user)")
    parser.add_argument("--theme", metavar="NAME", help="handoff-dark (default), handoff-light, handoff-high-contrast")
    parser.add_argument("--no-bell", dest="bell", action="store_false",
                        help="do not ring the terminal bell when a new approval starts waiting")
    parser.add_argument("--demo", nargs="?", const="", metavar="DIR",
                        help="copy the demo fleet into DIR (default: a temp folder) and run its story; quitting ends it")
    args = parser.parse_args(argv)
    if args.demo is None and not args.ledger:
        parser.error("a LEDGER path is required (or --demo)")
    if args.demo is not None and args.ledger:
        parser.error("give either LEDGER or --demo, not both")
    return args


def serve_main(argv: list[str]) -> int:
    """`handoff-tui serve ...`: check the ledger opens, then serve it read-only until Ctrl+C."""
    parser = argparse.ArgumentParser(prog="handoff-tui serve", description="The read-only screen in a browser, for observers. "
                                     "Share a view as URL/?target=NAME or URL/?filter=TEXT.")
    parser.add_argument("ledger", help="path to ledger.yaml (or a postgresql:// location)")
    parser.add_argument("--bind", default="127.0.0.1:8080", metavar="HOST:PORT", help="where to listen (default 127.0.0.1:8080)")
    parser.add_argument("--token-file", metavar="PATH",
                        help="viewers open the page with ?token=TOKEN once: TOKEN is this file's first line "
                             "(or set HANDOFF_SERVE_TOKEN)")
    parser.add_argument("--token", help="the token itself: VISIBLE TO EVERY LOCAL USER (ps); prefer --token-file "
                                        "or HANDOFF_SERVE_TOKEN")
    parser.add_argument("--trust-header", metavar="NAME",
                        help="accept a request carrying this header (set by an authenticating reverse proxy only)")
    parser.add_argument("--public-url", metavar="URL",
                        help="the address browsers open, e.g. the proxy's https://handoff.example.com (default: "
                             "http://HOST:PORT of --bind); the page's websocket goes there and must come from it")
    parser.add_argument("--max-viewers", type=int, default=8, metavar="N", help="at most N viewers at once (default 8)")
    args = parser.parse_args(argv)
    host, _, port = args.bind.rpartition(":")
    if not host or not port.isdigit():
        parser.error(f"--bind {args.bind!r}: give HOST:PORT, like 127.0.0.1:8080")
    if args.token and args.token_file:
        parser.error("give --token-file or --token, not both")
    if args.token:
        print("handoff-tui serve: warning: --token on the command line is visible to every local user (ps); "
              "use --token-file PATH or HANDOFF_SERVE_TOKEN", file=sys.stderr, flush=True)
    token = args.token or (_read_token(parser, args.token_file) if args.token_file else None)
    token = token or os.environ.get("HANDOFF_SERVE_TOKEN") or None
    if not token and not args.trust_header:
        parser.error("give --token-file (or HANDOFF_SERVE_TOKEN) or --trust-header: an observer page is never open to all")
    from engine.api import HandoffError, open_ledger, redact

    try:
        open_ledger(args.ledger, read_only=True)
    except HandoffError as error:
        print(f"handoff-tui: {redact(str(error))}", file=sys.stderr)
        return 2
    try:
        from tui.serve import ObserverServer, public_url_problem
    except ImportError as error:
        print(f"handoff-tui serve needs the serve extra (pip install 'handoff-tui[serve]'): {error}", file=sys.stderr)
        return 2
    public_url = args.public_url.rstrip("/") if args.public_url else None
    if public_url is not None and (problem := public_url_problem(public_url)):
        parser.error(f"--public-url {args.public_url!r}: {problem}")
    ObserverServer(args.ledger, host, int(port), token=token, trust_header=args.trust_header,
                   max_viewers=args.max_viewers, public_url=public_url).serve()
    return 0


def _read_token(parser: argparse.ArgumentParser, path: str) -> str:
    """The first line of `path`, without its line end: the serve token, kept off the command line."""
    try:
        with open(path, encoding="utf-8") as file:
            token = file.readline().rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as error:
        parser.error(f"--token-file {path}: {error}")
    if not token.strip():
        parser.error(f"--token-file {path}: its first line is empty; write the token there")
    return token


def prepare_demo(target: str) -> Path:
    """Copy the demo fleet into `target` (or a new temp folder); returns the ledger path."""
    from engine.api import HandoffError, demo_dir  # the same lookup in a checkout and in an installed wheel

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


def main(argv: list[str] | None = None) -> int:
    """Run the app; returns the exit code (2 for a usage error or an unreadable ledger)."""
    words = sys.argv[1:] if argv is None else argv
    if words[:1] == ["serve"]:
        return serve_main(words[1:])
    # Start-up without the cyclic collector (imports, the ledger's read, the first frame):
    # the app calls engine.api.started() after its first frame, which freezes what is alive
    # and turns it back on (engine.store.bulk); a start that fails turns it back on here.
    gc.disable()
    try:
        return _run(argv)
    finally:
        gc.enable()


def _run(argv: list[str] | None) -> int:
    args = parse_args(argv)
    from engine.api import HandoffError, redact  # after argument parsing: --help stays fast
    from tui.app import make_app
    from tui.demo import DemoRun
    from tui.viewer import from_environ

    demo: DemoRun | None = None
    try:
        if args.demo is not None:
            demo = DemoRun(prepare_demo(args.demo))
            location = str(demo.ledger)
        else:
            location = args.ledger
        # Started by `handoff-tui serve` for one browser viewer: their mark and their link (tui.viewer).
        served = from_environ(os.environ) if args.read_only else None
        app = make_app(location, read_only=args.read_only, actor=args.actor, theme=args.theme, bell=args.bell,
                       served=served)
        if demo is not None:
            demo.start()
            demo.end_on_hangup()
            app.demo = demo
    except HandoffError as error:
        print(f"handoff-tui: {redact(str(error))}", file=sys.stderr)
        return 2
    try:
        app.run()
    finally:
        if demo is not None and demo.alive():
            _say("handoff-tui: ending the demo (a running step finishes first) ...")
            if not demo.stop():
                _say("handoff-tui: the demo's session did not stop in time and was killed", sys.stderr)
    if demo is not None:
        _say(f"handoff-tui: the demo ledger is at {demo.ledger}")
    if app.ended_by is not None:
        from tui.endings import die_of

        die_of(app.ended_by)  # ended cleanly; whoever sent the signal sees it end by that signal
    return 0


def _say(text: str, stream=None) -> None:
    """One line on stdout (or `stream`); nothing when the terminal has gone (a hung-up
    terminal refuses writes: the demo must still be ended after it, tui.endings)."""
    try:
        print(text, file=stream or sys.stdout, flush=True)
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main())
