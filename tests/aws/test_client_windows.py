"""The Python client through the Lambda API handler: every request becomes an API Gateway
event for ApiFunction (Mangum), whose stream responses end at the deployed window; the
client resumes window after window and yields each recorded event once."""

from __future__ import annotations

import base64
import json
from urllib.parse import parse_qsl

import httpx

from agentkit.aws.handlers import api
from agentkit.client import Client
from agentkit.events import Event, EventType
from agentkit.models.scripted import Step, call
from tests.aws.conftest import TOKEN, FakeContext, Stack, load_event, script

API_URL = "https://abcdef1234.execute-api.us-east-1.amazonaws.com"


class LambdaTransport(httpx.BaseTransport):
    """Hands each request to ApiFunction as an HTTP API (payload 2.0) event.

    Turns run as TurnFunction would, between requests: a stream request first delivers
    the turns the API has dispatched so far (from the second stream request on, so the
    first window sees a turn that has not run yet)."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.stream_requests = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path.endswith("/stream"):
            self.stream_requests += 1
            if self.stream_requests > 1:
                self.stack.run_turns()
        event = load_event("api/stream.json")
        query = request.url.query.decode()
        event["rawPath"] = path
        event["rawQueryString"] = query
        event["requestContext"]["http"]["path"] = path
        event["requestContext"]["http"]["method"] = request.method
        event["headers"].update({k.lower(): v for k, v in request.headers.items()})
        pairs = dict(parse_qsl(query))
        if pairs:
            event["queryStringParameters"] = pairs
        else:
            event.pop("queryStringParameters", None)
        body = request.read()
        if body:
            event["body"] = body.decode()
            event["isBase64Encoded"] = False
        answer = api.handler(event, FakeContext())
        content = answer.get("body") or ""
        raw = base64.b64decode(content) if answer.get("isBase64Encoded") else content.encode()
        return httpx.Response(answer["statusCode"], headers=answer.get("headers"), content=raw)


def test_the_client_resumes_across_lambda_stream_windows(aws_stack: Stack) -> None:
    script(
        aws_stack,
        Step.tool_calls(call("deploy", {"env": "prod"}, id="call_deploy")),
        Step.text("Deployed to prod, all checks green."),
        Step.text("Nothing else to do."),
    )
    transport = LambdaTransport(aws_stack)
    seen: list[Event] = []
    with Client(API_URL, token=TOKEN, transport=transport) as client:
        session = client.start("Deploy to prod.")
        events = session.events()
        for event in events:
            seen.append(event)
            if event.type == EventType.ACTION_APPROVAL_REQUESTED:
                session.approve(event.data["callId"])  # TurnFunction resumes it later
            if event.type == EventType.TURN_COMPLETED:
                break
        assert seen[-1].data["result"] == "Deployed to prod, all checks green."
        session.send("Anything else?")
        assert session.reply_text() == "Nothing else to do."
        for event in events:
            seen.append(event)
            if event.type == EventType.TURN_COMPLETED:
                break
        recorded = client.dump(session.id)
    assert client.stream_responses >= 3  # the windows ended before the turns did
    assert [e.index for e in seen] == list(range(len(seen)))
    assert seen == recorded[: len(seen)]
    assert [e.type for e in recorded[len(seen) :]] == [EventType.SESSION_WAITING]
    text = "".join(e.data["text"] for e in seen if e.type == EventType.MESSAGE_APPENDED)
    assert text == "".join(e.data["text"] for e in recorded if e.type == EventType.MESSAGE_APPENDED)
    assert "Deployed to prod" in text
    recorded_json = [json.loads(e.to_json()) for e in recorded]
    assert [e["type"] for e in recorded_json].count("turn.completed") == 2
