"""Item 3: clients that open connections and stall (slowloris) cannot exhaust `agentkit
serve`: the server cuts a slow request head or body at its deadline, keeps its connections
under a limit, and reports a failing `accept()` in a few lines, not thousands."""

from __future__ import annotations

import contextlib
import selectors
import socket
import time
from collections.abc import Iterator

import httpx

from tests.fixtures.http_server import Served, ServeFactory

FD_LIMIT = 1024
PARTIAL_HEAD = b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


@contextlib.contextmanager
def stalled(port: int, count: int, first_bytes: bytes) -> Iterator[list[socket.socket]]:
    """`count` connections that each sent `first_bytes` and then nothing more."""
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(first_bytes)
            socks.append(sock)
        yield socks
    finally:
        for sock in socks:
            sock.close()


def closed_by_server(socks: list[socket.socket], within: float) -> int:
    """Wait until the server has closed each socket (or `within` seconds pass); how many it
    closed. A closed socket reads as end of file, or as a reset when the server aborted."""
    selector = selectors.DefaultSelector()
    for sock in socks:
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
    closed = 0
    deadline = time.monotonic() + within
    while closed < len(socks) and (left := deadline - time.monotonic()) > 0:
        for key, _ in selector.select(timeout=left):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            try:
                data = sock.recv(4096)
            except ConnectionResetError:
                data = b""
            if not data:
                selector.unregister(sock)
                closed += 1
    selector.close()
    return closed


def wait_for_line(served: Served, text: str, within: float) -> None:
    deadline = time.monotonic() + within
    while text not in served.output():
        assert time.monotonic() < deadline, served.output()[-3000:]
        time.sleep(0.05)


def health_answers(root_url: str) -> None:
    r = httpx.get(f"{root_url}/v1/health", timeout=2.0)
    assert r.status_code == 200, r.text
    assert r.json()["ok"] is True


def test_stalled_request_heads_are_cut_and_others_are_served(serve: ServeFactory) -> None:
    served = serve("--header-timeout", "3", fd_limit=FD_LIMIT)
    idle_fds = served.open_fds()
    with stalled(served.port, 300, PARTIAL_HEAD) as socks:
        health_answers(served.root_url)
        # The deadline runs from each connection's start; the margin covers a loaded machine.
        assert closed_by_server(socks, within=3 + 15) == len(socks)
    health_answers(served.root_url)
    assert served.proc is not None and served.proc.poll() is None
    assert served.open_fds() < idle_fds + 20
    assert "Traceback" not in served.output(), served.output()


def test_a_request_body_that_trickles_is_cut(serve: ServeFactory) -> None:
    served = serve("--body-timeout", "1", "--min-body-rate", "100", fd_limit=FD_LIMIT)
    head = (
        f"POST /helpdesk/v1/session HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\n"
        "Content-Type: application/json\r\nContent-Length: 5000\r\n\r\n"
    ).encode()
    with stalled(served.port, 50, head + b'{"message": "') as socks:
        health_answers(served.root_url)
        assert closed_by_server(socks, within=1 + 15) == len(socks)
    # A client that sends its body at once is served as ever.
    r = httpx.post(f"{served.url}/v1/session", json={"message": "hello"}, timeout=30)
    assert r.status_code == 200, r.text
    with httpx.Client(timeout=30) as client:
        sessions = client.get(f"{served.url}/v1/sessions").json()["sessions"]
    assert len(sessions) == 1
    assert "Traceback" not in served.output(), served.output()


def test_past_the_connection_limit_the_longest_waiting_connection_makes_room(
    serve: ServeFactory,
) -> None:
    served = serve("--max-connections", "20", "--header-timeout", "120", fd_limit=FD_LIMIT)
    with stalled(served.port, 60, PARTIAL_HEAD) as socks:
        health_answers(served.root_url)
        # The first 41 stalled connections were pushed out (the 60 and the health check
        # came in after them), long before their own deadline.
        assert closed_by_server(socks[:41], within=15) == 41
        health_answers(served.root_url)
    assert "Traceback" not in served.output(), served.output()


def test_a_busy_server_answers_503_past_the_connection_limit(serve: ServeFactory) -> None:
    served = serve("--max-connections", "2", fd_limit=FD_LIMIT)
    with httpx.Client(timeout=30) as a, httpx.Client(timeout=30) as b:
        # Two followed streams: connections busy with a request, which nothing pushes out.
        sid = a.post(f"{served.url}/v1/session", json={"message": "hi"}).json()["sessionId"]
        events = f"{served.url}/v1/session/{sid}/stream"
        with a.stream("GET", events) as first, b.stream("GET", events) as second:
            # Held, not dropped: a dropped line iterator closes its connection.
            lines = [first.iter_lines(), second.iter_lines()]
            assert all('"session.started"' in next(each) for each in lines)
            r = httpx.get(f"{served.root_url}/v1/health", timeout=5)
            assert r.status_code == 503
            assert r.text == "too many connections"
    health_answers(served.root_url)


def test_running_out_of_descriptors_is_logged_in_a_few_lines(serve: ServeFactory) -> None:
    # A limit above what the process can open: `accept()` itself fails with EMFILE.
    served = serve("--max-connections", "1000", fd_limit=128)
    with stalled(served.port, 200, PARTIAL_HEAD):
        wait_for_line(served, "cannot accept connections", within=15)
    # Once the stalled clients are gone the server serves again, without a restart.
    deadline = time.monotonic() + 15
    while True:
        try:
            health_answers(served.root_url)
            break
        except httpx.HTTPError:
            assert time.monotonic() < deadline, served.output()
    assert served.proc is not None and served.proc.poll() is None
    served.stop()
    out = served.output()
    assert "cannot accept connections: Too many open files" in out
    assert out.count("Too many open files") <= 5, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
