"""Every flock the engine takes is bounded (engine.host.flock): the Slack record's and the
per-user mark's too. A stopped holder is named; nothing is written while it holds the lock;
once it lets go the same call succeeds. (The ledger's lock: test_lease_rules; the journal's:
test_journal_lock.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import HandoffError
from engine.host import userstate
from engine.host.userstate import advance_user_state, load_user_state
from engine.slack.state import State
from engine.store.sidecar import SidecarRefused
from tests.conftest import stopped_holder

SEAL = lambda key, payload: "seal"  # noqa: E731  (what `handoff slack` stores with a delivery: engine.slack.app.Hub.seal)


@pytest.fixture(autouse=True)
def private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def test_a_stopped_holder_of_the_users_mark_is_named_and_the_mark_is_kept() -> None:
    assert advance_user_state("k", {"seen_at": "2026-12-01T10:00:00+00:00", "n": 1})
    with stopped_holder(userstate._file("k").with_suffix(".lock")) as holder:
        with pytest.raises(HandoffError) as caught:  # it returns at all: unbounded, it waited for ever
            advance_user_state("k", {"seen_at": "2026-12-01T11:00:00+00:00", "n": 2})
        message = str(caught.value)
        assert f"not saved; its lock has been held for more than {userstate.USER_STATE_WAIT:g}s by pid {holder.pid}" in message
        assert f"which is stopped: let it go on (kill -CONT {holder.pid}) or end it" in message
        assert load_user_state("k")["n"] == 1
    assert advance_user_state("k", {"seen_at": "2026-12-01T11:00:00+00:00", "n": 2})
    assert load_user_state("k")["n"] == 2


def test_a_stopped_holder_of_the_slack_record_is_named_and_nothing_is_recorded(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HANDOFF_LOCK_TIMEOUT", "1")
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text("task: t\n", encoding="utf-8")
    state = State(str(ledger))
    assert state.claim("first", {"type": "view_submission"}, SEAL)
    record = Path(str(ledger) + ".slack.jsonl")
    before = record.read_bytes()
    with stopped_holder(record) as holder:
        with pytest.raises(SidecarRefused) as caught:
            state.claim("second", {"type": "view_submission"}, SEAL)
        message = str(caught.value)
        assert message.startswith(f"{record}: its lock has been held for more than 1s by pid {holder.pid}")
        assert message.endswith("; nothing was recorded") and "which is stopped" in message
        assert record.read_bytes() == before
        assert "second" not in State(str(ledger)).deliveries  # a new process finds nothing of it either
    assert state.claim("second", {"type": "view_submission"}, SEAL)  # Slack's retry of the same delivery
    assert "second" in State(str(ledger)).deliveries


def test_a_slack_claim_waits_no_longer_than_slack_waits_for_its_ack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Slack sends a request again after 3 s without an ack: a claim (made before the ack)
    gives up on the record within CLAIM_WAIT, whatever HANDOFF_LOCK_TIMEOUT allows, so the
    503 (or the missing Socket Mode ack) is Slack's answer to this very try."""
    from engine.slack import state as slack_state

    monkeypatch.delenv("HANDOFF_LOCK_TIMEOUT", raising=False)  # the default, 10 s
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text("task: t\n", encoding="utf-8")
    state = State(str(ledger))
    record = Path(str(ledger) + ".slack.jsonl")
    with stopped_holder(record) as holder:
        with pytest.raises(SidecarRefused) as caught:
            state.claim("k", {"type": "view_submission"}, SEAL)
        assert f"held for more than {slack_state.CLAIM_WAIT:g}s by pid {holder.pid}" in str(caught.value)
    assert not record.exists() or b'"k"' not in record.read_bytes()
    # This process's own writer stuck on the record (a finish waiting out the full timeout):
    # the claim does not queue behind it either.
    state._lock.acquire()
    try:
        with pytest.raises(SidecarRefused) as caught:
            state.claim("k", {"type": "view_submission"}, SEAL)
        assert str(caught.value) == (f"{record}: this process has been writing its Slack record for more than "
                                     f"{slack_state.CLAIM_WAIT:g}s; nothing was recorded")
    finally:
        state._lock.release()
    assert state.claim("k", {"type": "view_submission"}, SEAL) and "k" in State(str(ledger)).deliveries


def test_a_slack_claims_two_waits_share_one_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's writer lets go after a second, the record's flock is held by a stopped
    process: the flock gets only what is left of CLAIM_WAIT, not CLAIM_WAIT again (the answer
    must reach Slack within its 3 s)."""
    import re
    import threading

    from engine.slack import state as slack_state

    monkeypatch.delenv("HANDOFF_LOCK_TIMEOUT", raising=False)
    ledger = tmp_path / "ledger.yaml"
    ledger.write_text("task: t\n", encoding="utf-8")
    state = State(str(ledger))
    record = Path(str(ledger) + ".slack.jsonl")
    with stopped_holder(record) as holder:
        state._lock.acquire()
        threading.Timer(1.0, state._lock.release).start()
        with pytest.raises(SidecarRefused) as caught:
            state.claim("k", {"type": "view_submission"}, SEAL)
        waited = float(re.search(r"held for more than ([0-9.]+)s by pid (\d+)", str(caught.value)).group(1))
        assert waited <= slack_state.CLAIM_WAIT - 0.5 and f"pid {holder.pid}" in str(caught.value)
