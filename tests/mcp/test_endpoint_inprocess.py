"""`/v1/mcp` in process (httpx ASGI transport over a real LocalHost): what is listed for an
agent without server tools, and hosts allowed by `AGENTKIT_MCP_ALLOWED_HOSTS`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentkit.hosts.local import LocalHost, LocalHostOptions
from agentkit.project.bundle import AgentBundle
from agentkit.server.app import create_app
from agentkit.server.auth import AuthChain
from agentkit.server.options import AgentMount, ServerOptions
from tests.fixtures.http_server import write_agent

LIST = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}
HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[LocalHost]:
    files = {"agent/instructions.md": "Only talk.\n"}
    bundle = AgentBundle.discover(write_agent(tmp_path / "chat", files))
    local = LocalHost(bundle, LocalHostOptions(state_root=tmp_path / "state"))
    await local.start()
    yield local
    await local.aclose()


async def post(
    host: LocalHost, base_url: str, options: ServerOptions | None = None, **headers: str
) -> httpx.Response:
    options = options or ServerOptions(mode="single")
    app = create_app([AgentMount("chat", host.runtime, host=host)], options)
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))
    async with httpx.AsyncClient(transport=transport, base_url=base_url) as client:
        return await client.post("/v1/mcp", json=LIST, headers={**HEADERS, **headers})


async def test_call_tool_is_not_listed_without_server_tools(host: LocalHost) -> None:
    r = await post(host, "http://localhost:8080")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    assert [t["name"] for t in body["result"]["tools"]] == ["ask", "check"]


async def test_extra_allowed_hosts_come_from_the_environment(
    host: LocalHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A server behind a proxy under another name uses bearer auth (the loopback policy
    # admits loopback names only); MCP's own rebinding check then needs the name too.
    chain = AuthChain.from_flags(bearer_tokens=["s3cret"])
    options = ServerOptions(mode="single", auth=chain)
    bearer = {"authorization": "Bearer s3cret"}
    assert (await post(host, "http://agents.internal", options, **bearer)).status_code == 421
    monkeypatch.setenv("AGENTKIT_MCP_ALLOWED_HOSTS", "agents.internal, other.internal")
    assert (await post(host, "http://agents.internal", options, **bearer)).status_code == 200
    allowed = await post(
        host, "http://agents.internal", options, origin="https://agents.internal", **bearer
    )
    assert allowed.status_code == 200
    assert (await post(host, "http://evil.internal", options, **bearer)).status_code == 421
