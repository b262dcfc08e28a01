"""A2A at `/v1/a2a`, driven by the official `a2a-sdk` client against `agentkit serve`: a
context is a session, a task a turn, a parked approval `input-required`, a cancel a stop."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, A2AClientError, Client, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from google.protobuf.json_format import MessageToDict
from google.protobuf.struct_pb2 import Value

from agentkit.hosts.local import LocalHost, LocalHostOptions
from agentkit.project.bundle import AgentBundle
from agentkit.server.app import create_app
from agentkit.server.options import ServerOptions
from agentkit.sessions import Principal
from tests.fixtures.http_server import SLUG, Served, write_agent
from tests.protocols.conftest import ALICE, BOB
from tests.protocols.test_keyed_threads import BUDGETED, serve
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
    url: str, *, streaming: bool, headers: dict[str, str] | None = None, version: str = "1.0"
) -> AsyncIterator[Client]:
    """The SDK's client for the agent at `url`, speaking the card's `version` interface."""
    async with httpx.AsyncClient(timeout=60, headers=headers) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        interfaces = [i for i in card.supported_interfaces if i.protocol_version == version]
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(interfaces)
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


async def test_get_task_reads_the_task_back(shared_server: Served) -> None:
    async with a2a_client(shared_server.url, streaming=True) as client:
        responses = await collect(client, message("what is the weather in Paris"))
        task_id = responses[0].task.id
        task = await client.get_task(GetTaskRequest(id=task_id))
        short = await client.get_task(GetTaskRequest(id=task_id, history_length=0))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert task.context_id == responses[0].task.context_id
    assert texts(task) == list(streamed_artifacts(responses).values())
    assert [m.parts[0].text for m in task.history] == ["what is the weather in Paris"]
    assert not short.history


async def test_a_dropped_stream_is_taken_up_again_by_subscribing(shared_server: Served) -> None:
    async with a2a_client(shared_server.url, streaming=True) as client:
        stream = client.send_message(message("Run the slow job."))
        seen: list[StreamResponse] = []
        async for response in stream:  # the job runs until its gate opens
            seen.append(response)
            if data_parts([response], "toolCalls"):
                break
        await stream.aclose()  # type: ignore[attr-defined]
        task = seen[0].task
        again = client.subscribe(SubscribeToTaskRequest(id=task.id))
        first = await anext(again)
        shared_server.open_gate(session_of(task))
        rest = [first, *[r async for r in again]]
    assert rest[0].task.id == task.id
    assert rest[0].task.status.state == TaskState.TASK_STATE_WORKING
    assert rest[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    assert data_parts(rest, "toolResult")[0]["result"] == {"done": "job"}
    recorded = recorded_texts(shared_server, session_of(task))
    assert list(streamed_artifacts(rest).values()) == recorded and recorded
    with httpx.Client(timeout=30) as http:
        events = dump(http, shared_server.url, session_of(task))
    assert [e["type"] for e in events].count("message.received") == 1  # nothing ran again


async def test_cancel_stops_a_running_task(shared_server: Served) -> None:
    async with (
        a2a_client(shared_server.url, streaming=True) as client,
        a2a_client(shared_server.url, streaming=False) as other,
    ):
        stream = client.send_message(message("Run the slow job."))
        seen: list[StreamResponse] = []
        async for response in stream:  # until the slow job runs (its gate stays shut)
            seen.append(response)
            if data_parts([response], "toolCalls"):
                break
        task_id = seen[0].task.id
        canceled = await other.cancel_task(CancelTaskRequest(id=task_id))
        rest = [r async for r in stream]
        again = await other.get_task(GetTaskRequest(id=task_id))
        with pytest.raises(A2AClientError, match="409"):
            await other.cancel_task(CancelTaskRequest(id=task_id))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    assert rest[-1].status_update.status.state == TaskState.TASK_STATE_CANCELED
    assert again.status.state == TaskState.TASK_STATE_CANCELED
    with httpx.Client(timeout=30) as http:
        events = dump(http, shared_server.url, session_of(canceled))
    (end,) = [e for e in events if e["type"] in ("turn.completed", "turn.failed")]
    assert (end["type"], end["data"]["error"]) == ("turn.failed", "turn interrupted")
    results = [e["data"] for e in events if e["type"] == "action.result"]
    assert all(r["isError"] for r in results)  # the job never finished


async def test_a_parked_approval_is_input_required_and_answered_in_the_task(
    shared_server: Served,
) -> None:
    async with a2a_client(shared_server.url, streaming=True) as client:
        parked = await collect(client, message("please wipe the notes"))
        task = parked[0].task
        assert parked[-1].status_update.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        (approvals,) = data_parts(parked, "approvals")
        assert [a["toolName"] for a in approvals] == ["wipe_notes"]
        waiting = await client.get_task(GetTaskRequest(id=task.id))
        assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        answer = message(context_id=task.context_id, task_id=task.id, decision="approve")
        resumed = await collect(client, answer)
    ids = {r.status_update.task_id for r in resumed if r.HasField("status_update")}
    assert ids == {task.id}
    assert resumed[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    assert data_parts(resumed, "toolResult")[0]["result"] == {"wiped": "notes"}
    with httpx.Client(timeout=30) as http:
        events = dump(http, shared_server.url, session_of(task))
    decisions = [e["data"]["decision"] for e in events if e["type"] == "action.approval_resolved"]
    assert decisions == ["approve"]


@pytest.mark.parametrize("streaming", [False, True])
async def test_the_v03_client_speaks_the_v03_methods(
    shared_server: Served, streaming: bool
) -> None:
    async with a2a_client(shared_server.url, streaming=streaming, version="0.3") as client:
        responses = await collect(client, message("what is the weather in Paris"))
        task_id = responses[0].task.id
        task = await client.get_task(GetTaskRequest(id=task_id))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert "Paris" in texts(task)[-1]
    if streaming:
        assert responses[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
        assert list(streamed_artifacts(responses).values()) == texts(task)


def rpc(method: str, params: Any = None, rpc_id: Any = 7) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": rpc_id, "method": method}
    return body if params is None else {**body, "params": params}


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"not json", 400, -32700),
        (b"[]", 400, -32600),
        (b'{"jsonrpc": "2.0", "id": true, "method": "GetTask"}', 400, -32600),
        (rpc("tasks/pushNotificationConfig/set", {"id": "x"}), 404, -32601),
        ({**rpc("SendMessage"), "jsonrpc": "1.0"}, 400, -32600),
        (rpc("SendMessage", []), 400, -32602),
        (rpc("SendMessage", {}), 400, -32602),
        (
            rpc("SendMessage", {"message": {"role": "ROLE_AGENT", "parts": [{"text": "x"}]}}),
            400,
            -32602,
        ),
        (rpc("message/send", {"message": {"role": "user", "parts": []}}), 400, -32602),
        (rpc("GetTask", {"id": "nope"}), 404, -32001),
        (rpc("tasks/cancel", {"id": "ses_nope:turn_nope"}), 404, -32001),
        (rpc("GetTask", {"id": "x:y", "historyLength": -1}), 404, -32001),
    ],
)
def test_bad_input_is_a_json_rpc_error_with_its_status(
    shared_server: Served, body: Any, status: int, code: int
) -> None:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    r = httpx.post(
        f"{shared_server.url}/v1/a2a",
        content=content,
        headers={"content-type": "application/json"},
        timeout=30,
    )
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    answer = r.json()
    assert answer["jsonrpc"] == "2.0" and answer["error"]["code"] == code
    assert answer["error"]["message"]
    assert answer["id"] == (body.get("id") if isinstance(body, dict) else None)


async def test_another_principals_context_and_tasks_are_403(bearer_server: Served) -> None:
    url = f"{bearer_server.url}/v1/a2a"
    alice = {"authorization": f"Bearer {ALICE}"}
    bob = {"authorization": f"Bearer {BOB}"}
    async with a2a_client(bearer_server.url, streaming=False, headers=alice) as client:
        (mine,) = await collect(client, message("hello there"))
    task = mine.task
    intrusion = {
        "message": {
            "role": "ROLE_USER",
            "messageId": "m",
            "contextId": task.context_id,
            "parts": [{"text": "let me in"}],
        }
    }
    async with httpx.AsyncClient(timeout=30) as http:
        theirs = await http.post(url, json=rpc("SendMessage", intrusion), headers=bob)
        streamed = await http.post(url, json=rpc("message/stream", intrusion), headers=bob)
        peek = await http.post(url, json=rpc("GetTask", {"id": task.id}), headers=bob)
        stop = await http.post(url, json=rpc("tasks/cancel", {"id": task.id}), headers=bob)
        anonymous = await http.post(url, json=rpc("GetTask", {"id": task.id}))
        record = await http.get(
            f"{bearer_server.url}/v1/session/{session_of(task)}/events", headers=alice
        )
    for refused in (theirs, streamed, peek, stop):
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["code"] == -32000
        assert refused.json()["error"]["data"][0]["reason"] == "FORBIDDEN"
        assert refused.json()["id"] == 7
    assert anonymous.status_code == 401
    assert "let me in" not in record.text
    # The SDK's client reads an error status as an HTTP error.
    async with a2a_client(bearer_server.url, streaming=False, headers=bob) as client:
        with pytest.raises(A2AClientError, match="403"):
            await client.get_task(GetTaskRequest(id=task.id))


async def test_a_later_message_meets_the_daily_limit(tmp_path: Path) -> None:
    host, client = await serve(tmp_path, BUDGETED)
    try:
        send = rpc(
            "SendMessage",
            {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hello"}]}},
        )
        first = await client.post("/v1/a2a", json=send)
        assert first.status_code == 200, first.text
        task = first.json()["result"]["task"]
        # A blocking send answers once the turn has ended: its tokens are counted now.
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        send["params"]["message"]["contextId"] = task["contextId"]
        later = await client.post("/v1/a2a", json=send)
        fresh = await client.post(
            "/v1/a2a",
            json=rpc(
                "message/send",
                {
                    "message": {
                        "role": "user",
                        "messageId": "m2",
                        "parts": [{"kind": "text", "text": "hi"}],
                    }
                },
            ),
        )
    finally:
        await client.aclose()
        await host.aclose()
    for refused in (later, fresh):
        assert refused.status_code == 429, refused.text
        assert int(refused.headers["retry-after"]) >= 1
        assert "daily" in refused.json()["error"]["message"].lower()
        assert refused.json()["error"]["data"][0]["reason"] == "RATE_LIMITED"


def test_the_route_keeps_the_origin_checks_and_the_size_limit(shared_server: Served) -> None:
    url = f"{shared_server.url}/v1/a2a"
    send = rpc("SendMessage", {"message": {"role": "ROLE_USER", "parts": [{"text": "hi"}]}})
    with httpx.Client(timeout=30) as http:
        foreign = http.post(url, json=send, headers={"origin": "https://evil.example"})
        form = http.post(url, content=json.dumps(send), headers={"content-type": "text/plain"})
        huge = http.post(url, json={**send, "pad": "x" * (3 * 1024 * 1024)})
    assert (foreign.status_code, foreign.json()["error"]) == (403, "cross_origin")
    assert form.status_code == 415
    assert huge.status_code == 413


async def test_a_buffering_host_answers_the_task_as_it_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Behind a host that buffers responses (Lambda), a blocking send answers once the
    first events are in; the task is then read back with `GetTask` until it ends."""
    gates = tmp_path / "gates"
    monkeypatch.setenv("SLOW_JOB_GATES", str(gates))
    bundle = AgentBundle.discover(write_agent(tmp_path / SLUG))
    host = LocalHost(bundle, LocalHostOptions(state_root=tmp_path / "state"))
    await host.start()
    app = create_app([host.mount()], ServerOptions(stream_until_first_events=True))
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))
    client = httpx.AsyncClient(transport=transport, base_url=f"http://127.0.0.1/{SLUG}")
    service = host.mount().service
    try:
        send = rpc(
            "SendMessage",
            {
                "message": {
                    "role": "ROLE_USER",
                    "messageId": "m1",
                    "parts": [{"text": "Run the slow job."}],
                }
            },
        )
        first = (await client.post("/v1/a2a", json=send)).json()["result"]["task"]
        assert first["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
        session_id = first["metadata"]["agentkit"]["sessionId"]
        gates.mkdir()
        (gates / session_id).touch()
        owner = Principal("local")
        seen = len(await service.read_events(session_id, principal=owner))
        state = first["status"]["state"]
        for _ in range(200):  # each round waits for the next events, not for a clock
            got = await client.post("/v1/a2a", json=rpc("GetTask", {"id": first["id"]}))
            state = got.json()["result"]["status"]["state"]
            if state == "TASK_STATE_COMPLETED":
                break
            news = await service.follow_events(session_id, principal=owner, start=seen, timeout=5)
            seen += len(news)
        assert state == "TASK_STATE_COMPLETED"
    finally:
        await client.aclose()
        await host.aclose()
