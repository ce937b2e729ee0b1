"""Fixtures for the Slack tests: a fake Slack per test (free ports, no xdist group)."""

from __future__ import annotations

import pytest

from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_signer import Signer
from tests.slack.kit import SECRET


@pytest.fixture
def fake():
    with FakeSlack() as slack:
        yield slack


@pytest.fixture
def signer():
    return Signer(SECRET)


@pytest.fixture
def started():
    """Start `handoff slack` processes through this; each is stopped after the test."""
    from tests.slack.kit import SlackProcess

    procs = []

    def start(*args, **kw):
        procs.append(SlackProcess(*args, **kw))
        return procs[-1]

    yield start
    for p in procs:
        p.stop()
        print(f"handoff slack (exit {p.proc.returncode}) said:\n{p.stderr()}")  # shown when the test failed
