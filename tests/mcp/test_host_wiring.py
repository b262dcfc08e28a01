"""The local host hands one set of connections to every caller: the engine's tool table
(per turn), `host.mcp` for tools, and the same services object schedule handlers get."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from agentkit.hosts.local import LocalHost, LocalHostOptions
from agentkit.mcp.connections import McpConnections
from agentkit.project.bundle import AgentBundle
from tests.fixtures.http_server import write_agent
from tests.mcp.servers import UNITS_SERVER

pytestmark = pytest.mark.slow

FILES = {
    "agent/instructions.md": "Convert units.\n",
    "agent/mcp-connections/units.py": f"""
        from agentkit import define_mcp_connection

        units = define_mcp_connection(command=[{sys.executable!r}, {UNITS_SERVER!r}])
    """,
    "agent/schedules/tick.py": """
        import json
        import os

        from agentkit import define_schedule

        async def run(ctx):
            miles = await ctx.host.mcp.call_tool("units", "km_to_miles", {"km": 5})
            with open(os.environ["TICK_OUT"], "w") as f:
                json.dump(miles, f)

        tick = define_schedule(cron="0 0 1 1 *", run=run)
    """,
}


def test_turns_tools_and_handlers_share_the_connections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "tick.json"
    monkeypatch.setenv("TICK_OUT", str(out))
    bundle = AgentBundle.discover(write_agent(tmp_path / "units", FILES))
    host = LocalHost(bundle, LocalHostOptions(state_root=tmp_path / "state", dev=True))

    async def scenario() -> None:
        try:
            assert isinstance(host.mcp, McpConnections)
            assert host.services.mcp is host.mcp
            assert host.runtime.tool_providers == [host.mcp]
            table = await host.runtime.turn_tools()
            assert "mcp__units__km_to_miles" in table  # opened lazily, on this first use
            pid = await host.services.mcp.call_tool("units", "server_pid", {})  # type: ignore[union-attr]
            await host.dispatch_schedule("tick")  # the schedule handler uses ctx.host.mcp
            assert json.loads(out.read_text()) == {"result": 3.107}
            assert await host.services.mcp.call_tool("units", "server_pid", {}) == pid  # type: ignore[union-attr]
        finally:
            await host.aclose()

    asyncio.run(scenario())
