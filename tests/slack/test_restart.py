"""A restart neither loses nor doubles an approval, and what Slack shows catches up;
an irreversible step approved from Slack runs exactly once (the demo world counts)."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

from tests.conftest import wait_stopped
from tests.slack.kit import ALICE, APPROVERS, approved, caught_up, ledger, load, posted, review, wait_for
from tests.unit.session_kit import counts, demo_copy, resume


def test_killed_between_decision_and_chat_update_the_message_is_corrected_on_restart(tmp_path, fake, signer, started):
    """kill -9 right after the approval is on disk, before Slack hears of it: the restart
    edits the message to "approved by alice" and records nothing twice."""
    path = ledger(tmp_path)
    app = started(fake, [str(path)], env={"HANDOFF_FAILPOINTS": "slack-after-decision"})
    view = review(app, fake, signer, ALICE)
    assert signer.post(app.url, signer.submit(view, ALICE, "db-1"))[0] == 200
    wait_stopped(app.proc.pid, 20)  # stopped after its decision
    app.kill9()
    assert len(approved(path)) == 1 and load(path)["targets"]["db-1"]["state"] == "verified"
    assert "handoff_review" in str(fake.message(0)["blocks"]), "the message was never edited before the kill"
    again = started(fake, [str(path)])
    wait_for(lambda: "approved by alice" in str(fake.message(0)["blocks"]), what="the message corrected")
    caught_up(again, fake, signer)  # a whole pass of the worker after the correction: every chance to record or post again
    assert len(approved(path)) == 1 and len(load(path)["targets"]["db-1"]["approvals"]) == 1
    assert len([p for p in fake.of("chat.postMessage") if not p.get("thread_ts")]) == 1, "no second request posted"


def test_killed_after_the_delivery_is_stored_before_the_ack_the_restart_approves_once(tmp_path, fake, signer, started):
    """kill -9 with the submission's key on disk and nothing acked or approved: the restart
    finishes it (one approval, the message edited); Slack's retry of it is not acted on again."""
    path = ledger(tmp_path)
    app = started(fake, [str(path)], env={"HANDOFF_FAILPOINTS": "slack-after-claim"})
    view = review(app, fake, signer, ALICE)
    body = signer.body(signer.submit(view, ALICE, "db-1"))
    headers = signer.headers(body)
    threading.Thread(target=lambda: _quietly(signer.post, app.url, body=body, headers=headers), daemon=True).start()
    wait_stopped(app.proc.pid, 20)  # stopped after storing the delivery
    app.kill9()
    assert not approved(path)
    again = started(fake, [str(path)])
    wait_for(lambda: approved(path), what="the approval finished on restart")
    wait_for(lambda: "approved by alice" in str(fake.message(0)["blocks"]), what="the message edited")
    assert signer.post(again.url, body=body, headers=headers)[0] == 200  # Slack retrying the unacked request
    wait_for(lambda: "received before" in again.stderr(), what="the retry recognised")
    assert len(approved(path)) == 1 and len(load(path)["targets"]["db-1"]["approvals"]) == 1


def _quietly(fn, *args, **kw):
    try:
        fn(*args, **kw)
    except OSError:
        pass  # the process was killed mid-request: Slack would see no ack and retry


def test_an_irreversible_step_approved_from_slack_starts_exactly_once(tmp_path, fake, signer, started):
    """The demo fleet: a session asks for `link`, alice approves from Slack, sessions run: one link run. The ledger
    names the Slack process's OS user (root here), so its process leaves root's file proving the approval."""
    world = tmp_path / "world"
    path = demo_copy(tmp_path, {"db-50": {"state": "checked"}}, budget={"steps": 1}, approvers=APPROVERS,
                     notify=[{"slack": {"channel": "C0OPS", "os_user": "root"}}])
    first = resume(path, world=world)
    assert first.returncode == 0, first.stdout + first.stderr
    assert load(path)["targets"]["db-50"]["state"] == "awaiting_approval"
    app = started(fake, [str(path)])
    view = review(app, fake, signer, ALICE)
    assert signer.post(app.url, signer.submit(view, ALICE, "db-50"))[0] == 200
    proofs = Path(str(path) + ".attest")
    # The approving process writes the ledger, then its proof: both, before anything looks.
    wait_for(lambda: approved(path) and proofs.is_dir() and any(proofs.iterdir()), what="the approval and its proof")
    [proof] = list(proofs.iterdir())
    assert proof.stat().st_uid == 0 and '"target": "db-50"' in proof.read_text()
    for _ in range(3):
        out = resume(path, world=world)
        assert out.returncode == 0, out.stdout + out.stderr
    assert counts(world)["db-50"]["link_runs"] == 1
    target = load(path)["targets"]["db-50"]
    assert target.get("awaiting") != "link" and [a["used_at"] for a in target["approvals"] if a["step"] == "link"]
    wait_for(lambda: "approved by alice" in str(fake.message(0)["blocks"]), what="the message edited")


def test_slack_unreachable_leaves_cli_approvals_alone_and_the_message_catches_up(tmp_path, fake, started):
    """Slack answers 503 for a while: `handoff approve` works at once, the process says it is
    trying again, and the message shows the approval once Slack is back."""
    import getpass

    from tests.conftest import handoff

    path = ledger(tmp_path, approvers=[*APPROVERS, {"name": "ops", "os_user": getpass.getuser()}])
    app = started(fake, [str(path)])
    posted(fake)
    fake.fail_next = 3
    out = handoff("approve", str(path), "db-1", "--as", "ops", "--yes")
    assert out.returncode == 0, out.stderr
    wait_for(lambda: "Slack unreachable (HTTP 503); trying again" in app.stderr(), what="the retry said")
    wait_for(lambda: "approved by ops" in str(fake.message(0)["blocks"]), what="the message caught up")


def test_a_change_after_the_checks_is_caught_under_the_lock(tmp_path, fake, signer, started):
    """The process is frozen after its own checks, the checkpoint moves, it goes on: the engine's
    --expect-hash binding (same operation as the CLI's) refuses; nothing is approved."""
    path = ledger(tmp_path)
    app = started(fake, [str(path)], env={"HANDOFF_FAILPOINTS": "slack-before-approve"})
    view = review(app, fake, signer, ALICE)
    # The submission is queued before its ack is written: the freeze may come before the ack
    # has left (a loaded machine), so the POST is answered once the process goes on.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        answer = pool.submit(signer.post, app.url, signer.submit(view, ALICE, "db-1"), timeout=90)
        wait_stopped(app.proc.pid, 20)  # frozen before approving
        path.write_text(path.read_text().replace("0/9A3F2C10", "0/9A3F2C99"))
        os.kill(app.proc.pid, signal.SIGCONT)
        assert answer.result(timeout=90)[0] == 200
    wait_for(lambda: fake.ephemerals(ALICE), what="the refusal")
    assert "the command changed; review again" in fake.ephemerals(ALICE)[0]
    assert not approved(path) and load(path)["targets"]["db-1"]["state"] == "awaiting_approval"
