"""A Slack Web API stand-in on loopback: records what the pack's real client sends."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl


@dataclass
class Call:
    method: str
    headers: dict[str, str]
    args: dict[str, Any]


@dataclass
class SlackStandIn:
    """`status_ok`: whether `assistant.threads.setStatus` is offered (else the reaction
    fallback is used); `rate_limit_posts`: answer this many `chat.postMessage` with 429."""

    status_ok: bool = False
    rate_limit_posts: int = 0
    calls: list[Call] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ts: int = 0

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/api/"

    def of(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def posts(self) -> list[Call]:
        return self.of("chat.postMessage")

    def start(self) -> SlackStandIn:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def _answer(self, status: int, body: Any, headers: dict[str, str] | None = None):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length).decode() if length else ""
                ctype = self.headers.get("content-type", "")
                args = json.loads(raw) if "json" in ctype and raw else dict(parse_qsl(raw))
                method = self.path.rsplit("/", 1)[-1]
                call = Call(method, {k.lower(): v for k, v in self.headers.items()}, args)
                with standin._lock:
                    if method == "chat.postMessage" and standin.rate_limit_posts > 0:
                        standin.rate_limit_posts -= 1
                        standin.calls.append(Call("ratelimited", call.headers, args))
                        self._answer(
                            429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "1"}
                        )
                        return
                    standin.calls.append(call)
                    standin._ts += 1
                    ts = f"1800000000.{standin._ts:06d}"
                if not call.headers.get("authorization", "").startswith("Bearer xoxb-"):
                    self._answer(200, {"ok": False, "error": "not_authed"})
                elif method == "assistant.threads.setStatus" and not standin.status_ok:
                    self._answer(200, {"ok": False, "error": "not_allowed_token_type"})
                elif method == "chat.postMessage":
                    self._answer(
                        200,
                        {
                            "ok": True,
                            "channel": args.get("channel"),
                            "ts": ts,
                            "message": {"text": args.get("text"), "ts": ts},
                        },
                    )
                elif method == "chat.postEphemeral":
                    self._answer(200, {"ok": True, "message_ts": ts})
                else:
                    self._answer(200, {"ok": True})

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
