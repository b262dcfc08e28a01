"""AG-UI at `/v1/ag-ui`, driven by the official `@ag-ui/client` and checked by
`ag-ui-validate`: a thread is a session, a run a turn, a parked approval an interrupt."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx
import pytest
from ag_ui_validate.pytest_plugin import validate_agui, validate_agui_endpoint

from agentkit.server.auth import bearer_principal_id
from tests.fixtures.http_server import Served
from tests.protocols.conftest import ALICE, BOB, run_node
from tests.server.helpers import dump

pytestmark = pytest.mark.slow(reason="drives a served agent with the official Node client")


def run_input(thread_id: str, message: str | None = None, **extra: Any) -> dict[str, Any]:
    messages = [] if message is None else [{"id": "u1", "role": "user", "content": message}]
    return {
        "threadId": thread_id,
        "runId": f"run-{uuid.uuid4().hex[:8]}",
        "messages": messages,
        **extra,
    }


def sse_events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def no_errors(events: list[dict[str, Any]]) -> None:
    report = validate_agui(events)
    errors = [d for d in report.diagnostics if d.severity == "error"]
    assert report.summary.errors == 0, errors
    assert not report.internal_errors


def test_http_agent_runs_a_turn_through_an_approval(shared_server: Served) -> None:
    thread = f"thread-{uuid.uuid4().hex}"
    out = run_node("ag_ui_client.mjs", shared_server.url, thread, "please wipe the notes")
    parked, approved = out["runs"]
    no_errors(parked)
    no_errors(parked + approved)  # the approving run answers calls the parked run made
    assert [e["type"] for e in parked][:2] == ["RUN_STARTED", "STEP_STARTED"]
    assert parked[-1]["outcome"]["type"] == "interrupt"
    interrupt = parked[-1]["outcome"]["interrupts"][0]
    assert interrupt["reason"] == "tool_approval"
    assert interrupt["metadata"]["toolName"] == "wipe_notes"
    assert approved[-1] == {**approved[-1], "type": "RUN_FINISHED", "outcome": {"type": "success"}}
    result = next(e for e in approved if e["type"] == "TOOL_CALL_RESULT")
    assert json.loads(result["content"]) == {"wiped": "notes"}
    # The client's messages hold the same text our own stream recorded for the turn.
    session_id = parked[0]["metadata"]["agentkit"]["sessionId"]
    with httpx.Client(timeout=30) as client:
        ours = dump(client, shared_server.url, session_id)
    recorded = [e["data"]["text"] for e in ours if e["type"] == "message.completed"]
    texts = [m["content"] for m in out["messages"] if m["role"] == "assistant" and m.get("content")]
    assert texts == recorded
    assert [e["data"]["decision"] for e in ours if e["type"] == "action.approval_resolved"] == [
        "approve"
    ]


def test_a_thread_is_one_session_across_runs(shared_server: Served) -> None:
    thread = f"thread-{uuid.uuid4().hex}"
    url = f"{shared_server.url}/v1/ag-ui"
    with httpx.Client(timeout=30) as client:
        first = sse_events(client.post(url, json=run_input(thread, "hello there")).text)
        second = sse_events(client.post(url, json=run_input(thread, "and again")).text)
        no_errors(first)
        no_errors(second)
        ids = [run[0]["metadata"]["agentkit"] for run in (first, second)]
        assert ids[0]["sessionId"] == ids[1]["sessionId"]
        assert ids[0]["turnId"] != ids[1]["turnId"]
        ours = dump(client, shared_server.url, ids[0]["sessionId"])
    received = [e["data"]["message"] for e in ours if e["type"] == "message.received"]
    assert received == ["hello there", "and again"]
    assert [run[-1]["type"] for run in (first, second)] == ["RUN_FINISHED", "RUN_FINISHED"]


def test_the_endpoint_passes_the_live_validator(shared_server: Served) -> None:
    url = f"{shared_server.url}/v1/ag-ui"
    for body in (None, run_input(f"thread-{uuid.uuid4().hex}", "what is the weather in Paris")):
        report = asyncio.run(validate_agui_endpoint(url, input=body, timeout_ms=30_000))
        assert report.summary.errors == 0, report.diagnostics
        assert report.event_count > 3


def test_a_dropped_stream_resumes_from_its_last_event_id_without_running_again(
    shared_server: Served,
) -> None:
    thread = f"thread-{uuid.uuid4().hex}"
    url = f"{shared_server.url}/v1/ag-ui"
    body = run_input(thread, "what is the weather in Paris")
    with httpx.Client(timeout=30) as client:
        whole = client.post(url, json=body).text
        ids = [line[4:] for line in whole.splitlines() if line.startswith("id: ")]
        cut = ids[len(ids) // 2]
        session_id = cut.partition("/")[0]
        before = dump(client, shared_server.url, session_id)
        again = client.post(url, json=body, headers={"last-event-id": cut}).text
        after = dump(client, shared_server.url, session_id)
    assert after == before  # nothing ran
    full, tail = sse_events(whole), sse_events(again)
    assert tail[0]["type"] == "RUN_STARTED"
    # The replay is exactly the part of the run after the cut, with the same ids.
    cut_at = max(i for i, line in enumerate(_data_ids(whole)) if line == cut)
    assert tail[1:] == full[cut_at + 1 :]


def _data_ids(text: str) -> list[str | None]:
    """The SSE id of each data line, in order (None for the run's opening event)."""
    out: list[str | None] = []
    current: str | None = None
    for line in text.splitlines():
        if line.startswith("id: "):
            current = line[4:]
        elif line.startswith("data: "):
            out.append(current)
            current = None
    return out


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b'{"threadId": "t"}',
        json.dumps({"threadId": "t", "runId": "r", "messages": []}).encode(),
        json.dumps(
            {
                "threadId": "t",
                "runId": "r",
                "messages": [],
                "resume": [{"interruptId": "x", "status": "resolved"}],
            }
        ).encode(),
    ],
)
def test_bad_input_is_a_run_error_with_status_400(shared_server: Served, body: bytes) -> None:
    r = httpx.post(
        f"{shared_server.url}/v1/ag-ui",
        content=body,
        headers={"content-type": "application/json"},
        timeout=30,
    )
    assert r.status_code == 400
    assert r.headers["content-type"].startswith("text/event-stream")
    (event,) = sse_events(r.text)
    assert event["type"] == "RUN_ERROR"
    assert event["code"] == "invalid_input"


def test_another_principals_thread_is_403_and_no_token_is_401(bearer_server: Served) -> None:
    url = f"{bearer_server.url}/v1/ag-ui"
    thread = f"thread-{uuid.uuid4().hex}"
    alice = {"authorization": f"Bearer {ALICE}"}
    bob = {"authorization": f"Bearer {BOB}"}
    with httpx.Client(timeout=30) as client:
        mine = client.post(url, json=run_input(thread, "hello"), headers=alice)
        assert mine.status_code == 200
        session_id = sse_events(mine.text)[0]["metadata"]["agentkit"]["sessionId"]
        theirs = client.post(url, json=run_input(thread, "let me in"), headers=bob)
        anonymous = client.post(url, json=run_input(thread, "hi"))
        record = client.get(f"{bearer_server.url}/v1/session/{session_id}/events", headers=alice)
    assert theirs.status_code == 403
    assert sse_events(theirs.text)[0]["type"] == "RUN_ERROR"
    assert anonymous.status_code == 401
    assert "let me in" not in record.text
    owner = next(json.loads(line) for line in record.text.splitlines())["data"]["principal"]
    assert owner == bearer_principal_id(ALICE)
