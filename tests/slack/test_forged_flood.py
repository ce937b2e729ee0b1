"""Anyone who can reach the HTTP port can send forged requests. Each is refused, and none may
grow the ledger's journal (or the terminal's log) without bound: the first refusal is written
down with its reason, the rest of that minute are counted and written down together, at the
latest when the process ends."""

from __future__ import annotations

from tests.slack.kit import ALICE, approved, caught_up, journal, ledger, refused, review, wait_for


def test_a_flood_of_forged_requests_is_written_down_once_with_its_count(tmp_path, fake, signer, started):
    path = ledger(tmp_path)
    app = started(fake, [str(path)])
    view = review(app, fake, signer, ALICE)
    before, records_before = path.read_text(), len(journal(path))
    payload = signer.submit(view, ALICE, "db-1")
    body = signer.body(payload)
    forged = signer.headers(body, secret="not-the-signing-secret")
    for _ in range(40):
        status, _ = signer.post(app.url, body=body, headers=forged)
        assert status == 401
    wait_for(lambda: refused(path), what="the first refusal record")
    caught_up(app, fake, signer)  # a whole pass of the worker (refusals counted) after the flood: every chance to write more
    first = refused(path)
    assert len(first) == 1 and "does not match the signing secret" in first[0]["msg"], first
    assert app.stderr().count("refused a request") == 1, app.stderr()
    app.stop()
    records = refused(path)
    assert len(records) == 2 and records[1].get("count") == 39, records
    assert "39 more request(s)" in records[1]["msg"] and "refused 39 more" in app.stderr()
    assert len(journal(path)) == records_before + 2  # nothing else was written for them
    assert not approved(path) and path.read_text() == before
