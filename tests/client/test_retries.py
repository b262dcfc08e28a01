"""Retries: an idempotent call (GET) is tried again after a broken connection; a call that
changes something (POST) is sent once, and a broken answer is an error, never a resend."""

from __future__ import annotations

import pytest

from agentkit.client import AsyncClient, Client, ConnectionLost
from agentkit.events import Event, EventType
from tests.client.proxy import CuttingProxy
from tests.fixtures.http_server import SLUG, Served


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


def test_a_post_whose_answer_was_lost_is_not_sent_again(shared_server: Served) -> None:
    with Client(shared_server.url) as direct:
        session = direct.start("What is the weather in Paris?")
        session.wait(timeout=60)
        proxy = CuttingProxy(shared_server.port, drop_answers=1)
        try:
            with Client(f"{proxy.url}/{SLUG}", retries=5, backoff=0.01) as client:
                proxied = client.session(session.id, session.continuation_token)
                with pytest.raises(ConnectionLost, match="not retried"):
                    proxied.send("And in Rome?")
        finally:
            proxy.close()
        received = [
            e
            for e in session.events(follow=False)
            if e.type == EventType.MESSAGE_RECEIVED and e.data["message"] == "And in Rome?"
        ]
        assert len(received) == 1  # the server acted once; the client did not resend


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
