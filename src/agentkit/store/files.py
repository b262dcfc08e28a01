"""`FileStore`: the embedded default store, plain files under one state folder.

Layout (`root` is the `.agentkit` state folder)::

    sessions/<id>/session.json         metadata, written once (token stored hashed)
    sessions/<id>/updates.ndjson       later changes to it (the token's hash): see
                                       `_filesession`
    sessions/<id>/events.ndjson        the durable stream, one event per line
    sessions/<id>/interrupt            present while a stop is requested
    sessions/<id>/lock                 the session's lock file, holding its turn lease
                                       (blank when free); on Windows `locks/<id>.lock`,
                                       the lease in `sessions/<id>/lease.json`
    sessions/<id>/workspace/           the harness working folder (made on first use)
    traces/<id>.ndjson                 written by `agentkit run`
    tool-calls/<callId>/               deterministic tool-call workspaces
    reminders/<id>.json                one file per reminder
    idempotency/<sha256(key)>.json     claims, with their expiry
    index/                             listing and continuation-key indexes
    blobs/sha256/<ab>/<cdef…>          large payloads by content hash (`_fileblobs`)
    locks/                             lock files of the store's own indexes

A lock file is removed only with its session's folder (a deletion moves the folder away
whole). A process still waiting on it then gets a lock nobody else can take again, and
finds the session gone; nobody can make a fresh lock file at that path, as `open` does not
create folders. (Sharing "the" lock with a newcomer would need the same session id created
again, and ids are random: `new_session_id`.)

Every mutation of a session happens under its lock (a thread lock plus an `flock`, so
threads, event loops and processes all exclude each other). Small operations on a free lock
(an append of a few events, a lease, a token, a new session's folder) run on the calling
thread: they take microseconds, less than handing them to a worker thread. Anything that
may wait (a lock held elsewhere, a large catch-up read, an `fsync`) runs in a worker
thread, never on the event loop. Lock files and each cached session's `events.ndjson` stay
open between uses (see `_fs` and `_eventlog`).

`follow` is woken directly by appends made through any `FileStore` in this process. Appends
by another process are told by the kernel: the first `follow` starts a watch on the
sessions folder (`_filewatch`, one thread; `watch_appends=False` turns it off), which wakes
the followers of each `events.ndjson` that changed. Without it (turned off, or no watch could
start) they are noticed by a cheap `stat` of `events.ndjson` while a follower waits: first
after `poll_interval` seconds (0.25 s by default), then at twice the last gap, up to
`max_poll_interval` (4 s); while the session stays quiet, its next `follow` goes on from the
gap the last one reached rather than from 0.25 s. While the watch runs, that check backs
off to once a minute, a safety net only.

Each role has its module: sessions here, event streams in `_fileevents`, the lease and the
stop flag in `_filelease`, reminders, claims and eval runs in `_filerecords`.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from agentkit.errors import SessionExists, SessionNotFound, StoreError
from agentkit.events import now_iso
from agentkit.sessions import SessionRecord
from agentkit.store._eventlog import CatchUpTooLarge
from agentkit.store._fileblobs import BLOBS_FOLDER, FileBlobs
from agentkit.store._fileevents import NOTIFIER, FileEvents
from agentkit.store._fileindex import SessionIndex
from agentkit.store._filelease import FileLeases
from agentkit.store._filepaths import PathCache, SessionFiles
from agentkit.store._filerecords import FileRecords
from agentkit.store._filesession import RecordCache, append_update
from agentkit.store._filewatch import SessionsWatch
from agentkit.store._fs import (
    exclusive,
    try_exclusive,
    unlink,
    write_all,
    write_atomic,
)
from agentkit.store._offload import offload
from agentkit.store._viewcache import ViewCache
from agentkit.store.base import Page
from agentkit.store.ids import (
    decode_cursor,
    encode_cursor,
    validate_name,
    validate_session_id,
)
from agentkit.store.large_events import BLOBS_KEY
from agentkit.store.listing import StartedWindow

Clock = Callable[[], float]
T = TypeVar("T")
# How a payload naming blobs shows in an events file (a cheap test before parsing a line).
BLOBS_MARK = json.dumps(BLOBS_KEY).encode()


def _write_new(path: str, data: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise SessionExists(os.path.basename(os.path.dirname(path))) from None
    try:
        write_all(fd, data)
    except BaseException:
        os.close(fd)
        unlink(path)
        raise
    os.close(fd)


class FileStore(FileEvents, FileLeases, FileRecords):
    """A `Store` over plain files under `root` (its folders are made here if missing).

    `fsync=True` flushes every append and every `session.json` write to disk before it
    returns; by default they survive a killed process but not a power cut (see
    docs/sessions.md). `cache_sessions`
    and `cache_bytes` bound how many sessions keep their parsed events in memory, besides
    the sessions pinned there (`pin_session`: the ones stream tails follow). Returned
    events are shared with that cache: treat them, and their `data`, as read-only.
    `caches=False` turns every cache off (parsed events, session records, leases): each
    read parses the files again, in a worker thread. It is slow, and there for the tests,
    which check that both ways give the same answers.
    """

    def __init__(
        self,
        root: Path,
        *,
        clock: Clock = time.time,
        fsync: bool = False,
        poll_interval: float = 0.25,
        max_poll_interval: float = 4.0,
        cache_sessions: int = 256,
        cache_bytes: int = 256 << 20,
        caches: bool = True,
        watch_appends: bool = True,
    ) -> None:
        self.root = Path(root).absolute()
        self._sessions = self.root / "sessions"
        self._locks = self.root / "locks"
        self._reminders = self.root / "reminders"
        self._claims = self.root / "idempotency"
        self._trash = self.root / ".trash"
        self._index = SessionIndex(self.root / "index", fsync=fsync)
        self.blobs = FileBlobs(self.root / BLOBS_FOLDER, fsync=fsync)
        self._files = PathCache(self._sessions, self._locks)
        self._caches = caches
        self._records = RecordCache(enabled=caches)
        self._clock = clock
        self._fsync = fsync
        self._poll = poll_interval
        self._max_poll = max(poll_interval, max_poll_interval)
        self._watch_appends = watch_appends
        self._watch: SessionsWatch | None = None
        self._views = ViewCache(cache_sessions, cache_bytes)
        self._last_purge = float("-inf")
        for folder in (self._sessions, self._locks, self._reminders, self._claims):
            folder.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self._trash, ignore_errors=True)  # deletions a crash interrupted

    # paths other components use

    def session_dir(self, session_id: str) -> Path:
        return Path(self._files(session_id).folder)

    def workspace_dir(self, session_id: str) -> Path:
        """The session's harness working folder (made by whoever first puts files there:
        the engine seeds it before an agent tool first runs)."""
        return Path(self._files(session_id).workspace)

    def events_path(self, session_id: str) -> Path:
        return Path(self._files(session_id).events)

    def trace_path(self, session_id: str) -> Path:
        """Where `agentkit run` writes the session's trace (the folder is not created)."""
        return self.root / "traces" / f"{validate_session_id(session_id)}.ndjson"

    def tool_call_dir(self, call_id: str) -> Path:
        """A deterministic tool call's scratch folder (not created)."""
        return self.root / "tool-calls" / validate_name(call_id, "tool call id")

    # sessions

    async def create_session(self, record: SessionRecord) -> None:
        files = self._files(record.id)

        def make_folder() -> None:
            # First, and outside the lock: the session's lock file lives in this folder.
            # The workspace folder is made when first used (seeding, per-send files).
            try:
                os.mkdir(files.folder)
            except FileExistsError:
                pass  # the session exists (said under the lock), or a creation was cut short
            except FileNotFoundError:  # `sessions/` removed by hand
                os.makedirs(files.folder, exist_ok=True)

        def create() -> None:
            if files.exists():
                raise SessionExists(record.id)
            # Kept open: the session's first append writes through it.
            self._log(record.id).adopt_writer(
                os.open(files.events, os.O_WRONLY | os.O_CREAT, 0o600)
            )
            data = json.dumps(record.to_dict()).encode()
            if self._fsync:
                write_atomic(files.record, data)
            else:
                # Written directly, not through a temporary file and a rename (one file
                # creation fewer): nobody knows the id before this returns, and the session
                # is listed only after its record is whole.
                _write_new(files.record, data)
            # Kept as a reader would parse it (the caller's `metadata` is not shared).
            self._records.wrote(files.folder, json.loads(data))
            self._index.add(record)

        # A folder and a few files, on the calling thread (a hop to a worker thread cost
        # more than the creation itself on a healthy disk); with `fsync` the flushes make
        # it long, so then it runs in a worker thread.
        if self._fsync:
            await offload(make_folder)
        else:
            make_folder()
        await self._locked(record.id, create, inline=not self._fsync)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        # Two small files (or two `stat`s), read on the calling thread (see the docstring).
        return self._get_sync(self._files(session_id).folder)

    def _get_sync(self, folder: str) -> SessionRecord | None:
        raw = self._records.read(folder)
        return SessionRecord.from_dict(raw) if raw is not None else None

    async def list_sessions(
        self,
        principal: str | None,
        *,
        limit: int = 50,
        cursor: str | None = None,
        started: StartedWindow | None = None,
    ) -> Page:
        after = encode_cursor(*decode_cursor(cursor)) if cursor is not None else None
        return await offload(self._list_sync, principal, max(1, limit), after, started)

    def _list_sync(
        self, principal: str | None, limit: int, after: str | None, started: StartedWindow | None
    ) -> Page:
        markers = self._index.newest_first(principal, after)
        if started is not None:
            markers = [m for m in markers if started.holds(m)]
        items: list[SessionRecord] = []
        last = 0
        for last, marker in enumerate(markers, start=1):  # noqa: B007 - read after the loop
            record = self._get_sync(self._files(self._index.session_of(marker)).folder)
            if record is not None:
                items.append(record)
                if len(items) == limit:
                    break
        more = last < len(markers)
        return Page(items=items, cursor=markers[last - 1] if more else None)

    async def find_session(self, channel_id: str, continuation_key: str) -> SessionRecord | None:
        def find() -> SessionRecord | None:
            session_id = self._index.lookup(channel_id, continuation_key)
            if session_id is None:
                return None
            record = self._get_sync(self._files(session_id).folder)
            if record is None or (record.channel_id, record.continuation_key) != (
                channel_id,
                continuation_key,
            ):
                return None
            return record

        return await offload(find)

    async def touch_session(self, session_id: str) -> None:
        files = self._files(session_id)
        folder = files.folder

        def touch() -> None:
            raw = self._records.read(folder)
            if raw is None:
                raise SessionNotFound(session_id)
            self._update(files, raw, updatedAt=now_iso())

        await self._locked(session_id, touch, inline=not self._fsync)

    async def rotate_token(self, session_id: str, expected_hash: str, new_hash: str) -> bool:
        files = self._files(session_id)
        folder = files.folder

        def rotate() -> bool:
            raw = self._records.read(folder)
            if raw is None or raw.get("tokenHash") != expected_hash:
                return False
            self._update(files, raw, tokenHash=new_hash, updatedAt=now_iso())
            return True

        return await self._locked(session_id, rotate, inline=not self._fsync)

    def _update(self, files: SessionFiles, raw: dict[str, Any], **changes: Any) -> None:
        # One append to `updates.ndjson` (not a new `session.json`: see `_filesession`),
        # carrying every field that ever changes, so its last line alone is current.
        # Written before returning survives a killed process; `fsync` adds a power cut.
        current = {"tokenHash": raw.get("tokenHash"), "updatedAt": raw.get("updatedAt")}
        folder = files.folder
        inode = self._records.updates_inode(folder)  # `raw` was just read under the lock
        append_update(
            folder, {**current, **changes}, fsync=self._fsync, lock=files.lock, inode=inode
        )
        # The next read (the next follow-up's ownership check) finds it without a parse.
        self._records.wrote(folder, {**raw, **changes})

    async def delete_session(self, session_id: str) -> bool:
        files = self._files(session_id)
        folder, events_key = files.folder, files.events

        def delete() -> Path | None:
            with self._lock(session_id):
                # (No lock when the folder, and the lock file in it, is gone: then so is
                # the record, and nothing is deleted.)
                record = self._get_sync(folder)
                if record is None:
                    return None
                trashed = self._move_to_trash(folder)
                self._index.remove(record)
                if trashed is None:
                    return None
            dropped = self._views.pop(session_id)
            if dropped is not None:
                dropped.close()
            return trashed

        trashed = await offload(delete)
        if trashed is None:
            return False
        NOTIFIER.notify(events_key)
        await offload(shutil.rmtree, trashed, True)
        return True

    async def blob_payloads(self) -> list[dict[str, Any]]:
        """Every stored payload that names blobs, from every session's events file (for
        `agentkit.store.blob_sweep`; reads the files whole)."""
        return await offload(self._blob_payloads)

    def _blob_payloads(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        if not self._sessions.is_dir():
            return found
        with os.scandir(self._sessions) as entries:
            folders = [e.path for e in entries if e.is_dir()]
        for folder in folders:
            try:
                with open(os.path.join(folder, "events.ndjson"), "rb") as f:
                    body = f.read()
            except FileNotFoundError:
                continue  # deleted while we looked
            if BLOBS_MARK not in body:
                continue
            for line in body.split(b"\n"):
                if BLOBS_MARK not in line:
                    continue
                try:  # (a batch still being written starts with its open mark)
                    wire = json.loads(line.lstrip(b"#"))
                except ValueError:
                    continue  # a torn last line: no event names what it holds
                data = wire.get("data") if isinstance(wire, dict) else None
                if isinstance(data, dict) and BLOBS_KEY in data:
                    found.append(data)
        return found

    async def close(self) -> None:
        if self._watch is not None:
            self._watch.stop()
            self._watch = None
        for log in self._views.clear():
            log.close()

    # internals

    def _move_to_trash(self, folder: str) -> Path | None:
        # One rename makes the session vanish whole; removing its files can follow.
        trashed = self._trash / f"{os.path.basename(folder)}.{secrets.token_hex(4)}"
        for _ in range(3):
            self._trash.mkdir(exist_ok=True)
            try:
                os.rename(folder, trashed)
                return trashed
            except FileNotFoundError:
                if not os.path.exists(folder):
                    return None  # removed by hand meanwhile
                # Another store's start-up emptied the trash between mkdir and rename.
        raise StoreError(f"could not delete session {os.path.basename(folder)}")

    @contextlib.contextmanager
    def _lock(self, session_id: str) -> Iterator[None]:
        """Hold the session's lock; when its folder is gone (and the lock file with it),
        go on without it: whatever runs then finds the session missing."""
        with contextlib.ExitStack() as held:
            with contextlib.suppress(FileNotFoundError):
                held.enter_context(exclusive(self._files(session_id).lock))
            yield

    async def _locked(
        self,
        session_id: str,
        fn: Callable[[], T],
        *,
        inline: bool = True,
        offloaded: Callable[[], T] | None = None,
    ) -> T:
        """Run `fn` holding the session's lock: right here when the lock is free and `fn`
        is small (`inline`), else in a worker thread that may wait for the lock. There,
        `offloaded` runs instead when given; so it does when `fn`, run here, finds its work
        too large for the event loop (`CatchUpTooLarge`, raised before it changed anything)."""
        path = self._files(session_id).lock
        if inline:
            try:
                release = try_exclusive(path)
            except FileNotFoundError:
                return fn()  # the folder is gone with its lock file: `fn` finds no session
            if release is not None:
                try:
                    return fn()
                except CatchUpTooLarge:
                    pass
                finally:
                    release()
        work = fn if offloaded is None else offloaded

        def locked() -> T:
            with self._lock(session_id):
                return work()

        return await offload(locked)
