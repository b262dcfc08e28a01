"""The blob sweep (`agentkit.store.blob_sweep`): blobs no stored event names any more (a
deleted session's, an append's that failed after its blob) are removed once they are older
than the grace period; blobs still named, shared or young are kept, and every session left
reads back whole (memory, files, DynamoDB with S3 on the moto server)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest

from agentkit.errors import LeaseLost
from agentkit.events import EventDraft
from agentkit.store.blob_sweep import DEFAULT_GRACE_SECONDS, sweep_blobs
from agentkit.store.blobs import LARGE_PAYLOAD_BYTES, SweepableBlobs
from tests.store.conftest import Harness, note
from tests.store.test_large_event_store import big_text, tool_result

GRACE = 3600.0


def blobs_of(harness: Harness) -> SweepableBlobs:
    blobs = getattr(harness.store, "blobs", None)
    assert isinstance(blobs, SweepableBlobs)
    return blobs


def later(harness: Harness) -> float:
    """A moment at which every blob written so far is older than `GRACE` (the memory store's
    blobs keep its fake clock's time, the others the real one)."""
    return max(time.time(), harness.clock.now) + 10 * GRACE


async def test_a_deleted_sessions_blobs_go_and_the_others_stay(harness: Harness) -> None:
    gone, kept = await harness.new_session(), await harness.new_session()
    only_gone = big_text(2 * LARGE_PAYLOAD_BYTES, "gone")
    shared = big_text(2 * LARGE_PAYLOAD_BYTES, "shared")
    medium = {f"part{i}": big_text(LARGE_PAYLOAD_BYTES // 4, str(i)) for i in range(8)}
    medium["big"] = big_text(2 * LARGE_PAYLOAD_BYTES, "big")
    await harness.store.append(gone.id, [tool_result("c1", only_gone), tool_result("c2", shared)])
    await harness.store.append(kept.id, [note("hello"), tool_result("c3", shared)])
    # A blob of its own ("big"), and the rest stored whole as one blob that names it.
    await harness.store.append(kept.id, [EventDraft(type="custom.report", data=medium)])
    before = await harness.store.read(kept.id)
    assert blobs_of(harness).count() == 4
    assert await harness.store.delete_session(gone.id)

    result = await sweep_blobs(harness.store, grace=GRACE, now=later(harness))

    assert result is not None and (result.stored, result.removed) == (4, 1)
    assert result.freed_bytes > 2 * LARGE_PAYLOAD_BYTES
    assert blobs_of(harness).count() == 3
    assert await harness.reopen().read(kept.id) == before
    again = await sweep_blobs(harness.store, grace=GRACE, now=later(harness))
    assert again is not None and again.removed == 0


async def test_an_orphan_of_a_failed_append_is_swept(harness: Harness) -> None:
    record = await harness.new_session()
    assert await harness.store.acquire_lease(record.id, "worker-a", ttl=60)
    with pytest.raises(LeaseLost):
        await harness.store.append(
            record.id, [tool_result("c1", big_text(2 * LARGE_PAYLOAD_BYTES))], lease_holder="b"
        )
    assert blobs_of(harness).count() == 1

    result = await sweep_blobs(harness.store, grace=GRACE, now=later(harness))

    assert result is not None and result.removed == 1
    assert blobs_of(harness).count() == 0


async def test_young_blobs_are_kept_whoever_names_them(harness: Harness) -> None:
    # An append that has written its blob but not yet its event looks just like this.
    record = await harness.new_session()
    await harness.store.append(record.id, [tool_result("c1", big_text(2 * LARGE_PAYLOAD_BYTES))])
    assert await harness.store.delete_session(record.id)

    result = await sweep_blobs(harness.store, grace=1e9)

    assert result is not None and (result.stored, result.removed) == (1, 0)
    assert blobs_of(harness).count() == 1


async def test_a_blob_reused_while_old_is_kept(harness: Harness) -> None:
    if not harness.kind.startswith("files"):
        pytest.skip("ages a blob file by hand")
    payload = big_text(2 * LARGE_PAYLOAD_BYTES)
    first = await harness.new_session()
    await harness.store.append(first.id, [tool_result("c1", payload)])
    await harness.store.delete_session(first.id)
    (path,) = (p for p in harness.store.blobs.folder.rglob("*") if p.is_file())  # type: ignore[attr-defined]
    os.utime(path, (time.time() - 10 * GRACE, time.time() - 10 * GRACE))
    # The same bytes again: nothing is written, but the blob's time says it is in use.
    second = await harness.new_session()
    await harness.store.append(second.id, [tool_result("c2", payload)])

    result = await sweep_blobs(harness.store, grace=GRACE)

    assert result is not None and result.removed == 0
    assert (await harness.store.read(second.id))[0].data["result"] == payload


async def test_a_killed_blob_writes_temporary_file_is_swept(harness: Harness) -> None:
    if not harness.kind.startswith("files"):
        pytest.skip("temporary files are the file store's")
    folder = harness.store.blobs.folder  # type: ignore[attr-defined]
    fan = folder / "sha256" / "ab"
    fan.mkdir(parents=True)
    stale, fresh = fan / ".cdef.1a2b3c.tmp", fan / ".cdef.4d5e6f.tmp"
    stale.write_bytes(b"half a blob")
    fresh.write_bytes(b"a blob being written")
    os.utime(stale, (time.time() - 10 * GRACE, time.time() - 10 * GRACE))

    result = await sweep_blobs(harness.store, grace=GRACE)

    assert result is not None and result.stored == 0
    assert not stale.exists() and fresh.exists()


async def test_dynamodb_blobs_in_the_events_table_are_not_swept(
    dynamodb_store_factory: Any,
) -> None:
    store = dynamodb_store_factory()  # no bucket: blobs are chunk items of the events table
    try:
        assert await sweep_blobs(store, grace=GRACE) is None
    finally:
        await store.close()


async def test_a_local_host_sweeps_old_orphans_as_it_starts(tmp_path: Path) -> None:
    from agentkit.hosts.local import LocalHost, LocalHostOptions
    from agentkit.project.bundle import AgentBundle
    from agentkit.sessions import SessionRecord, new_session_id
    from agentkit.store.files import FileStore
    from tests.engine.conftest import write_project

    bundle = AgentBundle.discover(write_project(tmp_path / "proj"))
    state = tmp_path / "state"
    store = FileStore(state / bundle.slug)
    record = SessionRecord(id=new_session_id())
    await store.create_session(record)
    await store.append(record.id, [tool_result("c1", big_text(2 * LARGE_PAYLOAD_BYTES))])
    await store.delete_session(record.id)
    await store.close()
    (path,) = (p for p in (state / bundle.slug / "blobs").rglob("*") if p.is_file())
    old = time.time() - 2 * DEFAULT_GRACE_SECONDS
    os.utime(path, (old, old))

    host = LocalHost(bundle, LocalHostOptions(state_root=state, dev=True))
    await host.start()
    try:
        deadline = time.monotonic() + 30
        while path.exists():
            assert time.monotonic() < deadline, "the host never swept the orphan blob"
            await asyncio.sleep(0.02)
    finally:
        await host.aclose()
