"""The dev routes: dispatch schedules and fire reminders by hand, only under --dev."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from agentkit.server.app import create_app
from agentkit.server.auth import AuthChain
from agentkit.server.options import AgentMount, ServerOptions
from agentkit.sessions import Principal
from tests.scheduling.conftest import Rig

PR = "pr:owner/repo#1"


def mount(rig: Rig) -> AgentMount:
    return AgentMount(slug=rig.bundle.slug, service=rig.runtime, host=rig.scheduling)


@pytest.fixture
async def client(dev_rig: Rig) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app([mount(dev_rig)], ServerOptions(mode="single", dev=True))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
        yield c


async def test_dispatching_a_schedule_returns_its_sessions(
    client: httpx.AsyncClient, dev_rig: Rig
) -> None:
    response = await client.post("/v1/dev/schedules/heartbeat")
    assert response.status_code == 200
    body = response.json()
    assert body["scheduleId"] == "heartbeat"
    [session_id] = body["sessionIds"]
    assert await dev_rig.store.get_session(session_id) is not None


async def test_an_unknown_schedule_is_404(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/dev/schedules/nope")
    assert response.status_code == 404
    assert response.json()["ok"] is False


async def test_reminders_are_listed_and_fired_by_hand(
    client: httpx.AsyncClient, dev_rig: Rig
) -> None:
    accepted = await dev_rig.runtime.start_session(
        "Review.", principal=Principal("bob"), channel_id="github", continuation_key=PR
    )
    await dev_rig.wait_for(accepted.session_id, "turn.completed")
    reminder = await dev_rig.scheduling.reminders.create(
        purpose="p", channel_id="github", continuation_token=PR, delay="1h", prompt="Wake."
    )
    listed = (await client.get("/v1/dev/reminders")).json()["reminders"]
    assert [(r["id"], r["status"]) for r in listed] == [(reminder.id, "active")]

    fired = await client.post(f"/v1/dev/reminders/{reminder.id}")
    assert fired.status_code == 200
    assert fired.json()["sessionId"] == accepted.session_id
    received = await dev_rig.wait_for(accepted.session_id, "message.received", after=2)
    assert received.data["source"] == "reminder"

    again = await client.post(f"/v1/dev/reminders/{reminder.id}")
    assert again.status_code == 409


async def test_an_unknown_reminder_is_404(client: httpx.AsyncClient) -> None:
    assert (await client.post("/v1/dev/reminders/rem_nope")).status_code == 404


async def test_dev_routes_do_not_exist_without_dev(dev_rig: Rig) -> None:
    app = create_app([mount(dev_rig)], ServerOptions(mode="single", dev=False))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
        assert (await c.post("/v1/dev/schedules/heartbeat")).status_code in (404, 405)
        assert (await c.get("/v1/dev/reminders")).status_code in (404, 405)


async def test_a_remote_bearer_principal_may_not_use_the_dev_routes(dev_rig: Rig) -> None:
    token = "a-long-enough-bearer-token-for-tests"
    options = ServerOptions(
        mode="single", dev=True, auth=AuthChain.from_flags(bearer_tokens=[token], dev=True)
    )
    app = create_app([mount(dev_rig)], options)
    transport = httpx.ASGITransport(app=app, client=("203.0.113.5", 40000))
    headers = {"authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://agent.test") as c:
        assert (await c.get("/v1/health")).status_code == 200
        listed = await c.get("/v1/dev/reminders", headers=headers)
        fired = await c.post("/v1/dev/schedules/heartbeat", headers=headers)
    assert (listed.status_code, listed.json()["error"]) == (403, "forbidden")
    assert fired.status_code == 403
    everyone = Principal("dev", admin=True)
    assert (await dev_rig.runtime.list_sessions(principal=everyone)).items == []
