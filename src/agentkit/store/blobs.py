"""Large payloads, stored once by content hash: the `BlobStore` port and its references.

An event whose payload is larger than `LARGE_PAYLOAD_BYTES` is not written into its
stream whole. Its large values go to a `BlobStore` first, keyed by the SHA-256 of their
bytes, and the stored event keeps only a reference (`BlobRef`: the hash and the size). The
same bytes always get the same key, so a payload stored twice (a tool returning the same
file in two sessions, say) is stored once. How an event is split and put back together is
`agentkit.store.large_events`; the adapters are `FileBlobs` (files under the state folder),
`S3Blobs` (an S3 bucket, beside DynamoDB) and `MemoryBlobs`.

A blob is written whole before any event names it, and never rewritten: a writer killed
between the two leaves an orphan blob, never a reference to a missing one.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from agentkit.errors import StoreError
from agentkit.store._offload import offload

# An event (or one value of its payload) whose JSON is larger than this goes to blobs.
LARGE_PAYLOAD_BYTES = 64 * 1024
HASH_NAME = "sha256"


@dataclass(frozen=True, slots=True)
class BlobRef:
    """Where a blob's bytes are: their SHA-256 (hex) and their length."""

    sha256: str
    size: int

    @classmethod
    def of(cls, data: bytes) -> BlobRef:
        return cls(hashlib.sha256(data).hexdigest(), len(data))

    def key(self) -> str:
        """The blob's relative path, `sha256/ab/cdef…` (the first two hex digits fan out)."""
        return f"{HASH_NAME}/{self.sha256[:2]}/{self.sha256[2:]}"

    def check(self, data: bytes) -> bytes:
        """`data` if it is this blob's content; `StoreError` otherwise."""
        if len(data) != self.size or hashlib.sha256(data).hexdigest() != self.sha256:
            raise StoreError(f"blob {self.sha256[:16]}… is damaged in storage")
        return data


@runtime_checkable
class BlobStore(Protocol):
    """Immutable, content-addressed bytes. `put` of bytes already stored writes nothing."""

    async def put(self, data: bytes) -> BlobRef:
        """Store `data` whole (if not stored yet) and return its reference."""
        ...

    async def get(self, ref: BlobRef) -> bytes:
        """The bytes of `ref`; `StoreError` when missing or damaged."""
        ...

    def get_sync(self, ref: BlobRef) -> bytes:
        """`get` for synchronous callers (a stream consumer, a command-line reader)."""
        ...

    def count(self) -> int:
        """How many blobs are stored (for tests and benchmarks; may list them all)."""
        ...


@dataclass(frozen=True, slots=True)
class StoredBlob:
    """One stored blob, as a sweep lists it: when it was last written or reused (epoch s)."""

    sha256: str
    size: int
    written_at: float


@runtime_checkable
class SweepableBlobs(BlobStore, Protocol):
    """Blobs a sweep can clear (`agentkit.store.blob_sweep`). Their `put` of bytes already
    stored refreshes the blob's `written_at`, so a blob just reused is never swept."""

    def list_stored(self) -> list[StoredBlob]:
        """Every stored blob (temporary files of unfinished writes are not blobs)."""
        ...

    def written_at(self, sha256: str) -> float | None:
        """When the blob was last written or reused; None when it is not stored."""
        ...

    def remove(self, sha256: str) -> None:
        """Remove the blob (nothing when it is gone already)."""
        ...


class MemoryBlobs:
    """Blobs in a dict, for `MemoryStore`."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._blobs: dict[str, bytes] = {}
        self._written: dict[str, float] = {}
        self._clock = clock
        self._lock = threading.Lock()

    async def put(self, data: bytes) -> BlobRef:
        ref = BlobRef.of(data)
        with self._lock:
            self._blobs.setdefault(ref.sha256, bytes(data))
            self._written[ref.sha256] = self._clock()
        return ref

    async def get(self, ref: BlobRef) -> bytes:
        return self.get_sync(ref)

    def get_sync(self, ref: BlobRef) -> bytes:
        with self._lock:
            found = self._blobs.get(ref.sha256)
        if found is None:
            raise StoreError(f"blob {ref.sha256[:16]}… is missing")
        return ref.check(found)

    def count(self) -> int:
        with self._lock:
            return len(self._blobs)

    def list_stored(self) -> list[StoredBlob]:
        with self._lock:
            return [StoredBlob(k, len(v), self._written[k]) for k, v in self._blobs.items()]

    def written_at(self, sha256: str) -> float | None:
        with self._lock:
            return self._written.get(sha256)

    def remove(self, sha256: str) -> None:
        with self._lock:
            self._blobs.pop(sha256, None)
            self._written.pop(sha256, None)


class BlockingBlobs:
    """The async half of a blob store whose calls block (files, boto3): `put` and `get`
    run its `put_sync` and `get_sync` off the event loop (`store._offload`)."""

    def put_sync(self, data: bytes) -> BlobRef:
        raise NotImplementedError

    def get_sync(self, ref: BlobRef) -> bytes:
        raise NotImplementedError

    async def put(self, data: bytes) -> BlobRef:
        return await offload(self.put_sync, data)

    async def get(self, ref: BlobRef) -> bytes:
        return await offload(self.get_sync, ref)
