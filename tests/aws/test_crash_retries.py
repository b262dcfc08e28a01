"""After a TurnFunction invocation dies mid-call (a timeout, out of memory), Lambda's retry
and a duplicate delivery never run the call again; an Invoke error on a follow-up gives the
continuation token back. Through the handlers with their real event shapes, on the
DynamoDB store (moto server).

A dead invocation is what it leaves in the table: the events it recorded up to the call
(`action.started` for an approved call, `actions.requested` for a model-requested one) and
a lease that has run out.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentkit.aws.handlers import _common
from agentkit.engine.turn.ending import IN_DOUBT
from agentkit.events import ActionCall, ActionsRequested, ActionStarted, TurnStarted, draft
from agentkit.models.scripted import Step, call
from tests.aws.conftest import Stack, script
from tests.aws.test_flow import api_call, body_of


def events_of(session_id: str) -> list[dict[str, Any]]:
    response = api_call(
        "api/stream.json", path=f"/v1/session/{session_id}/events", query="startIndex=0"
    )
    assert response["statusCode"] == 200, response
    return [json.loads(line) for line in response["body"].splitlines() if line]


def crash_mid_call(stack: Stack, path: str) -> tuple[str, str, str]:
    """A session whose turn's invocation died while call `c1` ran; returns the session,
    its token and the turn's payload as Lambda would deliver it again."""
    if path == "approved":
        script(stack, Step.tool_calls(call("deploy", {"env": "prod"}, id="c1")))
        created = body_of(api_call("api/create-session.json"))
        stack.run_turns()  # parks on the approval
        sid = created["sessionId"]
        resolved = api_call(
            "api/approval.json",
            path=f"/v1/session/{sid}/approvals/c1",
            body={"decision": "approve"},
        )
        assert resolved["statusCode"] == 200, resolved
        payload = stack.dispatcher.payloads.pop()
        # The invocation recorded that the decided call started, then died running it.
        seeded = [draft(ActionStarted(call_id="c1", tool_name="deploy"), turn_id=payload["turnId"])]
    else:
        created = body_of(api_call("api/create-session.json"))
        sid = created["sessionId"]
        payload = stack.dispatcher.payloads.pop()
        requested = ActionsRequested(
            actions=[
                ActionCall(
                    call_id="c1",
                    tool_name="remind_me",
                    arguments={"delay": "20m", "prompt": "check"},
                )
            ]
        )
        seeded = [
            draft(TurnStarted(model="test"), turn_id=payload["turnId"]),
            draft(requested, turn_id=payload["turnId"]),
        ]
    _common.run(stack.host.store.append(sid, seeded))
    return sid, created["continuationToken"], json.dumps(payload)


@pytest.mark.parametrize("path", ["approved", "model-requested"])
def test_a_retried_invocation_never_reruns_a_call_that_was_running(
    aws_stack: Stack, path: str
) -> None:
    sid, token, payload = crash_mid_call(aws_stack, path)
    # Lambda's retry of the dead invocation, and a duplicate delivery of it.
    aws_stack.dispatcher.payloads.extend([json.loads(payload), json.loads(payload)])
    results = aws_stack.run_turns()
    assert all(r["ok"] for r in results)
    events = events_of(sid)
    turn_id = json.loads(payload)["turnId"]
    mine = [e for e in events if e.get("turnId") == turn_id]
    (result,) = [e for e in mine if e["type"] == "action.result"]
    assert result["data"]["isError"] is True
    assert result["data"]["error"] == IN_DOUBT  # never the tool's own result: it did not run
    assert [e["type"] for e in mine].count("turn.failed") == 1
    assert [e["index"] for e in events] == list(range(len(events)))
    assert aws_stack.model.remaining == 0  # no model step after the crash either
    # The session is usable afterwards.
    script(aws_stack, Step.text("Fine."))
    followed = api_call(
        "api/follow-up.json",
        path=f"/v1/session/{sid}",
        body={"continuationToken": token, "message": "And now?"},
    )
    assert followed["statusCode"] == 200, followed
    aws_stack.run_turns()
    assert [e["type"] for e in events_of(sid)][-2:] == ["turn.completed", "session.waiting"]


def test_an_invoke_error_on_a_follow_up_gives_the_token_back(aws_stack: Stack) -> None:
    script(aws_stack, Step.text("One."), Step.text("Two."))
    created = body_of(api_call("api/create-session.json"))
    sid, token = created["sessionId"], created["continuationToken"]
    aws_stack.run_turns()
    dispatcher = aws_stack.dispatcher
    real = dispatcher.dispatch

    async def failing(session_id: str, turn_id: str) -> None:
        raise RuntimeError("TooManyRequestsException: Rate exceeded")

    dispatcher.dispatch = failing  # type: ignore[method-assign]
    try:
        refused = api_call(
            "api/follow-up.json",
            path=f"/v1/session/{sid}",
            body={"continuationToken": token, "message": "Lost?"},
        )
    finally:
        dispatcher.dispatch = real  # type: ignore[method-assign]
    assert refused["statusCode"] >= 500, refused
    assert body_of(refused)["ok"] is False
    # Not stuck: the session is idle and the token the client still has works.
    assert [e["type"] for e in events_of(sid)][-1] == "session.waiting"
    again = api_call(
        "api/follow-up.json",
        path=f"/v1/session/{sid}",
        body={"continuationToken": token, "message": "Again."},
    )
    assert again["statusCode"] == 200, again
    aws_stack.run_turns()
    types = [e["type"] for e in events_of(sid)]
    assert types.count("turn.completed") == 2
