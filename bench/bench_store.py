"""Store throughput: FileStore and DynamoDBStore (against a local moto server it starts).

For each store: single-event appends per second, batched appends per second, and the
replay (one `read`) of a 10,000-event session. For the file store the replay is set
against the physical floor, a raw read of the same events.ndjson split into lines, as a
ratio. For DynamoDB it prints requests and write units per event: the units the server
reported (moto reports fixed numbers) and the units DynamoDB would bill for the item sizes
(`usage.estimated_write_units`). Numbers are printed, never asserted.

Run: python bench/bench_store.py [--single 500] [--batched 5000] [--dynamo-batched 500]
                                 [--batch 50] [--replay 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentkit.events import EventDraft, MessageAppended, draft
from agentkit.sessions import SessionRecord, new_session_id
from agentkit.store.base import Store
from agentkit.store.files import FileStore


def note(i: int) -> EventDraft:
    # about the size of a streamed reply delta with its envelope
    return draft(MessageAppended(text=f"delta {i} " + "lorem ipsum " * 8), turn_id="turn_1")


async def new_session(store: Store) -> str:
    record = SessionRecord(id=new_session_id(), principal="bench")
    await store.create_session(record)
    return record.id


async def append_single(store: Store, count: int) -> float:
    sid = await new_session(store)
    await store.append(sid, [note(-1)])  # warm-up: first append learns the end
    started = time.perf_counter()
    for i in range(count):
        await store.append(sid, [note(i)])
    return time.perf_counter() - started


async def append_batched(store: Store, count: int, batch: int) -> float:
    sid = await new_session(store)
    await store.append(sid, [note(-1)])
    started = time.perf_counter()
    for start in range(0, count, batch):
        await store.append(sid, [note(i) for i in range(start, min(count, start + batch))])
    return time.perf_counter() - started


async def fill(store: Store, count: int) -> str:
    sid = await new_session(store)
    for start in range(0, count, 100):
        await store.append(sid, [note(i) for i in range(start, min(count, start + 100))])
    return sid


async def timed_read(store: Store, sid: str, expected: int) -> float:
    started = time.perf_counter()
    events = await store.read(sid)
    elapsed = time.perf_counter() - started
    assert len(events) == expected, f"replay returned {len(events)} of {expected}"
    return elapsed


def raw_read(path: Path) -> float:
    started = time.perf_counter()
    lines = path.read_bytes().splitlines()
    elapsed = time.perf_counter() - started
    assert lines
    return elapsed


def rate(count: int, seconds: float) -> str:
    return f"{count / seconds:9.0f} events/s  ({seconds * 1000 / count:.2f} ms/event)"


async def bench_files(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = FileStore(Path(tmp) / "state")
        print("FileStore")
        print(
            f"  append, single        {rate(args.single, await append_single(store, args.single))}"
        )
        seconds = await append_batched(store, args.batched, args.batch)
        print(f"  append, batch of {args.batch:<4} {rate(args.batched, seconds)}")
        sid = await fill(store, args.replay)
        warm = min([await timed_read(store, sid, args.replay) for _ in range(3)])
        cold = []
        for _ in range(3):  # a fresh store has nothing cached: a restart, another process
            fresh = FileStore(Path(tmp) / "state")
            cold.append(await timed_read(fresh, sid, args.replay))
            await fresh.close()
        path = Path(tmp) / "state" / "sessions" / sid / "events.ndjson"
        floor = min(raw_read(path) for _ in range(3))
        print(
            f"  replay {args.replay} events; raw read of events.ndjson, the floor: "
            f"{floor * 1000:.1f} ms"
        )
        print(f"      fresh store  {min(cold) * 1000:8.1f} ms = {min(cold) / floor:.1f}x the floor")
        print(f"      warm store   {warm * 1000:8.1f} ms = {warm / floor:.1f}x the floor")
        await store.close()


async def bench_dynamodb(args: argparse.Namespace) -> None:
    from agentkit.store.dynamodb import DynamoDBSettings, DynamoDBStore, create_tables, make_client
    from tests.fixtures.dynamodb import start_moto_server, stop_moto_server

    for name, value in (("AWS_ACCESS_KEY_ID", "bench"), ("AWS_SECRET_ACCESS_KEY", "bench")):
        os.environ.setdefault(name, value)
    url, proc = start_moto_server()
    try:
        print(f"DynamoDBStore (moto on {url}, one request at a time)")

        def fresh(label: str) -> DynamoDBStore:
            settings = DynamoDBSettings(url, "us-east-1", f"{label}-sessions", f"{label}-events")
            client = make_client(settings)
            create_tables(client, settings)
            return DynamoDBStore(settings, client=client)

        store = fresh("single")
        seconds = await append_single(store, args.single)
        report(store, "append, single       ", args.single + 1, seconds)
        store = fresh("batched")
        seconds = await append_batched(store, args.dynamo_batched, args.batch)
        report(store, f"append, batch of {args.batch:<4}", args.dynamo_batched + 1, seconds)
        print(
            "      (moto copies the whole table, stream included, for every transaction, so\n"
            "       batched appends slow down as its table grows; DynamoDB does not)"
        )
        store = fresh("replay")
        sid = await new_session(store)
        await write_directly(store, sid, args.replay)
        store.usage.reset()
        replay = min([await timed_read(store, sid, args.replay) for _ in range(3)])
        floor = min([await raw_query(store, sid) for _ in range(3)])
        print(
            f"  replay {args.replay} events  {replay * 1000:8.1f} ms in "
            f"{store.request_count // 3} requests; the same raw boto3 queries "
            f"{floor * 1000:.1f} ms; ratio {replay / floor:.2f}x"
        )
    finally:
        stop_moto_server(proc)


async def write_directly(store: object, sid: str, count: int) -> None:
    """Fill a session with the very items `append` writes, by BatchWriteItem: moto's
    transactions are too slow on a big table to build 10,000 events through `append`."""
    from agentkit.events import Event
    from agentkit.store import _dynamo_codec as codec
    from agentkit.store.dynamodb import DynamoDBStore

    assert isinstance(store, DynamoDBStore)
    writes = []
    for i in range(count):
        d = note(i)
        item = codec.event_item(d, sid, i, codec.data_json(d), None, "bench")
        assert codec.event_from_item(item) == Event.from_draft(d, session_id=sid, index=i)
        writes.append({"PutRequest": {"Item": item}})
    await store._batch_write(store.settings.events_table, writes)


async def raw_query(store: object, sid: str) -> float:
    """The floor of a DynamoDB replay: the same consistent, paginated query through boto3."""
    from agentkit.store.dynamodb import DynamoDBStore

    assert isinstance(store, DynamoDBStore)
    client = store._caller.client
    kwargs = {
        "TableName": store.settings.events_table,
        "KeyConditionExpression": "sessionId = :p",
        "ExpressionAttributeValues": {":p": {"S": sid}},
        "ConsistentRead": True,
    }
    started = time.perf_counter()
    while True:
        page = await asyncio.to_thread(client.query, **kwargs)
        if "LastEvaluatedKey" not in page:
            return time.perf_counter() - started
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def report(store: object, label: str, events: int, seconds: float) -> None:
    from agentkit.store.dynamodb import DynamoDBStore

    assert isinstance(store, DynamoDBStore)
    usage = store.usage
    print(f"  {label}  {rate(events - 1, seconds)}")
    print(
        f"      per event: {usage.request_count / events:.2f} requests, "
        f"{usage.consumed_write_units / events:.2f} write units reported, "
        f"{usage.estimated_write_units / events:.2f} billed by item size"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--single", type=int, default=500)
    parser.add_argument("--batched", type=int, default=5000)
    parser.add_argument("--dynamo-batched", type=int, default=500)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--replay", type=int, default=10_000)
    args = parser.parse_args()
    asyncio.run(bench_files(args))
    asyncio.run(bench_dynamodb(args))


if __name__ == "__main__":
    main()
