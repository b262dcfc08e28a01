"""`GET /stream` through ApiFunction is a long poll: Mangum sends a response only when it
ends, so a stream response ends with the first events it has (a replay, or the first live
ones) instead of holding them until its window closes. The store's poll backs off only as
far as `AGENTKIT_STREAM_POLL_MAX`."""

from __future__ import annotations

import dataclasses
import json

from agentkit.aws.handlers import _common, api
from agentkit.aws.host import AwsHost
from agentkit.aws.settings import AwsSettings
from tests.aws.conftest import FakeContext, Stack, load_event
from tests.aws.test_flow import api_call, body_of

LONG_WINDOW = 600.0  # far past pytest's timeout: only an early end lets the request return


def stream(session_id: str, start: int) -> dict[str, object]:
    event = load_event("api/stream.json")
    path = f"/v1/session/{session_id}/stream"
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["rawQueryString"] = f"startIndex={start}"
    event["queryStringParameters"] = {"startIndex": str(start)}
    return api.handler(event, FakeContext())


def test_a_stream_response_ends_with_its_first_events(aws_stack: Stack) -> None:
    created = api_call("api/create-session.json")
    assert created["statusCode"] == 200, created
    session_id = body_of(created)["sessionId"]
    # The same stack, but a window no request could wait out.
    settings = dataclasses.replace(aws_stack.settings, stream_window=LONG_WINDOW)
    host = AwsHost(
        settings,
        bundle=aws_stack.host.bundle,
        clients=aws_stack.host.client,
        dispatcher=aws_stack.dispatcher,
    )
    _common.use_host(host)
    api.reset()

    first = stream(session_id, 0)
    assert first["statusCode"] == 200, first
    lines = [json.loads(line) for line in str(first["body"]).splitlines() if line]
    assert [e["index"] for e in lines] == list(range(len(lines)))
    assert "message.received" in [e["type"] for e in lines]  # the turn has not run: no end

    # The next request, from the following index, gets the next events once they exist.
    aws_stack.run_turns()
    second = stream(session_id, lines[-1]["index"] + 1)
    assert second["statusCode"] == 200, second
    more = [json.loads(line) for line in str(second["body"]).splitlines() if line]
    assert more and more[0]["index"] == lines[-1]["index"] + 1


def test_the_poll_cap_comes_from_the_environment(aws_stack: Stack) -> None:
    env = {"AGENTKIT_SESSIONS_TABLE": "s", "AGENTKIT_EVENTS_TABLE": "e"}
    assert AwsSettings.from_env(env).stream_poll_max == 0.2
    settings = AwsSettings.from_env({**env, "AGENTKIT_STREAM_POLL_MAX": "0.35"})
    assert settings.stream_poll_max == 0.35
    host = AwsHost(
        dataclasses.replace(aws_stack.settings, stream_poll_max=0.35),
        bundle=aws_stack.host.bundle,
        clients=aws_stack.host.client,
        dispatcher=aws_stack.dispatcher,
    )
    assert host.store._poll == (0.05, 0.35)
