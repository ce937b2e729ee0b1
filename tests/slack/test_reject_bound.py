"""Review (slack): a Reject from Slack is bound, under the ledger's lock, to the request the person
saw (its step and hash, as an approval is), not only checked before the lock: a newer request that
appears in between is never blocked by a "no" given to the old one."""

from __future__ import annotations

import os
import signal
from concurrent.futures import ThreadPoolExecutor

from tests.conftest import wait_stopped
from tests.slack.kit import BOB, journal, ledger, load, posted, wait_for


def test_a_reject_is_bound_under_the_lock_to_the_request_the_person_saw(tmp_path, fake, signer, started):
    """bob opens Reject on db-1's cutover and submits a reason; the process is frozen after its own
    checks, before the lock; db-1's checkpoint moves (what cutover would run changed: a newer request).
    Going on, the reject is refused ("the command changed; review again"); db-1 still awaits approval,
    no rejection is journaled."""
    path = ledger(tmp_path)
    app = started(fake, [str(path)], env={"HANDOFF_FAILPOINTS": "slack-before-approve"})
    msg = posted(fake)
    assert signer.post(app.url, signer.click(msg, msg["ts"], BOB, action="handoff_reject"))[0] == 200
    wait_for(lambda: fake.views(), what="the Reject modal")
    view = fake.views()[-1]
    assert view["callback_id"] == "handoff_reject_view"
    with ThreadPoolExecutor(1) as pool:  # the ack may wait on the frozen process (see test_restart)
        answer = pool.submit(signer.post, app.url, signer.submit(view, BOB, "not during business hours"), timeout=90)
        wait_stopped(app.proc.pid, 20)  # frozen after the checks, before the lock
        path.write_text(path.read_text().replace("0/9A3F2C10", "0/9A3F2C99"))
        os.kill(app.proc.pid, signal.SIGCONT)
        assert answer.result(timeout=90)[0] == 200
    wait_for(lambda: fake.ephemerals(BOB), what="the refusal")
    assert "the command changed; review again" in fake.ephemerals(BOB)[0], fake.ephemerals(BOB)
    t = load(path)["targets"]["db-1"]
    assert t["state"] == "awaiting_approval" and t["checkpoint"] == "0/9A3F2C99", t
    assert not [r for r in journal(path) if r["kind"] == "rejection"]
