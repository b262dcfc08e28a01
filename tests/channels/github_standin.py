"""A GitHub REST stand-in on loopback: records what the channel's real client sends."""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class GitHubStandIn:
    """`heads` maps `owner/repo#n` to the head SHA `GET .../pulls/n` answers."""

    heads: dict[str, str] = field(default_factory=dict)
    fail_comments: int = 0  # answer this many comment posts with 502 first
    fail_reads: int = 0  # answer this many reads (GET) with 502 first
    # `owner/repo#n` whose pull request reads answer 502, whoever reads, until removed.
    unreadable: set[str] = field(default_factory=set)
    requests: list[Recorded] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def reset(self) -> None:
        """Forget every request and restore the default answers, so that one stand-in can
        serve a module of tests, each starting from nothing."""
        with self._lock:
            self.heads.clear()
            self.fail_comments = self.fail_reads = 0
            self.unreadable.clear()
            self.requests.clear()

    def comments(self, number: int | None = None) -> list[Recorded]:
        pattern = re.compile(r"^/repos/[^/]+/[^/]+/issues/(\d+)/comments$")
        with self._lock:
            out = []
            for r in self.requests:
                m = pattern.match(r.path)
                if r.method == "POST" and m and (number is None or int(m[1]) == number):
                    out.append(r)
            return out

    def reactions(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/reactions")]

    def start(self) -> GitHubStandIn:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def _answer(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _record(self) -> Recorded:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                rec = Recorded(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    json.loads(raw) if raw else None,
                )
                with standin._lock:
                    standin.requests.append(rec)
                return rec

            def do_POST(self) -> None:
                rec = self._record()
                if rec.path.endswith("/comments"):
                    with standin._lock:
                        failing = standin.fail_comments > 0
                        standin.fail_comments -= int(failing)
                    if failing:
                        self._answer(502, {"message": "Bad Gateway"})
                        return
                    self._answer(201, {"id": len(standin.requests), "body": rec.body["body"]})
                    return
                self._answer(201, {"content": (rec.body or {}).get("content")})

            def do_GET(self) -> None:
                rec = self._record()
                with standin._lock:
                    failing = standin.fail_reads > 0
                    standin.fail_reads -= int(failing)
                m = re.match(r"^/repos/([^/]+)/([^/]+)/pulls/(\d+)$", rec.path)
                key = f"{m[1]}/{m[2]}#{m[3]}" if m else ""
                with standin._lock:
                    failing = failing or key in standin.unreadable
                if failing:
                    self._answer(502, {"message": "Bad Gateway"})
                    return
                if m is None:
                    self._answer(404, {"message": "Not Found"})
                    return
                self._answer(200, {"number": int(m[3]), "head": {"sha": standin.heads.get(key)}})

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
