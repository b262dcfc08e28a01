"""The file store's kept-open descriptors and its fast replay keep every promise of the
plain open-per-use version: what is read back, what other processes see, what is bounded."""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agentkit.events import EventDraft, MessageAppended, draft
from agentkit.sessions import SessionRecord, new_session_id
from agentkit.store import _fs
from agentkit.store.files import FileStore

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="flock and /proc")


async def new_session(store: FileStore) -> str:
    record = SessionRecord(id=new_session_id(), principal="p")
    await store.create_session(record)
    return record.id


async def test_unusual_text_reads_back_exactly_after_a_restart(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    sid = await new_session(store)
    data = {
        "text": "line\u2028sep\u2029next\u0085end \U0001f600 \udcff",  # a lone surrogate too
        "big": 10**30,
        "nested": {"list": [1, 2.5, None, True]},
    }
    sent = [EventDraft("custom.thing", data), draft(MessageAppended(text="plain"))]
    await store.append(sid, sent)
    raw = store.events_path(sid).read_bytes()
    assert raw.count(b"\n") == 2  # the line separators were escaped, not written raw
    assert b"\xe2\x80\xa8" not in raw

    events = await FileStore(tmp_path).read(sid)

    assert [e.data for e in events] == [data, {"text": "plain"}]
    assert [e.index for e in events] == [0, 1]


async def test_lines_an_older_version_wrote_with_nan_are_still_read(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    sid = await new_session(store)
    # The standard library writes NaN, which is not JSON: the fast decoder refuses it.
    lines = [
        {"type": "x", "index": 0, "sessionId": sid, "at": "t", "data": {"v": math.nan}},
        {"type": "x", "index": 1, "sessionId": sid, "at": "t", "data": None},
    ]
    store.events_path(sid).write_text("".join(json.dumps(line) + "\n" for line in lines))

    events = await FileStore(tmp_path).read(sid)

    assert math.isnan(events[0].data["v"])
    assert events[1].data == {}


async def test_an_events_file_replaced_by_hand_gets_the_next_append(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    sid = await new_session(store)
    await store.append(sid, [draft(MessageAppended(text="a"))])  # the file is now kept open
    path = store.events_path(sid)
    copy = path.with_name("copy")
    copy.write_bytes(path.read_bytes())
    os.replace(copy, path)  # a new inode: the kept descriptor points at the old one

    await store.append(sid, [draft(MessageAppended(text="b"))])

    assert path.read_bytes().count(b"\n") == 2
    assert [e.data["text"] for e in await FileStore(tmp_path).read(sid)] == ["a", "b"]


def open_files(which: Callable[[str], bool]) -> int:
    """How many of this process's descriptors are open on a path `which` accepts."""
    count = 0
    for fd in Path("/proc/self/fd").iterdir():
        try:
            count += which(os.readlink(fd))
        except OSError:
            continue
    return count


def open_events_files() -> int:
    return open_files(lambda path: path.endswith("events.ndjson"))


@posix_only
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
async def test_kept_open_event_logs_are_bounded_and_closed(tmp_path: Path) -> None:
    before = open_events_files()
    store = FileStore(tmp_path, cache_sessions=3)
    for _ in range(12):
        sid = await new_session(store)
        await store.append(sid, [draft(MessageAppended(text="a"))])

    assert open_events_files() - before <= 3
    await store.close()
    assert open_events_files() == before


@posix_only
async def test_the_lease_written_through_the_held_descriptor_is_on_disk(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    sid = await new_session(store)
    assert await store.acquire_lease(sid, "worker-1", 30)
    on_disk = json.loads((tmp_path / "sessions" / sid / "lock").read_bytes())
    assert on_disk["holder"] == "worker-1"
    assert not await FileStore(tmp_path).acquire_lease(sid, "worker-2", 30)
    await store.release_lease(sid, "worker-1")
    assert (tmp_path / "sessions" / sid / "lock").read_bytes().strip() == b""
    assert await FileStore(tmp_path).acquire_lease(sid, "worker-2", 30)


def _child_tries(path: str, go: object, result: object) -> None:
    go.wait(30)  # type: ignore[attr-defined]
    release = _fs.try_exclusive(Path(path))
    result.put(release is not None)  # type: ignore[attr-defined]
    if release is not None:
        release()


@posix_only
def test_a_forked_child_never_shares_its_parents_lock_descriptor(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    with _fs.exclusive(path):
        pass  # the descriptor is now kept open, idle, in this process
    ctx = multiprocessing.get_context("fork")
    go, result = ctx.Event(), ctx.Queue()
    child = ctx.Process(target=_child_tries, args=(str(path), go, result))
    child.start()  # inherits the idle descriptor
    try:
        with _fs.exclusive(path):  # the parent locks through that same descriptor
            go.set()
            took = result.get(timeout=30)
    finally:
        child.join(30)
    assert took is False  # the child opened its own descriptor, so the lock held


@posix_only
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_kept_open_lock_files_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_fs, "_SLOTS_KEPT", 3)
    for n in range(12):
        release = _fs.try_exclusive(tmp_path / f"{n}.lock")
        assert release is not None
        release()
        with _fs.exclusive(tmp_path / f"b{n}.lock"):
            pass

    assert open_files(lambda path: path.startswith(str(tmp_path))) <= 3


@posix_only
def test_a_lock_in_use_keeps_its_descriptor_while_others_come_and_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_fs, "_SLOTS_KEPT", 2)
    held = tmp_path / "held.lock"
    release = _fs.try_exclusive(held)
    assert release is not None
    _fs.write_in_place(held, b"written while held", 64)  # through the held descriptor
    for n in range(8):  # enough newcomers to push the held one out, were it unused
        with _fs.exclusive(tmp_path / f"{n}.lock"):
            pass

    assert _fs.read_small(held) == b"written while held"
    assert _fs.try_exclusive(held) is None  # still held: this thread cannot take it again
    release()
    again = _fs.try_exclusive(held)
    assert again is not None
    again()


async def test_a_token_update_log_replaced_by_hand_gets_the_next_rotation(
    tmp_path: Path,
) -> None:
    store = FileStore(tmp_path)
    record = SessionRecord(id=new_session_id(), principal="p", token_hash="h0")
    await store.create_session(record)
    assert await store.rotate_token(record.id, "h0", "h1")  # the log is now kept open
    updates = store.session_dir(record.id) / "updates.ndjson"
    copy = updates.with_name("copy")
    copy.write_bytes(updates.read_bytes())
    os.replace(copy, updates)  # a new inode: the kept descriptor points at the old one

    assert await store.rotate_token(record.id, "h1", "h2")

    found = await FileStore(tmp_path).get_session(record.id)
    assert found is not None and found.token_hash == "h2"
