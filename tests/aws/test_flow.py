"""The deployed flow, in-process: API Gateway event -> ApiFunction -> captured async invoke ->
TurnFunction -> DynamoDB -> the events table's stream -> HooksFunction."""

from __future__ import annotations

import json
from typing import Any

from agentkit.aws.handlers import api, hooks
from agentkit.models.scripted import Step, call
from tests.aws.conftest import FakeContext, Stack, load_event, script


def api_call(
    name: str,
    *,
    path: str | None = None,
    body: dict[str, Any] | None = None,
    query: str | None = None,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Send a sample API Gateway event (optionally re-aimed, with extra headers) through
    ApiFunction."""
    event = load_event(name)
    event["headers"].update(headers or {})
    if path is not None:
        event["rawPath"] = path
        event["requestContext"]["http"]["path"] = path
    if body is not None:
        event["body"] = json.dumps(body)
    if query is not None:
        event["rawQueryString"] = query
        pairs = [p.split("=", 1) for p in query.split("&") if "=" in p]
        event["queryStringParameters"] = dict(pairs)
        if not pairs:
            del event["queryStringParameters"]
    return api.handler(event, FakeContext())


def body_of(response: dict[str, Any]) -> Any:
    return json.loads(response["body"])


def event_types(stack: Stack, session_id: str) -> list[str]:
    response = api_call(
        "api/stream.json", path=f"/v1/session/{session_id}/events", query="startIndex=0"
    )
    assert response["statusCode"] == 200, response
    return [json.loads(line)["type"] for line in response["body"].splitlines() if line]


def test_message_to_hook_through_every_function(aws_stack: Stack) -> None:
    script(aws_stack, Step.text("Hello from Lambda."))
    created = api_call("api/create-session.json")
    assert created["statusCode"] == 200, created
    session_id = body_of(created)["sessionId"]
    assert aws_stack.dispatcher.payloads == [
        {"sessionId": session_id, "turnId": aws_stack.dispatcher.payloads[0]["turnId"]}
    ]

    aws_stack.run_turns()
    types = event_types(aws_stack, session_id)
    assert "turn.completed" in types

    records = aws_stack.stream_records()
    result = hooks.handler({"Records": records}, FakeContext())
    assert result == {"batchItemFailures": []}
    seen = [c for c in aws_stack.hook_calls() if c["sessionId"] == session_id]
    assert [c["type"] for c in seen] == types
    assert [c["index"] for c in seen] == list(range(len(types)))
    assert any(c["type"] == "turn.completed" for c in seen)
    assert {c["channel"] for c in seen} == {"http"}


def test_follow_up_rotates_the_token_and_runs_a_second_turn(aws_stack: Stack) -> None:
    script(aws_stack, Step.text("First."), Step.text("Second."))
    created = body_of(api_call("api/create-session.json"))
    aws_stack.run_turns()
    followed = api_call(
        "api/follow-up.json",
        path=f"/v1/session/{created['sessionId']}",
        body={"continuationToken": created["continuationToken"], "message": "Again."},
    )
    assert followed["statusCode"] == 200, followed
    assert body_of(followed)["continuationToken"] != created["continuationToken"]
    aws_stack.run_turns()
    assert event_types(aws_stack, created["sessionId"]).count("turn.completed") == 2


def test_stream_answers_within_its_window_and_resumes_by_start_index(aws_stack: Stack) -> None:
    script(aws_stack, Step.text("Streamed."))
    session_id = body_of(api_call("api/create-session.json"))["sessionId"]
    aws_stack.run_turns()
    path = f"/v1/session/{session_id}/stream"
    first = api_call("api/stream.json", path=path, query="startIndex=0")
    assert first["statusCode"] == 200
    lines = [json.loads(x) for x in first["body"].splitlines() if x]
    assert [e["index"] for e in lines] == list(range(len(lines)))
    resumed = api_call("api/stream.json", path=path, query=f"startIndex={len(lines) - 1}")
    again = [json.loads(x) for x in resumed["body"].splitlines() if x]
    assert [e["index"] for e in again] == [len(lines) - 1]


def test_approval_across_invocations(aws_stack: Stack) -> None:
    script(
        aws_stack,
        Step.tool_calls(call("deploy", {"env": "prod"}, id="call_deploy")),
        Step.text("Deployed."),
    )
    session_id = body_of(api_call("api/create-session.json"))["sessionId"]
    aws_stack.run_turns()
    parked = event_types(aws_stack, session_id)
    assert "action.approval_requested" in parked
    assert "turn.completed" not in parked
    pending = api_call("api/stream.json", path=f"/v1/session/{session_id}/approvals", query="")
    assert [a["callId"] for a in body_of(pending)["approvals"]] == ["call_deploy"]

    resolved = api_call(
        "api/approval.json",
        path=f"/v1/session/{session_id}/approvals/call_deploy",
        body={"decision": "approve"},
    )
    assert resolved["statusCode"] == 200, resolved
    aws_stack.run_turns()
    types = event_types(aws_stack, session_id)
    assert "action.approval_resolved" in types
    assert types.count("turn.completed") == 1
    results = [
        json.loads(x)
        for x in api_call(
            "api/stream.json", path=f"/v1/session/{session_id}/events", query="startIndex=0"
        )["body"].splitlines()
        if x
    ]
    outcome = [e for e in results if e["type"] == "action.result"]
    assert outcome and outcome[0]["data"].get("isError") is not True


def test_duplicate_async_invocation_runs_the_turn_once(aws_stack: Stack) -> None:
    script(aws_stack, Step.text("Once."))
    session_id = body_of(api_call("api/create-session.json"))["sessionId"]
    payload = aws_stack.dispatcher.payloads[0]
    aws_stack.dispatcher.payloads.append(dict(payload))  # Lambda delivered it twice
    aws_stack.run_turns()
    types = event_types(aws_stack, session_id)
    assert types.count("turn.started") == 1
    assert types.count("turn.completed") == 1
    assert aws_stack.model.remaining == 0


def test_duplicated_stream_batch_repeats_the_same_session_index_pairs(aws_stack: Stack) -> None:
    script(aws_stack, Step.text("Twice delivered."))
    api_call("api/create-session.json")
    aws_stack.run_turns()
    records = aws_stack.stream_records()
    hooks.handler({"Records": records}, FakeContext())
    first = [(c["sessionId"], c["index"]) for c in aws_stack.hook_calls()]
    hooks.handler({"Records": records}, FakeContext())  # Lambda retried the batch
    both = [(c["sessionId"], c["index"]) for c in aws_stack.hook_calls()]
    assert both == first + first
    assert len(set(first)) == len(first)


def test_unauthenticated_request_is_refused(aws_stack: Stack) -> None:
    event = load_event("api/create-session.json")
    del event["headers"]["authorization"]
    response = api.handler(event, FakeContext())
    assert response["statusCode"] == 401
    assert body_of(response)["ok"] is False
    assert aws_stack.dispatcher.payloads == []


def test_health_needs_no_credentials(aws_stack: Stack) -> None:
    event = load_event("api/health.json")
    del event["headers"]["authorization"]
    assert api.handler(event, FakeContext())["statusCode"] == 200
