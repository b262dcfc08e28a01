"""A Slack Web API stand-in on loopback: records what the pack's real client sends."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl

STREAM_METHODS = ("chat.startStream", "chat.appendStream", "chat.stopStream")


@dataclass
class Call:
    method: str
    headers: dict[str, str]
    args: dict[str, Any]


@dataclass
class Streamed:
    """A message opened with `chat.startStream`: its text so far, and whether it still
    streams (Slack finalizes it on `chat.stopStream`, or by itself when idle)."""

    channel: str
    thread_ts: str
    ts: str
    recipient: tuple[str | None, str | None]
    text: str = ""
    streaming: bool = True
    stopped: bool = False  # finalized by chat.stopStream (not by idling)


@dataclass
class SlackStandIn:
    """`status_ok`: whether `assistant.threads.setStatus` is offered (else the reaction
    fallback is used); `rate_limit_posts`: answer this many `chat.postMessage` with 429.

    `streams`: whether the streaming methods exist here (else `chat.startStream` answers
    `unknown_method`, as for an app or workspace without them); `rate_limit_appends`:
    answer this many `chat.appendStream` with 429; `finalize_streams()` finalizes every
    open stream as Slack does to an idle one."""

    status_ok: bool = False
    rate_limit_posts: int = 0
    streams: bool = False
    rate_limit_appends: int = 0
    fail_appends: str | None = None  # answer chat.appendStream with this error
    streamed: dict[str, Streamed] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ts: int = 0

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/api/"

    def reset(self) -> None:
        """Forget every call and stream and restore the default answers, so that one
        stand-in can serve a module of tests, each starting from nothing."""
        with self._lock:
            self.status_ok, self.streams = False, False
            self.rate_limit_posts = self.rate_limit_appends = 0
            self.fail_appends = None
            self.streamed.clear()
            self.calls.clear()

    def of(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def posts(self) -> list[Call]:
        return self.of("chat.postMessage")

    def finalize_streams(self) -> list[str]:
        """Finalize every open stream, as Slack does when one stays idle; their ts."""
        with self._lock:
            open_ = [m for m in self.streamed.values() if m.streaming]
            for message in open_:
                message.streaming = False
            return [m.ts for m in open_]

    def messages(self) -> list[Streamed]:
        """The streamed messages, in the order they were opened."""
        with self._lock:
            return sorted(self.streamed.values(), key=lambda m: m.ts)

    def _stream_call(self, method: str, args: dict[str, Any], ts: str) -> dict[str, Any]:
        """chat.startStream / appendStream / stopStream (called under the lock)."""
        if not self.streams:
            return {"ok": False, "error": "unknown_method"}
        text = str(args.get("markdown_text") or "")
        if method == "chat.startStream":
            if not args.get("channel") or not args.get("thread_ts"):
                return {"ok": False, "error": "invalid_arguments"}
            recipient = (args.get("recipient_team_id"), args.get("recipient_user_id"))
            self.streamed[ts] = Streamed(
                str(args["channel"]), str(args["thread_ts"]), ts, recipient, text
            )
            return {"ok": True, "channel": args["channel"], "ts": ts}
        message = self.streamed.get(str(args.get("ts")))
        if message is None or message.channel != args.get("channel"):
            return {"ok": False, "error": "message_not_found"}
        if not message.streaming:
            return {"ok": False, "error": "message_not_in_streaming_state"}
        if method == "chat.appendStream" and self.fail_appends:
            return {"ok": False, "error": self.fail_appends}
        message.text += text
        if method == "chat.stopStream":
            message.streaming, message.stopped = False, True
        return {"ok": True, "channel": message.channel, "ts": message.ts}

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
                    if method == "chat.appendStream" and standin.rate_limit_appends > 0:
                        standin.rate_limit_appends -= 1
                        standin.calls.append(Call("ratelimited", call.headers, args))
                        self._answer(
                            429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "1"}
                        )
                        return
                    standin.calls.append(call)
                    standin._ts += 1
                    ts = f"1800000000.{standin._ts:06d}"
                    authed = call.headers.get("authorization", "").startswith("Bearer xoxb-")
                    if authed and method in STREAM_METHODS:
                        self._answer(200, standin._stream_call(method, args, ts))
                        return
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
        # `stop()` waits for the serve loop to see its request, up to one poll interval
        # (0.5 s by default, paid by every test that stops a stand-in).
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
