"""What only the file store promises: its layout, crash recovery and cross-process safety."""

from __future__ import annotations

import asyncio
import itertools
import json
import multiprocessing
import os
import shutil
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

if sys.platform != "win32":
    import fcntl

from agentkit.errors import InvalidId, LeaseLost, StoreError
from agentkit.events import Event, MessageAppended, draft
from agentkit.sessions import SessionRecord, hash_token, new_http_token, new_session_id
from agentkit.store.files import FileStore
from tests.store._workers import append_batches, append_forever, append_many
from tests.store.conftest import HOSTILE_IDS


def note(text: str) -> object:
    return draft(MessageAppended(text=text))


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[FileStore]:
    made = FileStore(tmp_path / "state")
    yield made
    await made.close()


async def new_session(store: FileStore, **fields: object) -> SessionRecord:
    record = SessionRecord(id=new_session_id(), **fields)  # type: ignore[arg-type]
    await store.create_session(record)
    return record


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


# layout


async def test_a_session_lives_in_its_own_folder(store: FileStore) -> None:
    token = new_http_token()
    record = await new_session(store, token_hash=hash_token(token), principal="ada")
    await store.append(record.id, [note("hi")])

    folder = store.root / "sessions" / record.id
    assert store.workspace_dir(record.id) == folder / "workspace"
    # Made by whoever first puts files there (the engine seeds it), not with the session.
    assert not (folder / "workspace").exists()
    stored = json.loads((folder / "session.json").read_text())
    assert stored["tokenHash"] == hash_token(token)
    assert token not in (folder / "session.json").read_text()
    (line,) = (folder / "events.ndjson").read_text().splitlines()
    assert json.loads(line)["data"] == {"text": "hi"}
    assert store.trace_path(record.id) == store.root / "traces" / f"{record.id}.ndjson"
    assert store.tool_call_dir("call_1") == store.root / "tool-calls" / "call_1"


async def test_deleting_removes_the_session_folder(store: FileStore) -> None:
    record = await new_session(store)

    await store.delete_session(record.id)

    assert not (store.root / "sessions" / record.id).exists()
    assert not any((store.root / ".trash").iterdir())


async def test_a_session_folder_removed_by_hand_is_gone(store: FileStore) -> None:
    kept = await new_session(store, principal="ada")
    removed = await new_session(store, principal="ada")
    await store.append(removed.id, [note("x")])

    await asyncio.to_thread(shutil.rmtree, store.root / "sessions" / removed.id)

    page = await store.list_sessions("ada")
    assert [r.id for r in page.items] == [kept.id]
    assert await store.read(removed.id) == []
    assert await store.get_session(removed.id) is None


# ids


@pytest.mark.parametrize("bad", HOSTILE_IDS)
async def test_hostile_ids_touch_nothing_on_disk(store: FileStore, bad: str) -> None:
    before = tree(store.root)

    for helper in (store.workspace_dir, store.trace_path, store.session_dir):
        with pytest.raises(InvalidId):
            helper(bad)
    with pytest.raises(InvalidId):
        store.tool_call_dir(bad)
    with pytest.raises(InvalidId):
        await store.create_session(SessionRecord(id=bad))
    with pytest.raises(InvalidId):
        await store.append(bad, [note("x")])
    with pytest.raises(InvalidId):
        await store.acquire_lease(bad, "h", ttl=1)
    with pytest.raises(InvalidId):
        await store.set_interrupt(bad, True)

    assert tree(store.root) == before


async def test_idempotency_keys_become_hashed_file_names(store: FileStore) -> None:
    await store.claim("../../escape", ttl=60)

    (claim,) = (store.root / "idempotency").iterdir()
    assert len(claim.stem) == 64 and set(claim.stem) <= set("0123456789abcdef")
    assert not (store.root.parent / "escape").exists()


# crash recovery


