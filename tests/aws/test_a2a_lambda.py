"""A2A through ApiFunction's handler (Mangum) with API Gateway HTTP API events, driven by
the official `a2a-sdk` client: the card names the API's own URL and the bearer scheme, a
send returns at once, TurnFunction runs the turn, and `GetTask` reads the completed task."""

from __future__ import annotations

import asyncio

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState

from agentkit.models.scripted import Step
from tests.aws.conftest import API_DOMAIN, TOKEN, Stack, invoke_api, script


class LambdaTransport(httpx.AsyncBaseTransport):
    """Every request becomes one ApiFunction invocation."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        status, headers, content = await invoke_api(request)
        return httpx.Response(status, headers=headers, content=content)


def test_a_task_across_invocations(aws_stack: Stack) -> None:
    script(aws_stack, Step.text("Hello from Lambda."))

    async def scenario() -> None:
        headers = {"authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient(
            transport=LambdaTransport(), headers=headers, timeout=60
        ) as http:
            card = await A2ACardResolver(http, f"https://{API_DOMAIN}").get_agent_card()
            assert card.supported_interfaces[0].url == f"https://{API_DOMAIN}/v1/a2a"
            assert card.security_schemes["bearerAuth"].http_auth_security_scheme.scheme
            config = ClientConfig(httpx_client=http, streaming=False, polling=True)
            client = ClientFactory(config).create(card)
            request = SendMessageRequest(
                message=Message(message_id="m1", role=Role.ROLE_USER, parts=[Part(text="Hi")])
            )
            (sent,) = [r async for r in client.send_message(request)]
            assert sent.task.status.state == TaskState.TASK_STATE_SUBMITTED
            # TurnFunction runs the captured invoke, as Lambda's async invoke would
            await asyncio.to_thread(aws_stack.run_turns)
            task = await client.get_task(GetTaskRequest(id=sent.task.id))
            assert task.status.state == TaskState.TASK_STATE_COMPLETED
            assert [p.text for a in task.artifacts for p in a.parts] == ["Hello from Lambda."]

    asyncio.run(scenario())
