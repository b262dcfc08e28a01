"""A loopback HTTP server that replays recorded provider responses, one per request.

The real SDK clients (anthropic, openai, botocore) are pointed at it with a base URL, so
requests and streamed responses cross a real socket in the providers' wire formats.
"""

from __future__ import annotations

import json
import threading
import zlib
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

RECORDINGS = Path(__file__).parent / "recordings"


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def sse(name: str) -> Reply:
    """A recorded SSE stream from `recordings/<name>`."""
    body = (RECORDINGS / name).read_bytes()
    return Reply(200, body, {"content-type": "text/event-stream", "cache-control": "no-cache"})


def json_reply(status: int, payload: Any, **headers: str) -> Reply:
    return Reply(
        status, json.dumps(payload).encode(), {"content-type": "application/json", **headers}
    )


class ReplayServer:
    """Serves queued `Reply`s in order on 127.0.0.1; records every request it receives."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.received: list[Received] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                server.received.append(
                    Received(
                        "POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body
                    )
                )
                reply = (
                    server.replies.popleft()
                    if server.replies
                    else Reply(599, b'{"message": "replay server: no reply queued"}')
                )
                self.send_response(reply.status)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def queue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def start(self) -> ReplayServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


# ---- AWS event stream framing (application/vnd.amazon.eventstream) -------------------


def _frame(headers: dict[str, str], payload: bytes) -> bytes:
    encoded = b"".join(
        len(k).to_bytes(1, "big") + k.encode() + b"\x07" + len(v).to_bytes(2, "big") + v.encode()
        for k, v in headers.items()
    )
    total = 12 + len(encoded) + len(payload) + 4
    prelude = total.to_bytes(4, "big") + len(encoded).to_bytes(4, "big")
    message = prelude + zlib.crc32(prelude).to_bytes(4, "big") + encoded + payload
    return message + zlib.crc32(message).to_bytes(4, "big")


def event_frame(event_type: str, body: dict[str, Any]) -> bytes:
    return _frame(
        {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"},
        json.dumps(body).encode(),
    )


def exception_frame(exception_type: str, message: str) -> bytes:
    return _frame(
        {
            ":exception-type": exception_type,
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        json.dumps({"message": message}).encode(),
    )


def eventstream(name: str) -> Reply:
    """A recorded ConverseStream from `recordings/<name>` (JSON lines: event type, body)."""
    frames = b""
    for line in (RECORDINGS / name).read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if "exception" in record:
            frames += exception_frame(record["exception"], record["message"])
        else:
            frames += event_frame(record["event"], record["body"])
    return Reply(200, frames, {"content-type": "application/vnd.amazon.eventstream"})


async def collect(stream: Any) -> list[Any]:
    """Every chunk of a model stream, in order."""
    return [chunk async for chunk in stream]
