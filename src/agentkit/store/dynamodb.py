"""`DynamoDBStore`: the `Store` port on two DynamoDB tables, through a boto3 client.

Tables (names from `DynamoDBSettings`; key constants in `_dynamo_schema`, re-exported here
so the SAM template and `AwsHost` use them as they are)

    events table   key (sessionId S, index N), stream NEW_IMAGE, TTL on `expiresAt`
      (ses_…, i)                     kind=event: type, at, turnId?, traceContext? (the
                                     W3C headers it was recorded under, when traced),
                                     data (the JSON of the
                                     payload, large values as blob references) -- or, as
                                     earlier versions wrote events over 300 KB,
                                     blob, chunks, bytes, sha256 instead of data
      (ses_…#blob#<id>, n)           kind=chunk: data (B), piece n of such an event
      (blob#sha256#<hex>, n)         kind=chunk: piece n of a blob (no bucket configured)
      (ses_…, i)                     kind=deleted: a deleted session's fence and stubs

    state table    key (pk S, sk S), TTL on `expiresAt`
      (ses_…, "session")             the SessionRecord's fields (principal as `owner`,
                                     and as `principal` too, the index key), leaseHolder,
                                     leaseExpires and interrupt (these three not projected)
      (ckey#<len>#<channel>#<key>, "ckey")   sessionId: a channel's continuation key
      ("reminder", <reminder id>)    record (JSON), status
      ("evalrun", <run id>)          record (JSON), or recordZ (zlib) when over 300 KB
      (claim#<sha256(key)>, "claim") expiresAt: one idempotency record
    GSI byPrincipal   (principal, listSort)  sessions of one principal
    GSI allSessions   (listAll="session", listSort)  every session (dev mode)
      listSort = "<created ms, 16 digits>~<sessionId>", queried descending: newest first.
      Only the record's own attributes are projected, so lease and interrupt writes never
      touch an index. Listings are eventually consistent (GSIs always are).

Appending. There is no counter item: an event is a conditional put of (sessionId, i) with
`attribute_not_exists`, and a writer only ever tries index i once it knows i-1 exists (it
wrote i-1 itself, or read it as the last item with a consistent query). So two writers
can never share an index (the condition) and never skip one (nothing is tried past the
known end). A lost race re-reads the end and tries again, with a little jittered backoff.
A batch is one TransactWriteItems of conditional puts, so it lands whole and contiguous;
a batch over 100 events or 3.5 MB is split into several such transactions (each whole,
but another writer may land between them). A single event costs one PutItem, one write
unit per started KB; a batch costs the transactional two units per KB of each event.
Within one store, appends to a session take turns (`_dynamo_gate`), so only separate
processes ever race. Each append call stamps its items with a random `writer`: a put that
landed but whose reply was lost, retried by botocore, then meets its own item and counts
as written, never as a lost race (which would append the event twice).

Large events. DynamoDB items stop at 400 KB. A payload over `LARGE_PAYLOAD_BYTES` (64 KB)
is split by `agentkit.store.large_events` before it is appended: its large values are
written to the store's blobs (S3 as deployed, `S3Blobs`; else chunk items of 128 KB in the
events table, partition `blob#sha256#<hex>`, `_dynamo_blobs`), content-addressed and
before the event, and the event item holds references in their place, so no item comes
near the limit. Readers, and stream consumers (`read_stream_event(..., blobs)`), put the
payload back together. Earlier versions wrote an event over 300 KB as chunk items of a
partition `<sessionId>#blob#<id>` and an item with `blob`, `chunks`, `bytes`, `sha256`;
such events are still read (and their chunks removed with their session). Chunks of an
append that failed for good are orphans nobody references.

Deleting. The session item goes away (so listings, `get_session` and `find_session` forget
it), a `deleted` fence item is appended at the next index, and every event below it is
overwritten by a small `deleted` stub (TTL: seven days); chunks are removed. An appender
with a stale idea of the end then meets a stub or the fence and gets `SessionNotFound`:
a deleted session can never grow events again. Stream consumers should filter to
`kind = event` inserts (`EVENTS_STREAM_FILTER_PATTERN`).

Reads that need order (`read`, `follow`, the end of the stream, leases) are strongly
consistent; every query paginates. A store keeps the events it has read per session
(`_dynamo_seen`) and queries only the items after them. DynamoDB cannot notify, so
`follow` polls with a short backoff (50 ms growing to 500 ms). Requests run in the stores'
own worker threads (`_offload`) with botocore's standard retry mode; every error becomes a
`StoreError`. The requests made and the capacity units reported (`ReturnConsumedCapacity`)
are counted in `usage`;
`usage.estimated_write_units` applies DynamoDB's pricing rules to the item sizes, for
local servers that report made-up capacity.

Each role has its module: the event streams in `_dynamo_events`, sessions, leases,
reminders, eval runs and claims in `_dynamo_session_ops`, deletion here.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from agentkit.errors import StoreError
from agentkit.store import _dynamo_codec as codec
from agentkit.store._dynamo_blobs import DynamoBlobs
from agentkit.store._dynamo_calls import (
    Caller,
    Usage,
)
from agentkit.store._dynamo_events import PK_NAME, DynamoEvents
from agentkit.store._dynamo_gate import Gates
from agentkit.store._dynamo_schema import (
    ALL_SESSIONS_INDEX,
    DEFAULT_EVENTS_TABLE,
    DEFAULT_SESSIONS_TABLE,
    EVENTS_ATTRIBUTE_DEFINITIONS,
    EVENTS_KEY_SCHEMA,
    EVENTS_SORT_KEY,
    EVENTS_STREAM_FILTER_PATTERN,
    EVENTS_STREAM_VIEW_TYPE,
    KIND_ATTRIBUTE,
    KIND_DELETED,
    KIND_EVENT,
    PRINCIPAL_INDEX,
    STATE_ATTRIBUTE_DEFINITIONS,
    STATE_GLOBAL_SECONDARY_INDEXES,
    STATE_KEY_SCHEMA,
    TTL_ATTRIBUTE,
    DynamoDBSettings,
    create_tables,
    events_table_definition,
    sessions_table_definition,
)
from agentkit.store._dynamo_seen import SeenEvents
from agentkit.store._dynamo_stream import chunk_query, read_stream_event, stream_trace_context
from agentkit.store._offload import offload
from agentkit.store.blobs import BlobStore
from agentkit.store.ids import validate_session_id
from agentkit.store.large_events import BLOBS_KEY

__all__ = [
    "ALL_SESSIONS_INDEX",
    "DEFAULT_EVENTS_TABLE",
    "DEFAULT_SESSIONS_TABLE",
    "EVENTS_ATTRIBUTE_DEFINITIONS",
    "EVENTS_KEY_SCHEMA",
    "EVENTS_STREAM_FILTER_PATTERN",
    "EVENTS_STREAM_VIEW_TYPE",
    "PRINCIPAL_INDEX",
    "STATE_ATTRIBUTE_DEFINITIONS",
    "STATE_GLOBAL_SECONDARY_INDEXES",
    "STATE_KEY_SCHEMA",
    "TTL_ATTRIBUTE",
    "DynamoDBSettings",
    "DynamoDBStore",
    "Usage",
    "create_tables",
    "events_table_definition",
    "make_client",
    "read_stream_event",
    "sessions_table_definition",
    "stream_trace_context",
]

DELETED_RETENTION_SECONDS = 7 * 24 * 3600


def make_client(settings: DynamoDBSettings, *, max_attempts: int = 5) -> Any:
    """A boto3 DynamoDB client for `settings`, with botocore's standard retry mode."""
    import boto3
    from botocore.config import Config

    config = Config(
        retries={"mode": "standard", "max_attempts": max_attempts},
        max_pool_connections=32,
        connect_timeout=5,
        read_timeout=30,
    )
    return boto3.client(
        "dynamodb", region_name=settings.region, endpoint_url=settings.endpoint_url, config=config
    )


