"""A TCP proxy on loopback in front of the real PostgreSQL that cuts every connection
at a chosen point of the wire conversation, for the fence's retry tests.

A rule is a sequence of byte patterns seen in what clients send (the SQL text is in
the Query and Parse messages). When the last pattern arrives on a connection that
has seen the earlier ones in order, that message is held back (never forwarded), the
proxy optionally waits for a marker file (the step's process has started), then
refuses new connections and cuts all open ones for `outage` seconds, as a crashed
server does, and listens again. It fires once. A pattern prefixed `ANY:` is an event
of the whole conversation: seen on whichever connection sends it (once the `ANY:`
patterns before it have been seen), it counts as seen on every connection, so
`(FOR UPDATE, ANY:X, COMMIT)` fires on the first connection that has sent FOR UPDATE
(before or after X) and then, once X has gone by anywhere, COMMIT."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

PG_HOST, PG_PORT = "127.0.0.1", 5432


class CuttingProxy:
    """127.0.0.1:PORT -> the real server; `arm(...)` chooses where it cuts."""

    def __init__(self) -> None:
        self.port = 0
        self.conns: list[socket.socket] = []
        self.lock = threading.Lock()
        self.listener: socket.socket | None = None
        self.rule: list[bytes] = []
        self.marker: Path | None = None
        self.outage = 0.0
        self.seen_any: set[int] = set()  # the rule's ANY: patterns seen (on any connection), by index
        self.marker_seen = False  # did the marker exist when the cut happened?
        self.fired = threading.Event()
        self.restored = threading.Event()
        self.up()

    def arm(self, *patterns: bytes, marker: Path | None = None, outage: float = 1.5) -> None:
        """Cut when `patterns` have been sent in order (ANY: ones on any connection)."""
        self.rule, self.marker, self.outage = list(patterns), marker, outage

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        # shutdown first: a close alone leaves the accept() blocked in another thread
        # listening, and one more connection would get through the "outage".
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # not connected (some kernels): the close below still ends it
        self.listener.close()
        with self.lock:
            for conn in self.conns:
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # already closed by its other end
                conn.close()
            self.conns.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed by down()
            upstream = socket.create_connection((PG_HOST, PG_PORT))
            with self.lock:
                self.conns += [client, upstream]
            self._relay(client, upstream)

    def _relay(self, client: socket.socket, upstream: socket.socket) -> None:
        """Carry one connection both ways (its client's side watched for the rule)."""
        threading.Thread(target=self._client_to_server, args=(client, upstream), daemon=True).start()
        threading.Thread(target=self._pipe, args=(upstream, client), daemon=True).start()

    def _see_shared(self, data: bytes) -> None:
        """Note the rule's next ANY: pattern, if `data` (from any connection) holds it."""
        for index, pattern in enumerate(self.rule):
            if pattern.startswith(b"ANY:") and index not in self.seen_any:
                if pattern[4:] in data:
                    self.seen_any.add(index)
                return  # only the next unseen one: they are seen in order

    def _matches(self, data: bytes, state: list[int]) -> bool:
        """Advance this connection's place in the rule; True when the rule completes here."""
        with self.lock:
            self._see_shared(data)
        while not self.fired.is_set() and state[0] < len(self.rule):
            pattern = self.rule[state[0]]
            if pattern.startswith(b"ANY:"):
                if state[0] not in self.seen_any:
                    return False
                state[0] += 1
                continue
            if pattern not in data:
                return False
            state[0] += 1
            data = data[data.index(pattern) + len(pattern):]
            if state[0] == len(self.rule):
                return True
        return False

    def _client_to_server(self, client: socket.socket, upstream: socket.socket) -> None:
        state = [0]
        try:
            while data := client.recv(65536):
                if self.rule and self._matches(data, state):
                    self._fire(client, upstream, data)
                    return
                upstream.sendall(data)
        except OSError:
            pass  # cut: the other side sees the connection drop
        finally:
            self._close(client, upstream)

    def _fire(self, client: socket.socket, upstream: socket.socket, data: bytes) -> None:
        """The rule completed with `data` (held back): what this proxy does then."""
        self._cut()

    def _cut(self) -> None:
        self.fired.set()
        if self.marker is not None:
            deadline = time.monotonic() + 20
            while not self.marker.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            self.marker_seen = self.marker.exists()
        self.down()
        time.sleep(self.outage)
        self.up()
        self.restored.set()

    @classmethod
    def _pipe(cls, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass  # cut by down()
        finally:
            cls._close(src, dst)

    @staticmethod
    def _close(*socks: socket.socket) -> None:
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already shut


class ReplyLosingProxy(CuttingProxy):
    """When the rule completes, its last message IS forwarded and the server applies it, but
    its answer never comes back; then every connection is cut for `outage` seconds. A COMMIT
    the server applied whose reply was lost to a crash or a network cut at that moment."""

    def __init__(self) -> None:
        self.muted: set[socket.socket] = set()  # server sides whose answers no longer reach the client
        super().__init__()

    def _fire(self, client: socket.socket, upstream: socket.socket, data: bytes) -> None:
        self.muted.add(upstream)
        upstream.sendall(data)
        time.sleep(0.5)  # the server applies it meanwhile
        self._cut()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:  # type: ignore[override]
        try:
            while data := src.recv(65536):
                if src not in self.muted:
                    dst.sendall(data)
        except OSError:
            pass  # cut
        finally:
            self._close(src, dst)


class RefusingProxy(CuttingProxy):
    """When the rule completes, that message is held back and only its connection dropped;
    new connections are refused for `outage` seconds (a server at max_connections), while
    the connections already open stay up."""

    def _fire(self, client: socket.socket, upstream: socket.socket, data: bytes) -> None:
        self.fired.set()
        self._close(client, upstream)
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # not listening yet on some kernels
        self.listener.close()
        time.sleep(self.outage)
        self.up()
        self.restored.set()
