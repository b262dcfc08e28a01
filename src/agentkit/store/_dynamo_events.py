"""The event streams of the DynamoDB store: conditional appends, reads and follows.

See `dynamodb.py` for the items and why an append can neither share nor skip an index.
"""

import asyncio
import random
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentkit.errors import LeaseLost, SessionNotFound, StoreError
from agentkit.events import Event, EventDraft, contiguous
from agentkit.store import _dynamo_codec as codec
from agentkit.store._dynamo_calls import (
    ConditionFailed,
    TransactionCancelled,
)
from agentkit.store._dynamo_gate import Gates
from agentkit.store._dynamo_schema import (
    EVENTS_PARTITION_KEY,
    EVENTS_SORT_KEY,
    KIND_DELETED,
)
from agentkit.store._dynamo_seen import SeenEvents
from agentkit.store._dynamo_session_ops import SessionOps
from agentkit.store._dynamo_stream import chunk_query
from agentkit.store.blobs import BlobStore
from agentkit.store.ids import validate_session_id
from agentkit.store.large_events import offload_large, restore, with_full_data

APPEND_GIVE_UP_SECONDS = 60.0
_NOT_EXISTS = "attribute_not_exists(#pk)"
PK_NAME = {"#pk": EVENTS_PARTITION_KEY}


class DynamoEvents(SessionOps):
    """The event-stream methods of `DynamoDBStore` (which sets the attributes)."""

    _events: str
    _poll: tuple[float, float]
    # The next index this store expects per session: a guess, checked by every put.
    _next: dict[str, int]
    _gates: Gates
    # Each session's events read so far, so a read queries only the items after them.
    _seen: SeenEvents
    # Where payloads over `LARGE_PAYLOAD_BYTES` go (S3, or chunk items of the events table).
    blobs: BlobStore
    # The current trace context as W3C headers, stored on each event item (see `dynamodb.py`).
    _trace_carrier: Callable[[], Mapping[str, str]] | None

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
        stored = await offload_large(drafts, self.blobs)
        prepared = [await self._prepare(session_id, d) for d in stored]
        recorded: list[Event] = []
        async with self._gates.hold(session_id):
            for group in _groups(prepared):
                recorded.extend(await self._append_group(session_id, group, lease_holder))
        return with_full_data(recorded, drafts, stored)

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
        trace = self._trace_carrier() if self._trace_carrier is not None else None
        while True:
            items = [
                codec.event_item(d, session_id, index + i, payload, blob, writer, trace)
                for i, (d, payload, blob) in enumerate(group)
            ]
            existing = await self._put_new(items, self._lease_check(session_id, lease_holder))
            if existing is not None and any(
                old and codec.get_s(old, "writer") == writer for old in existing
            ):
                existing = None  # our own earlier try had landed; only its reply was lost
            if existing is None:
                self._next[session_id] = index + len(items)
                recorded = [
                    Event.from_draft(d, session_id=session_id, index=index + i)
                    for i, (d, _, _) in enumerate(group)
                ]
                # Kept as read (when they follow what was read), so the next read hands back
                # these same objects, the ones the running turn holds, and the folds carried
                # over its stream carry on instead of folding the conversation afresh.
                sizes = [codec.item_size(item) for item in items]
                self._seen.extend(session_id, index, recorded, sizes, slice(0, 0))
                return recorded
            if any(old and codec.item_kind(old) == KIND_DELETED for old in existing):
                self._next.pop(session_id, None)
                self._seen.forget(session_id)
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
                    ExpressionAttributeNames=PK_NAME,
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
                                    "ExpressionAttributeNames": PK_NAME,
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
            ExpressionAttributeNames={**PK_NAME, "#sk": EVENTS_SORT_KEY, "#kind": "kind"},
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
        window = slice(start, None if limit is None else start + limit)
        seen = self._seen.count(session_id)
        if seen and start <= seen:
            # Only the items after those already read; at least one, so a deletion's fence
            # is noticed even when the kept events answer the whole read.
            first = seen
            want = None if limit is None else max(1, start + limit - seen)
        else:
            first, want = start, limit
        fetched = await self._fetch(session_id, first, want)
        if fetched is None:
            self._seen.forget(session_id)
            return []
        events, sizes = fetched
        kept = self._seen.extend(session_id, first, events, sizes, window)
        if kept is None and first == start:
            kept = events
        elif kept is None:  # what was kept changed under this read: read the window afresh
            again = await self._fetch(session_id, start, limit)
            kept = [] if again is None else again[0]
        return await restore(kept, self.blobs)

    async def _fetch(
        self, session_id: str, start: int, limit: int | None
    ) -> tuple[list[Event], list[int]] | None:
        """The events from index `start` on (at most `limit`) up to the first gap, with
        their items' sizes; None when the session was deleted."""
        items = await self._query_events(session_id, start, limit)
        if any(codec.item_kind(item) == KIND_DELETED for item in items):
            return None
        large = [item for item in items if codec.blob_ref(item) is not None]
        decoded = await asyncio.gather(*(self._decode(item) for item in large))
        joined = {id(item): event for item, event in zip(large, decoded, strict=True)}
        events = contiguous(
            [joined.get(id(item)) or codec.event_from_item(item) for item in items], start
        )
        return events, [codec.item_size(item) for item in items[: len(events)]]

    async def _query_events(
        self, session_id: str, start: int, limit: int | None
    ) -> list[dict[str, Any]]:
        """The event items from index `start` on (at most `limit`), in order."""
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {
            "TableName": self._events,
            "KeyConditionExpression": "#pk = :pk AND #sk >= :start",
            "ExpressionAttributeNames": {**PK_NAME, "#sk": EVENTS_SORT_KEY},
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
        return items

    async def _decode(self, item: dict[str, Any]) -> Event:
        ref = codec.blob_ref(item)
        if ref is None:
            return codec.event_from_item(item)
        part = codec.blob_partition(codec.get_s(item, EVENTS_PARTITION_KEY) or "", ref[0])
        chunks = await self._query_all(chunk_query(self._events, part, None))
        return codec.event_from_item(item, codec.join_chunks(item, chunks))

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
