"""Approving from Slack (`handoff slack`): a long-running process that posts each
approval request of the watched ledgers to the channel their `notify: [{slack: ...}]`
entry names, and takes approvals back through the same engine operation as
`handoff approve --expect-hash` (engine.api), proved by Slack's signature.

- `secrets`: the tokens and signing secret (environment or a 0600 file), masked;
- `verify`: Slack's request signature and the app/workspace ids;
- `blocks`: the request message, the modals and what they say afterwards;
- `state`: the delivery keys and posted messages, beside the ledger (or in PostgreSQL);
- `web`: the Web API client (slack-sdk) with retry and backoff;
- `decide`: the decision flow, in the order the issue fixes;
- `watch`: posting, updating, reminding and expiring the request messages;
- `http_mode`, `socket_mode`: the two transports; `app`: wiring them together.
slack-sdk is the optional extra `slack`, imported only here.
"""
