"""Reading events back from DynamoDB Streams records (and the chunk query readers share).

See "Large events" at the top of `agentkit.store.dynamodb`.
"""

from __future__ import annotations

from typing import Any

from agentkit.events import Event
from agentkit.store import _dynamo_codec as codec
from agentkit.store._dynamo_calls import call_sync
from agentkit.store._dynamo_schema import EVENTS_PARTITION_KEY, KIND_EVENT
from agentkit.store.blobs import BlobStore
from agentkit.store.large_events import restore_sync

_PK_NAME = {"#pk": EVENTS_PARTITION_KEY}


def read_stream_event(
    client: Any, events_table: str, image: dict[str, Any], blobs: BlobStore | None = None
) -> Event | None:
    """The event in a DynamoDB Streams `NewImage`, large ones reassembled; None otherwise.

    For the stream consumer (a synchronous Lambda handler): `client` is a boto3 DynamoDB
    client, `image` the record's `dynamodb.NewImage` in attribute-value form, `blobs` the
    store's blobs (payloads over `LARGE_PAYLOAD_BYTES` are read back from them).
    """
    if codec.item_kind(image) != KIND_EVENT or codec.get_s(image, "type") is None:
        return None
    ref = codec.blob_ref(image)
    if ref is None:
        return restore_sync([codec.event_from_item(image)], blobs)[0]
    part = codec.blob_partition(codec.get_s(image, EVENTS_PARTITION_KEY) or "", ref[0])
    chunks: list[dict[str, Any]] = []
    start: dict[str, Any] | None = None
    while True:
        kwargs = chunk_query(events_table, part, start)
        page = call_sync(client, "query", **kwargs)
        chunks.extend(page.get("Items", []))
        start = page.get("LastEvaluatedKey")
        if not start:
            break
    return codec.event_from_item(image, codec.join_chunks(image, chunks))


def chunk_query(table: str, part: str, start: dict[str, Any] | None) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "#pk = :pk",
        "ExpressionAttributeNames": _PK_NAME,
        "ExpressionAttributeValues": {":pk": codec.s(part)},
        "ConsistentRead": True,
    }
    if start:
        kwargs["ExclusiveStartKey"] = start
    return kwargs


def stream_trace_context(image: dict[str, Any]) -> dict[str, str]:
    """The W3C headers (`traceparent`, `tracestate`) the event in a stream record's
    `NewImage` was recorded under; empty when it was recorded with tracing off."""
    return codec.trace_context(image)
