"""What only the DynamoDB store has: its tables, its races, large items, the stream, its
requests and its errors. The shared `Store` behaviour is in the role suites (test_*_store.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import BotoCoreError, ClientError

from agentkit.errors import InvalidId, SessionNotFound, StoreError
from agentkit.events import EventDraft, MessageAppended, draft
from agentkit.sessions import SessionRecord, new_session_id
from agentkit.store import _dynamo_codec as codec
from agentkit.store._dynamo_blobs import BLOB_CHUNK_BYTES
from agentkit.store._dynamo_codec import CHUNK_BYTES
from agentkit.store.blobs import BlobRef
from agentkit.store.dynamodb import (
    ALL_SESSIONS_INDEX,
    EVENTS_STREAM_FILTER_PATTERN,
    PRINCIPAL_INDEX,
    TTL_ATTRIBUTE,
    DynamoDBSettings,
    DynamoDBStore,
    create_tables,
    make_client,
    read_stream_event,
)

Factory = Callable[..., DynamoDBStore]
ITEM_LIMIT = 400 * 1024


def note(text: str) -> EventDraft:
    return draft(MessageAppended(text=text))


async def new_session(store: DynamoDBStore, **fields: Any) -> SessionRecord:
    record = SessionRecord(id=new_session_id(), **fields)
    await store.create_session(record)
    return record


def event_items(client: Any, store: DynamoDBStore, partition: str) -> list[dict[str, Any]]:
    """Every item of one partition of the events table, read directly."""
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {
        "TableName": store.settings.events_table,
        "KeyConditionExpression": "sessionId = :p",
        "ExpressionAttributeValues": {":p": {"S": partition}},
        "ConsistentRead": True,
    }
    while True:
        page = client.query(**kwargs)
        items.extend(page["Items"])
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


# the tables


def test_create_tables_builds_the_documented_key_design(
    dynamodb_store_factory: Factory, dynamodb_client: Any
) -> None:
    store = dynamodb_store_factory()

    events = dynamodb_client.describe_table(TableName=store.settings.events_table)["Table"]
    state = dynamodb_client.describe_table(TableName=store.settings.sessions_table)["Table"]

    assert [(k["AttributeName"], k["KeyType"]) for k in events["KeySchema"]] == [
        ("sessionId", "HASH"),
        ("index", "RANGE"),
    ]
    assert events["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}
    assert [(k["AttributeName"], k["KeyType"]) for k in state["KeySchema"]] == [
        ("pk", "HASH"),
        ("sk", "RANGE"),
    ]
    indexes = {i["IndexName"]: i for i in state["GlobalSecondaryIndexes"]}
    assert set(indexes) == {PRINCIPAL_INDEX, ALL_SESSIONS_INDEX}
    assert [k["AttributeName"] for k in indexes[PRINCIPAL_INDEX]["KeySchema"]] == [
        "principal",
        "listSort",
    ]
    for table in (store.settings.events_table, store.settings.sessions_table):
        ttl = dynamodb_client.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
        assert ttl["AttributeName"] == TTL_ATTRIBUTE


def test_create_tables_can_run_again_on_existing_tables(
    dynamodb_store_factory: Factory, dynamodb_client: Any
) -> None:
    store = dynamodb_store_factory()

    create_tables(dynamodb_client, store.settings)  # no error: a local server restarts often


def test_settings_come_from_the_environment() -> None:
    settings = DynamoDBSettings.from_env(
        {
            "AGENTKIT_DYNAMODB_ENDPOINT": "http://127.0.0.1:8000",
            "AWS_DEFAULT_REGION": "eu-west-1",
            "AGENTKIT_SESSIONS_TABLE": "s",
            "AGENTKIT_EVENTS_TABLE": "e",
        }
    )

    assert settings == DynamoDBSettings("http://127.0.0.1:8000", "eu-west-1", "s", "e")
    assert DynamoDBSettings.from_env({"AWS_REGION": "ap-south-1"}).region == "ap-south-1"
    assert DynamoDBSettings.from_env({}).endpoint_url is None


async def test_an_event_is_one_item_keyed_by_session_and_index(
    dynamodb_store_factory: Factory, dynamodb_client: Any
) -> None:
    store = dynamodb_store_factory()
    record = await new_session(store)

    await store.append(record.id, [draft(MessageAppended(text="hi"), turn_id="turn_1")])

    (item,) = event_items(dynamodb_client, store, record.id)
    assert item["sessionId"] == {"S": record.id}
    assert item["index"] == {"N": "0"}
    assert item["kind"] == {"S": "event"}
    assert item["type"] == {"S": "message.appended"}
    assert item["turnId"] == {"S": "turn_1"}
    assert json.loads(item["data"]["S"]) == {"text": "hi"}


# appends and their races


async def test_a_store_with_a_stale_next_index_loses_the_put_and_lands_after(
    dynamodb_store_factory: Factory,
) -> None:
    first = dynamodb_store_factory()
    second = dynamodb_store_factory(settings=first.settings)
    record = await new_session(first)
    await first.append(record.id, [note("a")])  # `first` now expects index 1 next
    await second.append(record.id, [note("b"), note("c")])  # ...but 1 and 2 are taken
    first.usage.reset()

    (event,) = await first.append(record.id, [note("d")])

    assert event.index == 3
    assert first.usage.per_operation == {"put_item": 2, "query": 1}  # lost, looked, won
    assert [e.data["text"] for e in await second.read(record.id)] == ["a", "b", "c", "d"]


async def test_a_batch_that_collides_is_written_whole_at_the_end(
    dynamodb_store_factory: Factory,
) -> None:
    first = dynamodb_store_factory()
    second = dynamodb_store_factory(settings=first.settings)
    record = await new_session(first)
    await first.append(record.id, [note("a")])
    await second.append(record.id, [note("b")])

    batch = await first.append(record.id, [note("c1"), note("c2"), note("c3")])

    assert [e.index for e in batch] == [2, 3, 4]
    assert [e.data["text"] for e in await second.read(record.id)] == ["a", "b", "c1", "c2", "c3"]


async def test_separate_stores_racing_leave_no_gap_or_duplicate(
    dynamodb_store_factory: Factory,
) -> None:
    first = dynamodb_store_factory()
    stores = [first] + [dynamodb_store_factory(settings=first.settings) for _ in range(3)]
    record = await new_session(first)

    async def writer(n: int, store: DynamoDBStore) -> None:
        for i in range(25):
            await store.append(record.id, [note(f"{n}:{i}")])

    await asyncio.gather(*(writer(n, s) for n, s in enumerate(stores)))

    events = await first.read(record.id)
    assert [e.index for e in events] == list(range(100))
    assert len({e.data["text"] for e in events}) == 100


async def test_a_batch_over_one_hundred_events_is_split_into_transactions(
    dynamodb_store_factory: Factory,
) -> None:
    store = dynamodb_store_factory()
    record = await new_session(store)
    await store.append(record.id, [note("first")])
    store.usage.reset()

    events = await store.append(record.id, [note(str(i)) for i in range(150)])

    assert [e.index for e in events] == list(range(1, 151))
    assert store.usage.per_operation == {"transact_write_items": 2}
    assert len(await store.read(record.id)) == 151


async def test_a_stale_store_cannot_append_to_a_deleted_session(
    dynamodb_store_factory: Factory, dynamodb_client: Any
) -> None:
    writer = dynamodb_store_factory()
    deleter = dynamodb_store_factory(settings=writer.settings)
    record = await new_session(writer)
    await writer.append(record.id, [note("a"), note("b")])  # the writer expects index 2 next

    assert await deleter.delete_session(record.id)

    with pytest.raises(SessionNotFound):
        await writer.append(record.id, [note("c")])
    kinds = {i["kind"]["S"] for i in event_items(dynamodb_client, writer, record.id)}
    assert kinds == {"deleted"}  # fence and stubs only: nothing readable is left
    assert await writer.read(record.id) == []


def items_returned(store: DynamoDBStore) -> list[int]:
    """The item count of each query the store sends from now on."""
    counts: list[int] = []

    def after_query(parsed: dict[str, Any], **_: Any) -> None:
        counts.append(int(parsed.get("Count", 0)))

    store._caller.client.meta.events.register("after-call.dynamodb.Query", after_query)
    return counts


async def test_a_reread_queries_only_the_events_appended_since(
    dynamodb_store_factory: Factory,
) -> None:
    reader = dynamodb_store_factory()
    writer = dynamodb_store_factory(settings=reader.settings)
    record = await new_session(writer)
    await writer.append(record.id, [note(str(i)) for i in range(50)])
    assert len(await reader.read(record.id)) == 50
    counts = items_returned(reader)

    await writer.append(record.id, [note("50"), note("51")])  # another process's appends
    again = await reader.read(record.id)

    assert [e.data["text"] for e in again] == [str(i) for i in range(52)]
    assert counts == [2]
    assert [e.index for e in await reader.read(record.id, 10, 5)] == [10, 11, 12, 13, 14]
    assert counts == [2, 0]  # the window was kept; one empty query looked for a fence


async def test_a_store_that_has_read_a_session_sees_another_store_delete_it(
    dynamodb_store_factory: Factory,
) -> None:
    reader = dynamodb_store_factory()
    deleter = dynamodb_store_factory(settings=reader.settings)
    record = await new_session(reader)
    await reader.append(record.id, [note("a"), note("b")])
    assert len(await reader.read(record.id)) == 2

    assert await deleter.delete_session(record.id)

    assert await reader.read(record.id) == []
    assert await reader.read(record.id, 0, 1) == []
    with pytest.raises(SessionNotFound):
        await reader.append(record.id, [note("c")])


# large events


async def test_a_one_megabyte_event_is_split_into_chunks_under_the_item_limit(
    dynamodb_store_factory: Factory, dynamodb_client: Any
) -> None:
    # No bucket: the result is a blob of chunk items in the events table.
    store = dynamodb_store_factory()
    record = await new_session(store)
    blob = "x" * 1_000_000

    (written,) = await store.append(record.id, [EventDraft("action.result", {"result": blob})])

    (item,) = event_items(dynamodb_client, store, record.id)
    ref = BlobRef.of(json.dumps(blob).encode())
    assert json.loads(item["data"]["S"]) == {
        "result": {"sha256": ref.sha256, "bytes": ref.size},
        "$blobs": ["result"],
    }
    chunks = event_items(dynamodb_client, store, f"blob#sha256#{ref.sha256}")
    sizes = [len(c["data"]["B"]) for c in chunks]
    assert sizes == [BLOB_CHUNK_BYTES] * 7 + [ref.size - 7 * BLOB_CHUNK_BYTES]
    assert int(chunks[0]["chunks"]["N"]) == 8
    assert all(len(json.dumps(c, default=str)) < ITEM_LIMIT // 3 for c in chunks)
    (again,) = await store.read(record.id)
    assert again.to_json().encode() == written.to_json().encode()


async def test_an_event_an_earlier_version_split_into_chunks_still_reads(
    dynamodb_store_factory: Factory, dynamodb_client: Any
) -> None:
    store = dynamodb_store_factory()
    record = await new_session(store)
    old = EventDraft("action.result", {"result": "x" * 1_000_000})
    payload = codec.data_json(old)
    for chunk in codec.chunk_items(record.id, "legacy1", payload):
        dynamodb_client.put_item(TableName=store.settings.events_table, Item=chunk)
    item = codec.event_item(old, record.id, 0, payload, "legacy1", "w1")
    dynamodb_client.put_item(TableName=store.settings.events_table, Item=item)

    (read,) = await store.read(record.id)

    assert read.data == old.data
    assert int(item["chunks"]["N"]) == len(payload) // CHUNK_BYTES + 1
    assert await store.delete_session(record.id)
    assert event_items(dynamodb_client, store, f"{record.id}#blob#legacy1") == []


async def test_a_large_event_reaches_the_stream_and_is_reassembled_from_it(
    dynamodb_store_factory: Factory, dynamodb_client: Any, dynamodb_endpoint: str
) -> None:
    store = dynamodb_store_factory()
    record = await new_session(store)
    big = {"callId": "c1", "toolName": "dump", "result": "ü字" * 200_000}
    await store.append(record.id, [note("small")])
    (written,) = await store.append(record.id, [EventDraft("action.result", big)])

    images = read_stream_images(dynamodb_endpoint, dynamodb_client, store.settings.events_table)
    table = store.settings.events_table
    events = [read_stream_event(dynamodb_client, table, i, store.blobs) for i in images]

    found = [e for e in events if e is not None]
    assert [e.index for e in found] == [0, 1]
    assert found[1].to_json() == written.to_json()
    chunks = [i for i in images if i["kind"]["S"] == "chunk"]
    assert len(chunks) == 8 and sum(1 for e in events if e is None) == 8  # filtered out
    pattern = json.loads(EVENTS_STREAM_FILTER_PATTERN)
    assert pattern["dynamodb"]["NewImage"]["kind"] == {"S": ["event"]}


def read_stream_images(endpoint: str, client: Any, table: str) -> list[dict[str, Any]]:
    """The NewImage of every INSERT on the table's stream, through the Streams API."""
    arn = client.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    streams = boto3.client("dynamodbstreams", region_name="us-east-1", endpoint_url=endpoint)
    try:
        images: list[dict[str, Any]] = []
        for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
            iterator = streams.get_shard_iterator(
                StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
            )["ShardIterator"]
            while iterator:
                page = streams.get_records(ShardIterator=iterator)
                images.extend(
                    r["dynamodb"]["NewImage"] for r in page["Records"] if r["eventName"] == "INSERT"
                )
                if not page["Records"]:
                    break
                iterator = page.get("NextShardIterator")
        return images
    finally:
        streams.close()


