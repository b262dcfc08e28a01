"""Retries: a read, and a write carrying its `Idempotency-Key`, are tried again after a
connection error, a read timeout or a 502/503/504, with jittered backoff, within a count
and a total deadline. A write's retries reuse its key, so a server that already acted
answers with its first response and the user never sees the lost answer."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable

import pytest

from agentkit.client import ApiError, AsyncClient, Client, ConnectionLost, StaleToken
from agentkit.client._config import Settings
from agentkit.events import Event, EventType
from tests.client.proxy import CuttingProxy
from tests.client.scripted import ACCEPTED, Exchange, scripted
from tests.fixtures.http_server import SLUG, Served

KEY = "idempotency-key"


def answer(exchange: Exchange) -> None:
    """What the server answers each write with, once it gets through."""
    path = exchange.seen.path
    if path.endswith("/stop"):
        exchange.json(200, {"stopped": True})
    elif "/v1/tools/" in path:
        exchange.json(
            200, {"toolName": "t", "callId": "c", "isError": False, "result": 1, "durationMs": 1}
        )
    elif "/approvals/" in path:
        exchange.json(200, {"ok": True})
    else:
        exchange.json(200, ACCEPTED)


def fail_twice_per_key(failure: str) -> Callable[[Exchange], None]:
    """A server that fails the first two tries of each write (`503` or a dropped answer)."""
    tries: Counter[str] = Counter()

    def respond(exchange: Exchange) -> None:
        key = exchange.seen.headers.get(KEY, exchange.seen.path)
        tries[key] += 1
        if tries[key] <= 2:
            if failure == "503":
                exchange.json(503, {"ok": False, "error": "unavailable"})
            else:
                exchange.drop()
            return
        answer(exchange)

    return respond


@pytest.mark.parametrize("failure", ["503", "dropped"])
def test_every_write_carries_a_key_that_its_retries_reuse(failure: str) -> None:
    with scripted(fail_twice_per_key(failure)) as server:
        with Client(server.url, retries=3, backoff=0.001) as client:
            session = client.start("hello")
            assert session.continuation_token == "tok_2"  # the answer of the third try
            session.send("and again")
            session.approve("call_1")
            session.deny("call_2")
            assert session.stop() is True
            assert client.call_tool("t", {"x": 1}).result == 1
        posts = server.of("POST")
        by_key: dict[str, list[tuple[str, bytes]]] = {}
        for seen in posts:
            by_key.setdefault(seen.headers[KEY], []).append((seen.path, seen.body))
        assert len(by_key) == 6  # one key per write
        for tries in by_key.values():
            assert len(tries) == 3 and len(set(tries)) == 1  # same path, same body
        decisions = {json.loads(seen.body).get("decision") for seen in posts}
        assert decisions >= {"approve", "deny"}


def test_a_read_carries_no_key_and_is_retried_too() -> None:
    def respond(exchange: Exchange) -> None:
        if len(server.requests) <= 2:
            exchange.json(502, {"ok": False, "error": "bad_gateway"})
        else:
            exchange.json(200, {"tools": []})

    with scripted(respond) as server, Client(server.url, retries=2, backoff=0.001) as client:
        assert client.info() == {"tools": []}
        assert len(server.requests) == 3
        assert all(KEY not in seen.headers for seen in server.requests)


def test_a_read_timeout_is_retried_with_the_same_key() -> None:
    def respond(exchange: Exchange) -> None:
        if len(server.requests) == 1:
            exchange.release.wait(30)  # never answers in time
            return
        answer(exchange)

    with scripted(respond) as server:
        with Client(server.url, timeout=0.5, retries=1, backoff=0.001) as client:
            session = client.start("hello")
        assert session.turn_id == "turn_1"
        first, second = server.requests
        assert first.headers[KEY] == second.headers[KEY] and first.body == second.body


def test_retries_stop_at_the_allowed_count() -> None:
    def respond(exchange: Exchange) -> None:
        exchange.json(503, {"ok": False, "error": "unavailable", "message": "restarting"})

    with scripted(respond) as server, Client(server.url, retries=2, backoff=0.001) as client:
        with pytest.raises(ApiError) as refused:
            client.start("hello")
        assert refused.value.status == 503
        assert len(server.requests) == 3


def test_retries_stop_at_the_total_deadline() -> None:
    with scripted(lambda exchange: exchange.drop()) as server:
        with (
            Client(
                server.url, retries=10_000, backoff=0.05, backoff_max=0.05, retry_deadline=0.5
            ) as client,
            pytest.raises(ConnectionLost, match="tried"),
        ):
            client.start("hello")
        # 0.5 s of 25-50 ms pauses: a handful of tries, nowhere near the 10 001 allowed.
        assert 2 <= len(server.requests) < 100


def test_an_error_that_is_not_transient_is_not_retried() -> None:
    def respond(exchange: Exchange) -> None:
        exchange.json(409, {"ok": False, "error": "stale_token"})

    with scripted(respond) as server, Client(server.url, retries=5, backoff=0.001) as client:
        with pytest.raises(ApiError):
            client.session("ses_x", "tok_1").send("hello")
        assert len(server.requests) == 1


def test_a_stale_token_answering_a_retry_says_the_first_try_may_have_landed() -> None:
    # A server that does not replay idempotent writes: the first try was accepted (its
    # answer lost), so the retry meets the token that try rotated.
    def respond(exchange: Exchange) -> None:
        if len(server.requests) == 1:
            exchange.drop()
        else:
            exchange.json(409, {"ok": False, "error": "stale_token"})

    with scripted(respond) as server, Client(server.url, retries=2, backoff=0.001) as client:
        with pytest.raises(StaleToken) as stale:
            client.session("ses_x", "tok_1").send("hello")
        assert stale.value.retried and "may have been accepted" in str(stale.value)
        assert len(server.requests) == 2


def test_the_backoff_doubles_up_to_its_cap_with_jitter() -> None:
    settings = Settings(backoff=0.1, backoff_max=0.4)
    for failures, step in [(1, 0.1), (2, 0.2), (3, 0.4), (9, 0.4)]:
        pauses = [settings.delay(failures) for _ in range(200)]
        assert all(step / 2 <= p <= step for p in pauses)
        assert len(set(pauses)) > 1  # jittered, so clients cut off together spread out


async def test_the_async_client_retries_a_write_with_the_same_key() -> None:
    with scripted(fail_twice_per_key("dropped")) as server:
        async with AsyncClient(server.url, retries=3, backoff=0.001) as client:
            session = await client.start("hello")
            await session.send("again")
        keys = [seen.headers[KEY] for seen in server.of("POST")]
        assert len(keys) == 6 and len(set(keys)) == 2


def test_a_get_is_retried_after_its_answer_was_lost(shared_server: Served) -> None:
    proxy = CuttingProxy(shared_server.port, drop_answers=2)
    try:
        with Client(f"{proxy.url}/{SLUG}", retries=2, backoff=0.01) as client:
            info = client.info()
        assert proxy.dropped == 2 and info["tools"]
        proxy.dropped = 0
        with (
            Client(f"{proxy.url}/{SLUG}", retries=1, backoff=0.01) as client,
            pytest.raises(ConnectionLost),
        ):
            client.info()  # two lost answers, one retry allowed
    finally:
        proxy.close()


def test_a_follow_up_whose_answer_was_lost_is_invisible_to_the_user(
    shared_server: Served,
) -> None:
    with Client(shared_server.url) as direct:
        session = direct.start("What is the weather in Paris?")
        session.wait(timeout=60)
        proxy = CuttingProxy(shared_server.port, drop_answers=1)
        try:
            with Client(f"{proxy.url}/{SLUG}", retries=3, backoff=0.01) as client:
                proxied = client.session(session.id, session.continuation_token)
                proxied.send("And in Rome?")  # the server acted; its answer was cut
                assert proxy.dropped == 1
                assert "Rome" in proxied.reply_text(timeout=60)
                proxied.send("And in Oslo?")  # the token the retry brought back is current
                assert "Oslo" in proxied.reply_text(timeout=60)
        finally:
            proxy.close()
        messages = [
            e.data["message"]
            for e in session.events(follow=False)
            if e.type == EventType.MESSAGE_RECEIVED
        ]
        assert messages == ["What is the weather in Paris?", "And in Rome?", "And in Oslo?"]


def test_a_start_whose_answer_was_lost_opens_one_session(shared_server: Served) -> None:
    with Client(shared_server.url) as direct:
        before = {s.session_id for s in direct.sessions()}
        proxy = CuttingProxy(shared_server.port, drop_answers=1)
        try:
            with Client(f"{proxy.url}/{SLUG}", retries=3, backoff=0.01) as client:
                session = client.start("What is the weather in Lima?")
                assert proxy.dropped == 1
                assert "Lima" in session.reply_text(timeout=60)
        finally:
            proxy.close()
        opened = {s.session_id for s in direct.sessions()} - before
        assert opened == {session.id}


async def test_the_async_client_resumes_through_the_cutting_proxy(shared_server: Served) -> None:
    proxy = CuttingProxy(shared_server.port, every=2)
    try:
        async with AsyncClient(f"{proxy.url}/{SLUG}", retries=10, backoff=0.01) as client:
            session = await client.start("What is the weather in Paris and Rome?")
            seen: list[Event] = [e async for e in session.events(until_settled=True)]
        assert proxy.cuts >= 3
        assert [e.index for e in seen] == list(range(len(seen)))
        with Client(shared_server.url) as direct:
            assert seen == direct.dump(session.id)[: len(seen)]
    finally:
        proxy.close()


def in_use_then_answer(retry_after: str) -> Callable[[Exchange], None]:
    """A server still answering each write's first try when the retry comes: the retry
    gets `409 idempotency_key_in_use` with `Retry-After`; the one after it, the answer."""
    tries: Counter[str] = Counter()

    def respond(exchange: Exchange) -> None:
        key = exchange.seen.headers.get(KEY, exchange.seen.path)
        tries[key] += 1
        if tries[key] == 1:
            exchange.json(
                409,
                {"ok": False, "error": "idempotency_key_in_use", "retryAfter": 1},
                headers={"retry-after": retry_after},
            )
            return
        answer(exchange)

    return respond


def test_a_write_told_its_key_is_in_use_is_retried_after_retry_after() -> None:
    with scripted(in_use_then_answer("1")) as server:
        with Client(server.url, retries=2, backoff=0.001) as client:
            began = time.monotonic()
            session = client.start("hello")
            waited = time.monotonic() - began
        assert session.turn_id == "turn_1"
        first, second = server.of("POST")
        assert first.headers[KEY] == second.headers[KEY] and first.body == second.body
        assert waited >= 1.0  # the server's Retry-After, not the 1 ms backoff


async def test_the_async_client_retries_a_key_in_use_too() -> None:
    with scripted(in_use_then_answer("0")) as server:
        async with AsyncClient(server.url, retries=2, backoff=0.001) as client:
            session = await client.start("hello")
        assert session.turn_id == "turn_1"
        assert len({seen.headers[KEY] for seen in server.of("POST")}) == 1


def test_other_conflicts_are_not_retried() -> None:
    def respond(exchange: Exchange) -> None:
        exchange.json(409, {"ok": False, "error": "stale_token", "message": "stale"})

    with scripted(respond) as server, Client(server.url, retries=3, backoff=0.001) as client:
        with pytest.raises(StaleToken):
            client.session("ses_x", "http:old").send("hi")
        assert len(server.requests) == 1


def test_a_key_in_use_past_the_deadline_is_answered_as_it_is() -> None:
    with scripted(in_use_then_answer("120")) as server:
        with (
            Client(server.url, retries=2, backoff=0.001, retry_deadline=5) as client,
            pytest.raises(ApiError) as refused,
        ):
            client.start("hello")
        assert refused.value.status == 409
        assert len(server.requests) == 1
