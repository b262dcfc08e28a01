"""`agentkit stream` over a connection that drops mid-response (not a window the server
ended): a loopback TCP proxy in front of a real `agentkit serve` closes the connection
part-way through a stream body. The follower resumes from the next index, prints every
event once, and gives up with a clear message only after its retries run out."""

from __future__ import annotations

import contextlib
import io
import socket
import threading
from typing import Any

import httpx
import pytest

from agentkit.cli import main
from agentkit.cli.stream import EXIT_REFUSED, StreamFollower
from tests.cli.test_stream import printed, recorded, start
from tests.fixtures.http_server import Served
from tests.server.helpers import read_stream, turn_ends


class DroppingProxy:
    """Forwards loopback TCP connections to `upstream`; the first `drops` stream requests
    get their response cut (the connection closed) after `cut_after` bytes of body."""

    def __init__(self, upstream: int, *, drops: int, cut_after: int) -> None:
        self.upstream = upstream
        self.drops = drops
        self.cut_after = cut_after
        self.dropped = 0
        self.streams = 0
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._server.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.upstream))
        with contextlib.suppress(OSError):
            head = b""
            while b"\r\n\r\n" not in head:
                data = client.recv(65536)
                if not data:
                    return
                head += data
            cut = False
            if b"/stream?" in head.split(b"\r\n", 1)[0]:
                with self._lock:
                    self.streams += 1
                    cut = self.dropped < self.drops
                    self.dropped += int(cut)
            upstream.sendall(head)
            threading.Thread(target=_pipe, args=(client, upstream), daemon=True).start()
            self._respond(upstream, client, cut)
        for sock in (client, upstream):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes the pipe thread's recv too
            sock.close()

    def _respond(self, upstream: socket.socket, client: socket.socket, cut: bool) -> None:
        seen = b""
        while True:
            data = upstream.recv(65536)
            if not data:
                return
            if not cut:
                client.sendall(data)
                continue
            seen += data
            if b"\r\n\r\n" not in seen:
                client.sendall(data)
                continue
            start = len(seen) - len(data)
            header_end = seen.index(b"\r\n\r\n") + 4
            allowed = max(0, header_end + self.cut_after - start)
            client.sendall(data[:allowed])
            if start + len(data) >= header_end + self.cut_after:
                return  # the connection closes mid-body: the chunked body never ends


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := src.recv(65536):
            dst.sendall(data)


def _settled(served: Served, message: str) -> str:
    sid = str(start(served, message)["sessionId"])
    with httpx.Client(timeout=30) as client:
        read_stream(client, served.url, sid, until=turn_ends())
    return sid


@pytest.fixture
def proxied(shared_server: Served) -> Any:
    proxies: list[DroppingProxy] = []

    def make(drops: int, cut_after: int) -> tuple[str, DroppingProxy]:
        proxy = DroppingProxy(shared_server.port, drops=drops, cut_after=cut_after)
        proxies.append(proxy)
        base = shared_server.url.replace(f":{shared_server.port}", f":{proxy.port}")
        return base, proxy

    yield make
    for proxy in proxies:
        proxy.close()


def test_a_stream_cut_mid_body_resumes_and_prints_each_event_once(
    shared_server: Served, proxied: Any
) -> None:
    sid = _settled(shared_server, "What is the weather in Oslo?")
    url, proxy = proxied(drops=2, cut_after=300)
    out = io.StringIO()
    with httpx.Client(timeout=httpx.Timeout(30.0, read=None)) as client:
        follower = StreamFollower(
            client, url, sid, start=0, window=None, follow=False, retries=3, out=out
        )
        assert follower.run() == 0

    assert proxy.dropped == 2 and proxy.streams == 3  # two cut responses, then a whole one
    events = printed(out.getvalue())
    assert [e["index"] for e in events] == list(range(len(events)))
    assert events == recorded(shared_server, sid)


def test_drops_that_never_let_an_event_through_give_up_after_the_retries(
    shared_server: Served, proxied: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    sid = _settled(shared_server, "hello")
    url, proxy = proxied(drops=1000, cut_after=0)

    code = main(["stream", "--url", url, "--session", sid, "--retries", "2"])

    assert code == EXIT_REFUSED
    assert proxy.streams == 3  # the first try and two retries, then no more
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "lost the stream" in captured.err