# ids, requests and errors


@pytest.mark.parametrize("bad", ["../x", "ses_" + "a" * 5000, "ses_ünïcødé_ünïcødé_ünï", ""])
async def test_hostile_ids_are_rejected_before_any_request(
    dynamodb_store_factory: Factory, bad: str
) -> None:
    store = dynamodb_store_factory()
    calls = [
        store.get_session(bad),
        store.append(bad, [note("x")]),
        store.read(bad),
        store.delete_session(bad),
        store.acquire_lease(bad, "h", ttl=1),
        store.get_reminder(bad),
        store.claim("", ttl=1),
        store.find_session("github", "k" * 5000),
        store.list_sessions("ada", cursor=bad or "~"),
    ]

    for call in calls:
        with pytest.raises(InvalidId):
            await call

    assert store.request_count == 0


async def test_requests_and_consumed_capacity_are_counted(dynamodb_store_factory: Factory) -> None:
    store = dynamodb_store_factory()
    record = await new_session(store)
    await store.append(record.id, [note("warm")])  # learns the next index
    store.usage.reset()

    await store.append(record.id, [note("one")])
    await store.append(record.id, [note(str(i)) for i in range(4)])

    assert store.request_count == 2  # one PutItem, one TransactWriteItems
    assert store.consumed_write_units > 0
    assert store.usage.estimated_write_units == 1 + 4 * 2  # transactions cost double