async def test_a_torn_last_line_is_repaired_on_the_next_open(tmp_path: Path) -> None:
    root = tmp_path / "state"
    first = FileStore(root)
    record = await new_session(first)
    await first.append(record.id, [note("a"), note("b"), note("c")])
    events_file = first.events_path(record.id)
    data = events_file.read_bytes()
    events_file.write_bytes(data[: len(data) - 15])  # killed in the middle of "c"

    reopened = FileStore(root)
    assert [e.data["text"] for e in await reopened.read(record.id)] == ["a", "b"]
    assert events_file.read_bytes() == b"".join(data.splitlines(keepends=True)[:2])
    (appended,) = await reopened.append(record.id, [note("d")])

    assert appended.index == 2
    assert [e.data["text"] for e in await FileStore(root).read(record.id)] == ["a", "b", "d"]
    lines = events_file.read_bytes().split(b"\n")
    assert lines[-1] == b""
    assert [json.loads(line)["index"] for line in lines[:-1]] == [0, 1, 2]


async def test_a_partial_line_after_complete_ones_is_dropped(tmp_path: Path) -> None:
    root = tmp_path / "state"
    first = FileStore(root)
    record = await new_session(first)
    await first.append(record.id, [note("a")])
    with first.events_path(record.id).open("ab") as f:
        f.write(b'{"type":"message.appended","index":1,"sessionId":"')

    reopened = FileStore(root)
    assert len(await reopened.read(record.id)) == 1
    assert await reopened.next_index(record.id) == 1
    (appended,) = await reopened.append(record.id, [note("b")])

    assert appended.index == 1
    assert [e.data["text"] for e in await FileStore(root).read(record.id)] == ["a", "b"]


async def test_a_batch_its_writer_did_not_finish_disappears_whole(tmp_path: Path) -> None:
    root = tmp_path / "state"
    first = FileStore(root)
    record = await new_session(first)
    await first.append(record.id, [note("a")])
    events_file = first.events_path(record.id)
    complete = events_file.read_bytes()
    await first.append(record.id, [note("b1"), note("b2"), note("b3")])
    # A batch opens with "#" until all of it is written; a writer killed after two lines
    # of its batch leaves this behind:
    batch_lines = events_file.read_bytes()[len(complete) :].split(b"\n")
    events_file.write_bytes(complete + b"#" + b"\n".join(batch_lines[:2])[1:] + b"\n")

    reopened = FileStore(root)
    assert [e.data["text"] for e in await reopened.read(record.id)] == ["a"]
    (appended,) = await reopened.append(record.id, [note("c")])

    assert appended.index == 1
    assert [e.data["text"] for e in await FileStore(root).read(record.id)] == ["a", "c"]


async def test_a_stale_batch_marker_never_hides_later_appends(tmp_path: Path) -> None:
    root = tmp_path / "state"
    first = FileStore(root)
    record = await new_session(first)
    await first.append(record.id, [note("a")])
    events_file = first.events_path(record.id)
    # Left by a writer that died after its batch marker but before writing the batch.
    events_file.with_name("events.ndjson.pending").write_text(str(events_file.stat().st_size))

    await FileStore(root).append(record.id, [note("b1"), note("b2")])

    texts = [e.data["text"] for e in await FileStore(root).read(record.id)]
    assert texts == ["a", "b1", "b2"]


async def test_a_finished_batch_leaves_plain_lines_and_no_other_file(store: FileStore) -> None:
    record = await new_session(store)

    await store.append(record.id, [note("b1"), note("b2"), note("b3")])

    lines = store.events_path(record.id).read_bytes().splitlines()
    assert [json.loads(line)["data"]["text"] for line in lines] == ["b1", "b2", "b3"]
    folder = store.session_dir(record.id)
    assert sorted(os.listdir(folder)) == ["events.ndjson", "lock", "session.json"]


