"""`handoff info`: where everything handoff uses lives on this machine.

    handoff info [--json]

The version and the Python it runs on; where the package and its bundled ledgers
(examples, `init` templates, the demo) are installed; the per-user folders it writes
(engine.host.folders: the parse cache and the hook's facts under XDG_CACHE_HOME, the marks and the
TUI's state under XDG_STATE_HOME); that there
is no config file (settings are flags, the ledger, and HANDOFF_* environment variables,
of which those set now are listed). Beside a ledger it writes only its own sidecars.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from engine.codec.jsontext import json_line


def register(sub) -> None:
    p = sub.add_parser("info", help="where everything lives: version, install, bundled ledgers, cache, state, config")
    p.add_argument("--json", action="store_true", help="the same as one JSON object, for scripts")
    p.set_defaults(handler=cmd_info)


def facts() -> dict:
    """What `handoff info` prints, as data."""
    import engine
    from engine.bundled import LEDGERS
    from engine.host.folders import cache_dir, state_dir, tui_state_dir
    from engine.version import version

    return {
        "version": version(),
        "python": sys.executable,
        "package": str(Path(engine.__file__).resolve().parent),
        "ledgers": str(LEDGERS),
        "templates": str(LEDGERS / "templates"),
        "cache": cache_dir(),
        "state": tui_state_dir(),
        "engine_state": state_dir(),
        "config": None,
        "environment": {k: v for k, v in sorted(os.environ.items()) if k.startswith("HANDOFF_")},
    }


def cmd_info(args) -> int:
    """Print the facts, one a line (or --json)."""
    from engine.audit.redact import redact
    from engine.codec.textsafe import visible

    data = facts()
    if args.json:
        print(redact(json_line(data)))
        return 0
    lines = [
        f"handoff {data['version']} (python {data['python']})",
        f"package:   {data['package']}",
        f"ledgers:   {data['ledgers']} (examples; the demo fleet in demo/)",
        f"templates: {data['templates']} (`handoff init --list`)",
        f"cache:     {data['cache']} (parsed ledgers; safe to delete; $XDG_CACHE_HOME)",
        f"state:     {data['state']} (the TUI's per-user state; $XDG_STATE_HOME)",
        f"marks:     {data['engine_state']} (rollback witnesses, Claude Code session nonces: keep them; $XDG_STATE_HOME)",
        "config:    none: settings are flags, the ledger, and HANDOFF_* environment variables",
    ]
    lines += [f"  {k}={v}" for k, v in data["environment"].items()]
    print(visible(redact("\n".join(lines))))
    return 0
