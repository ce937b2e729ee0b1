"""The installed version of handoff-tui, for `handoff --version` and `handoff-tui --version`."""

from __future__ import annotations

DIST = "handoff-tui"


def version() -> str:
    """The version the package metadata gives (pyproject's `version`), or `unknown`
    when running from a source tree that was never installed."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version(DIST)
    except PackageNotFoundError:
        return "unknown (not installed)"
