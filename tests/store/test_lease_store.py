"""The `LeaseStore` contract: every adapter (memory, files, DynamoDB) passes these same tests.

A session's turn lease has one holder until it expires, fences that holder's appends, and
the stop flag names the turn it stops.
"""

from __future__ import annotations

import asyncio

import pytest

from agentkit.errors import LeaseLost
from agentkit.sessions import hash_token
from agentkit.store.base import LeaseStore
from tests.store.conftest import Harness, note


async def test_the_adapter_implements_the_lease_store_protocol(harness: Harness) -> None:
    assert isinstance(harness.store, LeaseStore)


# lease and interrupt


async def test_a_lease_has_one_holder_until_it_expires(harness: Harness) -> None:
    store, clock = harness.store, harness.clock
    record = await harness.new_session()

    assert await store.acquire_lease(record.id, "a", ttl=30)
    assert not await store.acquire_lease(record.id, "b", ttl=30)
    assert await store.acquire_lease(record.id, "a", ttl=30)  # re-entrant for its holder
    lease = await store.get_lease(record.id)
    assert lease is not None and lease.holder == "a"
    assert lease.expires_at == pytest.approx(clock.now + 30)


async def test_renewing_extends_the_lease(harness: Harness) -> None:
    store, clock = harness.store, harness.clock
    record = await harness.new_session()
    await store.acquire_lease(record.id, "a", ttl=30)

    clock.advance(20)
    assert await store.renew_lease(record.id, "a", ttl=30)
    clock.advance(20)

    lease = await store.get_lease(record.id)
    assert lease is not None and lease.holder == "a"
    assert not await store.acquire_lease(record.id, "b", ttl=30)
    assert not await store.renew_lease(record.id, "b", ttl=30)


async def test_an_expired_lease_can_be_taken_over(harness: Harness) -> None:
    store, clock = harness.store, harness.clock
    record = await harness.new_session()
    await store.acquire_lease(record.id, "crashed", ttl=30)

    clock.advance(31)

    assert await store.get_lease(record.id) is None
    assert await store.acquire_lease(record.id, "b", ttl=30)
    assert not await store.renew_lease(record.id, "crashed", ttl=30)
    lease = await store.get_lease(record.id)
    assert lease is not None and lease.holder == "b"


async def test_release_frees_the_lease_only_for_its_holder(harness: Harness) -> None:
    store = harness.store
    record = await harness.new_session()
    await store.acquire_lease(record.id, "a", ttl=30)

    await store.release_lease(record.id, "b")
    assert not await store.acquire_lease(record.id, "b", ttl=30)

    await store.release_lease(record.id, "a")
    assert await store.get_lease(record.id) is None
    assert await store.acquire_lease(record.id, "b", ttl=30)


async def test_concurrent_acquires_have_one_winner(harness: Harness) -> None:
    record = await harness.new_session()

    results = await asyncio.gather(
        *(harness.store.acquire_lease(record.id, f"h{i}", ttl=30) for i in range(10))
    )

    assert sum(results) == 1


async def test_an_append_fenced_by_a_lost_lease_writes_nothing(harness: Harness) -> None:
    store, clock = harness.store, harness.clock
    record = await harness.new_session()
    assert await store.acquire_lease(record.id, "worker-a", ttl=30)
    batch = [note("one", "t1"), note("two", "t1")]
    assert len(await store.append(record.id, batch, lease_holder="worker-a")) == 2

    # Another holder took over after the lease expired: the zombie cannot append.
    clock.advance(31)
    assert await store.acquire_lease(record.id, "worker-b", ttl=30)
    with pytest.raises(LeaseLost):
        await store.append(record.id, [note("zombie", "t1")], lease_holder="worker-a")
    with pytest.raises(LeaseLost):
        await store.append(record.id, batch, lease_holder="worker-a")
    assert [e.index for e in await store.append(record.id, batch, lease_holder="worker-b")] == [
        2,
        3,
    ]
    await store.release_lease(record.id, "worker-b")
    with pytest.raises(LeaseLost):
        await store.append(record.id, [note("late", "t1")], lease_holder="worker-b")
    texts = [e.data["text"] for e in await store.read(record.id)]
    assert texts == ["one", "two", "one", "two"]


async def test_an_interrupt_names_its_turn_and_needs_the_presented_token(
    harness: Harness,
) -> None:
    store = harness.store
    record = await harness.new_session(token_hash=hash_token("current"))
    assert record.token_hash is not None
    # The presented token is no longer current (another follow-up won): nothing is written.
    assert not await store.request_interrupt(record.id, "turn_a", token_hash=hash_token("old"))
    assert not await store.interrupt_requested(record.id, "turn_a")

    assert await store.request_interrupt(record.id, "turn_a", token_hash=record.token_hash)
    assert await store.interrupt_requested(record.id, "turn_a")
    assert await harness.reopen().interrupt_requested(record.id, "turn_a")
    # A flag naming an older turn never stops a newer one.
    assert not await store.interrupt_requested(record.id, "turn_b")
    assert await store.rotate_token(record.id, record.token_hash, hash_token("new"))
    assert not await store.request_interrupt(record.id, "turn_b", token_hash=record.token_hash)
    assert not await store.interrupt_requested(record.id, "turn_b")
    assert await store.request_interrupt(record.id, "turn_b")  # a stop: no token condition
    assert await store.interrupt_requested(record.id, "turn_b")
    await store.set_interrupt(record.id, False)
    assert not await store.interrupt_requested(record.id, "turn_b")


async def test_the_interrupt_flag_round_trips(harness: Harness) -> None:
    record = await harness.new_session()
    assert not await harness.store.interrupt_requested(record.id)

    await harness.store.set_interrupt(record.id, True)
    assert await harness.store.interrupt_requested(record.id)
    assert await harness.reopen().interrupt_requested(record.id)

    await harness.store.set_interrupt(record.id, False)
    assert not await harness.store.interrupt_requested(record.id)
