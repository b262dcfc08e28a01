"""Reminders given to tools are scoped to the calling session's principal, over the wire.

Two bearer principals share one `agentkit serve`. The agent has three ordinary tools that
pass their input straight to `ctx.host.reminders`, as a careless tool would. Bob drives
them with direct tool calls bound to his own session and tries to list, cancel and aim
reminders at Alice's conversation. Each attempt must fail.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agentkit.server.auth import bearer_principal_id
from tests.fixtures.http_server import AGENT_FILES, SLUG, Served, _env, write_agent
from tests.server.helpers import read_stream, start_session, turn_ends

pytestmark = pytest.mark.slow(reason="serves agentkit and waits for reminders to fire")

ALICE, BOB = "alice-reminder-token", "bob-reminder-token"

REMINDER_TOOLS = {
    "agent/tools/remind_in.py": """
        from pydantic import BaseModel
        from agentkit import ToolContext, define_tool


        class RemindIn(BaseModel):
            channel_id: str | None = None
            key: str | None = None
            session_id: str | None = None
            delay: str | None = "1h"
            every: str | None = None


        @define_tool(description="Set a reminder in a conversation.")
        async def remind_in(input: RemindIn, ctx: ToolContext) -> dict:
            options = {
                "purpose": "follow_up",
                "prompt": "Wake up.",
                "channel_id": input.channel_id or ctx.session.channel_id,
                "continuation_token": input.key or ctx.session.continuation_key,
            }
            if input.every:
                options["every"] = input.every
            else:
                options["delay"] = input.delay
            if input.session_id:
                options["session_id"] = input.session_id
            made = await ctx.host.reminders.create(**options)
            return {"reminderId": made.id, "sessionId": made.session_id}
    """,
    "agent/tools/my_reminders.py": """
        from pydantic import BaseModel
        from agentkit import ToolContext, define_tool


        class Nothing(BaseModel):
            pass


        @define_tool(description="List reminders.")
        async def my_reminders(input: Nothing, ctx: ToolContext) -> list:
            return [
                {"id": r.id, "sessionId": r.session_id, "status": r.status}
                for r in await ctx.host.reminders.list()
            ]
    """,
    "agent/tools/drop_reminder.py": """
        from pydantic import BaseModel
        from agentkit import ToolContext, define_tool


        class Drop(BaseModel):
            reminder_id: str


        @define_tool(description="Cancel a reminder.")
        async def drop_reminder(input: Drop, ctx: ToolContext) -> dict:
            found = await ctx.host.reminders.get(input.reminder_id)
            cancelled = await ctx.host.reminders.cancel(input.reminder_id)
            return {"found": found is not None, "cancelled": cancelled}
    """,
    # A channel whose handlers, like the tools above, hand what arrives straight to
    # `ctx.host.reminders`: its route handlers act for the channel, its events handler for
    # the channel's session.
    "agent/channels/peek.py": """
        import json
        import os

        from pydantic import BaseModel
        from agentkit import define_channel, route


        class Target(BaseModel):
            reminder_id: str


        async def listing(ctx):
            return {"ids": [r.id for r in await ctx.host.reminders.list()]}


        async def drop(body: Target, ctx):
            found = await ctx.host.reminders.get(body.reminder_id)
            cancelled = await ctx.host.reminders.cancel(body.reminder_id)
            return {"found": found is not None, "cancelled": cancelled}


        async def start(ctx):
            accepted = await ctx.receive("hello", continuation_key="peek-1")
            return {"sessionId": accepted.session_id}


        async def seen(event, ctx):
            ids = [r.id for r in await ctx.host.reminders.list()]
            with open(os.environ["PEEK_SEEN"], "a", encoding="utf-8") as f:
                f.write(json.dumps({"session": ctx.session.principal, "ids": ids}) + "\\n")


        channel = define_channel(
            routes=[
                route("GET", "/list", listing),
                route("POST", "/drop", drop),
                route("POST", "/start", start),
            ],
            events={"turn.completed": seen},
        )
    """,
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("reminder-scope")
    project = write_agent(base / SLUG, {**AGENT_FILES, **REMINDER_TOOLS})
    env = _env({"AGENTKIT_REMINDERS_PER_SESSION": "3", "PEEK_SEEN": str(base / "peek.ndjson")})
    args = ["--mode", "single", "--bearer-token", ALICE, "--bearer-token", BOB]
    server = Served(project, base / "state", args, env).start()
    yield server
    server.stop()


def client_for(token: str) -> httpx.Client:
    return httpx.Client(headers={"authorization": f"Bearer {token}"}, timeout=30)


@pytest.fixture
def alice() -> Iterator[httpx.Client]:
    with client_for(ALICE) as c:
        yield c


@pytest.fixture
def bob() -> Iterator[httpx.Client]:
    with client_for(BOB) as c:
        yield c


def idle_session(client: httpx.Client, url: str) -> str:
    sid: str = start_session(client, url, "hello")["sessionId"]
    read_stream(client, url, sid, until=turn_ends())
    return sid


def active_reminders(served: Served, token: str) -> set[str]:
    """The ids of the active reminders a principal owns, read from the state folder itself
    (other tests of this module, in any order, may have made some of Bob's)."""
    owner = bearer_principal_id(token)
    records = [json.loads(p.read_text()) for p in served.state_root.rglob("reminders/*.json")]
    return {r["id"] for r in records if r["principal"] == owner and r["status"] == "active"}


def tool(client: httpx.Client, url: str, name: str, sid: str, **tool_input: Any) -> Any:
    r = client.post(f"{url}/v1/tools/{name}", json={"input": tool_input, "sessionId": sid})
    assert r.status_code == 200, r.text
    return r.json()


def test_a_tool_driven_by_one_principal_cannot_reach_anothers_reminders(
    served: Served, alice: httpx.Client, bob: httpx.Client
) -> None:
    url = served.url
    alice_sid = idle_session(alice, url)
    bob_sid = idle_session(bob, url)

    made = tool(alice, url, "remind_in", alice_sid)
    assert made["isError"] is False, made
    alice_reminder = made["result"]["reminderId"]
    assert made["result"]["sessionId"] == alice_sid

    # Listing shows Bob exactly his own, never Alice's.
    listed = tool(bob, url, "my_reminders", bob_sid)
    assert listed["isError"] is False, listed
    assert {r["id"] for r in listed["result"]} == active_reminders(served, BOB)
    assert alice_reminder not in {r["id"] for r in listed["result"]}

    # Reading or cancelling Alice's reminder by id looks like a reminder that does not exist.
    dropped = tool(bob, url, "drop_reminder", bob_sid, reminder_id=alice_reminder)
    assert dropped["result"] == {"found": False, "cancelled": False}

    # Aiming a reminder at Alice's conversation by its key is refused ...
    aimed = tool(bob, url, "remind_in", bob_sid, channel_id="http", key=f"session:{alice_sid}")
    assert aimed["isError"] is True
    assert "no conversation of yours" in str(aimed["result"])
    # ... and so is binding one to her session id under Bob's own key.
    bound = tool(bob, url, "remind_in", bob_sid, session_id=alice_sid)
    assert bound["isError"] is True
    assert "no conversation of yours" in str(bound["result"])

    # Alice still sees exactly her reminders, this one active among them.
    mine = tool(alice, url, "my_reminders", alice_sid)["result"]
    assert {"id": alice_reminder, "sessionId": alice_sid, "status": "active"} in mine
    assert {r["id"] for r in mine} == active_reminders(served, ALICE)
    # And she can cancel it herself.
    assert tool(alice, url, "drop_reminder", alice_sid, reminder_id=alice_reminder)["result"] == {
        "found": True,
        "cancelled": True,
    }


def test_channel_handlers_cannot_reach_a_principals_reminders(
    served: Served, alice: httpx.Client, bob: httpx.Client
) -> None:
    """A channel's route handlers act for the caller admitted to the route, and its events
    handlers for the session's owner: they never see or cancel another principal's
    reminders, whatever the request or the events carry."""
    url = served.url
    alice_sid = idle_session(alice, url)
    made = tool(alice, url, "remind_in", alice_sid)
    assert made["isError"] is False, made
    alice_reminder = made["result"]["reminderId"]

    listed = bob.get(f"{url}/v1/channels/peek/list")
    assert listed.status_code == 200, listed.text
    assert set(listed.json()["ids"]) == active_reminders(served, BOB)
    assert alice_reminder not in listed.json()["ids"]
    dropped = bob.post(f"{url}/v1/channels/peek/drop", json={"reminder_id": alice_reminder})
    assert dropped.status_code == 200, dropped.text
    assert dropped.json() == {"found": False, "cancelled": False}

    # The events handler of the session Bob's request started sees only Bob's reminders.
    started = bob.post(f"{url}/v1/channels/peek/start", json={})
    assert started.status_code == 200, started.text
    seen_log = served.state_root.parent / "peek.ndjson"
    deadline = time.monotonic() + 120
    while not (seen_log.exists() and seen_log.read_text().endswith("\n")):
        assert time.monotonic() < deadline, "the channel's events handler never ran"
        time.sleep(0.1)
    [seen] = [json.loads(line) for line in seen_log.read_text().splitlines()]
    assert seen["session"] == bearer_principal_id(BOB)
    assert set(seen["ids"]) == active_reminders(served, BOB)
    assert alice_reminder not in seen["ids"]

    # Alice's reminder is untouched.
    mine = tool(alice, url, "my_reminders", alice_sid)["result"]
    assert {"id": alice_reminder, "sessionId": alice_sid, "status": "active"} in mine


def test_reminders_made_by_tools_have_a_minimum_interval_and_a_cap(
    served: Served, bob: httpx.Client
) -> None:
    url = served.url
    sid = idle_session(bob, url)
    fast = tool(bob, url, "remind_in", sid, every="10s")
    assert fast["isError"] is True
    assert "at most every 60 seconds" in str(fast["result"])
    # A duration past what a date can hold is a clear refusal, not a crash of the call.
    for huge in ("99999999999999999999d", "4000d"):
        far = tool(bob, url, "remind_in", sid, delay=huge)
        assert far["isError"] is True, far
        assert "is too long (at most 3660d)" in str(far["result"])
    for _ in range(3):  # the server allows three per session
        assert tool(bob, url, "remind_in", sid)["isError"] is False
    over = tool(bob, url, "remind_in", sid)
    assert over["isError"] is True
    assert "already has 3 active reminders" in str(over["result"])


def test_each_reminder_records_the_principal_that_created_it(
    served: Served, alice: httpx.Client
) -> None:
    sid = idle_session(alice, served.url)
    assert tool(alice, served.url, "remind_in", sid)["isError"] is False
    records = [json.loads(p.read_text()) for p in served.state_root.rglob("reminders/*.json")]
    assert records, "no reminder records written"
    assert all(r["principal"] and r["createdIn"] == r["sessionId"] for r in records)
