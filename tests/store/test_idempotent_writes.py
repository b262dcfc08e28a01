"""Idempotency keys on every store: one implementation of the rules (`run_once`) over each
adapter's put-if-absent and get, with the store's own clock for the TTLs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

import pytest

from agentkit.engine import idempotency
from agentkit.engine.idempotency import (
    IN_FLIGHT_TTL,
    REPLAY_TTL,
    Answer,
    IdempotencyKeyInUse,
    IdempotencyKeyReused,
    InvalidIdempotencyKey,
    drain,
    fingerprint,
    record_key,
    run_once,
)
from agentkit.store.base import Store
from tests.store.conftest import Harness

FOLLOW_UP = fingerprint("follow_up", {"session_id": "ses_x"}, {"message": "hi"})


async def once(
    store: Store,
    run: Callable[[], Awaitable[Answer]],
    key: str,
    *,
    principal: str = "alice",
    request: str = FOLLOW_UP,
) -> tuple[Answer, bool]:
    return await run_once(
        store, principal_id=principal, key=key, request_fingerprint=request, run=run
    )


class Counting:
    """A write that counts how often it really ran."""

    def __init__(self) -> None:
        self.runs = 0

    async def __call__(self) -> Answer:
        self.runs += 1
        return Answer(200, {"turnId": f"turn_{self.runs}", "continuationToken": "http:new"})


async def test_a_retry_gets_the_first_answer_and_runs_nothing(harness: Harness) -> None:
    write = Counting()
    first = await once(harness.store, write, "k-1")
    again = await once(harness.reopen(), write, "k-1")
    assert first == (Answer(200, {"turnId": "turn_1", "continuationToken": "http:new"}), False)
    assert again == (first[0], True)
    assert write.runs == 1


async def test_the_same_key_with_another_body_is_refused(harness: Harness) -> None:
    write = Counting()
    await once(harness.store, write, "k-2")
    other = fingerprint("follow_up", {"session_id": "ses_x"}, {"message": "something else"})
    with pytest.raises(IdempotencyKeyReused) as refused:
        await once(harness.store, write, "k-2", request=other)
    assert refused.value.status == 422
    assert write.runs == 1


async def test_keys_are_per_principal(harness: Harness) -> None:
    write = Counting()
    for who in ("alice", "bob"):
        _, replayed = await once(harness.store, write, "shared", principal=who)
        assert not replayed
    assert write.runs == 2


async def test_a_recorded_answer_is_forgotten_after_a_day(harness: Harness) -> None:
    write = Counting()
    key = "k-3"
    await once(harness.store, write, key)
    harness.clock.advance(REPLAY_TTL - 60)
    assert (await once(harness.store, write, key))[1]
    harness.clock.advance(120)
    assert not (await once(harness.store, write, key))[1]
    assert write.runs == 2


async def test_a_failed_write_can_be_retried_with_its_key(harness: Harness) -> None:
    calls = 0

    async def refused_then_ok() -> Answer:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("the store was down")
        return Answer(200, {"ok": True})

    key = "k-4"
    with pytest.raises(RuntimeError):
        await once(harness.store, refused_then_ok, key)
    answer, replayed = await once(harness.store, refused_then_ok, key)
    assert (answer.body, replayed, calls) == ({"ok": True}, False, 2)


async def test_a_retry_while_the_first_runs_is_told_so_until_it_lapses(harness: Harness) -> None:
    # A write whose process died mid-request leaves only the started record.
    key = "k-5"
    stored = record_key("alice", "k-5")
    assert await harness.store.claim(stored, IN_FLIGHT_TTL)
    await harness.store.settle_claim(
        stored, "started", IN_FLIGHT_TTL, detail=json.dumps({"fingerprint": FOLLOW_UP})
    )
    write = Counting()
    with pytest.raises(IdempotencyKeyInUse):
        await once(harness.store, write, key)
    harness.clock.advance(IN_FLIGHT_TTL + 1)
    assert not (await once(harness.store, write, key))[1]
    assert write.runs == 1


async def test_a_large_answer_round_trips(harness: Harness) -> None:
    big = {"result": "x" * 50_000}

    async def write() -> Answer:
        return Answer(200, big)

    key = "k-6"
    await once(harness.store, write, key)
    answer, replayed = await once(harness.reopen(), write, key)
    assert replayed and answer.body == big


@pytest.mark.parametrize("key", ["", "x" * 256, "has space", "caf\u00e9"])
async def test_a_malformed_key_is_a_400(harness: Harness, key: str) -> None:
    with pytest.raises(InvalidIdempotencyKey) as refused:
        await once(harness.store, Counting(), key)
    assert refused.value.status == 400


async def test_the_kept_answer_does_not_show_the_live_token(harness: Harness) -> None:
    # The store keeps only hashes of live tokens; the answer it keeps for a replay is
    # sealed with a key derived from the caller's Idempotency-Key, which it never stores.
    await once(harness.store, Counting(), "k-7")
    kept = await harness.reopen().get_claim(record_key("alice", "k-7"))
    assert kept is not None and kept.detail is not None
    assert "http:new" not in kept.detail and "turn_1" not in kept.detail
    assert "k-7" not in kept.detail


class Gated:
    """A write that records its message, then waits on a gate before it answers: the
    moment a client that gave up (its request task cancelled) leaves behind."""

    def __init__(self) -> None:
        self.recorded: list[str] = []
        self.inside = asyncio.Event()
        self.gate = asyncio.Event()

    async def __call__(self) -> Answer:
        self.recorded.append("and in Lisbon?")
        self.inside.set()
        await self.gate.wait()
        return Answer(200, {"turnId": f"turn_{len(self.recorded)}", "continuationToken": "t2"})


async def test_a_cancelled_caller_does_not_cut_the_first_attempt_short(harness: Harness) -> None:
    write = Gated()
    caller = asyncio.ensure_future(once(harness.store, write, "k-8"))
    await write.inside.wait()
    caller.cancel()  # the client disconnected: the server cancels its request task
    with pytest.raises(asyncio.CancelledError):
        await caller
    # The retry comes while the first attempt still runs: it waits for that answer.
    retry = asyncio.ensure_future(once(harness.store, write, "k-8"))
    write.gate.set()
    answer, replayed = await retry
    assert (answer, replayed) == (
        Answer(200, {"turnId": "turn_1", "continuationToken": "t2"}),
        True,
    )
    assert write.recorded == ["and in Lisbon?"]  # one message, recorded once
    # Later retries replay the kept answer too.
    assert await once(harness.reopen(), write, "k-8") == (answer, True)


async def test_a_retry_waits_for_a_first_attempt_running_here(harness: Harness) -> None:
    write = Gated()
    first = asyncio.ensure_future(once(harness.store, write, "k-9"))
    await write.inside.wait()
    retry = asyncio.ensure_future(once(harness.store, write, "k-9"))
    write.gate.set()
    assert (await first)[1] is False
    assert (await retry) == ((await first)[0], True)
    assert len(write.recorded) == 1


async def test_a_shutdown_drain_lets_a_first_attempt_finish(harness: Harness) -> None:
    write = Gated()
    caller = asyncio.ensure_future(once(harness.store, write, "k-10"))
    await write.inside.wait()
    caller.cancel()  # its client is gone; the server now stops
    draining = asyncio.ensure_future(drain(30))
    write.gate.set()
    assert await draining == 0
    answer, replayed = await once(harness.reopen(), write, "k-10")
    assert replayed and answer.body["turnId"] == "turn_1"
    assert write.recorded == ["and in Lisbon?"]


async def test_a_drain_is_bounded_and_an_attempt_cut_short_keeps_its_record(
    harness: Harness,
) -> None:
    write = Gated()  # its gate never opens
    first = asyncio.ensure_future(once(harness.store, write, "k-11"))
    await write.inside.wait()
    assert await drain(0.05) == 1
    # The loop's end cancels what is left: it may have done part of its work, so its
    # record stays (a retry is told to come back, not run it again).
    attempt = idempotency._running[record_key("alice", "k-11")]
    attempt.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert attempt.cancelled()
    with pytest.raises(IdempotencyKeyInUse) as busy:
        await once(harness.reopen(), write, "k-11")
    assert busy.value.status == 409 and busy.value.headers["retry-after"] == "2"
    assert write.recorded == ["and in Lisbon?"]
