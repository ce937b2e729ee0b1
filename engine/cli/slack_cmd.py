"""`handoff slack LEDGER... [--socket-mode | --http HOST:PORT] [--secrets FILE]`: approve
from Slack (engine.slack). A long-running process: Socket Mode by default, or Slack's
HTTP Request URL at /slack/events. Exit 2 on usage (a secret missing, a readable secrets
file, a ledger that does not open, the `slack` extra not installed); 0 when stopped.
"""

from __future__ import annotations

from engine.errors import UsageError


def register(sub) -> None:
    p = sub.add_parser("slack", help="approve from Slack: post approval requests to the ledger's Slack channel and "
                                     "take approvals back, signed and replay-safe (needs the slack extra)")
    p.add_argument("ledgers", nargs="+", metavar="LEDGER", help="ledger files or postgresql:// locations to watch")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--socket-mode", action="store_true",
                      help="connect out with the app-level token SLACK_APP_TOKEN (the default; nothing listens)")
    mode.add_argument("--http", metavar="HOST:PORT", default=None,
                      help="serve Slack's interactivity Request URL at http://HOST:PORT/slack/events "
                           "(requests verified with SLACK_SIGNING_SECRET)")
    p.add_argument("--secrets", metavar="FILE", default=None,
                   help="read SLACK_BOT_TOKEN, SLACK_APP_TOKEN, SLACK_SIGNING_SECRET, SLACK_APP_ID from this 0600 "
                        "file (NAME=value lines) where the environment does not set them")
    p.set_defaults(handler=cmd_slack)


def cmd_slack(args) -> int:
    try:
        import slack_sdk  # noqa: F401 - the extra's presence, asked before anything starts
    except ImportError:
        raise UsageError("handoff slack needs the slack extra: pip install 'handoff-tui[slack]'") from None
    from engine.slack import secrets as slack_secrets
    from engine.slack.app import run

    found = slack_secrets.load(file=args.secrets, socket_mode=args.http is None)
    return run(args.ledgers, found, http=args.http)
