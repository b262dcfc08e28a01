"""The `Store` contract: every adapter (memory, files, DynamoDB) passes these same tests."""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections import Counter
from collections.abc import Awaitable, Callable

import pytest

from agentkit.errors import InvalidId, LeaseLost, SessionExists, SessionNotFound
from agentkit.events import EventDraft, MessageAppended, TurnCompleted, Usage, draft
from agentkit.scheduling.records import ReminderRecord
from agentkit.sessions import SessionRecord, hash_token, new_session_id
from agentkit.store.base import Store
from tests.store.conftest import Harness

HOSTILE_IDS = [
    "../x",
    "ses_../../../etc/passwd",
    "ses_" + "a" * 5000,
    "ses_ünïcødé_ünïcødé_ünïcødé",
    "ses_abcdefghijklmnop/qrs",
    "ses_abcdefghijklmnop\x00",
    "",
    "/tmp/ses_abcdefghijklmnop",
]


def note(text: str, turn_id: str | None = None) -> EventDraft:
    return draft(MessageAppended(text=text), turn_id=turn_id)


def reminder(reminder_id: str, **fields: object) -> ReminderRecord:
    base: dict[str, object] = {
        "id": reminder_id,
        "purpose": "check the build",
        "channel_id": "http",
        "continuation_token": "http:abc",
        "kind": "delay",
        "spec": "20m",
        "next_fire_at": "2026-01-01T00:20:00.000Z",
    }
    base.update(fields)
    return ReminderRecord(**base)  # type: ignore[arg-type]


# sessions


async def test_the_adapter_implements_the_store_protocol(harness: Harness) -> None:
    assert isinstance(harness.store, Store)


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


# reminders


async def test_reminders_can_be_created_read_listed_replaced_and_deleted(
    harness: Harness,
) -> None:
    store = harness.store
    first = reminder("rem_first", created_at="2026-01-01T00:00:00.000Z")
    second = reminder("rem_second", kind="cron", spec="0 9 * * 1-5", session_id=new_session_id())

    await store.put_reminder(first)
    await store.put_reminder(second)
    assert await store.get_reminder("rem_first") == first
    assert await harness.reopen().get_reminder("rem_second") == second
    assert {r.id for r in await store.list_reminders()} == {"rem_first", "rem_second"}

    await store.put_reminder(reminder("rem_first", status="cancelled", reason="user"))
    replaced = await store.get_reminder("rem_first")
    assert replaced is not None and replaced.status == "cancelled"
    assert [r.id for r in await store.list_reminders(active_only=True)] == ["rem_second"]

    assert await store.delete_reminder("rem_first")
    assert not await store.delete_reminder("rem_first")
    assert await store.get_reminder("rem_first") is None
    assert [r.id for r in await store.list_reminders()] == ["rem_second"]


async def test_a_reminder_keeps_its_creator_and_delivery_failures(harness: Harness) -> None:
    sid = new_session_id()
    made = reminder(
        "rem_owned",
        session_id=sid,
        principal="bearer:alice",
        created_in=sid,
        failures=2,
        last_error="StoreError: throttled",
    )
    await harness.store.put_reminder(made)
    back = await harness.reopen().get_reminder("rem_owned")
    assert back == made
    assert back is not None and back.principal == "bearer:alice" and back.failures == 2


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


@pytest.mark.parametrize("bad", [*HOSTILE_IDS, ".hidden", "a" * 200])
async def test_hostile_reminder_ids_are_rejected(harness: Harness, bad: str) -> None:
    with pytest.raises(InvalidId):
        await harness.store.put_reminder(reminder(bad))
    with pytest.raises(InvalidId):
        await harness.store.get_reminder(bad)
    with pytest.raises(InvalidId):
        await harness.store.delete_reminder(bad)


@pytest.mark.parametrize("bad", ["", "k" * 5000])
async def test_empty_or_huge_idempotency_keys_are_rejected(harness: Harness, bad: str) -> None:
    with pytest.raises(InvalidId):
        await harness.store.claim(bad, ttl=60)


async def test_idempotency_keys_may_hold_any_text(harness: Harness) -> None:
    assert await harness.store.claim("../../etc/passwd", ttl=60)
    assert await harness.store.claim("webhook:ünï/字 😀", ttl=60)
    assert not await harness.store.claim("../../etc/passwd", ttl=60)
