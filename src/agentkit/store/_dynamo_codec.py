"""Items of the DynamoDB store in the low-level attribute-value form, and back.

Kept apart from the store so a DynamoDB Streams consumer (whose records carry the same
attribute-value images) decodes events with exactly the code that wrote them.
"""

from __future__ import annotations

import hashlib
import json
import math
import zlib
from collections.abc import Mapping
from typing import Any

from agentkit.errors import InvalidId, StoreError
from agentkit.events import Event, EventDraft
from agentkit.reminders import ReminderRecord
from agentkit.sessions import SessionRecord
from agentkit.store._dynamo_schema import (
    EVENTS_PARTITION_KEY,
    EVENTS_SORT_KEY,
    KIND_ATTRIBUTE,
    KIND_CHUNK,
    KIND_DELETED,
    KIND_EVENT,
    LIST_ALL_ATTRIBUTE,
    LIST_SORT_ATTRIBUTE,
    PRINCIPAL_ATTRIBUTE,
    STATE_PARTITION_KEY,
    STATE_SORT_KEY,
    TTL_ATTRIBUTE,
)
from agentkit.store.ids import created_ms, encode_cursor

Item = dict[str, Any]
# The trace context an event was recorded in (see `event_item`).
TRACE_ATTRIBUTE = "traceContext"

# DynamoDB's item limit is 400 KB including attribute names; stay well below it.
INLINE_DATA_MAX_BYTES = 300_000
CHUNK_BYTES = 300_000
# A transaction carries at most 100 items and 4 MB; leave headroom for keys and names.
TRANSACTION_MAX_ITEMS = 99  # DynamoDB allows 100; one is kept for the lease fence
TRANSACTION_MAX_BYTES = 3_500_000
MAX_KEY_BYTES = 1024

SESSION_SK = "session"
CKEY_SK = "ckey"
REMINDER_PK = "reminder"
CLAIM_SK = "claim"
LIST_ALL_VALUE = "session"


def s(value: str) -> dict[str, str]:
    return {"S": value}


def n(value: float) -> dict[str, str]:
    return {"N": repr(value) if isinstance(value, float) else str(value)}


def get_s(item: Item, name: str) -> str | None:
    attr = item.get(name)
    return str(attr["S"]) if attr and "S" in attr else None


def get_n(item: Item, name: str) -> float | None:
    attr = item.get(name)
    return float(attr["N"]) if attr and "N" in attr else None


def item_size(item: Item) -> int:
    """DynamoDB's size of an item: UTF-8 names plus values (numbers counted generously)."""
    total = 0
    for name, attr in item.items():
        total += len(name.encode("utf-8"))
        for kind, value in attr.items():
            if kind == "S":
                total += len(value.encode("utf-8"))
            elif kind == "B":
                total += len(value)
            elif kind == "N":
                total += 21
            else:
                total += 1
    return total


def write_units(item: Item) -> int:
    """Write request units of a standard write of `item` (1 per started KB)."""
    return max(1, math.ceil(item_size(item) / 1024))


# -- ids and keys --------------------------------------------------------------------------


def check_key_text(value: object, what: str) -> str:
    """A free-form string used inside a key: non-empty, at most 1 KB, no control characters."""
    if (
        not isinstance(value, str)
        or not value
        or len(value.encode("utf-8")) > MAX_KEY_BYTES
        or any(ord(c) < 32 or ord(c) == 127 for c in value)
    ):
        raise InvalidId(f"invalid {what}: {str(value)[:80]!r}")
    return value


def session_key(session_id: str) -> Item:
    return {STATE_PARTITION_KEY: s(session_id), STATE_SORT_KEY: s(SESSION_SK)}


def ckey_key(channel_id: str, continuation_key: str) -> Item:
    pk = f"ckey#{len(channel_id)}#{channel_id}#{continuation_key}"
    return {STATE_PARTITION_KEY: s(pk), STATE_SORT_KEY: s(CKEY_SK)}


def reminder_key(reminder_id: str) -> Item:
    return {STATE_PARTITION_KEY: s(REMINDER_PK), STATE_SORT_KEY: s(reminder_id)}


EVAL_RUN_PK = "evalrun"
EVAL_RUN_INLINE = 300_000  # bytes of JSON kept as text; larger snapshots are compressed


