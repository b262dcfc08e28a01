"""The `SessionStore` contract: every adapter (memory, files, DynamoDB) passes these same tests.

Session records, their token's hash, listing, lookup by continuation key, deletion (which
takes the session's events, lease and flag with it), and ids that must never reach a path
or a key.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from agentkit.errors import InvalidId, SessionExists, SessionNotFound
from agentkit.sessions import SessionRecord, hash_token, new_session_id
from agentkit.store.base import SessionStore, Store
from tests.store.conftest import HOSTILE_IDS, Harness, note


async def test_the_adapter_implements_the_session_store_protocol(harness: Harness) -> None:
    assert isinstance(harness.store, SessionStore)


async def test_the_adapter_implements_every_role_as_one_store(harness: Harness) -> None:
    assert isinstance(harness.store, Store)


# sessions


async def test_a_created_session_reads_back_equal(harness: Harness) -> None:
    record = SessionRecord(
        id=new_session_id(),
        channel_id="github",
        mode="task",
        principal="user:ada",
        token_hash=hash_token("http:secret"),
        continuation_key="pr:owner/repo#1",
        metadata={"agent": "weather", "nested": {"n": [1, 2]}},
    )
    await harness.store.create_session(record)

    assert await harness.store.get_session(record.id) == record
    assert await harness.reopen().get_session(record.id) == record


async def test_creating_a_taken_id_raises_session_exists(harness: Harness) -> None:
    record = await harness.new_session()

    with pytest.raises(SessionExists):
        await harness.store.create_session(record)


async def test_an_unknown_session_is_none(harness: Harness) -> None:
    assert await harness.store.get_session(new_session_id()) is None


async def test_touch_bumps_updated_at(harness: Harness) -> None:
    old = "2020-01-01T00:00:00.000Z"
    record = await harness.new_session(created_at=old, updated_at=old)

    await harness.store.touch_session(record.id)

    touched = await harness.store.get_session(record.id)
    assert touched is not None
    assert touched.updated_at > old
    assert touched.created_at == old


async def test_touching_an_unknown_session_raises(harness: Harness) -> None:
    with pytest.raises(SessionNotFound):
        await harness.store.touch_session(new_session_id())


async def test_find_by_channel_and_continuation_key(harness: Harness) -> None:
    record = await harness.new_session(channel_id="github", continuation_key="pr:o/r#1")
    await harness.new_session(channel_id="github", continuation_key="pr:o/r#2")

    found = await harness.store.find_session("github", "pr:o/r#1")

    assert found is not None and found.id == record.id
    assert await harness.store.find_session("slack", "pr:o/r#1") is None
    assert await harness.store.find_session("github", "pr:o/r#3") is None


# tokens


async def test_a_stale_token_loses_the_rotation(harness: Harness) -> None:
    first, second, third = hash_token("t1"), hash_token("t2"), hash_token("t3")
    record = await harness.new_session(token_hash=first)

    assert await harness.store.rotate_token(record.id, first, second)
    assert not await harness.store.rotate_token(record.id, first, third)

    stored = await harness.store.get_session(record.id)
    assert stored is not None and stored.token_hash == second


async def test_twenty_concurrent_rotations_from_one_token_have_one_winner(
    harness: Harness,
) -> None:
    start = hash_token("start")
    record = await harness.new_session(token_hash=start)
    candidates = [hash_token(f"next-{i}") for i in range(20)]

    results = await asyncio.gather(
        *(harness.store.rotate_token(record.id, start, new) for new in candidates)
    )

    assert sum(results) == 1
    stored = await harness.store.get_session(record.id)
    assert stored is not None
    assert stored.token_hash == candidates[results.index(True)]


async def test_rotating_on_an_unknown_session_loses(harness: Harness) -> None:
    assert not await harness.store.rotate_token(new_session_id(), "a" * 64, "b" * 64)


# deletion


async def test_a_deleted_session_is_gone_from_lists_reads_and_streams(harness: Harness) -> None:
    keep = await harness.new_session(principal="ada")
    gone = await harness.new_session(principal="ada", channel_id="github", continuation_key="k1")
    await harness.store.append(gone.id, [note("a"), note("b")])

    assert await harness.store.delete_session(gone.id)

    assert await harness.store.get_session(gone.id) is None
    assert await harness.store.read(gone.id) == []
    assert await harness.store.follow(gone.id, 0, timeout=0.05) == []
    assert await harness.store.find_session("github", "k1") is None
    listed = await harness.store.list_sessions("ada")
    assert [r.id for r in listed.items] == [keep.id]
    assert gone.id not in [r.id for r in (await harness.store.list_sessions(None)).items]
    with pytest.raises(SessionNotFound):
        await harness.store.append(gone.id, [note("c")])
    assert await harness.reopen().get_session(gone.id) is None


async def test_a_deleted_sessions_lease_and_interrupt_say_it_is_gone(harness: Harness) -> None:
    record = await harness.new_session(token_hash="h1")
    assert await harness.store.acquire_lease(record.id, "w1", 30)
    assert await harness.store.delete_session(record.id)

    for store in (harness.store, harness.reopen()):
        with pytest.raises(SessionNotFound):
            await store.acquire_lease(record.id, "w2", 30)
        assert await store.get_lease(record.id) is None
        await store.release_lease(record.id, "w1")  # nothing to release: no error
        with pytest.raises(SessionNotFound):
            await store.set_interrupt(record.id, True)
        assert not await store.rotate_token(record.id, "h1", "h2")
        with pytest.raises(SessionNotFound):
            await store.append(record.id, [note("late")], lease_holder="w1")
        assert await store.read(record.id) == []


async def test_deleting_twice_reports_false(harness: Harness) -> None:
    record = await harness.new_session()

    assert await harness.store.delete_session(record.id)
    assert not await harness.store.delete_session(record.id)


# listing


async def test_pagination_lists_every_session_once_newest_first(harness: Harness) -> None:
    made: list[SessionRecord] = []
    for i in range(23):
        # pairs share a creation time, so ties must page correctly too
        at = f"2026-01-01T00:00:{i // 2:02d}.000Z"
        made.append(await harness.new_session(principal="ada", created_at=at, updated_at=at))
    for _ in range(4):
        await harness.new_session(principal="bob")

    seen: list[SessionRecord] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await harness.store.list_sessions("ada", limit=5, cursor=cursor)
        assert len(page.items) <= 5
        seen.extend(page.items)
        pages += 1
        cursor = page.cursor
        if cursor is None:
            break

    assert pages == 5
    assert sorted(r.id for r in seen) == sorted(r.id for r in made)
    assert len(seen) == len({r.id for r in seen})
    times = [r.created_at for r in seen]
    assert times == sorted(times, reverse=True)
    everyone = await harness.store.list_sessions(None, limit=100)
    assert len(everyone.items) == 27 and everyone.cursor is None


async def test_a_tampered_cursor_is_rejected(harness: Harness) -> None:
    with pytest.raises(InvalidId):
        await harness.store.list_sessions("ada", cursor="../../etc")


# hostile ids


@pytest.mark.parametrize("bad", HOSTILE_IDS)
async def test_hostile_session_ids_are_rejected(harness: Harness, bad: str) -> None:
    store = harness.store
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: store.create_session(SessionRecord(id=bad)),
        lambda: store.get_session(bad),
        lambda: store.touch_session(bad),
        lambda: store.delete_session(bad),
        lambda: store.rotate_token(bad, "a", "b"),
        lambda: store.append(bad, [note("x")]),
        lambda: store.read(bad),
        lambda: store.follow(bad, 0, timeout=0.01),
        lambda: store.next_index(bad),
        lambda: store.acquire_lease(bad, "h", ttl=1),
        lambda: store.renew_lease(bad, "h", ttl=1),
        lambda: store.release_lease(bad, "h"),
        lambda: store.get_lease(bad),
        lambda: store.set_interrupt(bad, True),
        lambda: store.interrupt_requested(bad),
    ]
    for call in calls:
        with pytest.raises(InvalidId):
            await call()
