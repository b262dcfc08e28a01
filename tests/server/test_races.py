"""Concurrent follow-ups with one continuation token: exactly one wins, nothing is lost."""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx
import pytest

from tests.fixtures.http_server import Served
from tests.server.helpers import dump, of_type, read_stream, start_session, turn_ends

pytestmark = pytest.mark.slow(reason="runs 20-way races against a served agent")
RACERS = 20


async def race(url: str, sid: str, token: str) -> list[httpx.Response]:
    async with httpx.AsyncClient(timeout=60) as client:
        return await asyncio.gather(
            *(
                client.post(
                    f"{url}/v1/session/{sid}",
                    json={"continuationToken": token, "message": f"racer {i}"},
                )
                for i in range(RACERS)
            )
        )


def assert_one_winner(responses: list[httpx.Response]) -> None:
    statuses = Counter(r.status_code for r in responses)
    assert statuses == {200: 1, 409: RACERS - 1}, [r.text for r in responses]
    assert all(r.json()["ok"] is False for r in responses if r.status_code == 409)


def assert_gap_free_with_one_new_message(client: httpx.Client, url: str, sid: str) -> None:
    events = dump(client, url, sid)
    assert [e["index"] for e in events] == list(range(len(events)))
    messages = [e["data"]["message"] for e in events if e["type"] == "message.received"]
    assert len(messages) == 2
    assert messages[1].startswith("racer ")


async def test_racing_follow_ups_on_an_idle_session(shared_server: Served) -> None:
    url = shared_server.url
    with httpx.Client(timeout=30) as client:
        body = start_session(client, url, "weather in Porto")
        sid = body["sessionId"]
        read_stream(client, url, sid, until=turn_ends())
        responses = await race(url, sid, body["continuationToken"])
        assert_one_winner(responses)
        read_stream(client, url, sid, until=turn_ends(2))
        assert_gap_free_with_one_new_message(client, url, sid)


async def test_racing_follow_ups_on_a_busy_session(shared_server: Served) -> None:
    url = shared_server.url
    with httpx.Client(timeout=30) as client:
        body = start_session(client, url, "run the slow job")
        sid = body["sessionId"]
        read_stream(client, url, sid, until=of_type("actions.requested"))
        responses = await race(url, sid, body["continuationToken"])
        assert_one_winner(responses)
        events = read_stream(client, url, sid, until=turn_ends(2))
        assert [e["type"] for e in events if e["type"].startswith("turn.")].count(
            "turn.failed"
        ) == 1
        assert_gap_free_with_one_new_message(client, url, sid)