class DynamoDBStore(DynamoEvents):
    """A `Store` on DynamoDB. Pass a boto3 client, or let one be built from `settings`.

    `blobs` keeps the payloads over `LARGE_PAYLOAD_BYTES` (an `S3Blobs` as deployed); by
    default they are chunk items of the events table (`_dynamo_blobs`)."""

    def __init__(
        self,
        settings: DynamoDBSettings | None = None,
        *,
        client: Any = None,
        clock: Callable[[], float] = time.time,
        poll_interval: float = 0.05,
        max_poll_interval: float = 0.5,
        blobs: BlobStore | None = None,
        trace_carrier: Callable[[], Mapping[str, str]] | None = None,
    ) -> None:
        self.settings = settings or DynamoDBSettings.from_env()
        # The host's tracing hook: each event item carries the context it was recorded in,
        # so the stream consumer (HooksFunction) continues that trace.
        self._trace_carrier = trace_carrier
        self._owns_client = client is None
        caller = Caller(client if client is not None else make_client(self.settings))
        super().__init__(caller, self.settings.sessions_table, clock)
        self._events = self.settings.events_table
        # Large payloads: S3 as deployed; else chunk items of the events table.
        self.blobs = blobs if blobs is not None else DynamoBlobs(caller, self._events)
        self._poll = (poll_interval, max_poll_interval)
        # The next index this store expects per session: a guess, checked by every put.
        self._next: dict[str, int] = {}
        self._gates = Gates()
        self._seen = SeenEvents()

    # -- counters for benchmarks -----------------------------------------------------------

    @property
    def usage(self) -> Usage:
        """Requests and capacity units used so far (`usage.reset()` starts over)."""
        return self._caller.usage

    @property
    def request_count(self) -> int:
        return self._caller.usage.request_count

    @property
    def consumed_write_units(self) -> float:
        return self._caller.usage.consumed_write_units

    # -- deletion --------------------------------------------------------------------------

    async def delete_session(self, session_id: str) -> bool:
        validate_session_id(session_id)
        item = await self._get_session_item(session_id)
        if item is None:
            return False
        record = codec.session_from_item(item)
        fence = await self._fence(session_id)
        await self._delete_session_items(record)
        await self._stub_events(session_id, fence)
        self._next.pop(session_id, None)
        self._seen.forget(session_id)
        return True

    async def _fence(self, session_id: str) -> int:
        """Append the `deleted` fence (or find it); its index."""
        expires = self._clock() + DELETED_RETENTION_SECONDS
        while True:
            last = await self._last_item(session_id)
            if last is not None and codec.item_kind(last) == KIND_DELETED:
                return codec.item_index(last)
            index = 0 if last is None else codec.item_index(last) + 1
            if await self._put_new([codec.deleted_item(session_id, index, expires)]) is None:
                return index

    async def _stub_events(self, session_id: str, fence: int) -> None:
        expires = self._clock() + DELETED_RETENTION_SECONDS
        events = await self._query_all(
            {
                "TableName": self._events,
                "KeyConditionExpression": "#pk = :pk AND #sk < :fence",
                "ExpressionAttributeNames": {
                    **PK_NAME,
                    "#sk": EVENTS_SORT_KEY,
                    "#kind": "kind",
                    "#blob": "blob",
                },
                "ExpressionAttributeValues": {
                    ":pk": codec.s(session_id),
                    ":fence": codec.n(fence),
                },
                "ProjectionExpression": "#sk, #kind, #blob",
                "ConsistentRead": True,
            }
        )
        writes: list[dict[str, Any]] = []
        for item in events:
            if codec.item_kind(item) == KIND_DELETED:
                continue
            ref = codec.blob_ref(item)
            if ref is not None:
                part = codec.blob_partition(session_id, ref[0])
                for chunk in await self._query_all(
                    {
                        **chunk_query(self._events, part, None),
                        "ProjectionExpression": "#pk, #sk",
                        "ExpressionAttributeNames": {**PK_NAME, "#sk": EVENTS_SORT_KEY},
                    }
                ):
                    writes.append({"DeleteRequest": {"Key": chunk}})
            stub = codec.deleted_item(session_id, codec.item_index(item), expires)
            writes.append({"PutRequest": {"Item": stub}})
        await self._batch_write(self._events, writes)

    async def _batch_write(self, table: str, writes: list[dict[str, Any]]) -> None:
        for start in range(0, len(writes), 25):
            pending: list[dict[str, Any]] = writes[start : start + 25]
            attempt = 0
            while pending:
                result = await self._caller.call(
                    "batch_write_item",
                    RequestItems={table: pending},
                    estimated_wcu=float(len(pending)),
                )
                pending = list(result.get("UnprocessedItems", {}).get(table, []))
                attempt += 1
                if pending:
                    if attempt > 10:
                        raise StoreError(f"DynamoDB kept {len(pending)} writes unprocessed")
                    await asyncio.sleep(min(1.0, 0.05 * 2**attempt))

    async def blob_payloads(self) -> list[dict[str, Any]]:
        """Every stored payload that names blobs: a scan of the events table (for
        `agentkit.store.blob_sweep`, which runs it once a day)."""
        kwargs: dict[str, Any] = {
            "TableName": self._events,
            "FilterExpression": "#kind = :event AND contains(#data, :mark)",
            "ProjectionExpression": "#data",
            "ExpressionAttributeNames": {"#kind": KIND_ATTRIBUTE, "#data": "data"},
            "ExpressionAttributeValues": {
                ":event": codec.s(KIND_EVENT),
                ":mark": codec.s(json.dumps(BLOBS_KEY)),
            },
        }
        found: list[dict[str, Any]] = []
        while True:
            page = await self._caller.call("scan", **kwargs)
            for item in page.get("Items", []):
                text = codec.get_s(item, "data")
                data = json.loads(text) if text else None
                if isinstance(data, dict) and BLOBS_KEY in data:
                    found.append(data)
            if not page.get("LastEvaluatedKey"):
                return found
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    async def close(self) -> None:
        if self._owns_client:
            await offload(self._caller.client.close)
