"""`agentkit sessions list` passes its filters on as the listing's query parameters."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from agentkit.cli import main


class Recorder(BaseHTTPRequestHandler):
    seen: list[tuple[str, dict[str, list[str]], str | None]] = []

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        self.seen.append((parts.path, parse_qs(parts.query), self.headers.get("authorization")))
        body = json.dumps({"sessions": [], "cursor": None}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = HTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    Recorder.seen = []
    yield f"http://127.0.0.1:{httpd.server_address[1]}/helpdesk"
    httpd.shutdown()
    httpd.server_close()


def test_list_sends_the_filters_as_query_parameters(
    server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "sessions", "list", "--url", server, "--token", "T",
            "--status", "running", "--principal", "bearer:abc", "--min-cost", "0.5",
            "--started-after", "2026-01-01T00:00:00Z", "--started-before", "2026-02-01T00:00:00Z",
        ]
    )  # fmt: skip
    assert code == 0
    assert json.loads(capsys.readouterr().out) == {"sessions": [], "cursor": None}
    [(path, query, auth)] = Recorder.seen
    assert path == "/helpdesk/v1/sessions"
    assert auth == "Bearer T"
    assert query == {
        "status": ["running"],
        "principal": ["bearer:abc"],
        "minCost": ["0.5"],
        "startedAfter": ["2026-01-01T00:00:00Z"],
        "startedBefore": ["2026-02-01T00:00:00Z"],
    }
