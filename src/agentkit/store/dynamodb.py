"""`DynamoDBStore`: the `Store` port on two DynamoDB tables, through a boto3 client.

Tables (names from `DynamoDBSettings`; key constants in `_dynamo_schema`, re-exported here
so the SAM template and `AwsHost` use them as they are)

    events table   key (sessionId S, index N), stream NEW_IMAGE, TTL on `expiresAt`
      (ses_…, i)                     kind=event: type, at, turnId?, data (the JSON of the
                                     payload) -- or, when that JSON is over 300 KB,
                                     blob, chunks, bytes, sha256 instead of data
      (ses_…#blob#<id>, n)           kind=chunk: data (B), piece n of a large event
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

Large events. DynamoDB items stop at 400 KB. When an event's data JSON is larger than
300 KB it is written first as 300 KB binary chunk items in a partition of its own, then
the event item is appended holding only a reference (`blob`, `chunks`, `bytes`, `sha256`).
Readers, and stream consumers, reassemble it: a consumer that sees an event image with a
`blob` attribute queries the partition `<sessionId>#blob#<blob>` (consistent read) and
joins the chunks in order; they exist before the event does. `read_stream_event` does
exactly that. Chunks of an append that failed for good are orphans nobody references.

Deleting. The session item goes away (so listings, `get_session` and `find_session` forget
it), a `deleted` fence item is appended at the next index, and every event below it is
overwritten by a small `deleted` stub (TTL: seven days); chunks are removed. An appender
with a stale idea of the end then meets a stub or the fence and gets `SessionNotFound`:
a deleted session can never grow events again. Stream consumers should filter to
`kind = event` inserts (`EVENTS_STREAM_FILTER_PATTERN`).

Reads that need order (`read`, `follow`, the end of the stream, leases) are strongly
consistent; every query paginates. DynamoDB cannot notify, so `follow` polls with a short
backoff (50 ms growing to 500 ms). Requests run in the stores' own worker threads (`_offload`)
with botocore's standard retry mode; every error becomes a `StoreError`. The requests
made and the capacity units reported (`ReturnConsumedCapacity`) are counted in `usage`;
`usage.estimated_write_units` applies DynamoDB's pricing rules to the item sizes, for
local servers that report made-up capacity.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from agentkit.errors import LeaseLost, SessionNotFound, StoreError
from agentkit.events import Event, EventDraft
from agentkit.store import _dynamo_codec as codec
from agentkit.store._dynamo_calls import (
    Caller,
    ConditionFailed,
    TransactionCancelled,
    Usage,
)
from agentkit.store._dynamo_gate import Gates
from agentkit.store._dynamo_schema import (
    ALL_SESSIONS_INDEX,
    DEFAULT_EVENTS_TABLE,
    DEFAULT_SESSIONS_TABLE,
    EVENTS_ATTRIBUTE_DEFINITIONS,
    EVENTS_KEY_SCHEMA,
    EVENTS_PARTITION_KEY,
    EVENTS_SORT_KEY,
    EVENTS_STREAM_FILTER_PATTERN,
    EVENTS_STREAM_VIEW_TYPE,
    KIND_DELETED,
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
from agentkit.store._dynamo_session_ops import SessionOps
from agentkit.store._dynamo_stream import chunk_query, read_stream_event
from agentkit.store._offload import offload
from agentkit.store.ids import validate_session_id

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
]

DELETED_RETENTION_SECONDS = 7 * 24 * 3600
APPEND_GIVE_UP_SECONDS = 60.0
_NOT_EXISTS = "attribute_not_exists(#pk)"
_PK_NAME = {"#pk": EVENTS_PARTITION_KEY}


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


class DynamoDBStore(SessionOps):
    """A `Store` on DynamoDB. Pass a boto3 client, or let one be built from `settings`."""

    def __init__(
        self,
        settings: DynamoDBSettings | None = None,
        *,
        client: Any = None,
        clock: Callable[[], float] = time.time,
        poll_interval: float = 0.05,
        max_poll_interval: float = 0.5,
    ) -> None:
        self.settings = settings or DynamoDBSettings.from_env()
        self._owns_client = client is None
        caller = Caller(client if client is not None else make_client(self.settings))
        super().__init__(caller, self.settings.sessions_table, clock)
        self._events = self.settings.events_table
        self._poll = (poll_interval, max_poll_interval)
        # The next index this store expects per session: a guess, checked by every put.
        self._next: dict[str, int] = {}
        self._gates = Gates()

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

    # -- events ----------------------------------------------------------------------------

    async def append(
        self, session_id: str, drafts: Sequence[EventDraft], *, lease_holder: str | None = None
    ) -> list[Event]:
        validate_session_id(session_id)
        for d in drafts:
            if not isinstance(d.type, str) or not d.type:
                raise StoreError("an event needs a non-empty type")
        if not drafts:
            return []
        if session_id not in self._next:  # unknown sessions fail before any chunk is written
            self._next.setdefault(session_id, await self._end(session_id))
        prepared = [await self._prepare(session_id, d) for d in drafts]
        recorded: list[Event] = []
        async with self._gates.hold(session_id):
            for group in _groups(prepared):
                recorded.extend(await self._append_group(session_id, group, lease_holder))
        return recorded

    async def _prepare(
        self, session_id: str, d: EventDraft
    ) -> tuple[EventDraft, bytes, str | None]:
        payload = codec.data_json(d)
        if len(payload) <= codec.INLINE_DATA_MAX_BYTES:
            return d, payload, None
        blob_id = uuid.uuid4().hex
        for chunk in codec.chunk_items(session_id, blob_id, payload):
            await self._caller.call(
                "put_item",
                TableName=self._events,
                Item=chunk,
                estimated_wcu=codec.write_units(chunk),
            )
        return d, payload, blob_id

    async def _append_group(
        self,
        session_id: str,
        group: list[tuple[EventDraft, bytes, str | None]],
        lease_holder: str | None = None,
    ) -> list[Event]:
        index = self._next.get(session_id)
        if index is None:
            index = await self._end(session_id)
        deadline = time.monotonic() + APPEND_GIVE_UP_SECONDS
        attempt = 0
        writer = uuid.uuid4().hex
        while True:
            items = [
                codec.event_item(d, session_id, index + i, payload, blob, writer)
                for i, (d, payload, blob) in enumerate(group)
            ]
            existing = await self._put_new(items, self._lease_check(session_id, lease_holder))
            if existing is not None and any(
                old and codec.get_s(old, "writer") == writer for old in existing
            ):
                existing = None  # our own earlier try had landed; only its reply was lost
            if existing is None:
                self._next[session_id] = index + len(items)
                return [
                    Event.from_draft(d, session_id=session_id, index=index + i)
                    for i, (d, _, _) in enumerate(group)
                ]
            if any(old and codec.item_kind(old) == KIND_DELETED for old in existing):
                self._next.pop(session_id, None)
                raise SessionNotFound(session_id)
            attempt += 1
            if time.monotonic() > deadline:
                raise StoreError(f"gave up appending to {session_id} after {attempt} lost races")
            if attempt > 1:  # writers of several processes are racing: spread them out
                await asyncio.sleep(random.uniform(0, min(0.1, 0.002 * 2**attempt)))
            index = await self._end(session_id)

    def _lease_check(self, session_id: str, holder: str | None) -> dict[str, Any] | None:
        """The transaction item that makes an append conditional on holding the lease."""
        if holder is None:
            return None
        return {
            "ConditionCheck": {
                "TableName": self._state,
                "Key": codec.session_key(session_id),
                "ConditionExpression": "#h = :h",
                "ExpressionAttributeNames": {"#h": "leaseHolder"},
                "ExpressionAttributeValues": {":h": codec.s(holder)},
            }
        }

    async def _put_new(
        self, items: list[dict[str, Any]], fence: dict[str, Any] | None = None
    ) -> list[dict[str, Any] | None] | None:
        """Write items that must not exist yet, all or none; None on success, else the
        current items that were in the way (None entries when not returned). With
        `fence` (a condition on the session item, in the same transaction), `LeaseLost`
        when that condition fails."""
        try:
            if len(items) == 1 and fence is None:
                await self._caller.call(
                    "put_item",
                    TableName=self._events,
                    Item=items[0],
                    ConditionExpression=_NOT_EXISTS,
                    ExpressionAttributeNames=_PK_NAME,
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                    estimated_wcu=codec.write_units(items[0]),
                )
            else:
                await self._caller.call(
                    "transact_write_items",
                    TransactItems=[
                        *([fence] if fence is not None else []),
                        *(
                            {
                                "Put": {
                                    "TableName": self._events,
                                    "Item": item,
                                    "ConditionExpression": _NOT_EXISTS,
                                    "ExpressionAttributeNames": _PK_NAME,
                                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                                }
                            }
                            for item in items
                        ),
                    ],
                    estimated_wcu=sum(2 * codec.write_units(item) for item in items),
                )
        except ConditionFailed as lost:
            return [lost.item]
        except TransactionCancelled as cancelled:
            if not cancelled.retryable:
                raise
            if fence is not None and cancelled.reasons:
                if cancelled.reasons[0].get("Code") == "ConditionalCheckFailed":
                    raise LeaseLost("the turn lease is held by another worker") from None
                cancelled.reasons = cancelled.reasons[1:]
            return cancelled.failed_items() or [None]
        return None

    async def _last_item(self, session_id: str) -> dict[str, Any] | None:
        page = await self._caller.call(
            "query",
            TableName=self._events,
            KeyConditionExpression="#pk = :pk",
            ExpressionAttributeNames={**_PK_NAME, "#sk": EVENTS_SORT_KEY, "#kind": "kind"},
            ExpressionAttributeValues={":pk": codec.s(session_id)},
            ProjectionExpression="#sk, #kind",
            ScanIndexForward=False,
            Limit=1,
            ConsistentRead=True,
        )
        items: list[dict[str, Any]] = page.get("Items", [])
        return items[0] if items else None

    async def _end(self, session_id: str) -> int:
        """The index after the last event; `SessionNotFound` if missing or deleted."""
        last = await self._last_item(session_id)
        if last is not None:
            if codec.item_kind(last) == KIND_DELETED:
                raise SessionNotFound(session_id)
            return codec.item_index(last) + 1
        if not await self._session_exists(session_id):
            raise SessionNotFound(session_id)
        return 0

    async def next_index(self, session_id: str) -> int:
        validate_session_id(session_id)
        return await self._end(session_id)

    async def read(self, session_id: str, start: int = 0, limit: int | None = None) -> list[Event]:
        validate_session_id(session_id)
        start = max(0, int(start))
        if limit is not None and limit <= 0:
            return []
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {
            "TableName": self._events,
            "KeyConditionExpression": "#pk = :pk AND #sk >= :start",
            "ExpressionAttributeNames": {**_PK_NAME, "#sk": EVENTS_SORT_KEY},
            "ExpressionAttributeValues": {":pk": codec.s(session_id), ":start": codec.n(start)},
            "ConsistentRead": True,
        }
        while limit is None or len(items) < limit:
            if limit is not None:
                kwargs["Limit"] = limit - len(items)
            page = await self._caller.call("query", **kwargs)
            items.extend(page.get("Items", []))
            if not page.get("LastEvaluatedKey"):
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        if any(codec.item_kind(item) == KIND_DELETED for item in items):
            return []
        large = [item for item in items if codec.blob_ref(item) is not None]
        decoded = await asyncio.gather(*(self._decode(item) for item in large))
        joined = {id(item): event for item, event in zip(large, decoded, strict=True)}
        return [joined.get(id(item)) or codec.event_from_item(item) for item in items]

    async def _decode(self, item: dict[str, Any]) -> Event:
        ref = codec.blob_ref(item)
        if ref is None:
            return codec.event_from_item(item)
        part = codec.blob_partition(codec.get_s(item, EVENTS_PARTITION_KEY) or "", ref[0])
        chunks = await self._query_all(chunk_query(self._events, part, None))
        return codec.event_from_item(item, codec.join_chunks(item, chunks))

    async def _query_all(self, kwargs: dict[str, Any]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        while True:
            page = await self._caller.call("query", **kwargs)
            items.extend(page.get("Items", []))
            if not page.get("LastEvaluatedKey"):
                return items
            kwargs = {**kwargs, "ExclusiveStartKey": page["LastEvaluatedKey"]}

    async def follow(self, session_id: str, start: int, timeout: float) -> list[Event]:
        validate_session_id(session_id)
        deadline = time.monotonic() + max(0.0, timeout)
        if not await self._session_exists(session_id):
            return []
        delay, max_delay = self._poll
        while True:
            events = await self.read(session_id, start)
            remaining = deadline - time.monotonic()
            if events or remaining <= 0:
                return events
            # DynamoDB has no change notification: poll, backing off while it stays quiet.
            await asyncio.sleep(min(delay, remaining))
            delay = min(max_delay, delay * 1.5)

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
                    **_PK_NAME,
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
                        "ExpressionAttributeNames": {**_PK_NAME, "#sk": EVENTS_SORT_KEY},
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

    async def close(self) -> None:
        if self._owns_client:
            await offload(self._caller.client.close)


def _groups(
    prepared: list[tuple[EventDraft, bytes, str | None]],
) -> list[list[tuple[EventDraft, bytes, str | None]]]:
    """Split a batch into transactions DynamoDB accepts (item count and total size)."""
    groups: list[list[tuple[EventDraft, bytes, str | None]]] = [[]]
    size = 0
    for entry in prepared:
        weight = 1024 + (len(entry[1]) if entry[2] is None else 0)
        current = groups[-1]
        if current and (
            len(current) >= codec.TRANSACTION_MAX_ITEMS
            or size + weight > codec.TRANSACTION_MAX_BYTES
        ):
            groups.append([])
            size = 0
        groups[-1].append(entry)
        size += weight
    return groups
