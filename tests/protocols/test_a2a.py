"""A2A at `/v1/a2a`, driven by the official `a2a-sdk` client against `agentkit serve`: a
context is a session, a task a turn, a parked approval `input-required`, a cancel a stop."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from google.protobuf.json_format import MessageToDict
from google.protobuf.struct_pb2 import Value

from tests.fixtures.http_server import Served
from tests.server.helpers import dump

pytestmark = pytest.mark.slow(reason="drives a served agent with the official A2A client")


def message(
    text: str | None = None,
    *,
    context_id: str = "",
    task_id: str = "",
    decision: str | None = None,
) -> SendMessageRequest:
    parts = [Part(text=text)] if text is not None else []
    if decision is not None:
        data = Value()
        data.struct_value.update({"decision": decision})
        parts.append(Part(data=data))
    return SendMessageRequest(
        message=Message(
            message_id=uuid.uuid4().hex,
            role=Role.ROLE_USER,
            parts=parts,
            context_id=context_id,
            task_id=task_id,
        )
    )


@asynccontextmanager
async def a2a_client(
    url: str, *, streaming: bool, headers: dict[str, str] | None = None
) -> AsyncIterator[Client]:
    async with httpx.AsyncClient(timeout=60, headers=headers) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming)).create(card)
        try:
            yield client
        finally:
            await client.close()


async def collect(client: Client, request: SendMessageRequest) -> list[StreamResponse]:
    return [r async for r in client.send_message(request)]


def texts(task: Task) -> list[str]:
    return [p.text for a in task.artifacts for p in a.parts if p.text]


def recorded_texts(served: Served, session_id: str) -> list[str]:
    with httpx.Client(timeout=30) as client:
        events = dump(client, served.url, session_id)
    return [e["data"]["text"] for e in events if e["type"] == "message.completed"]


def session_of(task: Task) -> str:
    return task.id.partition(":")[0]


def streamed_artifacts(responses: list[StreamResponse]) -> dict[str, str]:
    """The artifacts a streaming reader ends with: chunks appended, a whole one replacing."""
    out: dict[str, str] = {}
    for r in responses:
        if r.HasField("artifact_update"):
            update = r.artifact_update
            text = "".join(p.text for p in update.artifact.parts)
            aid = update.artifact.artifact_id
            out[aid] = out.get(aid, "") + text if update.append else text
    return out


def data_parts(responses: list[StreamResponse], key: str) -> list[Any]:
    found = []
    for r in responses:
        if r.HasField("status_update") and r.status_update.status.HasField("message"):
            for part in r.status_update.status.message.parts:
                if part.HasField("data"):
                    value = MessageToDict(part.data)
                    if key in value:
                        found.append(value[key])
    return found


async def test_send_message_answers_the_completed_task(shared_server: Served) -> None:
    async with a2a_client(shared_server.url, streaming=False) as client:
        (response,) = await collect(client, message("what is the weather in Paris"))
        task = response.task
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert texts(task) == recorded_texts(shared_server, session_of(task))
        assert "Paris" in texts(task)[-1]
        assert [m.parts[0].text for m in task.history] == ["what is the weather in Paris"]
        # The next message in the context is the same session's next turn: a new task.
        (again,) = await collect(client, message("and in Nice", context_id=task.context_id))
    assert again.task.context_id == task.context_id
    assert session_of(again.task) == session_of(task) and again.task.id != task.id
    assert again.task.status.state == TaskState.TASK_STATE_COMPLETED


async def test_a_streamed_reply_ends_with_the_recorded_text(shared_server: Served) -> None:
    async with a2a_client(shared_server.url, streaming=True) as client:
        responses = await collect(client, message("what is the weather in Paris"))
    first, last = responses[0], responses[-1]
    assert first.HasField("task")
    assert first.task.status.state in (
        TaskState.TASK_STATE_SUBMITTED,
        TaskState.TASK_STATE_WORKING,
    )
    assert last.status_update.status.state == TaskState.TASK_STATE_COMPLETED
    assert {r.status_update.task_id for r in responses[1:] if r.HasField("status_update")} == {
        first.task.id
    }
    (call,) = data_parts(responses, "toolCalls")[0]
    assert call["toolName"] == "get_weather"
    assert data_parts(responses, "toolResult")[0]["result"] == {"city": "Paris", "tempC": 21}
    recorded = recorded_texts(shared_server, session_of(first.task))
    assert list(streamed_artifacts(responses).values()) == recorded and recorded