@pytest.mark.skipif(sys.platform == "win32", reason="flock")
async def test_an_append_waits_off_the_event_loop_while_another_holder_has_the_lock(
    store: FileStore,
) -> None:
    record = await new_session(store)
    # Another open file description, as another process would hold it.
    fd = os.open(store.session_dir(record.id) / "lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        append = asyncio.create_task(store.append(record.id, [note("x")]))
        ticks = 0
        while ticks < 20:  # the loop keeps turning while the append waits for the lock
            await asyncio.sleep(0)
            ticks += 1
        assert not append.done()
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    (event,) = await asyncio.wait_for(append, 10)
    assert event.index == 0


async def test_a_batch_cut_short_by_a_crash_disappears_whole(tmp_path: Path) -> None:
    root = tmp_path / "state"
    first = FileStore(root)
    record = await new_session(first)
    await first.append(record.id, [note("a")])
    events_file = first.events_path(record.id)
    complete = events_file.read_bytes()
    await first.append(record.id, [note("b1"), note("b2"), note("b3")])
    # What a writer killed after two lines of its batch leaves behind:
    batch_lines = events_file.read_bytes()[len(complete) :].split(b"\n")
    events_file.write_bytes(complete + b"\n".join(batch_lines[:2]) + b"\n")
    events_file.with_name("events.ndjson.pending").write_text(str(len(complete)))

    reopened = FileStore(root)
    assert [e.data["text"] for e in await reopened.read(record.id)] == ["a"]
    (appended,) = await reopened.append(record.id, [note("c")])

    assert appended.index == 1
    assert [e.data["text"] for e in await FileStore(root).read(record.id)] == ["a", "c"]


async def test_a_writer_killed_while_appending_leaves_a_well_formed_stream(
    store: FileStore,
) -> None:
    record = await new_session(store)
    events_file = store.events_path(record.id)
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=append_forever, args=(str(store.root), record.id, 50_000))
    proc.start()
    assert await store.follow(record.id, 20, timeout=60)  # some writes in

    proc.kill()
    await asyncio.to_thread(proc.join, 30)

    events = await FileStore(store.root).read(record.id)
    assert [e.index for e in events] == list(range(len(events)))
    batches = [e.data["text"].split(":")[0].split(".")[0] for e in events]
    for n in set(batches):  # single events and batches of three, never part of one
        assert batches.count(n) == (1 if int(n) % 2 == 0 else 3)
    (appended,) = await FileStore(store.root).append(record.id, [note("after")])
    assert appended.index == len(events)
    assert events_file.read_bytes().endswith(b'"after"}}\n')


async def test_a_corrupt_line_inside_the_stream_is_a_clear_error(store: FileStore) -> None:
    record = await new_session(store)
    await store.append(record.id, [note("a")])
    with store.events_path(record.id).open("ab") as f:
        f.write(b"not json\n")

    with pytest.raises(StoreError, match=record.id):
        await FileStore(store.root).read(record.id)


async def test_session_json_is_never_seen_half_written(store: FileStore) -> None:
    tokens = [hash_token(f"t{i}") for i in range(201)]
    record = await new_session(store, token_hash=tokens[0], metadata={"pad": "x" * 20_000})
    path = store.session_dir(record.id) / "session.json"
    done = threading.Event()
    torn: list[str] = []
    seen: list[str | None] = []

    def reader() -> None:
        while not done.is_set():
            raw = path.read_bytes()
            try:
                json.loads(raw)
            except ValueError:
                torn.append(raw[:40].decode(errors="replace"))
            # The record as a reader holding no lock sees it, changes applied.
            current = store._get_sync(path.parent)
            seen.append(current.token_hash if current is not None else None)

    watcher = threading.Thread(target=reader)
    watcher.start()
    try:
        for old, new in itertools.pairwise(tokens):
            assert await store.rotate_token(record.id, old, new)
    finally:
        done.set()
        await asyncio.to_thread(watcher.join)

    assert torn == []
    assert seen and set(seen) <= set(tokens)  # never a torn or missing token
    assert sorted(os.listdir(path.parent)) == [
        "events.ndjson",
        "lock",
        "session.json",
        "updates.ndjson",
    ]
    reopened = await FileStore(store.root).get_session(record.id)
    assert reopened is not None and reopened.token_hash == tokens[-1]


async def test_a_kept_record_notices_changes_made_through_another_store(
    store: FileStore,
) -> None:
    record = await new_session(store, token_hash=hash_token("a"))
    other = FileStore(store.root)
    assert (await store.get_session(record.id)).token_hash == hash_token("a")  # type: ignore[union-attr]

    for old, new in [("a", "b"), ("b", "c")]:
        assert await other.rotate_token(record.id, hash_token(old), hash_token(new))
        found = await store.get_session(record.id)
        assert found is not None and found.token_hash == hash_token(new)

    assert await other.delete_session(record.id)
    assert await store.get_session(record.id) is None


