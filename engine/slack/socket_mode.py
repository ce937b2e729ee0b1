"""Socket Mode (the default): an outbound websocket opened with the app-level token
(`apps.connections.open`), so nothing listens in public. slack-sdk's own
SocketModeClient keeps the connection (reconnects, pings); every envelope is acked
with the Hub's answer, after a submission's delivery key is on disk. The envelope came
over the connection our app token opened, so it is Slack's; the app and workspace ids
are still checked, as in HTTP mode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from slack_sdk.socket_mode.client import BaseSocketModeClient
    from slack_sdk.socket_mode.request import SocketModeRequest


def connect(hub) -> Callable[[], None]:
    """Connect and start handing envelopes to the Hub; returns what disconnects."""
    from slack_sdk import WebClient
    from slack_sdk.socket_mode import SocketModeClient
    from slack_sdk.socket_mode.response import SocketModeResponse

    base = hub.secrets.api_url if hub.secrets.api_url.endswith("/") else hub.secrets.api_url + "/"
    client = SocketModeClient(app_token=hub.secrets.app_token or "", web_client=WebClient(base_url=base, timeout=10))

    def on_request(sm: BaseSocketModeClient, req: SocketModeRequest) -> None:
        taken, ack = hub.received(req.payload) if req.type == "interactive" and isinstance(req.payload, dict) else (True, None)
        if taken:  # no ack when its delivery key could not be stored: Slack sends the envelope again
            sm.send_socket_mode_response(SocketModeResponse(envelope_id=req.envelope_id, payload=ack))

    client.socket_mode_request_listeners.append(on_request)
    client.connect()
    hub.say("connected to Slack in Socket Mode")
    return client.close
