"""A loopback TCP proxy that cuts every stream connection after a few events.

It forwards bytes both ways unchanged. Once a connection has carried a `/stream` request,
it counts the events (`"index":`) going back to the client and, at the `every`-th one,
forwards only part of that event's line and closes both sides: the client sees a torn
line and a broken connection, as after a network drop.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

MARK = b'"index":'


class CuttingProxy:
    def __init__(self, upstream_port: int, every: int = 3, drop_answers: int = 0) -> None:
        self.upstream_port = upstream_port
        self.every = every
        self.cuts = 0
        # The first `drop_answers` connections reach the server, but its answer is never
        # passed back: the request was handled, the client sees the connection break.
        self.drop_answers = drop_answers
        self.dropped = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._closed = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                downstream, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            state = {"streaming": False}
            threading.Thread(
                target=self._requests, args=(downstream, upstream, state), daemon=True
            ).start()
            threading.Thread(
                target=self._responses, args=(upstream, downstream, state), daemon=True
            ).start()

    def _requests(self, src: socket.socket, dst: socket.socket, state: dict[str, bool]) -> None:
        for chunk in _chunks(src):
            if b"/stream" in chunk:
                state["streaming"] = True
            try:
                dst.sendall(chunk)
            except OSError:
                break
        _close(src, dst)

    def _responses(self, src: socket.socket, dst: socket.socket, state: dict[str, bool]) -> None:
        seen = 0
        for chunk in _chunks(src):
            if self.dropped < self.drop_answers:
                self.dropped += 1
                break
            if state["streaming"]:
                at = -1
                while seen < self.every:
                    at = chunk.find(MARK, at + 1)
                    if at < 0:
                        break
                    seen += 1
                if seen >= self.every and at >= 0:
                    with contextlib.suppress(OSError):
                        dst.sendall(chunk[: at + len(MARK) + 2])  # a torn line
                    self.cuts += 1
                    break
            try:
                dst.sendall(chunk)
            except OSError:
                break
        _close(src, dst)


def _chunks(sock: socket.socket) -> Iterator[bytes]:
    while True:
        try:
            chunk = sock.recv(65536)
        except OSError:
            return
        if not chunk:
            return
        yield chunk


def _close(*socks: socket.socket) -> None:
    for sock in socks:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            sock.close()
