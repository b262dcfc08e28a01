"""GitHub pack paths that need the host in hand: `on` handlers replacing the default, and
`pull_request.closed` cancelling the PR's reminders (the real app, in process)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from agentkit.hosts.local import LocalHost, LocalHostOptions
from agentkit.project.bundle import AgentBundle
from agentkit.server.app import create_app
from agentkit.server.options import ServerOptions
from tests.channels.conftest import fail_next_dispatch, write
from tests.channels.github_payloads import delivery, pull_request

SECRET = "inprocess-secret"
FILES = {
    "agent/agent.py": "from agentkit import define_agent\n\nagent = define_agent(model='test')\n",
    "agent/instructions.md": "You review pull requests.\n",
    "agent/channels/github.py": """
        from agentkit.channels.github import github_channel
        from agentkit.errors import Conflict


        def labeled(payload, ctx):
            return {"task": "Triage label " + payload["label"]["name"]}


        async def edited(payload, ctx):
            accepted = await ctx.receive("edited", continuation_key="custom-key")
            return {"ok": True, "mine": accepted.session_id}


        def assigned(payload, ctx):
            raise Conflict("the session is busy", code="session_busy")


        channel = github_channel(
            secret="inprocess-secret",
            on={
                "pull_request.labeled": labeled,
                "pull_request.edited": edited,
                "pull_request.assigned": assigned,
            },
        )
    """,
}


@pytest.fixture
async def app_host(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, LocalHost]]:
    project = write(tmp_path / "reviewer", FILES)
    host = LocalHost(AgentBundle.discover(project), LocalHostOptions(tmp_path / "state", dev=True))
    await host.start()
    app = create_app([host.mount()], ServerOptions(mode="single", dev=True))
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5000))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client, host
    await host.runtime.dispatcher.drain()  # type: ignore[attr-defined]
    await host.aclose()


async def send(client: httpx.AsyncClient, event: str, payload: dict) -> httpx.Response:
    body, headers = delivery(event, payload, SECRET)
    return await client.post("/v1/channels/github", content=body, headers=headers)


async def test_on_handlers_replace_the_default(app_host) -> None:
    client, host = app_host
    labeled = pull_request("labeled", 3, title="x", head="a" * 40) | {"label": {"name": "bug"}}
    r = await send(client, "pull_request", labeled)
    assert r.status_code == 202, r.text
    record = await host.store.get_session(r.json()["sessionId"])
    assert record is not None and record.mode == "task" and record.principal == "channel:github"
    r = await send(client, "pull_request", pull_request("edited", 3, title="x", head="a" * 40))
    assert r.status_code == 200
    mine = await host.store.get_session(r.json()["mine"])
    assert mine is not None and mine.continuation_key == "custom-key"


async def test_closing_a_pr_cancels_its_reminders(app_host) -> None:
    client, host = app_host
    key = "pr:octo/widgets#4"
    # Both pull requests have a conversation (owned by the channel), and a tool in each
    # set a reminder in it: the channel's handlers see exactly its own principal's.
    for number in (4, 5):
        opened = await send(
            client, "pull_request", pull_request("opened", number, title="x", head="a" * 40)
        )
        assert opened.status_code == 200, opened.text
    await host.runtime.dispatcher.drain()  # type: ignore[attr-defined]
    channel_reminders = host.reminders.for_principal("channel:github")
    kept = await channel_reminders.create(
        purpose="user_follow_up",
        channel_id="github",
        continuation_token="pr:octo/widgets#5",
        delay="1h",
        prompt="check again",
    )
    gone = await channel_reminders.create(
        purpose="user_follow_up",
        channel_id="github",
        continuation_token=key,
        delay="1h",
        prompt="check again",
    )
    r = await send(client, "pull_request", pull_request("closed", 4, title="x", head="a" * 40))
    assert r.status_code == 200 and r.json()["remindersCancelled"] == 1
    assert (await host.reminders.get(gone.id)).status != "active"
    assert (await host.reminders.get(kept.id)).status == "active"


async def test_a_delivery_that_failed_is_handled_when_github_redelivers_it(app_host) -> None:
    # The first attempt records the message but cannot hand its turn over (a dispatcher
    # outage); GitHub's redelivery of the same id must then run, not count as a duplicate.
    _, host = app_host
    dispatcher = fail_next_dispatch(host)
    app = create_app([host.mount()], ServerOptions(mode="single", dev=True))
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5000), raise_app_exceptions=False)
    body, headers = delivery(
        "pull_request", pull_request("opened", 9, title="Fix", head="b" * 40), SECRET
    )
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        first = await client.post("/v1/channels/github", content=body, headers=headers)
        again = await client.post("/v1/channels/github", content=body, headers=headers)
        once_more = await client.post("/v1/channels/github", content=body, headers=headers)
    assert first.status_code == 500 and first.json()["ok"] is False
    assert again.status_code == 200, again.text
    assert "duplicate" not in again.json()
    assert once_more.json() == {"ok": True, "duplicate": True}
    await dispatcher.drain()  # type: ignore[attr-defined]
    events = await host.store.read(again.json()["sessionId"])
    terminal = [e.type for e in events if e.type in ("turn.completed", "turn.failed")]
    assert terminal == ["turn.failed", "turn.completed"]


async def test_a_refused_delivery_stays_refused_when_redelivered(app_host) -> None:
    # A deliberate refusal (here a 409 session_busy) is an answer, not a failure: the
    # delivery stays claimed, so a redelivery cannot turn it into a late message.
    client, _host = app_host
    body, headers = delivery(
        "pull_request", pull_request("assigned", 11, title="x", head="d" * 40), SECRET
    )
    first = await client.post("/v1/channels/github", content=body, headers=headers)
    again = await client.post("/v1/channels/github", content=body, headers=headers)
    assert first.status_code == 409 and first.json()["error"] == "session_busy"
    assert again.json() == {"ok": True, "duplicate": True}
