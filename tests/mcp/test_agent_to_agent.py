"""Agent to agent: two `agentkit serve` processes. The front desk agent has an MCP
connection to the helpdesk agent's `/v1/mcp` (bearer token from the environment) and
delegates with `ask`, both from a model turn and from a server tool that then `check`s."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.fixtures.http_server import AGENT_FILES, Served, write_agent
from tests.fixtures.http_server import _env as serve_env
from tests.server.helpers import read_stream, start_session, turn_ends

pytestmark = pytest.mark.slow(reason="serves two agents that call each other over MCP")
TOKEN = "helpdesk-delegation-token"

FRONT_DESK = {
    "agent/agent.py": """
        from agentkit import define_agent

        agent = define_agent(model="test", max_steps=4)
    """,
    "agent/instructions.md": "Delegate questions to the helpdesk agent.\n",
    "agent/mcp-connections/helpdesk.py": """
        import os

        from agentkit import define_mcp_connection

        helpdesk = define_mcp_connection(
            url=os.environ["HELPDESK_MCP_URL"],
            headers={"Authorization": "Bearer ${HELPDESK_TOKEN}"},
            tools=["ask", "check"],
            timeout=60,
        )
    """,
    "agent/tools/relay.py": """
        from pydantic import BaseModel
        from agentkit import ToolContext, define_tool


        class RelayInput(BaseModel):
            question: str


        @define_tool(description="Ask the helpdesk and wait for its answer.", timeout=120)
        async def relay(input: RelayInput, ctx: ToolContext) -> dict:
            mcp = ctx.host.mcp
            answer = await mcp.call_tool("helpdesk", "ask", {"message": input.question})
            while answer["status"] == "running":
                answer = await mcp.call_tool(
                    "helpdesk", "check", {"sessionId": answer["sessionId"], "waitSeconds": 20}
                )
            return answer
    """,
}


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Served]]:
    base = tmp_path_factory.mktemp("a2a")
    helpdesk = Served(
        write_agent(base / "helpdesk", AGENT_FILES),
        base / "helpdesk-state",
        ["--mode", "single", "--bearer-token", TOKEN],
        serve_env(None),
    ).start()
    front = Served(
        write_agent(base / "frontdesk", FRONT_DESK),
        base / "front-state",
        ["--mode", "single"],
        serve_env({"HELPDESK_MCP_URL": f"{helpdesk.url}/v1/mcp", "HELPDESK_TOKEN": TOKEN}),
    )
    try:
        front.start()
        yield front, helpdesk
    finally:
        front.stop()
        helpdesk.stop()
    assert "Traceback" not in front.output() + helpdesk.output()


def test_model_delegates_with_ask(pair: tuple[Served, Served]) -> None:
    front, helpdesk = pair
    with httpx.Client(timeout=60) as client:
        started = start_session(client, front.url, "Ask the helpdesk about the weather in Paris")
        events = read_stream(client, front.url, started["sessionId"], until=turn_ends(), window=90)
    asked = [
        e["data"]
        for e in events
        if e["type"] == "action.result" and e["data"]["toolName"] == "mcp__helpdesk__ask"
    ]
    assert len(asked) == 1 and asked[0]["isError"] is False, asked
    answer = asked[0]["result"]
    assert answer["status"] == "completed"
    assert '"city": "Paris"' in answer["reply"]
    # the helpdesk recorded the delegated session under the bearer principal
    with httpx.Client(timeout=30, headers={"authorization": f"Bearer {TOKEN}"}) as client:
        mine = client.get(f"{helpdesk.url}/v1/sessions").json()["sessions"]
    assert answer["sessionId"] in {s["sessionId"] for s in mine}


def test_server_tool_delegates_and_polls(pair: tuple[Served, Served]) -> None:
    front, _ = pair
    r = httpx.post(
        f"{front.url}/v1/tools/relay",
        json={"input": {"question": "What is the weather in Lima?"}},
        timeout=150,
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["isError"] is False, body
    assert body["result"]["status"] == "completed"
    assert '"city": "Lima"' in body["result"]["reply"]


def test_wrong_token_is_a_clear_error(tmp_path: Path, pair: tuple[Served, Served]) -> None:
    _, helpdesk = pair
    front = Served(
        write_agent(tmp_path / "frontdesk", FRONT_DESK),
        tmp_path / "state",
        ["--mode", "single"],
        serve_env({"HELPDESK_MCP_URL": f"{helpdesk.url}/v1/mcp", "HELPDESK_TOKEN": "wrong"}),
    ).start()
    try:
        r = httpx.post(
            f"{front.url}/v1/tools/relay", json={"input": {"question": "hi"}}, timeout=150
        )
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["isError"] is True
        assert "helpdesk" in str(body["result"]) and "HTTP 401" in str(body["result"]), body
    finally:
        front.stop()
