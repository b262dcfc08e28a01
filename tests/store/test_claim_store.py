"""The `ClaimStore` contract: every adapter (memory, files, DynamoDB) passes these same tests.

An idempotency claim is won once, settles `done` or `failed`, lapses after its timeout, and
its key may hold any text.
"""

from __future__ import annotations

import asyncio

import pytest

from agentkit.errors import InvalidId
from agentkit.store.base import ClaimStore
from tests.store.conftest import Harness


async def test_the_adapter_implements_the_claim_store_protocol(harness: Harness) -> None:
    assert isinstance(harness.store, ClaimStore)


# idempotency


async def test_a_claim_is_true_once_then_false(harness: Harness) -> None:
    assert await harness.store.claim("delivery-1", ttl=60)
    assert not await harness.store.claim("delivery-1", ttl=60)
    assert not await harness.reopen().claim("delivery-1", ttl=60)
    assert await harness.store.claim("delivery-2", ttl=60)


async def test_a_claim_can_be_made_again_after_it_expires(harness: Harness) -> None:
    assert await harness.store.claim("turn:ses_x:turn_1", ttl=60)

    harness.clock.advance(61)

    assert await harness.store.claim("turn:ses_x:turn_1", ttl=60)
    assert not await harness.store.claim("turn:ses_x:turn_1", ttl=60)


async def test_a_claim_starts_then_settles_done_or_failed(harness: Harness) -> None:
    key = "scheduler:exec-1"
    assert await harness.store.get_claim(key) is None
    assert await harness.store.claim(key, ttl=60)
    started = await harness.reopen().get_claim(key)
    assert started is not None and started.state == "started"

    await harness.store.settle_claim(key, "failed", ttl=3600, detail="handler raised")
    failed = await harness.reopen().get_claim(key)
    assert failed is not None and (failed.state, failed.detail) == ("failed", "handler raised")
    harness.clock.advance(61)  # a settled claim outlives the attempt's timeout
    assert not await harness.store.claim(key, ttl=60)

    await harness.store.settle_claim(key, "done", ttl=3600)
    done = await harness.store.get_claim(key)
    assert done is not None and (done.state, done.detail) == ("done", None)


async def test_a_released_claim_can_be_taken_again_at_once(harness: Harness) -> None:
    key = "scheduler:exec-2"
    assert await harness.store.claim(key, ttl=600)
    await harness.store.release_claim(key)
    assert await harness.store.get_claim(key) is None
    assert await harness.reopen().claim(key, ttl=600)
    assert not await harness.store.claim(key, ttl=600)
    await harness.store.release_claim("scheduler:never-claimed")  # no error


async def test_a_started_claim_lapses_after_its_timeout(harness: Harness) -> None:
    key = "scheduler:exec-3"
    assert await harness.store.claim(key, ttl=30)
    harness.clock.advance(31)
    assert await harness.store.get_claim(key) is None
    assert await harness.store.claim(key, ttl=30)


async def test_concurrent_claims_of_one_key_have_one_winner(harness: Harness) -> None:
    results = await asyncio.gather(*(harness.store.claim("same", ttl=60) for _ in range(20)))

    assert sum(results) == 1


@pytest.mark.parametrize("bad", ["", "k" * 5000])
async def test_empty_or_huge_idempotency_keys_are_rejected(harness: Harness, bad: str) -> None:
    with pytest.raises(InvalidId):
        await harness.store.claim(bad, ttl=60)


async def test_idempotency_keys_may_hold_any_text(harness: Harness) -> None:
    assert await harness.store.claim("../../etc/passwd", ttl=60)
    assert await harness.store.claim("webhook:ünï/字 😀", ttl=60)
    assert not await harness.store.claim("../../etc/passwd", ttl=60)
