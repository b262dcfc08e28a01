"""An AG-UI thread and an AI SDK chat name their session by a key of the client's: two first
messages on one new key make one session, and a later message meets the caller's daily
limit as the first did. In process, over the ASGI app: nothing here needs a socket."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentkit.hosts.local import LocalHost, LocalHostOptions
from agentkit.project.bundle import AgentBundle
from agentkit.server.app import create_app
from agentkit.server.options import ServerOptions
from tests.fixtures.http_server import AGENT_FILES, SLUG, write_agent

BUDGETED = """
    from agentkit import define_agent

    agent = define_agent(model="test", max_steps=6, budget={"principal_daily_tokens": 1})
"""


def ag_ui_body(key: str, text: str) -> dict[str, Any]:
    user = {"id": f"u-{uuid.uuid4().hex[:6]}", "role": "user", "content": text}
    return {"threadId": key, "runId": f"run-{uuid.uuid4().hex[:8]}", "messages": [user]}


def ai_sdk_body(key: str, text: str) -> dict[str, Any]:
    user = {
        "id": f"u-{uuid.uuid4().hex[:6]}",
        "role": "user",
        "parts": [{"type": "text", "text": text}],
    }
    return {"id": key, "messages": [user], "trigger": "submit-message"}


# (route, channel, request body, the error of a refused request read from its SSE body)
PROTOCOLS: dict[str, tuple[str, str, Callable[[str, str], dict[str, Any]], str]] = {
    "ag-ui": ("/v1/ag-ui", "ag-ui", ag_ui_body, "RUN_ERROR"),
    "ai-sdk": ("/v1/ai-sdk/chat", "ai-sdk", ai_sdk_body, "error"),
}


def sse_data(text: str) -> list[Any]:
    out: list[Any] = []
    for line in text.splitlines():
        if line.startswith("data: ") and line[6:] != "[DONE]":
            out.append(json.loads(line[6:]))
    return out


async def serve(root: Path, agent: str | None = None) -> tuple[LocalHost, httpx.AsyncClient]:
    files = AGENT_FILES if agent is None else {**AGENT_FILES, "agent/agent.py": agent}
    bundle = AgentBundle.discover(write_agent(root / SLUG, files))
    host = LocalHost(bundle, LocalHostOptions(state_root=root / "state", dev=True))
    await host.start()
    app = create_app([host.mount()], ServerOptions())
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))
    client = httpx.AsyncClient(transport=transport, base_url=f"http://127.0.0.1/{SLUG}", timeout=60)
    return host, client


@pytest.fixture
async def plain(tmp_path: Path) -> AsyncIterator[tuple[LocalHost, httpx.AsyncClient]]:
    host, client = await serve(tmp_path)
    yield host, client
    await client.aclose()
    await host.aclose()


@pytest.fixture
async def budgeted(tmp_path: Path) -> AsyncIterator[tuple[LocalHost, httpx.AsyncClient]]:
    host, client = await serve(tmp_path, BUDGETED)
    yield host, client
    await client.aclose()
    await host.aclose()


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
async def test_two_first_messages_on_one_new_key_make_one_session(
    plain: tuple[LocalHost, httpx.AsyncClient], protocol: str
) -> None:
    host, client = plain
    route, channel, body, _ = PROTOCOLS[protocol]
    key = f"key-{uuid.uuid4().hex}"
    answers = await asyncio.gather(
        *(client.post(route, json=body(key, f"hello {n}")) for n in range(4))
    )
    assert [a.status_code for a in answers] == [200] * 4, [a.text for a in answers]
    found = await host.runtime.store.find_session(channel, key)
    assert found is not None
    listed = (await host.runtime.store.list_sessions(None)).items
    assert [s.id for s in listed if s.channel_id == channel] == [found.id]
    received = [e for e in await host.runtime.store.read(found.id) if e.type == "message.received"]
    assert sorted(e.data["message"] for e in received) == [f"hello {n}" for n in range(4)]


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
async def test_a_later_message_meets_the_daily_limit(
    budgeted: tuple[LocalHost, httpx.AsyncClient], protocol: str
) -> None:
    _, client = budgeted
    route, _, body, error_type = PROTOCOLS[protocol]
    key = f"key-{uuid.uuid4().hex}"
    first = await client.post(route, json=body(key, "hello"))
    assert first.status_code == 200, first.text
    later = await client.post(route, json=body(key, "and again"))
    assert later.status_code == 429, later.text
    assert int(later.headers["retry-after"]) >= 1
    (refusal,) = [p for p in sse_data(later.text) if p.get("type") == error_type]
    assert "daily" in json.dumps(refusal).lower()
