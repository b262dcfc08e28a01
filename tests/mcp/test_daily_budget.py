"""The per-principal daily limit counts MCP `ask` too: once a caller has spent it over HTTP,
`/v1/mcp` refuses with a JSON-RPC error that carries the HTTP 429's code and message."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests.fixtures.http_server import AGENT_FILES, Served, write_agent
from tests.fixtures.http_server import _env as serve_env
from tests.mcp.client import mcp_client
from tests.server.helpers import read_stream, start_session, turn_ends

TOKEN = "budget-caller"
AGENT = """
    from agentkit import define_agent

    agent = define_agent(model="test", max_steps=6, budget={"principal_daily_tokens": 1})
"""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    project = write_agent(tmp_path / "helpdesk", {**AGENT_FILES, "agent/agent.py": AGENT})
    s = Served(project, tmp_path / "state", ["--bearer-token", TOKEN], serve_env({})).start()
    yield s
    s.stop()
    assert "Traceback" not in s.output(), s.output()


def test_mcp_ask_is_refused_once_the_callers_day_is_spent(served: Served) -> None:
    headers = {"authorization": f"Bearer {TOKEN}"}
    with httpx.Client(timeout=60, headers=headers) as client:
        sid = start_session(client, served.url, "hello")["sessionId"]
        read_stream(client, served.url, sid, until=turn_ends())
        refused = client.post(f"{served.url}/v1/session", json={"message": "again"})
    assert refused.status_code == 429, refused.text
    http_error = refused.json()

    async def ask() -> MCPError:
        async with mcp_client(f"{served.url}/v1/mcp", token=TOKEN) as mcp:
            with pytest.raises(MCPError) as caught:
                await mcp.call_tool("ask", {"message": "spend more", "waitSeconds": 1})
            return caught.value

    error = asyncio.run(ask())
    assert error.code == 429
    assert error.message == http_error["message"]
    assert error.data["error"] == http_error["error"] == "rate_limited"
    assert error.data["retryAfter"] >= 1