async def test_a_record_this_store_wrote_gives_way_to_a_later_change_by_another_store(
    store: FileStore,
) -> None:
    record = await new_session(store, token_hash=hash_token("a"))
    other = FileStore(store.root)

    for mine, theirs in [("b", "c"), ("d", "e")]:
        previous = (await store.get_session(record.id)).token_hash  # type: ignore[union-attr]
        assert await store.rotate_token(record.id, previous, hash_token(mine))  # type: ignore[arg-type]
        assert await other.rotate_token(record.id, hash_token(mine), hash_token(theirs))
        found = await store.get_session(record.id)
        assert found is not None and found.token_hash == hash_token(theirs)


async def test_the_creators_view_of_a_new_record_is_what_any_reader_reads(
    store: FileStore,
) -> None:
    metadata: dict[str, object] = {"tags": ("a", "b"), "nested": {"n": 1}}
    record = await new_session(store, principal="ada", metadata=metadata)
    metadata["nested"] = "changed by the caller afterwards"

    mine = await store.get_session(record.id)
    assert mine == await FileStore(store.root).get_session(record.id)
    assert mine is not None and mine.metadata == {"tags": ["a", "b"], "nested": {"n": 1}}


async def test_a_torn_or_damaged_token_update_leaves_the_previous_token(
    store: FileStore,
) -> None:
    record = await new_session(store, token_hash=hash_token("a"))
    assert await store.rotate_token(record.id, hash_token("a"), hash_token("b"))
    updates = store.session_dir(record.id) / "updates.ndjson"
    with updates.open("ab") as f:
        f.write(b'\n{"tokenHash": "' + hash_token("c").encode())  # a writer killed mid-line

    found = await FileStore(store.root).get_session(record.id)
    assert found is not None and found.token_hash == hash_token("b")
    assert not await store.rotate_token(record.id, hash_token("c"), hash_token("d"))
    assert await store.rotate_token(record.id, hash_token("b"), hash_token("d"))
    with updates.open("ab") as f:
        f.write(b"\n\x00\x00garbage\n")  # a power cut's leftovers

    found = await FileStore(store.root).get_session(record.id)
    assert found is not None and found.token_hash == hash_token("d")


async def test_many_token_rotations_read_back_the_newest(store: FileStore) -> None:
    tokens = [hash_token(f"t{i}") for i in range(60)]
    record = await new_session(store, token_hash=tokens[0])
    for old, new in itertools.pairwise(tokens):
        assert await store.rotate_token(record.id, old, new)
    await store.touch_session(record.id)

    found = await FileStore(store.root).get_session(record.id)
    assert found is not None and found.token_hash == tokens[-1]
    assert found.updated_at >= record.updated_at


# follow


async def test_follow_is_woken_by_an_append_not_by_its_poll(tmp_path: Path) -> None:
    # The poll is 30 s and the wait for the follower 10 s: only a real wake-up returns in
    # time, however slow the machine is (no bound on the latency itself).
    store = FileStore(tmp_path / "state", poll_interval=30)
    record = await new_session(store)
    follower = asyncio.create_task(store.follow(record.id, 0, timeout=60))
    await asyncio.sleep(0.1)  # let the follower settle into its wait

    await store.append(record.id, [note("now")])
    events = await asyncio.wait_for(follower, 10)

    assert [e.data["text"] for e in events] == ["now"]


async def test_follow_is_woken_by_another_store_instance_in_the_process(
    tmp_path: Path,
) -> None:
    root = tmp_path / "state"
    follower_store = FileStore(root, poll_interval=30)
    record = await new_session(follower_store)
    follower = asyncio.create_task(follower_store.follow(record.id, 0, timeout=30))
    await asyncio.sleep(0.1)

    await FileStore(root).append(record.id, [note("from elsewhere")])

    events = await asyncio.wait_for(follower, 10)  # far below the 30 s poll
    assert [e.data["text"] for e in events] == ["from elsewhere"]


async def test_follow_sees_appends_from_another_process(tmp_path: Path) -> None:
    root = tmp_path / "state"
    store = FileStore(root, poll_interval=0.05)
    record = await new_session(store)
    follower = asyncio.create_task(store.follow(record.id, 0, timeout=30))
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=append_many, args=(str(root), record.id, 0, 1, None))

    proc.start()
    events = await asyncio.wait_for(follower, 40)
    await asyncio.to_thread(proc.join, 30)

    assert proc.exitcode == 0
    assert [e.data["text"] for e in events] == ["0:0"]


