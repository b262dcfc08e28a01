"""`wait()` is idempotent and bounded: waiting again on a turn already seen to end (the
natural `wait()` then `reply_text()`) returns at once, a parked turn is followed again once
it is decided, and `wait(timeout=)` ends by its deadline even when the stream stalls or
trickles bytes mid-body."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from agentkit.client import AsyncClient, Client, TurnError
from tests.client.scripted import Exchange, scripted, wire
from tests.fixtures.http_server import Served

# Far longer than any reply takes here: a wait that uses it up has hung.
HANG = 20.0


def test_wait_then_reply_text_returns_the_reply_at_once(shared_server: Served) -> None:
    with Client(shared_server.url) as client:
        session = client.start("What is the weather in Paris?")
        events = session.wait(timeout=60)
        assert "Paris" in session.reply_text(timeout=HANG)  # no second wait for a new event
        assert session.wait(timeout=HANG) == events  # the same turn, the same events


async def test_the_async_client_waits_once_too(shared_server: Served) -> None:
    async with AsyncClient(shared_server.url) as client:
        session = await client.start("What is the weather in Lisbon?")
        await session.wait(timeout=60)
        assert "Lisbon" in await session.reply_text(timeout=HANG)
        await session.send("And in Porto?")  # a new turn is waited for afresh
        assert "Porto" in await session.reply_text(timeout=60)


def test_a_parked_turn_answers_at_once_until_it_is_decided(shared_server: Served) -> None:
    with Client(shared_server.url) as client:
        session = client.start("wipe the notes folder")
        session.wait(timeout=60)
        with pytest.raises(TurnError) as parked:
            session.reply_text(timeout=HANG)
        assert parked.value.parked
        [pending] = session.pending_approvals()
        # Decided through another handle (the playground, another process): the next wait
        # sees something recorded after the park and follows the resumed turn.
        client.session(session.id).approve(pending.call_id)
        assert "wiped" in session.reply_text(timeout=60)


def stall_after_two_events(exchange: Exchange) -> None:
    exchange.open_body()
    exchange.write(wire(0, "message.received", {"message": "hi"}, "turn_1"))
    exchange.write(wire(1, "turn.started", {}, "turn_1"))
    exchange.release.wait(60)  # the body never ends, no byte more comes


def trickle_blank_lines(exchange: Exchange) -> None:
    """Keeps the connection busy with blank lines (a proxy's keep-alive, say) and never
    ends the turn, until a bound past which the turn completes."""
    exchange.open_body()
    exchange.write(wire(0, "turn.started", {}, "turn_1"))
    ends = time.monotonic() + HANG
    while time.monotonic() < ends and not exchange.release.is_set():
        exchange.write("\n")
        exchange.release.wait(0.05)
    exchange.write(wire(1, "turn.completed", {"result": "late"}, "turn_1"))


@pytest.mark.parametrize("respond", [stall_after_two_events, trickle_blank_lines])
def test_wait_ends_by_its_deadline_when_the_stream_stalls(
    respond: Callable[[Exchange], None],
) -> None:
    with scripted(respond) as server, Client(server.url) as client:
        session = client.session("ses_x")
        began = time.monotonic()
        with pytest.raises(TimeoutError):
            session.wait(timeout=1.0)
        assert time.monotonic() - began < HANG / 2  # by the deadline, not the stream's end
        assert session.next_index >= 1  # what arrived before the stall was read


@pytest.mark.parametrize("respond", [stall_after_two_events, trickle_blank_lines])
async def test_the_async_wait_ends_by_its_deadline_too(respond: Callable[[Exchange], None]) -> None:
    with scripted(respond) as server:
        async with AsyncClient(server.url) as client:
            session = client.session("ses_x")
            began = time.monotonic()
            with pytest.raises(TimeoutError):
                await session.wait(timeout=1.0)
            assert time.monotonic() - began < HANG / 2
