"""Run every benchmark in one go and print the figures side by side (not a test)."""

from __future__ import annotations

import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import brief_size  # noqa: E402
import cli_process  # noqa: E402
import hook_cost  # noqa: E402
import ledger_io  # noqa: E402
import watch_latency  # noqa: E402


def main() -> None:
    print(f"python {platform.python_version()} on {platform.platform()}, {os.cpu_count()} CPUs")
    for module in (ledger_io, cli_process, hook_cost, watch_latency, brief_size):
        for line in module.main():
            print(line, flush=True)


if __name__ == "__main__":
    main()