def eval_run_key(run_id: str) -> Item:
    return {STATE_PARTITION_KEY: s(EVAL_RUN_PK), STATE_SORT_KEY: s(run_id)}


def eval_run_to_item(run_id: str, snapshot: dict[str, Any]) -> Item:
    """The run's item: its JSON as `record`, or zlib-compressed as `recordZ` when large
    (a run of many cases with long failure messages can pass DynamoDB's 400 KB item)."""
    body = json.dumps(snapshot, separators=(",", ":"), ensure_ascii=False)
    if len(body.encode("utf-8")) <= EVAL_RUN_INLINE:
        return {**eval_run_key(run_id), "record": s(body)}
    packed = zlib.compress(body.encode("utf-8"), 6)
    if len(packed) > EVAL_RUN_INLINE:
        raise StoreError(f"eval run {run_id} is too large to store ({len(packed)} bytes packed)")
    return {**eval_run_key(run_id), "recordZ": {"B": packed}}


def eval_run_from_item(item: Item) -> dict[str, Any]:
    packed = item.get("recordZ", {}).get("B")
    body = zlib.decompress(packed).decode("utf-8") if packed else get_s(item, "record") or "{}"
    out: dict[str, Any] = json.loads(body)
    return out


def claim_key(key: str) -> Item:
    return {STATE_PARTITION_KEY: s(f"claim#{key}"), STATE_SORT_KEY: s(CLAIM_SK)}


def event_key(session_id: str, index: int) -> Item:
    return {EVENTS_PARTITION_KEY: s(session_id), EVENTS_SORT_KEY: n(index)}


def blob_partition(session_id: str, blob_id: str) -> str:
    """Chunk items of a large event live in their own partition (never in a session's)."""
    return f"{session_id}#blob#{blob_id}"


# -- sessions ------------------------------------------------------------------------------


def list_sort(record: SessionRecord) -> str:
    """The listing sort key; also the listing cursor (the shared format of `store.ids`)."""
    return encode_cursor(created_ms(record.created_at), record.id)


def session_to_item(record: SessionRecord) -> Item:
    item: Item = {
        **session_key(record.id),
        "sessionId": s(record.id),
        "channelId": s(record.channel_id),
        "mode": s(record.mode),
        "createdAt": s(record.created_at),
        "updatedAt": s(record.updated_at),
        "metadata": s(json.dumps(record.metadata, separators=(",", ":"), ensure_ascii=False)),
        LIST_ALL_ATTRIBUTE: s(LIST_ALL_VALUE),
        LIST_SORT_ATTRIBUTE: s(list_sort(record)),
    }
    if record.principal is not None:
        item["owner"] = s(record.principal)
        if record.principal:  # an index key can't be empty: "" owns no listing
            item[PRINCIPAL_ATTRIBUTE] = s(record.principal)
    if record.token_hash is not None:
        item["tokenHash"] = s(record.token_hash)
    if record.continuation_key is not None:
        item["continuationKey"] = s(record.continuation_key)
    return item


def session_from_item(item: Item) -> SessionRecord:
    raw: dict[str, Any] = {
        "id": get_s(item, "sessionId"),
        "channelId": get_s(item, "channelId"),
        "mode": get_s(item, "mode"),
        "principal": get_s(item, "owner"),
        "tokenHash": get_s(item, "tokenHash"),
        "continuationKey": get_s(item, "continuationKey"),
        "createdAt": get_s(item, "createdAt"),
        "updatedAt": get_s(item, "updatedAt"),
        "metadata": json.loads(get_s(item, "metadata") or "{}"),
    }
    return SessionRecord.from_dict({k: v for k, v in raw.items() if v is not None})


# -- reminders -----------------------------------------------------------------------------


def reminder_to_item(reminder: ReminderRecord) -> Item:
    body = json.dumps(reminder.to_dict(), separators=(",", ":"), ensure_ascii=False)
    return {**reminder_key(reminder.id), "record": s(body), "status": s(reminder.status)}


def reminder_from_item(item: Item) -> ReminderRecord:
    return ReminderRecord.from_dict(json.loads(get_s(item, "record") or "{}"))


# -- events --------------------------------------------------------------------------------


