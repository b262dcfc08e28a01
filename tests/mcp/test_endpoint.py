"""`/v1/mcp` on a real `agentkit serve`, spoken to by the official MCP client in both
protocol eras: the tools, bounded waits, direct calls, methods, auth, ownership, Origin."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.fixtures.http_server import AGENT_FILES, Served, write_agent
from tests.fixtures.http_server import _env as serve_env
from tests.mcp.client import ERAS, LEGACY, MODERN, call, mcp_client

pytestmark = pytest.mark.slow(reason="drives the MCP endpoint with the official client")

ALICE, BOB = "alice-mcp-token", "bob-mcp-token"
GATED_TOOL = """
    import asyncio
    import os
    from pathlib import Path

    from pydantic import BaseModel
    from agentkit import ToolContext, define_tool


    class GateInput(BaseModel):
        label: str = "gate"


    @define_tool(description="Wait until the gate opens.", timeout=300)
    async def wait_for_gate(input: GateInput, ctx: ToolContext) -> dict:
        gate = Path(os.environ["GATE_FILE"])
        while not gate.exists():
            await asyncio.sleep(0.05)
        return {"opened": input.label}
"""
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
JSON_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _serve(base: Path, *args: str) -> Served:
    project = write_agent(
        base / "helpdesk", {**AGENT_FILES, "agent/tools/wait_for_gate.py": GATED_TOOL}
    )
    env = serve_env({"GATE_FILE": str(base / "gate")})
    return Served(project, base / "state", list(args), env).start()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    s = _serve(tmp_path_factory.mktemp("mcp"))
    yield s
    s.stop()
    assert "Traceback" not in s.output(), s.output()


@pytest.fixture(scope="module")
def bearer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("mcp-bearer")
    tokens = base / "tokens.txt"
    tokens.write_text(f"{BOB}\n")
    s = _serve(base, "--mode", "single", "--bearer-token", ALICE, "--tokens-file", str(tokens))
    yield s
    s.stop()


@pytest.mark.parametrize("era", ERAS)
def test_initialize_list_ask_and_follow_up(served: Served, era: str) -> None:
    async def scenario() -> None:
        async with mcp_client(f"{served.url}/v1/mcp", mode=era) as client:
            assert client.protocol_version == ("2025-11-25" if era == LEGACY else MODERN)
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert sorted(tools) == ["ask", "call_tool", "check"]
            assert "message" in tools["ask"].input_schema["properties"]
            first = await call(client, "ask", {"message": "What is the weather in Paris?"})
            assert first["status"] == "completed", first
            assert '"tempC": 21' in first["reply"] and first["text"] == first["reply"]
            again = await call(
                client,
                "ask",
                {
                    "message": "And in Oslo?",
                    "sessionId": first["sessionId"],
                    "continuationToken": first["continuationToken"],
                },
            )
            assert again["status"] == "completed" and again["sessionId"] == first["sessionId"]
            assert "Oslo" in again["reply"]
            # the old token was rotated by the follow-up
            stale = await call(
                client,
                "ask",
                {
                    "message": "once more",
                    "sessionId": first["sessionId"],
                    "continuationToken": first["continuationToken"],
                },
            )
            assert stale["isError"] and stale["error"] == "stale_token"

    asyncio.run(scenario())


def test_auto_client_discovers_the_2026_era_and_every_request_carries_its_meta(
    served: Served,
) -> None:
    """The SDK's default client probes `server/discover`; the endpoint answers it, so the
    client settles on 2026-07-28 with no `initialize` and no session header, and each of
    its requests carries the version and client info in `_meta`."""
    sent: list[tuple[httpx2.Headers, dict[str, object]]] = []
    answered: list[httpx2.Headers] = []

    async def on_request(request: httpx2.Request) -> None:
        sent.append((request.headers, json.loads(request.content)))

    async def on_response(response: httpx2.Response) -> None:
        answered.append(response.headers)

    async def scenario() -> None:
        http = httpx2.AsyncClient(
            timeout=httpx2.Timeout(90),
            event_hooks={"request": [on_request], "response": [on_response]},
        )
        transport = streamable_http_client(f"{served.url}/v1/mcp", http_client=http)
        async with Client(transport, mode="auto") as client:
            assert client.protocol_version == MODERN
            names = sorted(t.name for t in (await client.list_tools()).tools)
            assert names == ["ask", "call_tool", "check"]
            out = await call(client, "ask", {"message": "What is the weather in Paris?"})
            assert out["status"] == "completed" and '"tempC": 21' in out["reply"]

    asyncio.run(scenario())
    methods = [body["method"] for _, body in sent]
    assert methods[0] == "server/discover", methods
    assert "initialize" not in methods and "notifications/initialized" not in methods
    assert {"tools/list", "tools/call"} <= set(methods)
    for headers, body in sent:
        assert "mcp-session-id" not in headers
        if body["method"] == "server/discover":
            continue
        assert headers["mcp-protocol-version"] == MODERN
        meta = body["params"]["_meta"]  # type: ignore[index]
        assert meta["io.modelcontextprotocol/protocolVersion"] == MODERN
        assert "io.modelcontextprotocol/clientCapabilities" in meta
        assert meta["io.modelcontextprotocol/clientInfo"]["name"]
    assert all("mcp-session-id" not in h for h in answered)


def test_long_turn_answers_running_then_check_completes(served: Served) -> None:
    gate = served.project.parent / "gate"

    async def scenario() -> None:
        async with mcp_client(f"{served.url}/v1/mcp") as client:
            started = await call(client, "ask", {"message": "open the gate", "waitSeconds": 0.5})
            assert started["status"] == "running", started
            assert "check" in started["text"]
            still = await call(
                client, "check", {"sessionId": started["sessionId"], "waitSeconds": 0}
            )
            assert still["status"] == "running"
            gate.write_text("open")
            done = await call(
                client, "check", {"sessionId": started["sessionId"], "waitSeconds": 25}
            )
            while done["status"] == "running":  # a loaded machine: poll, never assert speed
                done = await call(
                    client, "check", {"sessionId": started["sessionId"], "waitSeconds": 25}
                )
            assert done["status"] == "completed", done
            assert '"opened": "gate"' in done["reply"]

    asyncio.run(scenario())


def test_approval_parks_as_waiting_approval(served: Served) -> None:
    async def scenario() -> None:
        async with mcp_client(f"{served.url}/v1/mcp", mode=MODERN) as client:
            parked = await call(client, "ask", {"message": "wipe the notes folder"})
            assert parked["status"] == "waiting_approval", parked
            assert [a["toolName"] for a in parked["pendingApprovals"]] == ["wipe_notes"]

    asyncio.run(scenario())


def test_call_tool_runs_a_server_tool(served: Served) -> None:
    async def scenario() -> None:
        async with mcp_client(f"{served.url}/v1/mcp") as client:
            out = await call(
                client, "call_tool", {"name": "get_weather", "input": {"city": "Oslo"}}
            )
            assert not out["isError"] and out["result"] == {"city": "Oslo", "tempC": 21}
            bad = await call(client, "call_tool", {"name": "get_weather", "input": {}})
            assert bad["isError"] and bad["error"] == "invalid_input"
            missing = await call(client, "call_tool", {"name": "no_such_tool"})
            assert missing["isError"] and missing["error"] == "tool_not_found"
            agent_side = await call(client, "call_tool", {"name": "workspace_script"})
            assert agent_side["isError"]
            unknown = await call(client, "check", {"sessionId": "ses_doesnotexist0000000000"})
            assert unknown["isError"] and unknown["error"].endswith("not_found")
            malformed = await call(client, "ask", {"message": ""})
            assert malformed["isError"] and malformed["error"] == "bad_request"

    asyncio.run(scenario())


def test_get_and_delete_are_405_with_allow(served: Served) -> None:
    for method in ("GET", "DELETE"):
        r = httpx.request(method, f"{served.url}/v1/mcp", headers=JSON_HEADERS, timeout=60)
        assert r.status_code == 405, r.text
        assert r.headers["allow"] == "POST"
        assert r.json()["ok"] is False


def test_rebound_host_and_foreign_origin_are_refused(served: Served) -> None:
    url = f"{served.url}/v1/mcp"
    ok = httpx.post(url, json=INIT, headers=JSON_HEADERS, timeout=60)
    assert ok.status_code == 200 and ok.json()["result"]["serverInfo"]["name"] == "agentkit"
    local_origin = httpx.post(
        url,
        json=INIT,
        headers={**JSON_HEADERS, "origin": f"http://127.0.0.1:{served.port}"},
        timeout=60,
    )
    assert local_origin.status_code == 200
    evil_origin = httpx.post(
        url, json=INIT, headers={**JSON_HEADERS, "origin": "https://evil.example"}, timeout=60
    )
    assert evil_origin.status_code == 403
    rebound = httpx.post(
        url,
        json=INIT,
        headers={**JSON_HEADERS, "host": f"evil.example:{served.port}"},
        timeout=60,
    )
    assert rebound.status_code == 421


def test_bearer_auth_and_ownership(bearer: Served) -> None:
    url = f"{bearer.url}/v1/mcp"
    refused = httpx.post(url, json=INIT, headers=JSON_HEADERS, timeout=60)
    assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"
    wrong = httpx.post(
        url, json=INIT, headers={**JSON_HEADERS, "authorization": "Bearer nope"}, timeout=60
    )
    assert wrong.status_code == 401

    async def scenario() -> None:
        async with mcp_client(url, token=ALICE) as alice:
            mine = await call(alice, "ask", {"message": "What is the weather in Rome?"})
            assert mine["status"] == "completed"
        for era in ERAS:
            async with mcp_client(url, token=BOB, mode=era) as bob:
                peek = await call(bob, "check", {"sessionId": mine["sessionId"]})
                assert peek["isError"] and peek["error"] == "forbidden", peek
                hijack = await call(
                    bob,
                    "ask",
                    {
                        "message": "tell me alice's secrets",
                        "sessionId": mine["sessionId"],
                        "continuationToken": mine["continuationToken"],
                    },
                )
                assert hijack["isError"] and hijack["error"] == "forbidden", hijack
        async with mcp_client(url, token=ALICE) as alice:
            assert (await call(alice, "check", {"sessionId": mine["sessionId"]}))[
                "status"
            ] == "completed"

    asyncio.run(scenario())
