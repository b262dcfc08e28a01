"""The client against a real `agentkit serve` process: sessions, rotation, approvals, stop,
direct calls, errors and bearer auth."""

from __future__ import annotations

import pytest

from agentkit.client import (
    AsyncClient,
    AuthError,
    Client,
    NotFoundError,
    StaleToken,
    TurnError,
)
from agentkit.events import EventType
from tests.fixtures.http_server import Served, ServeFactory


def test_start_reply_and_follow_ups_rotate_the_token(shared_server: Served) -> None:
    with Client(shared_server.url) as client:
        session = client.start("What is the weather in Paris?")
        first_token = session.continuation_token
        reply = session.reply_text(timeout=60)
        assert "Paris" in reply

        accepted = session.send("And in Rome?")
        assert session.continuation_token == accepted.continuation_token != first_token
        assert "Rome" in session.reply_text(timeout=60)

        # The old token was rotated away: a second holder of it is told, never resent.
        stale = client.session(session.id, first_token)
        with pytest.raises(StaleToken) as caught:
            stale.send("from an old copy")
        assert caught.value.status == 409 and caught.value.code == "stale_token"
        assert "not accepted" in str(caught.value)

        events = list(session.events(follow=False))
        assert [e.index for e in events] == list(range(len(events)))
        messages = [e.data["message"] for e in events if e.type == EventType.MESSAGE_RECEIVED]
        assert messages == ["What is the weather in Paris?", "And in Rome?"]  # nothing resent
        completed = [e for e in events if e.type == EventType.TURN_COMPLETED]
        assert [e.turn_id for e in completed][-1] == session.turn_id


def test_approve_and_deny_parked_calls(shared_server: Served) -> None:
    with Client(shared_server.url) as client:
        session = client.start("wipe the notes folder")
        with pytest.raises(TurnError) as parked:
            session.reply_text(timeout=60)  # the turn parks: no reply yet
        assert parked.value.parked
        [pending] = session.pending_approvals()
        assert pending.tool_name == "wipe_notes"
        session.approve(pending.call_id)
        reply = session.reply_text(timeout=60)
        assert "wiped" in reply
        assert session.pending_approvals() == []

        session.send("wipe the notes folder again")
        session.wait(timeout=60)
        [again] = session.pending_approvals()
        session.deny(again.call_id)
        session.wait(timeout=60)
        results = [
            e
            for e in session.events(follow=False)
            if e.type == EventType.ACTION_RESULT and e.data["callId"] == again.call_id
        ]
        assert results and results[0].data["isError"] is True


def test_stop_interrupts_a_running_turn(shared_server: Served) -> None:
    with Client(shared_server.url) as client:
        session = client.start("run the slow job")
        for event in session.events():
            if event.type == EventType.ACTIONS_REQUESTED:
                break
        assert session.stop() is True
        with pytest.raises(TurnError, match="interrupted"):
            session.reply_text(timeout=60)
        assert session.stop() is False  # nothing is running any more


def test_direct_tool_calls_and_errors_carry_the_server_code(shared_server: Served) -> None:
    with Client(shared_server.url) as client:
        outcome = client.call_tool("get_weather", {"city": "Oslo"})
        assert outcome.result == {"city": "Oslo", "tempC": 21} and not outcome.is_error
        with pytest.raises(NotFoundError) as unknown:
            client.call_tool("no_such_tool")
        assert unknown.value.code == "tool_not_found"
        assert "get_weather" in unknown.value.body["available"]

        session = client.start("What is the weather in Oslo?")
        session.wait(timeout=60)
        inside = session.call_tool("get_weather", {"city": "Bergen"})
        recorded = [
            e
            for e in session.events(follow=False)
            if e.type == EventType.ACTION_RESULT and e.data["callId"] == inside.call_id
        ]
        assert recorded and recorded[0].data["result"]["city"] == "Bergen"

        info = client.info()
        assert {t["name"] for t in info["tools"]} >= {"get_weather", "wipe_notes"}
        assert session.id in {s.session_id for s in client.sessions()}
        with pytest.raises(NotFoundError):
            list(client.session("ses_" + "x" * 22).events(follow=False))


def test_bearer_auth(serve: ServeFactory) -> None:
    served = serve("--bearer-token", "right-token")
    with Client(served.url) as anonymous, pytest.raises(AuthError) as refused:
        anonymous.start("hello")
    assert refused.value.status == 401
    with Client(served.url, token="wrong-token") as wrong, pytest.raises(AuthError):
        wrong.info()
    with Client(served.url, token="right-token") as client:
        session = client.start("What is the weather in Lima?")
        assert "Lima" in session.reply_text(timeout=60)
    with Client(served.url, token="right-token") as client:
        # Streams need the token too (`events` sends it on every resumed request).
        assert any(
            e.type == EventType.TURN_COMPLETED
            for e in client.session(session.id).events(follow=False)
        )


async def test_the_async_client_does_the_same(shared_server: Served) -> None:
    async with AsyncClient(shared_server.url) as client:
        session = await client.start("What is the weather in Quito?")
        assert "Quito" in await session.reply_text(timeout=60)
        old = session.continuation_token
        await session.send("wipe the notes folder")
        assert session.continuation_token != old
        await session.wait(timeout=60)
        [pending] = await session.pending_approvals()
        await session.approve(pending.call_id)
        assert "wiped" in await session.reply_text(timeout=60)
        seen = [e.index async for e in session.events(follow=False)]
        assert seen == list(range(len(seen)))
        with pytest.raises(StaleToken):
            await client.session(session.id, old).send("late")