def data_json(d: EventDraft) -> bytes:
    return json.dumps(d.data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def chunk_items(session_id: str, blob_id: str, payload: bytes) -> list[Item]:
    """The chunk items holding `payload` (the JSON of a large event's data)."""
    part = blob_partition(session_id, blob_id)
    return [
        {
            EVENTS_PARTITION_KEY: s(part),
            EVENTS_SORT_KEY: n(number),
            KIND_ATTRIBUTE: s(KIND_CHUNK),
            "data": {"B": payload[start : start + CHUNK_BYTES]},
        }
        for number, start in enumerate(range(0, len(payload), CHUNK_BYTES))
    ]


def event_item(
    d: EventDraft,
    session_id: str,
    index: int,
    payload: bytes,
    blob_id: str | None,
    writer: str,
    trace: Mapping[str, str] | None = None,
) -> Item:
    """The item of one event: inline JSON data, or a reference to its chunk items.

    `writer` is unique to one `append` call: when a put that did succeed is retried (its
    reply was lost) and then fails its condition, the item in the way carries our own
    `writer`, which tells a lost reply from a lost race. `trace` (W3C headers, only when
    tracing is on) rides along to the stream consumer, which delivers hooks in that trace.
    """
    item: Item = {
        **event_key(session_id, index),
        KIND_ATTRIBUTE: s(KIND_EVENT),
        "type": s(d.type),
        "at": s(d.at),
        "writer": s(writer),
    }
    if trace:
        item[TRACE_ATTRIBUTE] = {"M": {k: s(v) for k, v in trace.items()}}
    if d.turn_id is not None:
        item["turnId"] = s(d.turn_id)
    if blob_id is None:
        item["data"] = s(payload.decode("utf-8"))
    else:
        item["blob"] = s(blob_id)
        item["chunks"] = n(math.ceil(len(payload) / CHUNK_BYTES))
        item["bytes"] = n(len(payload))
        item["sha256"] = s(hashlib.sha256(payload).hexdigest())
    return item


def trace_context(item: Item) -> dict[str, str]:
    """The W3C headers an event item was recorded under (empty when it was not traced)."""
    value = item.get(TRACE_ATTRIBUTE, {}).get("M", {})
    return {k: v["S"] for k, v in value.items() if isinstance(v, dict) and "S" in v}


def deleted_item(session_id: str, index: int, expires_at: float) -> Item:
    """A fence or stub left where a deleted session's events were (see the module doc)."""
    return {
        **event_key(session_id, index),
        KIND_ATTRIBUTE: s(KIND_DELETED),
        TTL_ATTRIBUTE: n(int(expires_at)),
    }


def item_kind(item: Item) -> str:
    return get_s(item, KIND_ATTRIBUTE) or KIND_EVENT


def item_index(item: Item) -> int:
    value = get_n(item, EVENTS_SORT_KEY)
    if value is None:
        raise StoreError("event item without an index")
    return int(value)


def blob_ref(item: Item) -> tuple[str, int, int, str] | None:
    """(blob id, chunk count, byte count, sha256) of an offloaded event, else None."""
    blob_id = get_s(item, "blob")
    if blob_id is None:
        return None
    return (
        blob_id,
        int(get_n(item, "chunks") or 0),
        int(get_n(item, "bytes") or 0),
        get_s(item, "sha256") or "",
    )


def join_chunks(item: Item, chunks: list[Item]) -> bytes:
    """Reassemble an offloaded event's data; `StoreError` if anything is missing."""
    ref = blob_ref(item)
    if ref is None:
        raise StoreError("event item has no chunks")
    _, count, size, digest = ref
    ordered = sorted(chunks, key=item_index)
    payload = b"".join(bytes(c["data"]["B"]) for c in ordered)
    if (
        len(ordered) != count
        or len(payload) != size
        or hashlib.sha256(payload).hexdigest() != digest
    ):
        raise StoreError(f"large event {item_index(item)} is incomplete in storage")
    return payload


def event_from_item(item: Item, payload: bytes | None = None) -> Event:
    """The event an item holds; `payload` is the joined chunk data of an offloaded one."""
    session_id = get_s(item, EVENTS_PARTITION_KEY) or ""
    if payload is None:
        text = get_s(item, "data")
        if text is None:
            raise StoreError("large event read without its chunks")
        data = json.loads(text)
    else:
        data = json.loads(payload)
    return Event(
        type=get_s(item, "type") or "",
        index=item_index(item),
        session_id=session_id,
        at=get_s(item, "at") or "",
        data=data,
        turn_id=get_s(item, "turnId"),
    )
