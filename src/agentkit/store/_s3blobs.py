"""`S3Blobs`: the DynamoDB store's blobs, one S3 object per content hash.

Objects are `<prefix>sha256/ab/cdef…` (`blobs/` by default) in the deployment's bucket.
An object appears whole or not at all (S3 writes are atomic), so the event naming it is
appended only after the put has returned. An object already there is not written again.
"""

from __future__ import annotations

from typing import Any

from agentkit.errors import StoreError
from agentkit.store.blobs import HASH_NAME, BlobRef, BlockingBlobs, StoredBlob

DEFAULT_PREFIX = "blobs/"


def _missing(exc: Exception) -> bool:
    response = getattr(exc, "response", None) or {}
    code = str(response.get("Error", {}).get("Code", ""))
    return code in {"404", "NoSuchKey", "NotFound"}


class _Gone(Exception):
    """The object went away between its `head_object` and its refresh."""


class S3Blobs(BlockingBlobs):
    """Content-addressed blobs in an S3 bucket, through a boto3 S3 client."""

    def __init__(self, client: Any, bucket: str, *, prefix: str = DEFAULT_PREFIX) -> None:
        if not bucket:
            raise ValueError("S3Blobs needs a bucket name")
        self._client = client
        self.bucket = bucket
        self.prefix = prefix

    def key(self, ref: BlobRef) -> str:
        return self.prefix + ref.key()

    def put_sync(self, data: bytes) -> BlobRef:
        ref = BlobRef.of(data)
        key = self.key(ref)
        try:
            head = self._client.head_object(Bucket=self.bucket, Key=key)
            if int(head.get("ContentLength", -1)) == ref.size:
                self._refresh(key)
                return ref
        except _Gone:
            pass  # swept between the two calls: written again below
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

    def _refresh(self, key: str) -> None:
        """Copy the object onto itself: its `LastModified` says it is in use again, so a
        blob sweep running now keeps it (`agentkit.store.blob_sweep`)."""
        try:
            self._client.copy_object(
                Bucket=self.bucket,
                Key=key,
                CopySource={"Bucket": self.bucket, "Key": key},
                MetadataDirective="REPLACE",
                ContentType="application/json",
            )
        except Exception as exc:
            if not _missing(exc):
                raise StoreError(f"S3 copy_object {key} failed: {exc}") from exc
            raise _Gone from exc

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

    def list_stored(self) -> list[StoredBlob]:
        found: list[StoredBlob] = []
        start = len(self.prefix) + len(HASH_NAME) + 1
        pages = self._client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=f"{self.prefix}{HASH_NAME}/"
        )
        for page in pages:
            for item in page.get("Contents", []):
                digest = str(item["Key"])[start:].replace("/", "")
                found.append(
                    StoredBlob(digest, int(item["Size"]), item["LastModified"].timestamp())
                )
        return found

    def _key_of(self, sha256: str) -> str:
        return f"{self.prefix}{HASH_NAME}/{sha256[:2]}/{sha256[2:]}"

    def written_at(self, sha256: str) -> float | None:
        try:
            head = self._client.head_object(Bucket=self.bucket, Key=self._key_of(sha256))
        except Exception as exc:
            if _missing(exc):
                return None
            raise StoreError(f"S3 head_object {self._key_of(sha256)} failed: {exc}") from exc
        return float(head["LastModified"].timestamp())

    def remove(self, sha256: str) -> None:
        try:
            self._client.delete_object(Bucket=self.bucket, Key=self._key_of(sha256))
        except Exception as exc:
            raise StoreError(f"S3 delete_object {self._key_of(sha256)} failed: {exc}") from exc

    def count(self) -> int:
        total = 0
        pages = self._client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.prefix
        )
        for page in pages:
            total += len(page.get("Contents", []))
        return total
