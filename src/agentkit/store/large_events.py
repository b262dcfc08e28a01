"""Events too large for their stream: split into blobs on append, put back on read.

Every store runs its appends through `offload_large` and its reads through `restore`, so
whatever a tool returns, the stream itself (a line of `events.ndjson`, a DynamoDB item)
stays small, and every reader still gets the whole event.

The stored form. An event whose payload's JSON is at most `LARGE_PAYLOAD_BYTES` is stored
as it is. Otherwise each top-level value larger than that is stored as a blob (its JSON)
and replaced, in place, by its reference `{"sha256": …, "bytes": …}`; the payload's
`"$blobs"` lists the keys so replaced. If what is left is still too large (many medium
values), that whole payload becomes one blob too, and the stored payload is
`{"$blobs": ["*"], "*": <reference>}`. Large values are hashed on their own, so the same
tool result in two events is one blob.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import msgspec

from agentkit.errors import StoreError
from agentkit.events import Event, EventDraft
from agentkit.events.carried import Carried
from agentkit.store.blobs import LARGE_PAYLOAD_BYTES, BlobRef, BlobStore

BLOBS_KEY = "$blobs"
WHOLE = "*"
_ENCODER = msgspec.json.Encoder()
# Decoded blobs recently read, by hash: a session with large results is read again on every
# turn, and a blob's content never changes. Values are shared: treat them as read-only,
# like every event a store returns.
_DECODED_CACHE_BYTES = 64 << 20


class _Decoded:
    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._size = 0
        self._items: OrderedDict[str, tuple[int, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, ref: BlobRef) -> Any:
        with self._lock:
            found = self._items.get(ref.sha256)
            if found is None:
                return _MISSING
            self._items.move_to_end(ref.sha256)
            return found[1]

    def put(self, ref: BlobRef, value: Any) -> None:
        if ref.size > self._limit // 4:
            return
        with self._lock:
            if ref.sha256 in self._items:
                return
            self._items[ref.sha256] = (ref.size, value)
            self._size += ref.size
            while self._size > self._limit:
                _, (size, _) = self._items.popitem(last=False)
                self._size -= size


_MISSING = object()
_CACHE = _Decoded(_DECODED_CACHE_BYTES)


class _Restored:
    """The restored event of a stored one, by the stored object's identity: a store's
    cache hands out the same stored event on every read, so every read hands out the same
    restored one too, and the folds carried per session (which check that the stream
    still holds the same event object, `events.carried`) carry on over large
    events instead of folding the whole stream afresh."""

    def __init__(self, keep: int) -> None:
        self._keep = keep
        self._items: OrderedDict[int, tuple[Event, Event]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, stored: Event) -> Event | None:
        with self._lock:
            found = self._items.get(id(stored))
            if found is None or found[0] is not stored:
                return None
            self._items.move_to_end(id(stored))
            return found[1]

    def put(self, stored: Event, restored: Event) -> None:
        with self._lock:  # (the stored event is kept alive with it: its id stays its own)
            self._items[id(stored)] = (stored, restored)
            self._items.move_to_end(id(stored))
            while len(self._items) > self._keep:
                self._items.popitem(last=False)


_RESTORED = _Restored(4096)


def encode(value: Any) -> bytes:
    """The JSON bytes of a payload value, as the stores write it."""
    try:
        return _ENCODER.encode(value)
    except (UnicodeEncodeError, TypeError, OverflowError, msgspec.EncodeError):
        # Lone surrogates, huge integers, NaN and such: the standard library's rules.
        return json.dumps(value, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def is_stored_large(data: dict[str, Any]) -> bool:
    """Whether a stored payload names blobs (and must be restored before use)."""
    return BLOBS_KEY in data


def _ref_value(ref: BlobRef) -> dict[str, Any]:
    return {"sha256": ref.sha256, "bytes": ref.size}


def _ref_of(value: Any) -> BlobRef:
    if not isinstance(value, dict) or not isinstance(value.get("sha256"), str):
        raise StoreError("a stored event names a blob without its reference")
    return BlobRef(value["sha256"], int(value.get("bytes") or 0))


async def _split(data: dict[str, Any], blobs: BlobStore) -> dict[str, Any]:
    out: dict[str, Any] = {}
    named: list[str] = []
    size = 2
    for key, value in data.items():
        body = encode(value)
        if len(body) > LARGE_PAYLOAD_BYTES:
            out[key] = _ref_value(await blobs.put(body))
            named.append(key)
            body = encode(out[key])
        else:
            out[key] = value
        size += len(key) + len(body) + 4
    if named:
        out[BLOBS_KEY] = named
    if size > LARGE_PAYLOAD_BYTES:
        whole = await blobs.put(encode(out))
        return {BLOBS_KEY: [WHOLE], WHOLE: _ref_value(whole)}
    return out


async def offload_large(drafts: Sequence[EventDraft], blobs: BlobStore) -> list[EventDraft]:
    """The drafts as they are to be stored: large payloads written to `blobs` first.

    Small drafts come back as the same objects. Blobs are written before this returns, so
    the events that name them can only be appended after them."""
    out: list[EventDraft] = []
    for d in drafts:
        if len(encode(d.data)) <= LARGE_PAYLOAD_BYTES:
            out.append(d)
        else:
            split = await _split(d.data, blobs)
            out.append(EventDraft(type=d.type, data=split, turn_id=d.turn_id, at=d.at))
    return out


def with_full_data(
    recorded: Sequence[Event], drafts: Sequence[EventDraft], stored: Sequence[EventDraft]
) -> list[Event]:
    """The events an append returns: each with its draft's whole payload."""
    return [
        e if s is d else _replaced(e, d.data)
        for e, d, s in zip(recorded, drafts, stored, strict=True)
    ]


