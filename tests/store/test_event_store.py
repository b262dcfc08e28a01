"""The `EventStore` contract: every adapter (memory, files, DynamoDB) passes these same tests.

Gap-free indexes under concurrent appenders, whole batches, reads by range, and follows
that wait for the next event.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections import Counter

import pytest

from agentkit.errors import SessionNotFound
from agentkit.events import EventDraft, TurnCompleted, Usage, draft
from agentkit.sessions import new_session_id
from agentkit.store.base import EventStore
from tests.store.conftest import Harness, note


async def test_the_adapter_implements_the_event_store_protocol(harness: Harness) -> None:
    assert isinstance(harness.store, EventStore)


# events


async def test_appends_get_consecutive_indexes_from_zero(harness: Harness) -> None:
    record = await harness.new_session()
    assert await harness.store.next_index(record.id) == 0

    first = await harness.store.append(record.id, [note("a")])
    batch = await harness.store.append(record.id, [note("b"), note("c"), note("d")])

    assert [e.index for e in first + batch] == [0, 1, 2, 3]
    assert all(e.session_id == record.id for e in first + batch)
    assert await harness.store.next_index(record.id) == 4
    read = await harness.store.read(record.id)
    assert [e.data["text"] for e in read] == ["a", "b", "c", "d"]
    assert read == first + batch


async def test_a_read_after_appends_hands_back_the_appended_events_themselves(
    harness: Harness,
) -> None:
    # A running turn holds what its appends returned, and the folds carried per session go
    # on only over the same objects: a read that decoded them anew made every step of a
    # DynamoDB turn fold the whole conversation again.
    if harness.kind == "files-uncached":
        pytest.skip("a store that caches nothing hands out new objects on every read")
    record = await harness.new_session()
    first = await harness.store.append(record.id, [note("a")])
    assert (await harness.store.read(record.id))[0] is first[0]

    batch = await harness.store.append(record.id, [note("b"), note("c")])
    read = await harness.store.read(record.id)

    assert all(got is appended for got, appended in zip(read, first + batch, strict=True))


async def test_read_honours_start_and_limit(harness: Harness) -> None:
    record = await harness.new_session()
    await harness.store.append(record.id, [note(str(i)) for i in range(10)])

    assert [e.index for e in await harness.store.read(record.id, 7)] == [7, 8, 9]
    assert [e.index for e in await harness.store.read(record.id, 2, limit=3)] == [2, 3, 4]
    assert await harness.store.read(record.id, 10) == []


async def test_events_survive_a_reopen(harness: Harness) -> None:
    record = await harness.new_session()
    usage = Usage(input_tokens=10, output_tokens=5, cache_read_tokens=2, cache_write_tokens=1)
    written = await harness.store.append(
        record.id, [draft(TurnCompleted(result="done", usage=usage), turn_id="turn_1")]
    )

    again = await harness.reopen().read(record.id)

    assert again == written
    assert again[0].as_(TurnCompleted).usage == usage
    assert again[0].turn_id == "turn_1"


async def test_appending_to_an_unknown_session_raises(harness: Harness) -> None:
    with pytest.raises(SessionNotFound):
        await harness.store.append(new_session_id(), [note("x")])


async def test_unknown_event_types_are_kept(harness: Harness) -> None:
    record = await harness.new_session()
    future = EventDraft(type="future.thing", data={"a": {"b": [1, None, "ü"]}}, turn_id="t9")

    await harness.store.append(record.id, [future])

    (event,) = await harness.reopen().read(record.id)
    assert event.type == "future.thing"
    assert not event.known
    assert event.data == {"a": {"b": [1, None, "ü"]}}
    assert event.turn_id == "t9"


async def test_a_one_megabyte_event_round_trips_byte_for_byte(harness: Harness) -> None:
    record = await harness.new_session()
    rng = random.Random(7)
    alphabet = 'abc "quoted" \\ back\nslash\t ünï 字 😀 \u2028 {}[],:'
    blob = "".join(rng.choice(alphabet) for _ in range(1_050_000))
    payload = {"callId": "call_1", "toolName": "dump", "result": {"blob": blob}}

    (written,) = await harness.store.append(record.id, [EventDraft("action.result", payload)])
    (event,) = await harness.reopen().read(record.id)

    assert event.to_json().encode() == written.to_json().encode()
    assert json.dumps(event.data, ensure_ascii=False) == json.dumps(payload, ensure_ascii=False)
    assert event.data["result"]["blob"] == blob


# On DynamoDB every lost race costs a write and a re-read of the end on a server that
# answers one request at a time: tens of thousands of requests, CPU-bound (about 45 CPU
# seconds), so on a loaded machine it needs more than the default two minutes.
@pytest.mark.timeout(600)
async def test_eight_threads_appending_500_each_leave_no_gap_or_duplicate(
    harness: Harness,
) -> None:
    record = await harness.new_session()
    writers, per_writer = 8, 500
    barrier = threading.Barrier(writers)
    failures: list[BaseException] = []

    def writer(n: int) -> None:
        async def run() -> None:
            barrier.wait()
            for i in range(per_writer):
                await harness.store.append(record.id, [note(f"{n}:{i}")])

        try:
            asyncio.run(run())
        except BaseException as exc:  # surfaced below, with the thread's own traceback
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
    await asyncio.to_thread(lambda: [t.start() for t in threads] and [t.join() for t in threads])

    assert failures == []
    events = await harness.reopen().read(record.id)
    assert [e.index for e in events] == list(range(writers * per_writer))
    texts = Counter(e.data["text"] for e in events)
    assert len(texts) == writers * per_writer
    for n in range(writers):  # each writer's own events stay in its order
        mine = [int(e.data["text"].split(":")[1]) for e in events if e.data["text"][0] == str(n)]
        assert mine == list(range(per_writer))


async def test_concurrent_batches_land_whole_and_contiguous(harness: Harness) -> None:
    record = await harness.new_session()

    async def batches(writer: int) -> None:
        for b in range(5):
            await harness.store.append(record.id, [note(f"{writer}.{b}.{i}") for i in range(4)])

    await asyncio.gather(*(batches(w) for w in range(4)))

    events = await harness.store.read(record.id)
    assert [e.index for e in events] == list(range(80))
    for chunk in range(0, 80, 4):
        labels = {e.data["text"].rsplit(".", 1)[0] for e in events[chunk : chunk + 4]}
        assert len(labels) == 1


# follow


async def test_follow_returns_existing_events_at_once(harness: Harness) -> None:
    record = await harness.new_session()
    await harness.store.append(record.id, [note("a"), note("b")])

    events = await asyncio.wait_for(harness.store.follow(record.id, 1, timeout=30), 5)

    assert [e.data["text"] for e in events] == ["b"]


async def test_follow_times_out_empty(harness: Harness) -> None:
    record = await harness.new_session()

    assert await harness.store.follow(record.id, 0, timeout=0.05) == []


async def test_follow_wakes_when_an_event_is_appended(harness: Harness) -> None:
    record = await harness.new_session()
    await harness.store.append(record.id, [note("old")])
    follower = asyncio.create_task(harness.store.follow(record.id, 1, timeout=30))
    await asyncio.sleep(0.05)  # let the follower start waiting first

    await harness.store.append(record.id, [note("new")])

    events = await asyncio.wait_for(follower, 10)
    assert [e.data["text"] for e in events] == ["new"]
