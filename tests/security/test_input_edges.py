"""Item 6: small input and deployment holes: lone surrogates in workspace paths, huge
durations, line separators inside NDJSON, an unreadable bearer secret, and traces that
would copy conversation text."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from aws_lambda_powertools import Tracer
from aws_lambda_powertools.tracing.base import BaseProvider, BaseSegment

from agentkit.aws import observability
from agentkit.aws.auth import CachedTokens
from agentkit.aws.handlers._common import instrumented
from agentkit.cli.stream import StreamFollower
from agentkit.cron.standard import parse_duration
from agentkit.events import Event
from tests.aws.conftest import FakeContext
from tests.fixtures.http_server import Served
from tests.server.helpers import read_stream, start_session, turn_ends

SEPARATORS = "one\u2028two\u2029three\u0085four"


def test_a_lone_surrogate_in_a_workspace_path_is_a_400(shared_server: Served) -> None:
    # Raw JSON, as an attacker writes it: `\ud800` is valid JSON but no valid text.
    body = '{"message": "hi", "workspaceFiles": {"notes/\\ud800.txt": "x"}}'
    with httpx.Client(timeout=30) as client:
        r = client.post(
            f"{shared_server.url}/v1/session",
            content=body.encode(),
            headers={"content-type": "application/json"},
        )
    assert r.status_code == 400, r.text
    assert r.json()["ok"] is False


@pytest.mark.parametrize("text", ["99999999999999999999d", "9" * 5000 + "s", "4000d"])
def test_an_overflowing_duration_is_a_clear_value_error(text: str) -> None:
    with pytest.raises(ValueError, match="too long"):
        now = datetime.now(UTC)
        now + parse_duration(text)


def test_line_separators_never_split_an_event_line() -> None:
    raw = {"type": "message.received", "index": 0, "sessionId": "ses_x", "at": "t"}
    event = Event.from_wire({**raw, "data": {"t": SEPARATORS}})
    line = event.to_line().decode("utf-8")
    assert line.count("\n") == 1 and len(line.splitlines()) == 1
    assert json.loads(line)["data"]["t"] == SEPARATORS


def test_the_stream_over_http_keeps_separators_inside_one_line(shared_server: Served) -> None:
    with httpx.Client(timeout=60) as client:
        sid = start_session(client, shared_server.url, SEPARATORS)["sessionId"]
        events = read_stream(client, shared_server.url, sid, until=turn_ends())
        raw = client.get(f"{shared_server.url}/v1/session/{sid}/events").text
    # `read_stream` reads with httpx's `iter_lines`, which splits at U+2028: every line
    # still parsed, so none was split.
    [received] = [e for e in events if e["type"] == "message.received"]
    assert received["data"]["message"] == SEPARATORS
    assert all(len(line.splitlines()) == 1 for line in raw.split("\n") if line)


@contextmanager
def _canned_server(text: str) -> Iterator[str]:
    """A real HTTP server answering every stream request with `text` as NDJSON (as a server
    that writes raw separators, or that lost an event, would)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = text.encode("utf-8") if "/stream" in self.path else b""
            self.send_response(200)
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


def _wire(index: int, kind: str, data: dict[str, Any]) -> str:
    raw = {"type": kind, "index": index, "sessionId": "ses_x", "at": "t", "data": data}
    return json.dumps(raw, ensure_ascii=False) + "\n"  # raw separators, as an old server


