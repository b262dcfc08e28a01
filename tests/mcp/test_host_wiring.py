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

pytestmark = pytest.mark.slow(reason="starts MCP servers in subprocesses")

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


DELEGATING = {
    **FILES,
    "agent/subagents/converter/agent.py": """
        from agentkit import define_agent

        agent = define_agent(description="Converts units with the units server.")
    """,
    "agent/subagents/converter/instructions.md": "Convert what you are given.\n",
    "agent/channels/probe.py": """
        from pydantic import BaseModel

        from agentkit import ChannelContext, define_channel, route


        class ProbeBody(BaseModel):
            km: float


        async def probe(body: ProbeBody, ctx: ChannelContext) -> dict:
            return await ctx.host.mcp.call_tool("units", "km_to_miles", {"km": body.km})


        channel = define_channel(description="Probe", routes=[route("POST", "/", probe)])
    """,
}


def test_subagents_and_channel_handlers_use_the_parent_connections(tmp_path: Path) -> None:
    """A subagent runs an `mcp__` tool of its parent's connection; a channel handler calls
    the same connection through `ctx.host.mcp`."""
    import httpx

    from agentkit.models.scripted import ScriptedModel, Step, call
    from agentkit.server.app import create_app
    from agentkit.server.options import ServerOptions
    from agentkit.sessions import Principal

    model = ScriptedModel(
        [
            Step.tool_calls(call("task", {"subagent": "converter", "prompt": "5 km in miles"})),
            Step.tool_calls(call("mcp__units__km_to_miles", {"km": 5})),  # the subagent
            Step.text("5 km is 3.107 miles."),  # the subagent's answer
            Step.text("About 3.1 miles."),  # the parent's
        ]
    )
    bundle = AgentBundle.discover(write_agent(tmp_path / "units", DELEGATING))
    host = LocalHost(
        bundle,
        LocalHostOptions(state_root=tmp_path / "state", dev=True),
        runtime_options={"model_resolver": lambda _id: model},
    )

    async def scenario() -> None:
        await host.start()
        try:
            accepted = await host.runtime.start_session("Convert 5 km", principal=Principal("u"))
            sid = accepted.session_id
            events = []
            for _ in range(200):  # follow the store until the turn ends (no sleeps)
                events += await host.store.follow(sid, len(events), timeout=10)
                if any(e.type in ("turn.completed", "turn.failed") for e in events):
                    break
            ends = [e.type for e in events if e.type in ("turn.completed", "turn.failed")]
            assert ends == ["turn.completed"], [e.type for e in events]
            [done] = [e for e in events if e.type == "subagent.completed"]
            assert not done.data.get("error") and done.data["result"] == "5 km is 3.107 miles."
            # what the subagent's model saw: the MCP tool offered and its real result
            sub_request = model.requests[1]
            assert "mcp__units__km_to_miles" in {t.name for t in sub_request.tools}
            tool_result = model.requests[2].messages[-1]
            assert '"result": 3.107' in tool_result.content  # type: ignore[union-attr]

            app = create_app([host.mount()], ServerOptions(mode="single", dev=True))
            transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5000))
            async with httpx.AsyncClient(
                transport=transport, base_url="http://127.0.0.1"
            ) as client:
                r = await client.post("/v1/channels/probe", json={"km": 10})
            assert r.status_code == 200, r.text
            assert r.json() == {"result": 6.214}
        finally:
            await host.aclose()

    asyncio.run(scenario())
