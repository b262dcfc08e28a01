"""The file store's fast paths agree with its slow one.

A cached store answers from what it parsed before (the event view brought up to date by a
`stat`, the session record kept under its files' `stat`s, leases parsed once); a store with
`caches=False` parses the files again on every call. Two cached stores and one uncached
store share one state folder here, take turns writing in a seeded random order, and after
every step each of them must give the same answer to every read.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from agentkit.errors import LeaseLost
from agentkit.events import MessageAppended, draft
from agentkit.sessions import SessionRecord, hash_token, new_session_id
from agentkit.store.files import FileStore
from tests.store.conftest import FakeClock


async def assert_all_agree(stores: list[FileStore], session_id: str, rng: random.Random) -> None:
    """Each store answers every read as the uncached one does; the reads come in a random
    order, so any of them may be the first a store serves after another store wrote."""
    slow = stores[-1]
    size = len(await slow.read(session_id))
    start = rng.randrange(-2, size + 3)
    limit = rng.choice([None, 0, 1, rng.randrange(0, size + 3)])
    reads: list[Callable[[FileStore], Awaitable[object]]] = [
        lambda store: store.read(session_id),
        lambda store: store.read(session_id, start, limit),
        lambda store: store.next_index(session_id),
        lambda store: store.follow(session_id, start, timeout=0),
        lambda store: store.get_session(session_id),
        lambda store: store.get_lease(session_id),
    ]
    for store in rng.sample(stores, len(stores)):
        for read in rng.sample(reads, len(reads)):
            assert await read(store) == await read(slow)


@pytest.mark.parametrize("seed", range(3))
async def test_cached_and_uncached_stores_agree_under_interleaved_writers(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    clock = FakeClock()
    root = tmp_path / "state"
    first, second = FileStore(root, clock=clock), FileStore(root, clock=clock)
    slow = FileStore(root, clock=clock, caches=False)
    stores = [first, second, slow]
    record = SessionRecord(id=new_session_id(), token_hash=hash_token("t0"))
    await first.create_session(record)
    token = "t0"
    try:
        for step in range(60):
            writer = rng.choice(stores)
            action = rng.choice(["note", "note", "batch", "rotate", "touch", "lease", "torn"])
            if action == "note":
                await writer.append(record.id, [draft(MessageAppended(text=f"n{step}"))])
            elif action == "batch":
                size = rng.randrange(2, 6)
                texts = [f"b{step}.{n}" * rng.randrange(1, 40) for n in range(size)]
                await writer.append(record.id, [draft(MessageAppended(text=t)) for t in texts])
            elif action == "rotate":
                new = f"t{step}"
                assert await writer.rotate_token(record.id, hash_token(token), hash_token(new))
                token = new
            elif action == "touch":
                clock.advance(1)
                await writer.touch_session(record.id)
            elif action == "lease":
                clock.advance(rng.choice([1, 40]))
                holder = f"worker-{step}"
                if await writer.acquire_lease(record.id, holder, ttl=30):
                    other = rng.choice(stores)
                    await other.append(record.id, [draft(MessageAppended(text="fenced"))],
                                       lease_holder=holder)  # fmt: skip
            else:
                # A writer killed part way through a line: nobody may count it.
                events_file = writer.events_path(record.id)
                events_file.write_bytes(events_file.read_bytes() + b'{"type":"message.ap')
            await assert_all_agree(stores, record.id, rng)
    finally:
        for store in stores:
            await store.close()


async def test_an_append_fenced_by_a_lease_another_store_took_over_fails_in_every_store(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    root = tmp_path / "state"
    stores = [FileStore(root, clock=clock), FileStore(root, clock=clock, caches=False)]
    record = SessionRecord(id=new_session_id())
    await stores[0].create_session(record)
    try:
        for store in stores:
            assert await store.acquire_lease(record.id, "old", ttl=10)
        clock.advance(11)
        assert await stores[1].acquire_lease(record.id, "new", ttl=10)
        for store in stores:
            with pytest.raises(LeaseLost):
                await store.append(record.id, [draft(MessageAppended(text="x"))],
                                   lease_holder="old")  # fmt: skip
        assert await stores[0].read(record.id) == await stores[1].read(record.id) == []
    finally:
        for store in stores:
            await store.close()