def test_agentkit_stream_splits_only_on_newlines_and_reports_gaps(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = (
        _wire(0, "message.received", {"message": SEPARATORS})
        + _wire(1, "turn.started", {})
        + _wire(3, "session.completed", {})
    )
    out = io.StringIO()
    with _canned_server(text) as url, httpx.Client(timeout=30) as client:
        follower = StreamFollower(
            client, url, "ses_x", start=0, window=None, follow=False, retries=0, out=out
        )
        assert follower.run() == 0
    printed = [json.loads(line) for line in out.getvalue().split("\n") if line]
    assert [e["index"] for e in printed] == [0, 1, 3]
    assert printed[0]["data"]["message"] == SEPARATORS
    assert "events 2..2 are missing" in capsys.readouterr().err


def test_a_failed_secret_read_keeps_the_last_good_tokens() -> None:
    now = [0.0]
    answers: list[Any] = [["tok-1"], RuntimeError("throttled"), ["tok-2"]]

    def source() -> list[str]:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return list(answer)

    cached = CachedTokens(source, max_age=300, retry_after=5, clock=lambda: now[0])
    assert cached.tokens() == ["tok-1"]
    now[0] = 301
    assert cached.tokens() == ["tok-1"]  # the read failed: callers are not locked out
    now[0] = 303
    assert cached.tokens() == ["tok-1"]  # not hammering the secret store
    now[0] = 307
    assert cached.tokens() == ["tok-2"]  # retried within seconds, not at max_age


def test_a_secret_never_read_admits_nobody_and_is_retried_soon() -> None:
    now = [0.0]
    answers: list[Any] = [RuntimeError("denied"), ["tok-1"]]

    def source() -> list[str]:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return list(answer)

    cached = CachedTokens(source, max_age=300, retry_after=5, clock=lambda: now[0])
    assert cached.tokens() == []
    now[0] = 6
    assert cached.tokens() == ["tok-1"]


class _Segment(BaseSegment):
    def __init__(self, seen: list[Any]) -> None:
        self.seen = seen

    def close(self, end_time: int | None = None) -> None: ...
    def add_subsegment(self, subsegment: Any) -> None: ...
    def remove_subsegment(self, subsegment: Any) -> None: ...

    def put_annotation(self, key: str, value: Any) -> None:
        self.seen.append((key, value))

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None:
        self.seen.append((key, value))

    def add_exception(self, exception: BaseException, stack: Any, remote: bool = False) -> None:
        self.seen.append(("exception", str(exception)))


class _Recorder(BaseProvider):
    """A tracing provider that keeps whatever the Tracer would send to X-Ray."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    @contextmanager
    def in_subsegment(self, name: Any = None, **kwargs: Any) -> Generator[BaseSegment]:
        yield _Segment(self.seen)

    in_subsegment_async = in_subsegment  # type: ignore[assignment]

    def put_annotation(self, key: str, value: Any) -> None: ...
    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None: ...
    def patch(self, modules: Any) -> None: ...
    def patch_all(self) -> None: ...


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Recorder]:
    rec = _Recorder()
    tracer = Tracer(service="agentkit-test", disabled=False, auto_patch=False, provider=rec)
    monkeypatch.delenv("POWERTOOLS_TRACE_DISABLED", raising=False)
    monkeypatch.setattr(observability, "tracer", lambda: tracer)
    yield rec
    Tracer._reset_config()


def test_traces_never_hold_responses_or_errors(recorder: _Recorder) -> None:
    def answer(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"continuationToken": "ct-secret", "message": "my card is 4111"}

    def fail(event: dict[str, Any], context: Any) -> dict[str, Any]:
        raise RuntimeError("conversation: my card is 4111")

    assert instrumented(answer)({}, FakeContext())["continuationToken"] == "ct-secret"
    with pytest.raises(RuntimeError):
        instrumented(fail)({}, FakeContext())
    assert recorder.seen  # the tracer did run (the cold-start annotation at least)
    recorded = repr(recorder.seen)
    assert "ct-secret" not in recorded and "4111" not in recorded


def test_tool_reply_lines_keep_separators(tmp_path: Path) -> None:
    from agentkit.engine.tools.agent_tool import dump_line

    line = dump_line({"ok": True, "result": SEPARATORS})
    assert line.count("\n") == 1 and len(line.splitlines()) == 1
    assert json.loads(line)["result"] == SEPARATORS
