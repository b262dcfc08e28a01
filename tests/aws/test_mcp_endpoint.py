"""`/v1/mcp` through ApiFunction's handler (Mangum) with API Gateway HTTP API events.

The official MCP client speaks through an HTTP transport that turns each request into the
payload-2.0 event API Gateway would send (based on events/api/mcp-initialize.json) and
hands it to `api.handler` in a worker thread, as a Lambda invocation. Turns run when the
test hands the captured async invokes to TurnFunction, so `ask` answers `running` and
`check` sees the turn complete afterwards: the deployed flow.
"""

from __future__ import annotations

import asyncio
import copy
import json

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from agentkit.aws.handlers import api
from agentkit.models.scripted import Step
from tests.aws.conftest import API_DOMAIN, TOKEN, FakeContext, Stack, invoke_api, load_event, script
from tests.mcp.client import ERAS, call


class LambdaTransport(httpx2.AsyncBaseTransport):
    """Every request becomes one ApiFunction invocation."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        status, headers, content = await invoke_api(request)
        return httpx2.Response(status, headers=headers, content=content)


def lambda_client(mode: str, token: str | None = TOKEN) -> Client:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(
        transport=LambdaTransport(), headers=headers, timeout=httpx2.Timeout(60)
    )
    transport = streamable_http_client(f"https://{API_DOMAIN}/v1/mcp", http_client=http)
    return Client(transport, mode=mode)


@pytest.mark.parametrize("era", ERAS)
def test_ask_then_check_across_invocations(aws_stack: Stack, era: str) -> None:
    script(aws_stack, Step.text("Hello from Lambda."))

    async def scenario() -> None:
        async with lambda_client(era) as client:
            names = sorted(t.name for t in (await client.list_tools()).tools)
            assert names == ["ask", "call_tool", "check"]
            asked = await call(client, "ask", {"message": "Hi there", "waitSeconds": 0})
            assert asked["status"] == "running", asked
            # TurnFunction runs the captured invoke, as Lambda's async invoke would
            await asyncio.to_thread(aws_stack.run_turns)
            done = await call(client, "check", {"sessionId": asked["sessionId"], "waitSeconds": 5})
            assert done["status"] == "completed" and done["reply"] == "Hello from Lambda.", done
            # `deploy` needs approval: outside a session it never runs at once ...
            refused = await call(
                client, "call_tool", {"name": "deploy", "input": {"env": "staging"}}
            )
            assert refused["error"] == "approval_required", refused
            # ... and inside one it is parked for a decision, not run.
            parked = await call(
                client,
                "call_tool",
                {"name": "deploy", "input": {"env": "staging"}, "sessionId": asked["sessionId"]},
            )
            assert parked["status"] == "pending_approval" and parked["result"] is None, parked

    asyncio.run(scenario())


def test_raw_events_405_401_and_rebound_host(aws_stack: Stack) -> None:
    sample = load_event("api/mcp-initialize.json")
    ok = api.handler(copy.deepcopy(sample), FakeContext())
    assert ok["statusCode"] == 200, ok
    assert json.loads(ok["body"])["result"]["serverInfo"]["name"] == "agentkit"

    for method in ("GET", "DELETE"):
        event = copy.deepcopy(sample)
        event["requestContext"]["http"]["method"] = method
        event.pop("body")
        refused = api.handler(event, FakeContext())
        assert refused["statusCode"] == 405 and refused["headers"]["allow"] == "POST"

    anonymous = copy.deepcopy(sample)
    del anonymous["headers"]["authorization"]
    assert api.handler(anonymous, FakeContext())["statusCode"] == 401

    rebound = copy.deepcopy(sample)
    rebound["headers"]["host"] = "attacker.example"
    assert api.handler(rebound, FakeContext())["statusCode"] == 421

    foreign = copy.deepcopy(sample)
    foreign["headers"]["origin"] = "https://attacker.example"
    assert api.handler(foreign, FakeContext())["statusCode"] == 403

    same_site = copy.deepcopy(sample)
    same_site["headers"]["origin"] = f"https://{API_DOMAIN}"
    assert api.handler(same_site, FakeContext())["statusCode"] == 200
