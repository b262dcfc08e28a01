"""Shared tails: many followers of one session share one reader of the store, and each
gets the events from its own index, with no gap and no duplicate, while a writer appends.

Followers wait on the tail (woken by the store's appends), never on a clock."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentkit.engine.tails import SessionTails, Subscription
from agentkit.events import MessageAppended, draft
from agentkit.sessions import SessionRecord, new_session_id
from agentkit.store.base import Store
from agentkit.store.memory import MemoryStore


@pytest.fixture(params=["memory", "files"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    if request.param == "memory":
        made: Store = MemoryStore()
    else:
        from agentkit.store.files import FileStore

        made = FileStore(tmp_path / "state")
    try:
        yield made
    finally:
        await made.close()


async def new_session(store: Store) -> str:
    record = SessionRecord(id=new_session_id())
    await store.create_session(record)
    return record.id


async def write(store: Store, sid: str, count: int, *, batch: int = 3) -> None:
    """Append `count` events in batches, yielding to the followers between appends."""
    written = 0
    while written < count:
        size = min(batch, count - written)
        await store.append(
            sid, [draft(MessageAppended(text=f"e{written + i}")) for i in range(size)]
        )
        written += size
        await asyncio.sleep(0)  # a yield, not a wait: followers run between appends


async def collect(sub: Subscription, until: int) -> list[int]:
    """The indexes a follower gets, up to (not including) `until`; closes it."""
    seen: list[int] = []
    try:
        while not seen or seen[-1] < until - 1:
            batch = await sub.next(None)
            assert batch is not None, "the stream ended early"
            seen.extend(e.index for e in batch.events)
            assert batch.data.count(b"\n") == len(batch.events)
    finally:
        sub.close()
    return seen


def tail_tasks() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("agentkit-tail:")]


async def no_tail_tasks_left() -> None:
    # Cancelled readers finish on the loop's next turns: await them, then none is left.
    await asyncio.gather(*tail_tasks(), return_exceptions=True)
    assert tail_tasks() == []


async def test_two_hundred_followers_share_one_reader_and_each_get_every_event(
    store: Store,
) -> None:
    sid = await new_session(store)
    tails = SessionTails(store)
    subs = [tails.subscribe(sid, 0) for _ in range(200)]
    assert tails.active() == 1 and len(tail_tasks()) == 1
    total = 150
    got = await asyncio.gather(*(collect(s, total) for s in subs), write(store, sid, total))
    for seen in got[:-1]:
        assert seen == list(range(total))
    assert tails.active() == 0
    await no_tail_tasks_left()


async def test_a_follower_joining_mid_stream_gets_exactly_from_its_index(store: Store) -> None:
    sid = await new_session(store)
    tails = SessionTails(store)
    early = tails.subscribe(sid, 0)
    total = 120
    written = asyncio.ensure_future(write(store, sid, 40))
    first = await early.next(None)
    assert first is not None and first.events[0].index == 0
    await written
    # Joiners at the start, inside what was read, at the end, and past the end, while
    # the writer goes on: each gets its index on, whole.
    starts = [0, 7, 39, 40, 55]
    joined = [tails.subscribe(sid, k) for k in starts]
    assert tails.active() == 1
    rest = asyncio.ensure_future(write(store, sid, total - 40, batch=2))
    got = await asyncio.gather(*(collect(s, total) for s in joined))
    await rest
    for k, seen in zip(starts, got, strict=True):
        assert seen == list(range(k, total))
    early_rest = await collect(early, total)
    assert [e.index for e in first.events] + early_rest == list(range(total))
    await no_tail_tasks_left()


async def test_a_follower_below_a_tail_that_started_past_the_end_gets_everything(
    store: Store,
) -> None:
    sid = await new_session(store)
    await write(store, sid, 5)
    tails = SessionTails(store)
    ahead = tails.subscribe(sid, 20)  # nothing there yet: the tail waits at 20
    behind = tails.subscribe(sid, 2)
    got = await asyncio.gather(collect(ahead, 30), collect(behind, 30), write(store, sid, 25))
    assert got[0] == list(range(20, 30))
    assert got[1] == list(range(2, 30))
    await no_tail_tasks_left()


async def test_a_lagging_follower_keeps_its_events_while_others_move_on(store: Store) -> None:
    sid = await new_session(store)
    tails = SessionTails(store)
    slow = tails.subscribe(sid, 0)
    fast = tails.subscribe(sid, 0)
    total = 900  # well past the point where the buffer is cut down
    got_fast, _ = await asyncio.gather(collect(fast, total), write(store, sid, total, batch=7))
    assert got_fast == list(range(total))
    assert await collect(slow, total) == list(range(total))
    await no_tail_tasks_left()


async def test_the_reader_stops_when_the_last_follower_leaves(store: Store) -> None:
    sid = await new_session(store)
    tails = SessionTails(store)
    subs = [tails.subscribe(sid, 0) for _ in range(10)]
    reader = tail_tasks()
    assert len(reader) == 1
    for sub in subs[:-1]:
        sub.close()
    assert tails.active() == 1 and not reader[0].done()  # one follower is still there
    await write(store, sid, 3)
    batch = await subs[-1].next(None)
    assert batch is not None and [e.index for e in batch.events] == [0, 1, 2]
    subs[-1].close()
    assert tails.active() == 0
    await no_tail_tasks_left()
    assert reader[0].cancelled()
    # A new follower starts a fresh reader, from its own index.
    again = tails.subscribe(sid, 1)
    assert await collect(again, 3) == [1, 2]
    await no_tail_tasks_left()


async def test_followers_of_a_deleted_session_end(store: Store) -> None:
    sid = await new_session(store)
    await write(store, sid, 2)
    tails = SessionTails(store)
    subs = [tails.subscribe(sid, 2) for _ in range(5)]
    waiting = [asyncio.ensure_future(s.next(None)) for s in subs]
    await asyncio.sleep(0)  # let them reach their wait (a yield, not a timed wait)
    assert await store.delete_session(sid)
    assert await asyncio.gather(*waiting) == [None] * 5
    for sub in subs:
        sub.close()
    await no_tail_tasks_left()


async def test_an_interrupt_wakes_a_waiting_follower_with_nothing(store: Store) -> None:
    sid = await new_session(store)
    tails = SessionTails(store)
    sub = tails.subscribe(sid, 0)
    waiting = asyncio.ensure_future(sub.next(None))
    await asyncio.sleep(0)
    sub.interrupt()
    batch = await waiting
    assert batch is not None and batch.events == []
    sub.close()
    await no_tail_tasks_left()


async def test_a_joiner_below_a_trimmed_buffer_reads_the_rest_from_the_store(
    store: Store,
) -> None:
    sid = await new_session(store)
    tails = SessionTails(store)
    keep = tails.subscribe(sid, 0)  # keeps the tail live; consumes everything
    total = 700
    got, _ = await asyncio.gather(collect_open(keep, total), write(store, sid, total, batch=5))
    assert got == list(range(total))
    late = tails.subscribe(sid, 0)  # the buffer no longer starts at 0
    assert tails.active() == 1
    more = asyncio.ensure_future(write(store, sid, 10))
    assert await collect(late, total + 10) == list(range(total + 10))
    await more
    keep.close()
    await no_tail_tasks_left()


async def collect_open(sub: Subscription, until: int) -> list[int]:
    """Like `collect`, but leaves the follower subscribed."""
    seen: list[int] = []
    while not seen or seen[-1] < until - 1:
        batch = await sub.next(None)
        assert batch is not None
        seen.extend(e.index for e in batch.events)
    return seen


def open_paths() -> set[str]:
    """The paths this process holds open (the file store keeps a cached session's
    `events.ndjson` open, and closes it when the session leaves its cache)."""
    found = set()
    for fd in Path("/proc/self/fd").iterdir():
        try:
            found.add(os.readlink(fd))
        except OSError:
            continue
    return found


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
async def test_a_followed_session_stays_cached_while_300_others_are_read(
    tmp_path: Path,
) -> None:
    from agentkit.store.files import FileStore

    # The default cache (256 sessions). No check for other processes' appends while the
    # tail waits: its reads would mark the session recently used, and what is tested here
    # is the pin, which must hold however rarely the session is read.
    store = FileStore(tmp_path / "state", poll_interval=3600)
    try:
        followed, quiet = await new_session(store), await new_session(store)
        await write(store, followed, 4)
        await write(store, quiet, 4)
        tails = SessionTails(store)
        sub = tails.subscribe(followed, 0)
        first = await sub.next(None)
        assert first is not None and [e.index for e in first.events] == [0, 1, 2, 3]
        for _ in range(300):
            other = await new_session(store)
            await write(store, other, 2)
            assert len(await store.read(other)) == 2
        held = open_paths()
        assert str(store.events_path(quiet)) not in held  # evicted: the bound is at work
        assert str(store.events_path(followed)) in held  # pinned by its tail: still cached
        # Delivery is unchanged: the follower gets the rest, in order, once each.
        writer = asyncio.create_task(write(store, followed, 30))
        assert await collect(sub, 34) == list(range(4, 34))
        await writer
        await no_tail_tasks_left()
        # The last follower gone, the pin goes with it: the session is evictable again.
        for _ in range(300):
            await write(store, await new_session(store), 1)
        assert str(store.events_path(followed)) not in open_paths()
    finally:
        await store.close()