def _names(data: dict[str, Any]) -> list[str]:
    named = data.get(BLOBS_KEY)
    if not isinstance(named, list) or not all(isinstance(k, str) for k in named):
        raise StoreError(f"a stored event's {BLOBS_KEY} is not a list of keys")
    return named


def _rebuilt(data: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    named = _names(data)
    if named == [WHOLE]:
        inner = values[WHOLE]
        if not isinstance(inner, dict):
            raise StoreError("a stored event's payload blob is not an object")
        return dict(inner)
    out = {k: v for k, v in data.items() if k != BLOBS_KEY}
    for key in named:
        out[key] = values[key]
    return out


def _decoded(ref: BlobRef, body: bytes) -> Any:
    value = json.loads(body)
    _CACHE.put(ref, value)
    return value


async def _value(ref: BlobRef, blobs: BlobStore) -> Any:
    found = _CACHE.get(ref)
    return _decoded(ref, await blobs.get(ref)) if found is _MISSING else found


def _value_sync(ref: BlobRef, blobs: BlobStore) -> Any:
    found = _CACHE.get(ref)
    return _decoded(ref, blobs.get_sync(ref)) if found is _MISSING else found


def _replaced(event: Event, data: dict[str, Any]) -> Event:
    return Event(
        type=event.type,
        index=event.index,
        session_id=event.session_id,
        at=event.at,
        data=data,
        turn_id=event.turn_id,
    )


async def _restore_data(data: dict[str, Any], blobs: BlobStore) -> dict[str, Any]:
    while is_stored_large(data):
        named = _names(data)
        values = await asyncio.gather(*(_value(_ref_of(data.get(k)), blobs) for k in named))
        data = _rebuilt(data, dict(zip(named, values, strict=True)))
    return data


def _restore_data_sync(data: dict[str, Any], blobs: BlobStore) -> dict[str, Any]:
    while is_stored_large(data):
        named = _names(data)
        data = _rebuilt(data, {k: _value_sync(_ref_of(data.get(k)), blobs) for k in named})
    return data


def _no_blobs() -> StoreError:
    return StoreError("an event is stored in blobs, but this store was opened without them")


class _LargeAt:
    """Where a stream's stored-large events are (carried on with new events)."""

    __slots__ = ("at", "seen")

    def __init__(self) -> None:
        self.at: list[int] = []
        self.seen = 0

    def copy(self) -> _LargeAt:
        other = _LargeAt.__new__(_LargeAt)
        other.at, other.seen = list(self.at), self.seen
        return other

    def add(self, ev: Event) -> None:
        if BLOBS_KEY in ev.data:
            self.at.append(self.seen)
        self.seen += 1


# Every read of a whole session looked at each of its events for a blob reference: 1.2 ms
# a read at 14,000 events, three reads a turn. Kept per session, a read looks at new ones.
_LARGE_AT: Carried[_LargeAt] = Carried(_LargeAt)


def _large_at(events: list[Event]) -> list[int]:
    if events and events[0].index == 0:  # a whole stream: the one carried on
        return _LARGE_AT.over(events).at
    return [i for i, e in enumerate(events) if BLOBS_KEY in e.data]  # a tail: short


async def restore(events: list[Event], blobs: BlobStore | None) -> list[Event]:
    """`events` with every stored-large payload read back whole (the same list when none)."""
    large = _large_at(events)
    if not large:
        return events
    if blobs is None:
        raise _no_blobs()
    out = list(events)
    todo = [i for i in large if _RESTORED.get(events[i]) is None]
    full = await asyncio.gather(*(_restore_data(events[i].data, blobs) for i in todo))
    for i, data in zip(todo, full, strict=True):
        _RESTORED.put(events[i], _replaced(events[i], data))
    for i in large:
        out[i] = _RESTORED.get(events[i]) or _replaced(
            events[i], await _restore_data(events[i].data, blobs)
        )
    return out


def restore_sync(events: list[Event], blobs: BlobStore | None) -> list[Event]:
    """`restore` for synchronous readers."""
    if not _large_at(events):
        return events
    if blobs is None:
        raise _no_blobs()
    return [
        _replaced(e, _restore_data_sync(e.data, blobs)) if BLOBS_KEY in e.data else e
        for e in events
    ]