async def test_a_quiet_follower_checks_for_other_processes_ever_less_often(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Looks at 0, 0.05, 0.15, 0.35, 0.75, 1.15, 1.55, 1.95 and 2 s: at most 10, where a
    # fixed 0.05 s poll made 41. A slow machine only makes fewer.
    store = FileStore(tmp_path / "state", poll_interval=0.05, max_poll_interval=0.4)
    record = await new_session(store)
    looks = 0
    real = store._read_here

    def counted(session_id: str, start: int, limit: int | None) -> list[Event] | None:
        nonlocal looks
        looks += 1
        return real(session_id, start, limit)

    monkeypatch.setattr(store, "_read_here", counted)

    assert await store.follow(record.id, 0, timeout=2.0) == []
    assert 2 <= looks <= 10


async def test_a_follower_is_released_when_its_session_is_deleted(store: FileStore) -> None:
    record = await new_session(store)
    follower = asyncio.create_task(store.follow(record.id, 0, timeout=30))
    await asyncio.sleep(0.05)

    await store.delete_session(record.id)

    assert await asyncio.wait_for(follower, 10) == []


# several processes


async def test_eight_processes_appending_500_each_leave_no_gap_or_duplicate(
    store: FileStore,
) -> None:
    record = await new_session(store)
    writers, per_writer = 8, 500
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(writers)
    procs = [
        ctx.Process(target=append_many, args=(str(store.root), record.id, n, per_writer, barrier))
        for n in range(writers)
    ]

    for proc in procs:
        proc.start()
    for proc in procs:
        await asyncio.to_thread(proc.join, 100)

    assert [proc.exitcode for proc in procs] == [0] * writers
    events = await store.read(record.id)
    assert [e.index for e in events] == list(range(writers * per_writer))
    assert len({e.data["text"] for e in events}) == writers * per_writer
    for n in range(writers):
        mine = [e.data["text"] for e in events if e.data["text"].startswith(f"{n}:")]
        assert mine == [f"{n}:{i}" for i in range(per_writer)]


async def test_a_reader_never_sees_part_of_a_batch_another_process_is_writing(
    store: FileStore,
) -> None:
    record = await new_session(store)
    batches, size = 300, 10
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=append_batches, args=(str(store.root), record.id, batches, size))

    proc.start()
    while proc.is_alive():
        events = await store.read(record.id)
        assert len(events) % size == 0
    await asyncio.to_thread(proc.join, 60)

    assert proc.exitcode == 0
    events = await store.read(record.id)
    assert [e.data["text"] for e in events] == [
        f"{b}.{i}" for b in range(batches) for i in range(size)
    ]


async def test_a_cold_replay_reads_every_event_of_a_long_session(tmp_path: Path) -> None:
    root = tmp_path / "state"
    writer = FileStore(root)
    record = await new_session(writer)
    for start in range(0, 10_000, 500):
        await writer.append(record.id, [note(str(i)) for i in range(start, start + 500)])

    events = await FileStore(root).read(record.id)

    assert [e.index for e in events] == list(range(10_000))
    assert events[-1].data["text"] == "9999"


async def test_fields_a_newer_version_wrote_survive_a_token_rotation(store: FileStore) -> None:
    record = await new_session(store, token_hash=hash_token("a"))
    path = store.session_dir(record.id) / "session.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "futureField": [1, 2]}))

    assert await store.rotate_token(record.id, hash_token("a"), hash_token("b"))

    assert json.loads(path.read_text())["futureField"] == [1, 2]


async def test_a_lease_read_back_is_the_lease_written_even_after_another_store_changed_it(
    store: FileStore,
) -> None:
    record = await new_session(store)
    other = FileStore(store.root, clock=lambda: 10.0**12)  # far later: every lease expired

    assert await store.acquire_lease(record.id, "mine", 30)
    assert (await store.get_lease(record.id)).holder == "mine"  # type: ignore[union-attr]
    assert await other.acquire_lease(record.id, "theirs", 30)

    with pytest.raises(LeaseLost):
        await store.append(record.id, [note("late")], lease_holder="mine")
    assert (await other.get_lease(record.id)).holder == "theirs"  # type: ignore[union-attr]
