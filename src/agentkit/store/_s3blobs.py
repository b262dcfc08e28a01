"""`S3Blobs`: the DynamoDB store's blobs, one S3 object per content hash.

Objects are `<prefix>sha256/ab/cdef…` (`blobs/` by default) in the deployment's bucket.
An object appears whole or not at all (S3 writes are atomic), so the event naming it is
appended only after the put has returned. An object already there is not written again.
"""

from __future__ import annotations

from typing import Any

from agentkit.errors import StoreError
from agentkit.store._offload import offload
from agentkit.store.blobs import BlobRef

DEFAULT_PREFIX = "blobs/"


def _missing(exc: Exception) -> bool:
    response = getattr(exc, "response", None) or {}
    code = str(response.get("Error", {}).get("Code", ""))
    return code in {"404", "NoSuchKey", "NotFound"}


class S3Blobs:
    """Content-addressed blobs in an S3 bucket, through a boto3 S3 client."""

    def __init__(self, client: Any, bucket: str, *, prefix: str = DEFAULT_PREFIX) -> None:
        if not bucket:
            raise ValueError("S3Blobs needs a bucket name")
        self._client = client
        self.bucket = bucket
        self.prefix = prefix

    def key(self, ref: BlobRef) -> str:
        return self.prefix + ref.key()

    async def put(self, data: bytes) -> BlobRef:
        return await offload(self.put_sync, data)

    def put_sync(self, data: bytes) -> BlobRef:
        ref = BlobRef.of(data)
        key = self.key(ref)
        try:
            head = self._client.head_object(Bucket=self.bucket, Key=key)
            if int(head.get("ContentLength", -1)) == ref.size:
                return ref
        except Exception as exc:
            if not _missing(exc):
                raise StoreError(f"S3 head_object {key} failed: {exc}") from exc
        try:
            self._client.put_object(
                Bucket=self.bucket, Key=key, Body=data, ContentType="application/json"
            )
        except Exception as exc:
            raise StoreError(f"S3 put_object {key} failed: {exc}") from exc
        return ref

    async def get(self, ref: BlobRef) -> bytes:
        return await offload(self.get_sync, ref)

    def get_sync(self, ref: BlobRef) -> bytes:
        key = self.key(ref)
        try:
            body = self._client.get_object(Bucket=self.bucket, Key=key)["Body"]
            try:
                data = bytes(body.read())
            finally:
                body.close()
        except Exception as exc:
            if _missing(exc):
                raise StoreError(
                    f"blob {ref.sha256[:16]}… is missing from s3://{self.bucket}"
                ) from None
            raise StoreError(f"S3 get_object {key} failed: {exc}") from exc
        return ref.check(data)

    def count(self) -> int:
        total = 0
        pages = self._client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.prefix
        )
        for page in pages:
            total += len(page.get("Contents", []))
        return total
