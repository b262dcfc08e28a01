"""The AI SDK UI message stream at `/v1/ai-sdk/chat`, read by the `ai` package's own
`DefaultChatTransport` and `readUIMessageStream`: a chat is a session, a tool approval the
SDK's own approval parts."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

from agentkit.server.auth import bearer_principal_id
from tests.fixtures.http_server import Served
from tests.protocols.conftest import ALICE, BOB, run_node, start_node
from tests.server.helpers import dump

pytestmark = pytest.mark.slow(reason="drives a served agent with the official Node client")


def chat_body(chat_id: str, text: str) -> dict[str, Any]:
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"id": chat_id, "messages": [user], "trigger": "submit-message"}


def parts(text: str) -> list[Any]:
    return [
        line[6:] if line[6:] == "[DONE]" else json.loads(line[6:])
        for line in text.splitlines()
        if line.startswith("data: ")
    ]


def test_the_sdk_reads_a_turn_through_a_tool_approval(shared_server: Served) -> None:
    chat = f"chat-{uuid.uuid4().hex}"
    out = run_node("ai_sdk_client.mjs", shared_server.url, chat, "please wipe the notes")
    (asked_tool,) = [p for p in out["asked"]["parts"] if p["type"] == "tool-wipe_notes"]
    assert asked_tool["state"] == "approval-requested"
    assert asked_tool["input"] == {"folder": "notes"}
    (done_tool,) = [p for p in out["done"]["parts"] if p["type"] == "tool-wipe_notes"]
    assert done_tool["state"] == "output-available"
    assert done_tool["output"] == {"wiped": "notes"}
    session_id = asked_tool["approval"]["id"].partition("/")[0]
    with httpx.Client(timeout=30) as client:
        ours = dump(client, shared_server.url, session_id)
    recorded = [e["data"]["text"] for e in ours if e["type"] == "message.completed"]
    texts = [p["text"] for p in out["done"]["parts"] if p["type"] == "text"]
    assert texts == recorded and texts
    reasoning = [e["data"]["text"] for e in ours if e["type"] == "reasoning.completed"]
    assert [p["text"] for p in out["done"]["parts"] if p["type"] == "reasoning"] == reasoning
    decisions = [e["data"]["decision"] for e in ours if e["type"] == "action.approval_resolved"]
    assert decisions == ["approve"]


def test_a_chat_is_one_session_and_the_stream_says_its_version(shared_server: Served) -> None:
    chat = f"chat-{uuid.uuid4().hex}"
    url = f"{shared_server.url}/v1/ai-sdk/chat"
    with httpx.Client(timeout=30) as client:
        first = client.post(url, json=chat_body(chat, "hello there"))
        second = client.post(url, json=chat_body(chat, "and again"))
        assert first.headers["x-vercel-ai-ui-message-stream"] == "v1"
        assert first.headers["content-type"].startswith("text/event-stream")
        one, two = parts(first.text), parts(second.text)
        assert one[0]["type"] == "start" and one[-1] == "[DONE]"
        assert one[-2] == {"type": "finish", "finishReason": "stop"}
        assert one[0]["messageId"] != two[0]["messageId"]
        listed = client.get(f"{shared_server.url}/v1/sessions").json()["sessions"]
    keyed = [s for s in listed if s.get("continuationKey") == chat]
    assert len(keyed) == 1 and keyed[0]["channelId"] == "ai-sdk"


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        json.dumps({"id": "c", "messages": []}).encode(),
        json.dumps({"id": "c", "messages": [{"role": "user", "parts": []}]}).encode(),
        json.dumps({"id": "c", "messages": [{"role": "assistant", "parts": []}]}).encode(),
    ],
)
def test_bad_input_is_an_error_part_with_status_400(shared_server: Served, body: bytes) -> None:
    r = httpx.post(
        f"{shared_server.url}/v1/ai-sdk/chat",
        content=body,
        headers={"content-type": "application/json"},
        timeout=30,
    )
    assert r.status_code == 400
    assert r.headers["x-vercel-ai-ui-message-stream"] == "v1"
    error, done = parts(r.text)
    assert error["type"] == "error" and error["errorText"]
    assert done == "[DONE]"


def test_another_principals_chat_is_403(bearer_server: Served) -> None:
    url = f"{bearer_server.url}/v1/ai-sdk/chat"
    chat = f"chat-{uuid.uuid4().hex}"
    with httpx.Client(timeout=30) as client:
        mine = client.post(
            url, json=chat_body(chat, "hello"), headers={"authorization": f"Bearer {ALICE}"}
        )
        theirs = client.post(
            url, json=chat_body(chat, "let me in"), headers={"authorization": f"Bearer {BOB}"}
        )
        listed = client.get(
            f"{bearer_server.url}/v1/sessions", headers={"authorization": f"Bearer {ALICE}"}
        ).json()["sessions"]
    assert mine.status_code == 200
    assert theirs.status_code == 403
    assert parts(theirs.text)[0]["type"] == "error"
    (session,) = [s for s in listed if s.get("continuationKey") == chat]
    assert session["principal"] == bearer_principal_id(ALICE)


def test_the_sdk_resumes_a_response_in_flight(shared_server: Served) -> None:
    chat = f"chat-{uuid.uuid4().hex}"
    url = f"{shared_server.url}/v1/ai-sdk/chat"
    with httpx.Client(timeout=30) as client:
        # The first response is dropped while its slow job runs (until the gate opens).
        with client.stream("POST", url, json=chat_body(chat, "Run the slow job.")) as r:
            for line in r.iter_lines():
                if '"tool-input-available"' in line:
                    break
        listed = client.get(f"{shared_server.url}/v1/sessions").json()["sessions"]
    (session,) = [s for s in listed if s.get("continuationKey") == chat]
    reader = start_node("ai_sdk_resume.mjs", shared_server.url, chat)
    assert reader.stdout is not None
    try:
        assert reader.stdout.readline().strip() == "reading"
        shared_server.open_gate(session["sessionId"])
        out, err = reader.communicate(timeout=120)
    finally:
        reader.kill()
    assert reader.returncode == 0, err
    message = json.loads(out)
    (tool,) = [p for p in message["parts"] if p["type"] == "tool-slow_job"]
    assert (tool["state"], tool["output"]) == ("output-available", {"done": "job"})
    with httpx.Client(timeout=30) as client:
        ours = dump(client, shared_server.url, session["sessionId"])
    recorded = [e["data"]["text"] for e in ours if e["type"] == "message.completed"]
    assert [p["text"] for p in message["parts"] if p["type"] == "text"] == recorded
    # The turn is over: there is nothing left to resume.
    assert run_node("ai_sdk_resume.mjs", shared_server.url, chat) is None


def test_resuming_a_chat_with_nothing_in_flight_is_204(shared_server: Served) -> None:
    url = f"{shared_server.url}/v1/ai-sdk/chat"
    with httpx.Client(timeout=30) as client:
        unknown = client.get(f"{url}/chat-{uuid.uuid4().hex}/stream")
        too_long = client.get(f"{url}/{'c' * 201}/stream")
    assert (unknown.status_code, unknown.content) == (204, b"")
    assert too_long.status_code == 400
    assert parts(too_long.text)[0]["type"] == "error"


def test_resuming_another_principals_chat_is_403(bearer_server: Served) -> None:
    url = f"{bearer_server.url}/v1/ai-sdk/chat"
    chat = f"chat-{uuid.uuid4().hex}"
    with httpx.Client(timeout=30) as client:
        mine = client.post(
            url, json=chat_body(chat, "hello"), headers={"authorization": f"Bearer {ALICE}"}
        )
        theirs = client.get(f"{url}/{chat}/stream", headers={"authorization": f"Bearer {BOB}"})
    assert mine.status_code == 200
    assert theirs.status_code == 403
    assert parts(theirs.text)[0]["type"] == "error"