async def test_a_missing_table_is_a_store_error(
    dynamodb_endpoint: str, dynamodb_client: Any
) -> None:
    settings = DynamoDBSettings(dynamodb_endpoint, "us-east-1", "no-such-sessions", "no-such-e")
    store = DynamoDBStore(settings, client=dynamodb_client)

    with pytest.raises(StoreError, match="not found") as caught:
        await store.get_session(new_session_id())

    assert not isinstance(caught.value, (ClientError, BotoCoreError))


async def test_an_unreachable_endpoint_is_a_store_error() -> None:
    settings = DynamoDBSettings("http://127.0.0.1:9", "us-east-1", "s", "e")
    client = make_client(settings, max_attempts=1)
    store = DynamoDBStore(settings, client=client)
    try:
        with pytest.raises(StoreError) as caught:
            await store.read(new_session_id())
        assert not isinstance(caught.value, (ClientError, BotoCoreError))
    finally:
        client.close()


async def test_follow_sees_an_append_made_by_another_store(dynamodb_store_factory: Factory) -> None:
    reader = dynamodb_store_factory()
    writer = dynamodb_store_factory(settings=reader.settings)
    record = await new_session(reader)
    follower = asyncio.create_task(reader.follow(record.id, 0, timeout=30))
    await asyncio.sleep(0.2)  # the follower is polling by now

    await writer.append(record.id, [note("hello")])

    events = await asyncio.wait_for(follower, 10)
    assert [e.data["text"] for e in events] == ["hello"]


