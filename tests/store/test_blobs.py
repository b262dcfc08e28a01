"""The blob adapters on their own: where blobs live, that they are written whole and once,
and that damage is reported (files under the state folder; S3 on a moto server)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agentkit.errors import StoreError
from agentkit.events import ActionResult, draft
from agentkit.sessions import SessionRecord, new_session_id
from agentkit.store._fileblobs import FileBlobs
from agentkit.store._s3blobs import S3Blobs
from agentkit.store.blobs import LARGE_PAYLOAD_BYTES, BlobRef
from agentkit.store.files import FileStore

BODY = b'"' + b"a large tool result " * 10_000 + b'"'


async def test_a_file_blob_lives_under_its_hash(tmp_path: Path) -> None:
    blobs = FileBlobs(tmp_path / "blobs")

    ref = await blobs.put(BODY)

    assert ref == BlobRef.of(BODY)
    path = tmp_path / "blobs" / "sha256" / ref.sha256[:2] / ref.sha256[2:]
    assert path.read_bytes() == BODY
    assert await blobs.get(ref) == BODY


async def test_a_file_blob_already_stored_is_never_written_again(tmp_path: Path) -> None:
    blobs = FileBlobs(tmp_path / "blobs")
    ref = await blobs.put(BODY)
    before = os.stat(blobs.path(ref))

    await blobs.put(BODY)

    after = os.stat(blobs.path(ref))
    assert after.st_ino == before.st_ino  # the same file, not a new one renamed over it
    # Only its time moves: the blob is in use again, and a blob sweep now keeps it.
    assert after.st_mtime_ns >= before.st_mtime_ns
    assert blobs.path(ref).read_bytes() == BODY
    assert blobs.count() == 1


async def test_a_writer_killed_mid_blob_leaves_no_blob(tmp_path: Path) -> None:
    # What a writer killed mid-write leaves: its temporary file, beside the final name.
    blobs = FileBlobs(tmp_path / "blobs")
    ref = BlobRef.of(BODY)
    blobs.path(ref).parent.mkdir(parents=True)
    torn = blobs.path(ref).with_name(f".{ref.sha256[2:]}.0123456789ab.tmp")
    torn.write_bytes(BODY[:1000])

    assert blobs.count() == 0
    with pytest.raises(StoreError, match="missing"):
        await blobs.get(ref)
    assert await blobs.put(BODY) == ref
    assert await blobs.get(ref) == BODY


async def test_a_damaged_file_blob_is_reported(tmp_path: Path) -> None:
    blobs = FileBlobs(tmp_path / "blobs")
    ref = await blobs.put(BODY)
    blobs.path(ref).write_bytes(BODY[:-1] + b"!")

    with pytest.raises(StoreError, match="damaged"):
        await blobs.get(ref)


async def test_the_file_stream_holds_only_the_reference(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "state")
    record = SessionRecord(id=new_session_id())
    await store.create_session(record)
    result = "x" * (2 * LARGE_PAYLOAD_BYTES)
    try:
        await store.append(
            record.id, [draft(ActionResult(call_id="c1", tool_name="dump", result=result))]
        )
    finally:
        await store.close()

    (line,) = store.events_path(record.id).read_bytes().splitlines()
    stored = json.loads(line)["data"]
    ref = BlobRef.of(json.dumps(result).encode())
    assert stored == {
        "callId": "c1",
        "toolName": "dump",
        "isError": False,
        "result": {"sha256": ref.sha256, "bytes": ref.size},
        "$blobs": ["result"],
    }


async def test_s3_blobs_are_put_once_under_the_blobs_prefix(s3_client: Any, s3_bucket: str) -> None:
    blobs = S3Blobs(s3_client, s3_bucket)

    ref = await blobs.put(BODY)
    await blobs.put(BODY)

    (obj,) = s3_client.list_objects_v2(Bucket=s3_bucket)["Contents"]
    assert obj["Key"] == f"blobs/sha256/{ref.sha256[:2]}/{ref.sha256[2:]}"
    assert await blobs.get(ref) == BODY
    assert blobs.get_sync(ref) == BODY
    assert blobs.count() == 1


async def test_a_missing_or_damaged_s3_blob_is_reported(s3_client: Any, s3_bucket: str) -> None:
    blobs = S3Blobs(s3_client, s3_bucket)
    with pytest.raises(StoreError, match="missing"):
        await blobs.get(BlobRef.of(BODY))
    ref = await blobs.put(BODY)
    s3_client.put_object(Bucket=s3_bucket, Key=blobs.key(ref), Body=BODY[:-1] + b"!")

    with pytest.raises(StoreError, match="damaged"):
        await blobs.get(ref)


async def test_a_dynamodb_store_without_the_bucket_says_so_on_a_large_event(
    dynamodb_store_factory: Any, s3_client: Any, s3_bucket: str
) -> None:
    store = dynamodb_store_factory(blobs=S3Blobs(s3_client, s3_bucket))
    record = SessionRecord(id=new_session_id())
    await store.create_session(record)
    result = "x" * (2 * LARGE_PAYLOAD_BYTES)
    await store.append(
        record.id, [draft(ActionResult(call_id="c1", tool_name="dump", result=result))]
    )
    blind = dynamodb_store_factory(settings=store.settings)

    with pytest.raises(StoreError, match="missing from the events table"):
        await blind.read(record.id)
    assert (await store.read(record.id))[0].data["result"] == result


async def test_without_a_bucket_dynamodb_keeps_blobs_in_the_events_table(
    dynamodb_store_factory: Any, dynamodb_client: Any
) -> None:
    from agentkit.store import _dynamo_codec as codec
    from agentkit.store._dynamo_blobs import BLOB_CHUNK_BYTES, DynamoBlobs
    from agentkit.store.dynamodb import read_stream_event

    store = dynamodb_store_factory()
    assert isinstance(store.blobs, DynamoBlobs)
    record = SessionRecord(id=new_session_id())
    await store.create_session(record)
    result = "y" * (5 * BLOB_CHUNK_BYTES + 7)
    call = draft(ActionResult(call_id="c1", tool_name="dump", result=result))
    await store.append(record.id, [call, call])

    items = dynamodb_client.scan(TableName=store.settings.events_table)["Items"]
    assert max(codec.item_size(item) for item in items) < BLOB_CHUNK_BYTES + 1024
    chunks = [
        i
        for i in items
        if codec.get_s(
            i,
            "sessionId",
        ).startswith("blob#sha256#")
    ]
    assert len(chunks) == 6 and store.blobs.count() == 1  # the same result, stored once
    events = await store.read(record.id)
    assert [e.data["result"] for e in events] == [result, result]
    image = next(i for i in items if codec.get_s(i, "sessionId") == record.id)
    streamed = read_stream_event(dynamodb_client, store.settings.events_table, image, store.blobs)
    assert streamed is not None and streamed.data["result"] == result
