"""`DynamoBlobs`: blobs in the events table itself, for a DynamoDB store with no bucket.

Deployed, blobs go to S3 (`S3Blobs`). A store on a table alone (a local DynamoDB-API server,
`sam local` without a workspace bucket) keeps them as chunk items of the events table, in a
partition per content hash that no session shares:

    (blob#sha256#<hex>, n)   kind=chunk: data (B), bytes n*BLOB_CHUNK_BYTES onwards;
                             item 0 also carries `bytes` and `chunks`

Item 0 is written last, so its presence says every chunk is there: a writer killed part
way leaves chunks nothing names, and the next `put` of the same bytes writes them again.
Chunk items are never streamed to the hooks (the stream filter admits `kind=event` only).
"""

from __future__ import annotations

import asyncio
from typing import Any

from agentkit.errors import StoreError
from agentkit.store import _dynamo_codec as codec
from agentkit.store._dynamo_calls import Caller, call_sync
from agentkit.store._dynamo_schema import (
    EVENTS_PARTITION_KEY,
    EVENTS_SORT_KEY,
    KIND_ATTRIBUTE,
    KIND_CHUNK,
)
from agentkit.store.blobs import BlobRef

# A third of DynamoDB's 400 KB item limit: far from it, and 40 items for 5 MB.
BLOB_CHUNK_BYTES = 128 * 1024
_PARTITION_PREFIX = "blob#sha256#"
_NAMES = {"#pk": EVENTS_PARTITION_KEY}


def blob_partition(ref: BlobRef) -> str:
    return _PARTITION_PREFIX + ref.sha256


def _query(table: str, ref: BlobRef, start: dict[str, Any] | None) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "#pk = :pk",
        "ExpressionAttributeNames": _NAMES,
        "ExpressionAttributeValues": {":pk": codec.s(blob_partition(ref))},
        "ConsistentRead": True,
    }
    if start:
        kwargs["ExclusiveStartKey"] = start
    return kwargs


def _joined(ref: BlobRef, items: list[dict[str, Any]]) -> bytes:
    ordered = sorted(items, key=codec.item_index)
    if not ordered or codec.item_index(ordered[0]) != 0:
        raise StoreError(f"blob {ref.sha256[:16]}… is missing from the events table")
    if len(ordered) != int(codec.get_n(ordered[0], "chunks") or 0):
        raise StoreError(f"blob {ref.sha256[:16]}… is damaged in storage")
    return ref.check(b"".join(bytes(item["data"]["B"]) for item in ordered))


class DynamoBlobs:
    """Content-addressed blobs as chunk items of the events table."""

    def __init__(self, caller: Caller, table: str) -> None:
        self._caller = caller
        self._table = table

    def _items(self, ref: BlobRef, data: bytes) -> list[dict[str, Any]]:
        part = blob_partition(ref)
        starts = range(0, max(1, len(data)), BLOB_CHUNK_BYTES)
        items = [
            {
                EVENTS_PARTITION_KEY: codec.s(part),
                EVENTS_SORT_KEY: codec.n(number),
                KIND_ATTRIBUTE: codec.s(KIND_CHUNK),
                "data": {"B": data[start : start + BLOB_CHUNK_BYTES]},
            }
            for number, start in enumerate(starts)
        ]
        items[0]["bytes"] = codec.n(len(data))
        items[0]["chunks"] = codec.n(len(items))
        return items

    async def _put_item(self, item: dict[str, Any]) -> None:
        await self._caller.call(
            "put_item", TableName=self._table, Item=item, estimated_wcu=codec.write_units(item)
        )

    async def put(self, data: bytes) -> BlobRef:
        ref = BlobRef.of(data)
        head = await self._caller.call(
            "get_item",
            TableName=self._table,
            Key={
                EVENTS_PARTITION_KEY: codec.s(blob_partition(ref)),
                EVENTS_SORT_KEY: codec.n(0),
            },
            ProjectionExpression="#pk",
            ExpressionAttributeNames=_NAMES,
            ConsistentRead=True,
        )
        if head.get("Item"):
            return ref  # stored already: item 0 is written last
        items = self._items(ref, data)
        await asyncio.gather(*(self._put_item(item) for item in items[1:]))
        await self._put_item(items[0])
        return ref

    async def get(self, ref: BlobRef) -> bytes:
        items: list[dict[str, Any]] = []
        start: dict[str, Any] | None = None
        while True:
            page = await self._caller.call("query", **_query(self._table, ref, start))
            items.extend(page.get("Items", []))
            start = page.get("LastEvaluatedKey")
            if not start:
                return _joined(ref, items)

    def get_sync(self, ref: BlobRef) -> bytes:
        items: list[dict[str, Any]] = []
        start: dict[str, Any] | None = None
        while True:
            page = call_sync(self._caller.client, "query", **_query(self._table, ref, start))
            items.extend(page.get("Items", []))
            start = page.get("LastEvaluatedKey")
            if not start:
                return _joined(ref, items)

    def count(self) -> int:
        total = 0
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "FilterExpression": "begins_with(#pk, :prefix) AND #sk = :zero",
            "ExpressionAttributeNames": {**_NAMES, "#sk": EVENTS_SORT_KEY},
            "ExpressionAttributeValues": {
                ":prefix": codec.s(_PARTITION_PREFIX),
                ":zero": codec.n(0),
            },
        }
        while True:
            page = call_sync(self._caller.client, "scan", **kwargs)
            total += len(page.get("Items", []))
            if not page.get("LastEvaluatedKey"):
                return total
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
