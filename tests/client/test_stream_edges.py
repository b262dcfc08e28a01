"""Stream edges against a real HTTP server that answers canned NDJSON: a skipped index
raises `StreamGap` (or goes to `on_gap`), and U+2028/U+2029/U+0085 inside a JSON string
never split a line."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agentkit.client import ApiError, Client, StreamGap
from agentkit.events import EventType

SEPARATORS = "a\u2028b\u2029c\u0085d"


@contextmanager
def answering(respond: Callable[[str], tuple[int, bytes]]) -> Iterator[str]:
    """A real HTTP server on loopback whose GETs `respond(path)` answers as (status, body)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body = respond(self.path)
            self.send_response(status)
            self.send_header("content-type", "application/x-ndjson")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/a"
    finally:
        server.shutdown()
        server.server_close()


def canned(text: str, status: int = 200) -> AbstractContextManager[str]:
    """Every stream request gets `text` (other GETs an empty body)."""
    return answering(lambda path: (status, text.encode("utf-8") if "/stream" in path else b""))


def wire(index: int, kind: str, data: dict[str, Any]) -> str:
    raw = {"type": kind, "index": index, "sessionId": "ses_x", "at": "t", "data": data}
    return json.dumps(raw, ensure_ascii=False) + "\n"


GAPPED = (
    wire(0, "message.received", {"message": SEPARATORS})
    + wire(1, "turn.started", {})
    + wire(3, "session.completed", {})
)


def test_a_gap_raises_after_the_events_before_it() -> None:
    seen = []
    with canned(GAPPED) as url, Client(url) as client, pytest.raises(StreamGap) as gap:
        for event in client.session("ses_x").events():
            seen.append(event)
    assert [e.index for e in seen] == [0, 1]
    assert (gap.value.expected, gap.value.got) == (2, 3)
    assert seen[0].data["message"] == SEPARATORS  # one line, not four


def test_on_gap_reports_and_goes_on() -> None:
    gaps: list[StreamGap] = []
    with canned(GAPPED) as url, Client(url) as client:
        seen = list(client.session("ses_x").events(on_gap=gaps.append))
    assert [e.index for e in seen] == [0, 1, 3]
    assert seen[-1].type == EventType.SESSION_COMPLETED
    assert [(g.expected, g.got) for g in gaps] == [(2, 3)]


def test_a_non_json_error_answer_is_still_an_api_error() -> None:
    with (
        canned("upstream exploded", status=500) as url,
        Client(url) as client,
        pytest.raises(ApiError) as refused,
    ):
        list(client.session("ses_x").events())
    assert refused.value.status == 500 and refused.value.code == "http_500"
    assert "upstream exploded" in str(refused.value)


@contextmanager
def overlapping() -> Iterator[tuple[str, list[int]]]:
    """A server whose second window starts two events before where the client asked: a
    store read that overlaps the first window (as a retried or windowed read can)."""
    asked: list[int] = []
    first = "".join(wire(i, "message.appended", {"text": str(i)}) for i in range(3))

    def respond(path: str) -> tuple[int, bytes]:
        if "/stream" not in path:
            return 200, b""
        start = int(path.split("startIndex=")[1].split("&")[0])
        asked.append(start)
        if len(asked) == 1:
            return 200, first.encode()
        lines = [wire(i, "message.appended", {"text": str(i)}) for i in range(max(0, start - 2), 5)]
        return 200, ("".join(lines) + wire(5, "session.completed", {})).encode()

    with answering(respond) as url:
        yield url, asked


def test_an_overlapping_window_after_a_resume_yields_nothing_twice() -> None:
    with overlapping() as (url, asked), Client(url) as client:
        seen = list(client.session("ses_x").events())
    assert asked[:2] == [0, 3]  # it resumed at the next index
    assert [e.index for e in seen] == [0, 1, 2, 3, 4, 5]
    assert [e.data.get("text") for e in seen[:5]] == ["0", "1", "2", "3", "4"]


async def test_the_async_client_yields_nothing_twice_from_an_overlapping_window() -> None:
    from agentkit.client import AsyncClient

    with overlapping() as (url, asked):
        async with AsyncClient(url) as client:
            seen = [e async for e in client.session("ses_x").events()]
    assert asked[:2] == [0, 3]
    assert [e.index for e in seen] == [0, 1, 2, 3, 4, 5]
