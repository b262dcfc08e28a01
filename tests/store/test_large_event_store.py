"""The contract for large events: payloads over `LARGE_PAYLOAD_BYTES` are stored once, in
blobs, and every read gives the whole event back (memory, files, DynamoDB with S3)."""

from __future__ import annotations

import pytest

from agentkit.errors import LeaseLost
from agentkit.events import ActionResult, EventDraft, draft
from agentkit.store.blobs import LARGE_PAYLOAD_BYTES, BlobStore
from tests.store.conftest import Harness, note


def big_text(size: int, seed: str = "x") -> str:
    line = f"{seed} line of a large tool result, as a build log or a file would be\n"
    return (line * (size // len(line) + 1))[:size]


def tool_result(call_id: str, result: object) -> EventDraft:
    return draft(ActionResult(call_id=call_id, tool_name="read_file", result=result), turn_id="t1")


def blobs_of(harness: Harness) -> BlobStore:
    blobs = getattr(harness.store, "blobs", None)
    assert isinstance(blobs, BlobStore)
    return blobs


async def test_a_large_tool_result_reads_back_whole(harness: Harness) -> None:
    record = await harness.new_session()
    payload = {"log": big_text(3 * LARGE_PAYLOAD_BYTES), "exitCode": 1}
    await harness.store.append(record.id, [note("before")])

    written = await harness.store.append(record.id, [tool_result("c1", payload), note("after")])

    assert written[0].data["result"] == payload
    read = await harness.store.read(record.id)
    assert [e.index for e in read] == [0, 1, 2]
    assert read[1].data == {
        "callId": "c1",
        "toolName": "read_file",
        "isError": False,
        "result": payload,
    }
    assert read[1] == written[0]
    assert read[2].data["text"] == "after"
    assert await harness.store.read(record.id, 1, limit=1) == [written[0]]
    assert await harness.store.follow(record.id, 1, timeout=0.1) == written
    assert await harness.reopen().read(record.id) == read


async def test_large_events_appended_between_reads_read_back_whole(harness: Harness) -> None:
    """Where the large events of a stream are is kept between reads of the whole stream and
    carried on with the events appended since: each new one is found, none is lost."""
    record = await harness.new_session()
    payloads = [{"log": big_text(2 * LARGE_PAYLOAD_BYTES, str(n))} for n in range(3)]
    for n, payload in enumerate(payloads):
        await harness.store.append(record.id, [note(f"small {n}"), tool_result(f"c{n}", payload)])
        read = await harness.store.read(record.id)
        assert [e.data["result"] for e in read if e.type == "action.result"] == payloads[: n + 1]
    tail = await harness.store.read(record.id, 3)  # a tail from the middle
    assert [e.data.get("result") for e in tail] == [payloads[1], None, payloads[2]]


async def test_a_payload_of_many_medium_values_reads_back_whole(harness: Harness) -> None:
    record = await harness.new_session()
    data = {f"part{i}": big_text(LARGE_PAYLOAD_BYTES // 4, str(i)) for i in range(8)}

    await harness.store.append(record.id, [EventDraft(type="custom.report", data=data)])

    (read,) = await harness.store.read(record.id)
    assert read.type == "custom.report"
    assert read.data == data
    assert list(read.data) == list(data)  # in the order it was written
    assert blobs_of(harness).count() == 1


async def test_small_events_use_no_blobs(harness: Harness) -> None:
    record = await harness.new_session()
    await harness.store.append(record.id, [tool_result("c1", big_text(LARGE_PAYLOAD_BYTES // 2))])

    assert blobs_of(harness).count() == 0


async def test_the_same_payload_twice_is_stored_once(harness: Harness) -> None:
    first, second = await harness.new_session(), await harness.new_session()
    payload = big_text(2 * LARGE_PAYLOAD_BYTES)

    await harness.store.append(first.id, [tool_result("c1", payload)])
    await harness.store.append(first.id, [tool_result("c2", payload)])
    await harness.store.append(second.id, [tool_result("c9", payload)])

    assert blobs_of(harness).count() == 1
    for session_id, calls in ((first.id, ["c1", "c2"]), (second.id, ["c9"])):
        events = await harness.store.read(session_id)
        assert [e.data["callId"] for e in events] == calls
        assert all(e.data["result"] == payload for e in events)


async def test_an_append_that_fails_after_its_blob_loses_nothing(harness: Harness) -> None:
    # The append is fenced by a lease its caller does not hold: the blob is written, then
    # the event append refuses, as a writer killed between the two would leave things.
    record = await harness.new_session()
    await harness.store.append(record.id, [note("kept")])
    payload = big_text(2 * LARGE_PAYLOAD_BYTES)
    assert await harness.store.acquire_lease(record.id, "worker-a", ttl=60)

    with pytest.raises(LeaseLost):
        await harness.store.append(record.id, [tool_result("c1", payload)], lease_holder="b")

    assert [e.data for e in await harness.store.read(record.id)] == [{"text": "kept"}]
    assert blobs_of(harness).count() == 1  # an orphan blob; no event names a missing one
    again = await harness.store.append(
        record.id, [tool_result("c1", payload)], lease_holder="worker-a"
    )
    assert again[0].index == 1
    assert (await harness.reopen().read(record.id))[1].data["result"] == payload
    assert blobs_of(harness).count() == 1


async def test_reads_hand_out_the_same_restored_event(harness: Harness) -> None:
    # The folds carried per session check the stream still holds the same event objects;
    # a large event restored anew on every read made every turn fold the whole stream.
    if harness.kind not in ("memory", "files", "dynamodb"):
        pytest.skip("only a store that caches its events hands out the same objects")
    record = await harness.new_session()
    await harness.store.append(record.id, [tool_result("c1", big_text(2 * LARGE_PAYLOAD_BYTES))])
    await harness.store.append(record.id, [note("after")])

    first, second = await harness.store.read(record.id), await harness.store.read(record.id)

    assert first[0].data["result"] == big_text(2 * LARGE_PAYLOAD_BYTES)
    assert first[0] is second[0] and first[1] is second[1]
