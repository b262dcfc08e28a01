"""An OpenAI-compatible chat completions server on loopback that streams scripted replies.

The agent under test runs on the real `openai` provider pointed at it (`OPENAI_BASE_URL`),
so its text reaches the engine as real streamed deltas. A script is a list of text pieces,
each sent as its own chunk; a `threading.Event` in a script holds the stream there until
the test sets it, so "the model is idle" is a state the test controls, not a duration.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

GATE_TIMEOUT = 120.0
Script = list[str | threading.Event]


def _chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> bytes:
    body = {
        "id": "chatcmpl-standin",
        "object": "chat.completion.chunk",
        "created": 1732900000,
        "model": "gpt-4o",
        "choices": [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}],
        "usage": usage,
    }
    return b"data: " + json.dumps(body).encode() + b"\n\n"


class ChatStandIn:
    """Serves queued scripts, one per request, in order; records every request body."""

    def __init__(self) -> None:
        self.scripts: deque[Script] = deque()
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def _send(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with standin._lock:
                    standin.requests.append(body)
                    script = standin.scripts.popleft() if standin.scripts else ["(unscripted)"]
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                self._send(_chunk({"role": "assistant", "content": ""}))
                for item in script:
                    if isinstance(item, threading.Event):
                        item.wait(GATE_TIMEOUT)
                        continue
                    self._send(_chunk({"content": item}))
                self._send(_chunk({}, finish="stop"))
                usage = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
                self._send(_chunk({}, usage=usage))
                self._send(b"data: [DONE]\n\n")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def queue(self, *scripts: Script) -> None:
        with self._lock:
            self.scripts.extend(scripts)

    def start(self) -> ChatStandIn:
        # `stop()` waits for the serve loop to see its request, up to one poll interval
        # (0.5 s by default, paid by every test that stops a stand-in).
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
