"""A loopback HTTP server whose answers a test scripts, for what a real server will not do
on cue: answer 503 a few times, drop a connection without answering, stall mid-body.

Each request is recorded (method, path, headers, body) and handed to `respond`, which
answers through the `Exchange`: `json()` a whole answer, `drop()` the connection unanswered,
or `write()` a body piece by piece (an HTTP/1.0 body, ended by closing the connection).
`release` is set when the server closes, so a handler that stalls can let go.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Exchange:
    seen: Seen
    handler: BaseHTTPRequestHandler
    release: threading.Event

    def json(
        self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        body = json.dumps(payload).encode()
        self.handler.send_response(status)
        for name, value in (headers or {}).items():
            self.handler.send_header(name, value)
        self.handler.send_header("content-type", "application/json")
        self.handler.send_header("content-length", str(len(body)))
        self.handler.end_headers()
        self.handler.wfile.write(body)

    def drop(self) -> None:
        """Read the request, answer nothing, close: as when an answer is lost on the way."""
        self.handler.close_connection = True

    def open_body(self, content_type: str = "application/x-ndjson") -> None:
        self.handler.send_response(200)
        self.handler.send_header("content-type", content_type)
        self.handler.end_headers()

    def write(self, text: str) -> None:
        self.handler.wfile.write(text.encode())
        self.handler.wfile.flush()


@dataclass
class Scripted:
    url: str
    requests: list[Seen] = field(default_factory=list)

    def of(self, method: str) -> list[Seen]:
        return [r for r in self.requests if r.method == method]


@contextmanager
def scripted(respond: Callable[[Exchange], None]) -> Iterator[Scripted]:
    release = threading.Event()
    record: list[Seen] = []

    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            seen = Seen(
                self.command,
                self.path,
                {k.lower(): v for k, v in self.headers.items()},
                self.rfile.read(length),
            )
            record.append(seen)
            respond(Exchange(seen, self, release))

        do_GET = do_POST = _handle

        def log_message(self, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield Scripted(f"http://127.0.0.1:{server.server_address[1]}/a", record)
    finally:
        release.set()
        server.shutdown()
        server.server_close()


def wire(index: int, kind: str, data: dict[str, Any], turn_id: str | None = None) -> str:
    """One event as the stream sends it."""
    raw: dict[str, Any] = {"type": kind, "index": index, "sessionId": "ses_x", "at": "t"}
    if turn_id is not None:
        raw["turnId"] = turn_id
    raw["data"] = data
    return json.dumps(raw) + "\n"


ACCEPTED = {"sessionId": "ses_x", "continuationToken": "tok_2", "turnId": "turn_1"}
