"""`POST /v1/session/:id/fork` over HTTP (the app in process over a real LocalHost)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentkit.engine.dispatch import LocalDispatcher
from agentkit.hosts.local import LocalHost, LocalHostOptions
from agentkit.project.bundle import AgentBundle
from agentkit.server.app import create_app
from agentkit.server.auth import AuthChain
from agentkit.server.options import ServerOptions
from agentkit.sessions import Principal
from tests.fixtures.http_server import SLUG, write_agent

AppClient = Callable[..., httpx.AsyncClient]
BASE = f"/{SLUG}/v1/session"


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[LocalHost]:
    bundle = AgentBundle.discover(write_agent(tmp_path / SLUG))
    local = LocalHost(bundle, LocalHostOptions(state_root=tmp_path / "state", dev=True))
    await local.start()
    yield local
    await local.aclose()


@pytest.fixture
async def client(host: LocalHost) -> AsyncIterator[httpx.AsyncClient]:
    # The plain loopback policy: the local developer, who is no admin (owns only their own).
    app = create_app([host.mount()], ServerOptions(auth=AuthChain.from_flags()))
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
        yield c


async def drained(host: LocalHost) -> None:
    dispatcher = host.runtime.dispatcher
    assert isinstance(dispatcher, LocalDispatcher)
    await dispatcher.drain()


async def chat(client: httpx.AsyncClient, host: LocalHost) -> dict[str, Any]:
    started = await client.post(BASE, json={"message": "hello"})
    assert started.status_code == 200, started.text
    await drained(host)
    body: dict[str, Any] = started.json()
    return body


async def events(client: httpx.AsyncClient, sid: str) -> list[dict[str, Any]]:
    import json

    r = await client.get(f"{BASE}/{sid}/events")
    assert r.status_code == 200
    return [json.loads(line) for line in r.text.splitlines() if line]


async def test_a_fork_answers_like_a_new_session_and_takes_a_follow_up(
    client: httpx.AsyncClient, host: LocalHost
) -> None:
    sid = (await chat(client, host))["sessionId"]
    original = await events(client, sid)
    r = await client.post(f"{BASE}/{sid}/fork", json={"atIndex": len(original) - 1})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["ok"] is True and body["fromSessionId"] == sid
    assert body["atIndex"] == len(original) - 1
    fork = body["sessionId"]
    assert fork != sid and body["continuationToken"].startswith("http:")
    assert body["playgroundUrl"].endswith(f"/playground?sessionId={fork}")
    forked = await events(client, fork)
    assert forked[0]["type"] == "session.forked"
    assert forked[0]["data"]["fromSessionId"] == sid
    assert [e["type"] for e in forked[1:]] == [e["type"] for e in original]
    follow = await client.post(
        f"{BASE}/{fork}", json={"continuationToken": body["continuationToken"], "message": "more"}
    )
    assert follow.status_code == 200, follow.text
    await drained(host)
    assert (await events(client, fork))[-2]["type"] == "turn.completed"
    assert await events(client, sid) == original


async def test_forking_another_principals_session_is_403(
    client: httpx.AsyncClient, host: LocalHost
) -> None:
    other = await host.runtime.start_session("hello", principal=Principal("someone-else"))
    await drained(host)
    r = await client.post(f"{BASE}/{other.session_id}/fork", json={"atIndex": 0})
    assert r.status_code == 403
    assert r.json()["ok"] is False and r.json()["error"] == "forbidden"
    assert r.json()["message"]


@pytest.mark.parametrize(
    "body",
    [
        {"atIndex": 999},
        {"atIndex": -1},
        {"atIndex": "1"},
        {"atIndex": 1.5},
        {"atIndex": True},
        {"atIndex": None},
        {},
        {"atIndex": 0, "extra": 1},
        [0],
    ],
)
async def test_a_bad_index_is_400_in_the_error_shape(
    client: httpx.AsyncClient, host: LocalHost, body: Any
) -> None:
    sid = (await chat(client, host))["sessionId"]
    r = await client.post(f"{BASE}/{sid}/fork", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["ok"] is False and r.json()["error"] == "bad_request"
    assert r.json()["message"]
    listed = (await client.get(f"/{SLUG}/v1/sessions")).json()["sessions"]
    assert [s["sessionId"] for s in listed] == [sid]  # no fork was made


async def test_forking_an_unknown_session_is_404(client: httpx.AsyncClient) -> None:
    r = await client.post(f"{BASE}/ses_doesnotexist1234/fork", json={"atIndex": 0})
    assert r.status_code == 404 and r.json()["error"] == "session_not_found"


async def test_a_retried_fork_with_the_same_idempotency_key_makes_one_fork(
    client: httpx.AsyncClient, host: LocalHost
) -> None:
    sid = (await chat(client, host))["sessionId"]
    headers = {"Idempotency-Key": str(uuid.uuid4())}
    first = await client.post(f"{BASE}/{sid}/fork", json={"atIndex": 1}, headers=headers)
    again = await client.post(f"{BASE}/{sid}/fork", json={"atIndex": 1}, headers=headers)
    assert first.status_code == again.status_code == 200
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.json() == first.json()
    listed = (await client.get(f"/{SLUG}/v1/sessions")).json()["sessions"]
    assert len(listed) == 2
    reused = await client.post(f"{BASE}/{sid}/fork", json={"atIndex": 0}, headers=headers)
    assert reused.status_code == 422 and reused.json()["error"] == "idempotency_key_reused"
