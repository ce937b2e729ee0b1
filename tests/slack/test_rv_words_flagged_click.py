"""rev-words: Review on a target changed outside the engine is answered at once (engine/slack).

db-1 awaits its cutover and is flagged `changed_outside`. Review opened the modal as for any
request; the person read the command, pressed Approve, and only then heard that nothing can be
approved until a person reconciles the target. Now the click itself is answered: an ephemeral
saying the one sentence the engine's approve refuses with (what changed, and the `handoff
reconcile` line naming the real ledger, shell-quoted), no modal opened, nothing approved and the
ledger's bytes as they were.
"""

from __future__ import annotations

import json
import shlex

from tests.slack.kit import ALICE, approved, caught_up, ledger, posted, wait_for

FLAG = "changed_outside: {at: '2026-12-07T20:00:00Z', fields: [approvals]}"


def test_review_of_a_flagged_target_is_refused_on_the_click(tmp_path, fake, signer, started):
    folder = tmp_path / "on call"
    folder.mkdir()
    path = ledger(folder)
    path.write_text(path.read_text().replace("checkpoint: 0/9A3F2C10", f"checkpoint: 0/9A3F2C10\n    {FLAG}"))
    app = started(fake, [str(path)])
    msg = posted(fake)
    before = path.read_bytes()
    status, _ = signer.post(app.url, signer.click(msg, msg["ts"], ALICE))
    assert status == 200
    wait_for(lambda: fake.ephemerals(ALICE), what="the answer to the click")
    caught_up(app, fake, signer)
    told = json.dumps(fake.ephemerals(ALICE), ensure_ascii=False)
    assert "db-1 was changed outside the engine at 2026-12-07T20:00:00Z (approvals; now awaiting_approval)" in told, told
    assert f"handoff reconcile {shlex.quote(str(path))} db-1 --to STATE --reason WHY" in told, told
    assert fake.views() == [], fake.views()  # no modal: nothing to approve in it
    assert not approved(path)
    assert path.read_bytes() == before
