"""Blobs nobody names any more are removed: a mark-and-sweep over a store's streams.

A blob is shared by every event (of any session) whose payload has the same bytes, so it
cannot be removed with a session; instead a sweep now and then removes the blobs that no
stored event names. That is what a deleted session leaves (its events are gone, or stubbed
on DynamoDB), and what an append that failed after its blob was written leaves.

`sweep_blobs(store)` works for every store with sweepable blobs (`FileStore` and its blob
files, `DynamoDBStore` with `S3Blobs`, `MemoryStore`):

1. It lists the stored blobs, each with the time it was last written or reused; the ones
   younger than `grace` (a day by default) are kept whatever happens, so an append that
   has written its blob and not yet its event is never robbed of it.
2. It reads every stored payload that names blobs (`BlobSweeping.blob_payloads`), and
   marks what they name; a payload stored whole as one blob (`"$blobs": ["*"]`) is read
   to mark what it names in turn.
3. It removes each unmarked, old blob, after reading its time once more: a `put` of the
   same bytes refreshes that time (`FileBlobs`, `S3Blobs`), so a blob reused while the
   sweep ran is kept.

What is left to chance is a `put` of the very bytes of an orphan older than `grace`
between that last look and the removal (a few milliseconds, once a day): the event it
then appends names a blob that is gone, which its readers report as a `StoreError`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from agentkit.errors import StoreError
from agentkit.store._offload import offload
from agentkit.store.blobs import BlobRef, StoredBlob, SweepableBlobs
from agentkit.store.large_events import BLOBS_KEY

log = logging.getLogger("agentkit.store.blob_sweep")

# A blob written (or reused) within this many seconds is never removed.
DEFAULT_GRACE_SECONDS = 24 * 3600.0
# How often `agentkit serve` sweeps its state folder's blobs (and once as it starts).
LOCAL_SWEEP_INTERVAL = 6 * 3600.0
# On AWS the first five-minute sweep of a UTC day claims the day's blob sweep, this long.
BLOB_SWEEP_CLAIM_TTL = 2 * 24 * 3600.0


@runtime_checkable
class BlobSweeping(Protocol):
    """A store whose blobs a sweep can clear: it lists the payloads that name blobs."""

    @property
    def blobs(self) -> Any: ...

    async def blob_payloads(self) -> list[dict[str, Any]]:
        """Every stored event payload that names blobs (`"$blobs"` in it), as stored."""
        ...


@dataclass(frozen=True, slots=True)
class BlobSweepResult:
    """What one sweep did: blobs seen, kept (named or young) and removed, bytes freed."""

    stored: int
    removed: int
    freed_bytes: int

    @property
    def kept(self) -> int:
        return self.stored - self.removed


def _named(data: dict[str, Any]) -> Iterable[tuple[str, BlobRef]]:
    keys = data.get(BLOBS_KEY)
    if not isinstance(keys, list):
        return
    for key in keys:
        value = data.get(key) if isinstance(key, str) else None
        if isinstance(value, dict) and isinstance(value.get("sha256"), str):
            yield key, BlobRef(value["sha256"], int(value.get("bytes") or 0))


def _mark(data: dict[str, Any], blobs: SweepableBlobs, live: set[str]) -> None:
    pending = [data]
    while pending:
        payload = pending.pop()
        for key, ref in _named(payload):
            if ref.sha256 in live:
                continue
            live.add(ref.sha256)
            if key != "*":
                continue
            try:  # a payload stored whole: the blob's own payload names the others
                inner = json.loads(blobs.get_sync(ref))
            except (StoreError, ValueError):
                continue  # missing or damaged: it names nothing we could keep
            if isinstance(inner, dict):
                pending.append(inner)


def _sweep_sync(
    payloads: list[dict[str, Any]],
    blobs: SweepableBlobs,
    stored: list[StoredBlob],
    grace: float,
    now: float,
) -> BlobSweepResult:
    live: set[str] = set()
    for data in payloads:
        _mark(data, blobs, live)
    removed = freed = 0
    for blob in stored:
        if blob.sha256 in live or now - blob.written_at <= grace:
            continue
        again = blobs.written_at(blob.sha256)
        if again is None or now - again <= grace:
            continue  # gone already, or reused since it was listed
        blobs.remove(blob.sha256)
        removed += 1
        freed += blob.size
    return BlobSweepResult(stored=len(stored), removed=removed, freed_bytes=freed)


async def sweep_blobs(
    store: object, *, grace: float = DEFAULT_GRACE_SECONDS, now: float | None = None
) -> BlobSweepResult | None:
    """Remove the blobs of `store` that no stored event names and that were last written
    more than `grace` seconds before `now`. None when the store's blobs cannot be swept
    (a `DynamoDBStore` keeping them in its events table, with no bucket)."""
    if not isinstance(store, BlobSweeping):
        return None
    blobs = store.blobs
    if not isinstance(blobs, SweepableBlobs):
        return None
    at = time.time() if now is None else now
    # Listed first: a blob written after this is not looked at, an event appended after
    # it names only blobs listed young or refreshed by their `put`.
    stored = await offload(blobs.list_stored)
    stale_writes = getattr(blobs, "remove_stale_writes", None)
    if stale_writes is not None:  # files: temporary files of writers killed mid-blob
        await offload(stale_writes, at - grace)
    if not any(at - b.written_at > grace for b in stored):
        return BlobSweepResult(stored=len(stored), removed=0, freed_bytes=0)
    payloads = await store.blob_payloads()
    result = await offload(_sweep_sync, payloads, blobs, stored, grace, at)
    if result.removed:
        log.info(
            "blob sweep: removed %d of %d blob(s), %d bytes",
            result.removed,
            result.stored,
            result.freed_bytes,
        )
    return result


async def sweep_blobs_forever(store: object, interval: float = LOCAL_SWEEP_INTERVAL) -> None:
    """Sweep `store`'s blobs now and then every `interval` seconds, until cancelled (a
    failed sweep is logged and tried again at the next one)."""
    while True:
        try:
            if await sweep_blobs(store) is None:
                return  # blobs that cannot be swept: nothing to come back for
        except Exception:
            log.exception("the blob sweep failed; trying again in %gs", interval)
        await asyncio.sleep(interval)
