"""Idempotency keys on the deployed shape: through ApiFunction with API Gateway's event
shape, on the DynamoDB store (moto server). A response API Gateway never delivered (the
29 s limit, a dropped connection) is answered again when the caller retries."""

from __future__ import annotations

import json
from typing import Any

from agentkit.aws.handlers import api
from agentkit.models.scripted import Step
from tests.aws.conftest import FakeContext, Stack, load_event, script
from tests.aws.test_flow import body_of, event_types


def keyed(name: str, key: str, *, path: str | None = None, body: str | None = None) -> Any:
    """Send a sample API Gateway event with an `Idempotency-Key` (lower-cased, as API
    Gateway passes headers on)."""
    event = load_event(name)
    event["headers"]["idempotency-key"] = key
    if path is not None:
        event["rawPath"] = path
        event["requestContext"]["http"]["path"] = path
    if body is not None:
        event["body"] = body
    return api.handler(event, FakeContext())


def test_a_follow_up_retried_with_its_key_is_answered_once(aws_stack: Stack) -> None:
    script(aws_stack, Step.text("First."), Step.text("Second."))
    created = body_of(keyed("api/create-session.json", "start-1"))
    aws_stack.run_turns()
    path = f"/v1/session/{created['sessionId']}"
    body = json.dumps({"continuationToken": created["continuationToken"], "message": "Again."})
    first = keyed("api/follow-up.json", "follow-1", path=path, body=body)  # never delivered
    retried = keyed("api/follow-up.json", "follow-1", path=path, body=body)
    assert first["statusCode"] == retried["statusCode"] == 200, retried
    assert retried["headers"]["idempotent-replayed"] == "true"
    assert body_of(retried) == body_of(first)
    assert len(aws_stack.dispatcher.payloads) == 1  # one follow-up turn dispatched
    aws_stack.run_turns()
    assert event_types(aws_stack, created["sessionId"]).count("message.received") == 2


def test_a_session_start_retried_with_its_key_is_one_session(aws_stack: Stack) -> None:
    script(aws_stack, Step.text("Hello."))
    first = keyed("api/create-session.json", "start-2")
    again = keyed("api/create-session.json", "start-2")
    assert body_of(again)["sessionId"] == body_of(first)["sessionId"]
    assert again["headers"]["idempotent-replayed"] == "true"
    assert len(aws_stack.dispatcher.payloads) == 1


def test_the_same_key_with_another_body_is_a_422(aws_stack: Stack) -> None:
    script(aws_stack, Step.text("Hello."))
    keyed("api/create-session.json", "start-3")
    reused = keyed("api/create-session.json", "start-3", body='{"message": "something else"}')
    assert reused["statusCode"] == 422, reused
    assert body_of(reused)["error"] == "idempotency_key_reused"
    assert len(aws_stack.dispatcher.payloads) == 1
