"""Many NDJSON streams of one session against a real `agentkit serve`: every follower gets
the recorded stream from its own `startIndex`, with no gap and no duplicate, while a turn
appends (they share one tail of the session; see `engine.tails`)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from tests.fixtures.http_server import Served
from tests.server.helpers import dump, read_stream, start_session, turn_ends

pytestmark = pytest.mark.slow(reason="drives many streams over HTTP")


async def test_forty_followers_of_one_session_each_get_their_index_on(
    shared_server: Served,
) -> None:
    url = shared_server.url
    with httpx.Client(timeout=30) as client:
        body = start_session(client, url, "weather in Lima")
        sid = body["sessionId"]
        first = read_stream(client, url, sid, until=turn_ends())
    starts = [[0, 3, len(first) - 1, len(first)][n % 4] for n in range(40)]
    opened = [asyncio.Event() for _ in starts]

    async def listen(ac: httpx.AsyncClient, start: int, ready: asyncio.Event) -> list[Any]:
        seen: list[dict[str, Any]] = []
        params = {"startIndex": start, "window": 30}
        async with ac.stream("GET", f"{url}/v1/session/{sid}/stream", params=params) as r:
            assert r.status_code == 200
            ready.set()
            async for line in r.aiter_lines():
                if line:
                    seen.append(json.loads(line))
                    if seen[-1]["index"] >= len(first) and seen[-1]["type"] == "turn.completed":
                        return seen
        return seen

    limits = httpx.Limits(max_connections=100)
    async with httpx.AsyncClient(timeout=40, limits=limits) as ac:
        listeners = [
            asyncio.create_task(listen(ac, k, ready))
            for k, ready in zip(starts, opened, strict=True)
        ]
        await asyncio.gather(*(ready.wait() for ready in opened))
        follow = await ac.post(
            f"{url}/v1/session/{sid}",
            json={"continuationToken": body["continuationToken"], "message": "and in Quito?"},
        )
        assert follow.status_code == 200, follow.text
        got = await asyncio.wait_for(asyncio.gather(*listeners), 40)
    with httpx.Client(timeout=30) as client:
        recorded = dump(client, url, sid)
    for start, seen in zip(starts, got, strict=True):
        assert seen == recorded[start : start + len(seen)]
        assert seen[-1]["type"] == "turn.completed" and seen[-1]["index"] >= len(first)
