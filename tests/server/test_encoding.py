"""Text that UTF-8 cannot carry (lone surrogates) never turns an answer into a 500."""

from __future__ import annotations

import json

from agentkit.events import Event
from agentkit.server.http_errors import JSONResponse
from agentkit.server.streaming import ndjson_lines


def _event(text: str, index: int = 0) -> Event:
    return Event(
        type="action.result",
        index=index,
        session_id="ses_" + "a" * 22,
        at="2026-01-01T00:00:00.000Z",
        data={"callId": "c1", "toolName": "ls", "result": text},
    )


def test_an_event_with_a_lone_surrogate_streams_as_json_escapes() -> None:
    body = ndjson_lines([_event("ok"), _event("name-\udcff", 1)])
    lines = body.decode("ascii" if body.isascii() else "utf-8").splitlines()
    assert [json.loads(line)["data"]["result"] for line in lines] == ["ok", "name-\udcff"]


def test_plain_text_stays_utf8_on_the_wire() -> None:
    assert "é".encode() in _event("café").to_line()


def test_a_json_response_with_a_lone_surrogate_falls_back_to_escapes() -> None:
    response = JSONResponse({"ok": True, "result": "\ud800"})
    assert json.loads(response.body) == {"ok": True, "result": "\ud800"}