async def test_an_expired_claim_still_in_the_table_can_be_claimed_again(
    dynamodb_store_factory: Factory, dynamodb_client: Any
) -> None:
    now = [1_800_000_000.0]
    store = dynamodb_store_factory(clock=lambda: now[0])
    assert await store.claim("delivery-7", ttl=60)
    items = dynamodb_client.scan(TableName=store.settings.sessions_table)["Items"]
    (claim,) = [i for i in items if i["pk"]["S"].startswith("claim#")]
    assert claim[TTL_ATTRIBUTE] == {"N": "1800000060"}  # whole epoch seconds, as TTL wants

    now[0] += 61  # TTL deletion is lazy: the item is still there

    assert await store.claim("delivery-7", ttl=60)


class ReplyDroppingProxy:
    """A loopback HTTP proxy to the DynamoDB server that forwards every request but, once,
    drops the reply to the first PutItem (the write lands; the client never hears)."""

    def __init__(self, upstream: str) -> None:
        import http.client
        import http.server
        import threading
        from urllib.parse import urlsplit

        target = urlsplit(upstream)
        proxy = self
        self.dropped = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                conn = http.client.HTTPConnection(target.hostname or "", target.port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                conn.request("POST", self.path, body, headers)
                reply = conn.getresponse()
                data = reply.read()
                conn.close()
                if proxy.dropped == 0 and "PutItem" in self.headers.get("X-Amz-Target", ""):
                    proxy.dropped += 1
                    self.close_connection = True
                    return  # the server wrote the item; the reply is lost on the way back
                self.send_response(reply.status)
                for key, value in reply.getheaders():
                    if key.lower() not in ("connection", "transfer-encoding", "server", "date"):
                        self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


async def test_a_put_whose_reply_was_lost_is_not_written_twice(
    dynamodb_store_factory: Factory, dynamodb_endpoint: str
) -> None:
    direct = dynamodb_store_factory()
    record = await new_session(direct)
    await direct.append(record.id, [note("a")])
    proxy = ReplyDroppingProxy(dynamodb_endpoint)
    settings = DynamoDBSettings(
        proxy.url, "us-east-1", direct.settings.sessions_table, direct.settings.events_table
    )
    client = make_client(settings)
    try:
        flaky = DynamoDBStore(settings, client=client)

        (event,) = await flaky.append(record.id, [note("b")])

        assert proxy.dropped == 1  # botocore retried the put, which then met our own item
        assert event.index == 1
        assert [e.data["text"] for e in await direct.read(record.id)] == ["a", "b"]
    finally:
        client.close()
        proxy.close()


async def test_an_empty_principal_round_trips_though_index_keys_cannot_be_empty(
    dynamodb_store_factory: Factory,
) -> None:
    store = dynamodb_store_factory()
    record = await new_session(store, principal="")

    assert await store.get_session(record.id) == record
    assert (await store.list_sessions("")).items == []
    assert [r.id for r in (await store.list_sessions(None)).items] == [record.id]


async def test_a_large_event_for_an_unknown_session_writes_nothing(
    dynamodb_store_factory: Factory, dynamodb_client: Any
) -> None:
    store = dynamodb_store_factory()

    with pytest.raises(SessionNotFound):
        await store.append(new_session_id(), [EventDraft("action.result", {"r": "x" * 500_000})])

    assert dynamodb_client.scan(TableName=store.settings.events_table)["Items"] == []
