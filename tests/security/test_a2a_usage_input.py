"""Hostile bodies and query strings on `/v1/a2a`, `/v1/ai-sdk/chat` and `/v1/usage`, sent
as an outsider would, through a plain TCP forwarder to `agentkit serve` with a token:
each is a 4xx in the route's own error shape, never a 500."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.fixtures.http_server import Served, serve_in
from tests.fixtures.tcp_forwarder import TcpForwarder, forwarder  # noqa: F401 (fixture)

pytestmark = pytest.mark.slow(reason="starts agentkit serve behind a TCP forwarder")

TOKEN = "a2a-edges-token"
# Well inside the body limit, far past the JSON parser's stack.
DEEP = b"[" * 5000 + b"]" * 5000


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    server = serve_in(
        tmp_path_factory.mktemp("a2a-edges"), "--mode", "single", "--bearer-token", TOKEN
    )
    yield server
    server.stop()
    assert "Traceback" not in server.output(), server.output()


@pytest.fixture
def client(served: Served, forwarder: Callable[[int], TcpForwarder]) -> Iterator[httpx.Client]:  # noqa: F811
    base = forwarder(served.port).url
    headers = {"authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=base, headers=headers, timeout=30) as c:
        yield c


def _rpc_error(r: httpx.Response, code: int, message: str) -> None:
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["jsonrpc"] == "2.0"
    assert body["error"]["code"] == code
    assert body["error"]["message"] == message


@pytest.mark.parametrize(
    "body", [DEEP, b'{"a":' * 5000 + b"1" + b"}" * 5000], ids=["array", "object"]
)
def test_a_deeply_nested_json_rpc_body_is_a_json_rpc_error(
    client: httpx.Client, body: bytes
) -> None:
    r = client.post("/v1/a2a", content=body, headers={"content-type": "application/json"})
    _rpc_error(r, -32600, "the body nests too deeply")
    assert r.json()["id"] is None


@pytest.mark.parametrize("method", ["message/send", "SendMessage", "message/stream"])
@pytest.mark.parametrize("parts", [5, True, 1.5])
def test_message_parts_that_are_not_a_list_are_invalid_params(
    client: httpx.Client, method: str, parts: Any
) -> None:
    message = {"role": "user", "messageId": "m1", "parts": parts}
    call = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {"message": message}}
    r = client.post("/v1/a2a", json=call)
    _rpc_error(r, -32602, "the message's parts must be a list")
    assert r.json()["id"] == 7


def test_the_ai_sdk_chat_refuses_the_same_bodies(client: httpx.Client) -> None:
    deep = client.post(
        "/v1/ai-sdk/chat", content=DEEP, headers={"content-type": "application/json"}
    )
    assert deep.status_code == 400, deep.text
    assert "the body nests too deeply" in deep.text
    chat = {"id": "chat-1", "messages": [{"id": "u1", "role": "user", "parts": 5}]}
    parts = client.post("/v1/ai-sdk/chat", json=chat)
    assert parts.status_code == 400, parts.text
    assert "the message's parts must be a list" in parts.text


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("since", "0001-01-01T00:00:00+00:01"),
        ("until", "0001-01-01T00:00:00+05:00"),
        ("since", "9999-12-31T23:00:00-05:00"),
    ],
)
def test_a_usage_bound_with_no_utc_form_is_a_400(
    client: httpx.Client, name: str, value: str
) -> None:
    # Valid ISO-8601, but shifting it to UTC leaves the years a datetime can hold.
    r = client.get("/v1/usage", params={name: value})
    assert r.status_code == 400, r.text
    assert r.json() == {
        "ok": False,
        "error": "bad_request",
        "message": f"{name} must be an ISO-8601 time",
    }
    assert client.get("/v1/usage", params={name: "2020-01-01T00:00:00+05:00"}).status_code == 200


def _frames(r: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: {")]


@pytest.mark.parametrize(
    ("context_id", "message"),
    [
        ("\\ud800", "contextId must be text (no lone surrogates)"),
        ("a\\u0000b", "contextId must have no control characters"),
    ],
    ids=["lone surrogate", "control character"],
)
def test_a_context_id_a_store_cannot_key_is_invalid_params(
    client: httpx.Client, context_id: str, message: str
) -> None:
    # Raw JSON, as an attacker writes it: the escape is valid JSON but no storable key.
    parts = '[{"text": "hi"}]'
    params = f'{{"message": {{"role": "user", "parts": {parts}, "contextId": "{context_id}"}}}}'
    body = f'{{"jsonrpc": "2.0", "id": 3, "method": "message/send", "params": {params}}}'
    r = client.post("/v1/a2a", content=body, headers={"content-type": "application/json"})
    _rpc_error(r, -32602, message)
    text = '[{"type": "text", "text": "x"}]'
    chat = f'{{"id": "\\ud800", "messages": [{{"role": "user", "parts": {text}}}]}}'
    ai = client.post("/v1/ai-sdk/chat", content=chat, headers={"content-type": "application/json"})
    assert ai.status_code == 400, ai.text
    assert "id must be text (no lone surrogates)" in ai.text


def test_a_stream_whose_request_id_is_a_lone_surrogate_runs_to_its_end(
    client: httpx.Client,
) -> None:
    # The id is echoed in every frame; UTF-8 cannot carry it, JSON escapes can.
    body = (
        '{"jsonrpc": "2.0", "id": "\\ud800", "method": "message/stream", "params": '
        '{"message": {"role": "user", "messageId": "m1", "parts": [{"text": "hello"}]}}}'
    )
    r = client.post("/v1/a2a", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text
    frames = _frames(r)
    assert [f["id"] for f in frames] == ["\ud800"] * len(frames)
    last = frames[-1]["result"]
    assert last["final"] is True
    assert last["status"]["state"] == "completed"


def test_a_stream_of_a_message_with_a_lone_surrogate_runs_to_its_end(
    client: httpx.Client,
) -> None:
    # The message's text is recorded (with JSON escapes) and read back by the stream.
    body = (
        '{"jsonrpc": "2.0", "id": 4, "method": "message/stream", "params": '
        '{"message": {"role": "user", "messageId": "m1", "parts": [{"text": "hi \\udfff"}]}}}'
    )
    r = client.post("/v1/a2a", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text
    last = _frames(r)[-1]["result"]
    assert last["final"] is True
    assert last["status"]["state"] in ("completed", "failed")


def test_an_ag_ui_thread_id_a_store_cannot_key_is_a_400(client: httpx.Client) -> None:
    # A real run: a user message, so the thread id would key a session (the DynamoDB store
    # refuses control characters in a key; every store gets the same 400 before it).
    message = '{"id": "m1", "role": "user", "content": "hello"}'
    body = '{"threadId": "a\\u0000b", "runId": "r1", "messages": [' + message + '], "state": null, '
    body += '"tools": [], "context": [], "forwardedProps": null}'
    r = client.post("/v1/ag-ui", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    # AG-UI refuses in its own stream shape: one RUN_ERROR event.
    [line] = [x for x in r.text.splitlines() if x.startswith("data: ")]
    event = json.loads(line.removeprefix("data: "))
    assert event["type"] == "RUN_ERROR"
    assert event["code"] == "invalid_input"
    assert event["message"] == "threadId must have no control characters"
